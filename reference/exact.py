"""The exact reference of dyadic24-floor-first-v1 (clauses 1-9), with a full per-row trace.

Every value is a bit pattern (binary32 / binary64 as ``int``) and every operation is the exact IEEE
operation of ``reference.ieee`` or the correctly rounded exp of ``reference.exp_exact``; the draw is
the Philox4x32-10 of ``reference.philox``. numpy appears only at the call boundary (validating and
unpacking arguments, packing outputs), never in the semantic path. It is slow (about half a millisecond
per sampled row plus a linear scan of the row: V = 163,840 takes about 0.1 s) and is the definition
the golden vectors are made from.

Trace conventions (clause 12.3): per-slot tuples (slot_ids, d, z, e, p, counts, tickets) hold the K
candidates in slot order, i.e. ascending token ID (clause 6.1); the padding slots K..31 are +0 by
definition and appear only through the tree levels.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from dyadic24.api import (
    K_MAX,
    TAU_DEFAULT_BITS,
    TICKETS,
    V_MAX,
    Proposal,
    RowTrace,
    Status,
    empty_outputs,
    validate_call,
)
from dyadic24.reference.exp_exact import exp32
from dyadic24.reference.ieee import (
    MASK32,
    NEG_INF32,
    POS_INF32,
    SIGN32,
    add64,
    div32,
    div64,
    key32,
    significand_exponent64,
    sub32,
    widen32to64,
)
from dyadic24.reference.philox import philox4x32_10, proposal_key, ticket_index

TAU_DEFAULT: Final = np.uint32(TAU_DEFAULT_BITS).view(np.float32)  # clause 1.3: RN32(0.7)
_ID_BITS: Final = 31  # token IDs are < 2^31 (clause 1.1)
_ID_MASK: Final = (1 << _ID_BITS) - 1
_M32: Final = 0xFFFFFFFF


def row_status(logit_bits: Sequence[int], t_bits: int) -> Status:
    """The row status in the precedence of clause 2.1, decided on bit patterns."""
    top = max(b & 0x7FFFFFFF for b in logit_bits)
    if top > POS_INF32:
        return Status.NAN_LOGIT
    if POS_INF32 in logit_bits:
        return Status.POS_INF_LOGIT
    if logit_bits.count(NEG_INF32) == len(logit_bits):
        return Status.ZERO_MASS
    t = t_bits & MASK32
    t_nan = (t & 0x7FFFFFFF) > POS_INF32
    t_negative = bool(t & SIGN32) and t != SIGN32  # -0 is not negative; -inf is
    if t_nan or t_negative or t == POS_INF32:
        return Status.BAD_TEMPERATURE
    return Status.OK


def candidates(logit_bits: Sequence[int]) -> tuple[int, ...]:
    """C: the first K = min(32, V) tokens in the order of clause 3.1 (clause 3.2), best first.

    One integer key per token, key32(l_i) * 2^31 + (2^31 - 1 - i), is larger exactly when token i
    precedes: a larger logit, or an IEEE-equal logit (-0 == +0) and a smaller ID.
    """
    k = min(K_MAX, len(logit_bits))
    keys = [(key32(b) << _ID_BITS) | (V_MAX - i) for i, b in enumerate(logit_bits)]
    return tuple(V_MAX - (c & _ID_MASK) for c in heapq.nlargest(k, keys))


def floor_times_2_24(p_bits: int) -> int:
    """c = floor(p * 2^24) for a finite binary64 p >= 0 (clause 7.2: the product is exact)."""
    _, m, e = significand_exponent64(p_bits)
    shift = e + 24
    return m << shift if shift >= 0 else m >> -shift


def pick(support_ids: Sequence[int], support_tickets: Sequence[int], u: int) -> int:
    """The support entry whose half-open cumulative ticket interval, in ascending ID, holds u (clause 9.5)."""
    start = 0
    for token, t in zip(support_ids, support_tickets, strict=True):
        if u < start + t:
            return token
        start += t
    raise AssertionError(f"ticket index {u} beyond the {start} tickets of the support (clause 7.4)")


def exact_row(
    logit_bits: Sequence[int], t_bits: int, seed: int, round: int, position: int, tau_bits: int
) -> RowTrace:
    """One row of dyadic24-floor-first-v1 from bit patterns, with every intermediate (clause 12.3).

    ``logit_bits``: binary32 bits of the row's V logits; ``t_bits``: binary32 bits of T; ``seed``,
    ``round``, ``position``: uint64 (clause 1.4); ``tau_bits``: binary32 bits of tau (clause 1.3).
    """
    bits = [int(b) & _M32 for b in logit_bits]
    if not 1 <= len(bits) <= V_MAX:
        raise ValueError(f"a row needs 1 <= V <= 2^31 - 1 logits (clause 1.1), got {len(bits)}")
    if not 0 < tau_bits < POS_INF32:
        raise ValueError(f"tau must be finite and > 0 (clause 1.3), got bits 0x{tau_bits:08x}")
    status = row_status(bits, t_bits)
    if status != Status.OK:
        return RowTrace(status=int(status), path="failed", token=-1)  # clause 2.3: no Philox

    order = candidates(bits)  # clauses 3.1, 3.2
    a_star = order[0]  # clause 3.3
    m = bits[a_star]
    if (t_bits & 0x7FFFFFFF) == 0:  # clause 4.1: T == 0 of either sign; clause 4.2: no Philox
        return RowTrace(
            status=int(Status.OK),
            path="greedy",
            token=a_star,
            order=order,
            argmax=a_star,
            m_bits=m,
            support_ids=(a_star,),
            support_tickets=(TICKETS,),
        )

    k = len(order)
    slot_ids = tuple(sorted(order))  # clause 6.1: slots in ascending token ID
    d = tuple(sub32(bits[i], m) for i in slot_ids)  # clause 5.1
    z = tuple(div32(di, tau_bits) for di in d)  # clause 5.2: IEEE division by tau
    e = tuple(exp32(zi) for zi in z)  # clause 5.3

    level = [widen32to64(ei) for ei in e] + [0] * (K_MAX - k)  # clause 6.1: padding slots are +0
    tree: list[tuple[int, ...]] = []
    while len(level) > 1:  # clause 6.2: five levels of pairwise RN64 sums
        level = [add64(level[2 * j], level[2 * j + 1]) for j in range(len(level) // 2)]
        tree.append(tuple(level))
    s = level[0]

    p = tuple(div64(widen32to64(ei), s) for ei in e)  # clause 7.1
    counts = tuple(floor_times_2_24(pi) for pi in p)  # clause 7.2
    remainder = TICKETS - sum(counts)  # clause 7.3
    if not 0 <= remainder <= k:
        raise AssertionError(f"R = {remainder} outside [0, K = {k}] (clause 7.4)")
    a_slot = slot_ids.index(a_star)
    tickets = tuple(c + remainder if j == a_slot else c for j, c in enumerate(counts))  # clause 7.3

    support = [(i, t) for i, t in zip(slot_ids, tickets, strict=True) if t > 0]  # clause 8.1
    support_ids = tuple(i for i, _ in support)
    support_tickets = tuple(t for _, t in support)

    key = proposal_key(seed)  # clause 9.2
    position &= (1 << 64) - 1
    round &= (1 << 64) - 1
    block = philox4x32_10((position & _M32, position >> 32, round & _M32, round >> 32), key)  # clause 9.3
    u = ticket_index(block)  # clause 9.4
    token = pick(support_ids, support_tickets, u)  # clause 9.5

    return RowTrace(
        status=int(Status.OK),
        path="sampled",
        token=token,
        order=order,
        argmax=a_star,
        m_bits=m,
        slot_ids=slot_ids,
        d_bits=d,
        z_bits=z,
        e_bits=e,
        tree=tuple(tree),
        s_bits=s,
        p_bits=p,
        counts=counts,
        remainder=remainder,
        slot_tickets=tickets,
        support_ids=support_ids,
        support_tickets=support_tickets,
        key=key,
        block=block,
        u=u,
    )


def propose_exact(
    logits: Any,
    temperature: Any,
    seed: Any,
    round: Any,
    position: Any,
    *,
    tau: Any = TAU_DEFAULT,
    trace: bool = False,
) -> Proposal:
    """The exact reference implementation of the call protocol (clause 12.2); rows are independent (2.4)."""
    call = validate_call(logits, temperature, seed, round, position, tau)  # clause 1.5
    status, token, ids, tickets = empty_outputs(call.batch)  # clause 2.3 defaults
    logit_bits = call.logits.view(np.uint32)
    t_bits = call.temperature.view(np.uint32).tolist()
    seeds = call.seed.tolist()
    rounds = call.round.tolist()
    positions = call.position.tolist()
    traces: list[RowTrace] = []
    for r in range(call.batch):
        row = exact_row(logit_bits[r].tolist(), t_bits[r], seeds[r], rounds[r], positions[r], call.tau_bits)
        status[r] = row.status
        token[r] = row.token
        n = len(row.support_ids)
        ids[r, :n] = row.support_ids  # clause 8.1: padded with (id -1, tickets 0)
        tickets[r, :n] = row.support_tickets
        if trace:
            traces.append(row)
    return Proposal(status=status, token=token, ids=ids, tickets=tickets, trace=traces if trace else None)

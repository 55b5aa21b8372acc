"""Vectorized numpy "fast reference" of dyadic24-floor-first-v1, bit-identical to the exact reference.

The rule is split into stages (one per clause or sub-clause), gathered in the frozen dataclass
``Stages``; ``propose_with(stages, ...)`` runs them, so a conformance mutant replaces exactly one
stage with ``dataclasses.replace(DEFAULT_STAGES, <stage>=...)``. Every stage works on a whole
sub-batch of rows at once and treats each row independently (clause 2.4).

Stage data, per sub-batch of n rows (K = min(32, V), slot arrays always have 32 columns):

  screen(logits f32[B,V], temperature f32[B]) -> (status i32[B], logits f32[B,V])     clause 2.1
  select(logits f32[n,V], K) -> candidate ids i64[n,K] in the clause-3.1 order        clauses 3.1-3.2
  greedy(temperature f32[n]) -> bool[n], the rows that take the greedy path            clause 4.1
  scale(l_c f32[n,K], m f32[n], tau f32 scalar) -> (d f32[n,K], z f32[n,K])           clauses 5.1-5.2
  exp(z f32[n,K]) -> e f32[n,K]                                                       clause 5.3
  softmax(l_c, ids i64[n,K], m, tau, scale, exp) -> (d, z, e): scale, then exp        clauses 5.1-5.3
  slot_order(ids i64[n,K], l_c f32[n,K]) -> perm i64[n,K] (slot j holds candidate perm[j])  clause 6.1
  normalizer(e_slots f32[n,32]) -> S f64[n]                                            clause 6.2
  probabilities(e_slots f32[n,32], S f64[n]) -> p f64[n,32]                            clause 7.1
  counts(p f64[n,32]) -> c i64[n,32]                                                   clause 7.2
  allocate(p f64[n,32], c i64[n,32], argmax_slot i64[n]) -> t i64[n,32]                clause 7.3
  support(slot_ids i64[n,32], t i64[n,32], slot_logits f32[n,32]) -> (ids i32[n,32], tickets i32[n,32])
                                                                                       clause 8.1
  key(seed u64[n]) -> (k0 u32[n], k1 u32[n])                                           clause 9.2
  block(k0 u32[n], k1 u32[n], round u64[n], position u64[n]) -> x u32[4,n]             clause 9.3
  ticket(x u32[4,n]) -> u i64[n]                                                       clause 9.4
  pick(ids i32[n,32], tickets i32[n,32], u i64[n]) -> token i32[n]                     clause 9.5

Padding slots K..31 have id -1, e = +0 and logit -inf. Only OK rows reach ``select``; only sampled
(T != 0) rows reach ``scale`` and later stages; greedy rows (clause 4.1) are finished by the driver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dyadic24.api import (
    K_MAX,
    TAU_DEFAULT_BITS,
    TICKETS,
    Proposal,
    RowTrace,
    Status,
    empty_outputs,
    validate_call,
)
from dyadic24.reference.fast_exp import exp32_np
from dyadic24.reference.philox import DOMAIN_WORD, philox4x32_10_np

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
U32 = npt.NDArray[np.uint32]
U64 = npt.NDArray[np.uint64]

TAU_DEFAULT = np.uint32(TAU_DEFAULT_BITS).view(np.float32)  # clause 1.3: RN32(0.7)
_SIGN = np.uint32(0x80000000)
_LOW32 = np.uint64(0xFFFFFFFF)


# --- clause 2.1: row status -------------------------------------------------------------------


def screen_default(logits: F32, temperature: F32) -> tuple[I32, F32]:
    """Row statuses in the clause-2.1 precedence; the logits later stages see are returned unchanged.

    A row maximum is NaN iff the row holds a NaN (np.max propagates NaN), +inf iff it holds +inf
    and no NaN, -inf iff every logit is -inf: one pass over the matrix decides the logit statuses.
    """
    top = np.max(logits, axis=1)
    status = np.zeros(logits.shape[0], dtype=np.int32)
    t = temperature
    bad_t = np.isnan(t) | (t < 0) | (t == np.inf)  # -0 is not negative (clause 2.1)
    status[bad_t] = Status.BAD_TEMPERATURE
    status[top == -np.inf] = Status.ZERO_MASS
    status[top == np.inf] = Status.POS_INF_LOGIT
    status[np.isnan(top)] = Status.NAN_LOGIT
    return status, logits


# --- clauses 3.1-3.2: candidate set C ---------------------------------------------------------


def order_key32(logits: F32) -> U32:
    """Unsigned key, increasing with the IEEE value, -0 canonicalised to +0 (clause 3.1 equality)."""
    bits = np.ascontiguousarray(logits).view(np.uint32)
    bits = np.where(bits == _SIGN, np.uint32(0), bits)
    return np.where(bits >= _SIGN, ~bits, bits | _SIGN)


def top_k_by_key(key: U64, k: int) -> I64:
    """Column indices of the k largest keys per row, largest first (keys are distinct within a row)."""
    v = key.shape[1]
    if k < v:
        part = np.argpartition(key, v - k, axis=1)[:, v - k :]
    else:
        part = np.broadcast_to(np.arange(v, dtype=np.int64), key.shape).copy()
    chosen = np.take_along_axis(key, part, axis=1)
    order = np.argsort(~chosen, axis=1)
    result: I64 = np.take_along_axis(part, order, axis=1).astype(np.int64)
    return result


def select_by_key(logits: F32, k: int) -> I64:
    """C by the 64-bit key (value key, then 0xFFFFFFFF - id): every key in a row is distinct and
    orders the row exactly as clause 3.1, so a partial selection of the K largest keys is C."""
    v = logits.shape[1]
    rank = np.uint64(0xFFFFFFFF) - np.arange(v, dtype=np.uint64)
    key = (order_key32(logits).astype(np.uint64) << np.uint64(32)) | rank
    return top_k_by_key(key, k)


def select_default(logits: F32, k: int) -> I64:
    """C: the first K tokens in the order of clause 3.1 (higher logit first, ties to the lower ID).

    The rows select sees are OK rows (clause 2.1: no NaN, no +inf), on which the binary32 order is
    clause 3.1's (-0 == +0), so a partition of the values finds each row's K-th largest value t: C is
    the logits above t in key order (fewer than K: the 64-bit key sorts them), then the lowest IDs of
    those equal to t. About 9x faster than keying the whole row at V = 163,840 (the bulk check's
    reference side). A row where that does not make K (a NaN a mutant's screening let through) takes
    the keyed path.
    """
    b, v = logits.shape
    if k >= v or b == 0:
        return select_by_key(logits, k)
    kth = np.partition(logits, v - k, axis=1)[:, v - k, None]
    rows, cols = np.nonzero(logits > kth)
    above = np.bincount(rows, minlength=b)
    t_rows, t_cols = np.nonzero(logits == kth)  # by row, then ascending ID: clause 3.1's tie order
    rank = np.arange(t_rows.size) - np.searchsorted(t_rows, t_rows)
    keep = rank < (k - above)[t_rows]
    if (above + np.bincount(t_rows[keep], minlength=b) != k).any():
        return select_by_key(logits, k)
    key = (order_key32(logits[rows, cols]).astype(np.uint64) << np.uint64(32)) | (
        np.uint64(0xFFFFFFFF) - cols.astype(np.uint64)
    )
    order = np.lexsort((~key, rows))  # by row, then the key descending
    all_rows = np.concatenate([rows[order], t_rows[keep]])
    all_cols = np.concatenate([cols[order], t_cols[keep]])
    stable = np.argsort(all_rows, kind="stable")  # each row: the keyed ones, then its ties
    result: I64 = all_cols[stable].reshape(b, k).astype(np.int64)
    return result


# --- clause 4.1: greedy rows ----------------------------------------------------------------------


def greedy_default(temperature: F32) -> npt.NDArray[np.bool_]:
    """T == 0 of either sign (clause 4.1); only OK rows get here, so T is not NaN."""
    greedy: npt.NDArray[np.bool_] = temperature == 0
    return greedy


# --- clauses 5.1-5.3: scaled differences and exp ----------------------------------------------


def scale_default(l_c: F32, m: F32, tau: np.float32) -> tuple[F32, F32]:
    """d = RN32(l - m) (clause 5.1), z = RN32(d / tau) by IEEE division (clause 5.2)."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        d = np.subtract(l_c, m[:, None], dtype=np.float32)
        z = np.divide(d, tau, dtype=np.float32)
    return d, z


def exp_default(z: F32) -> F32:
    """e = RN32(exp(z)), correctly rounded, subnormals kept (clause 5.3)."""
    return exp32_np(z)


def softmax_default(
    l_c: F32,
    ids: I64,
    m: F32,
    tau: np.float32,
    scale: Callable[[F32, F32, np.float32], tuple[F32, F32]],
    exp: Callable[[F32], F32],
) -> tuple[F32, F32, F32]:
    """Clauses 5.1-5.3 for the candidates (token IDs ``ids``): d and z by ``scale``, e by ``exp``. A stage
    of its own so that a mutant can replace clause 5 as a whole, as a vocabulary-tiled softmax does."""
    del ids
    d, z = scale(l_c, m, tau)
    return d, z, exp(z)


# --- clause 6: slots and the normaliser -------------------------------------------------------


def slot_order_default(ids: I64, l_c: F32) -> I64:
    """Slots hold C in ascending token-ID order (clause 6.1)."""
    del l_c
    return np.argsort(ids, axis=1, kind="stable").astype(np.int64)


def tree_levels(e_slots: F32) -> list[F64]:
    """Levels 1..5 of the binary64 pairwise tree (clause 6.2): 16, 8, 4, 2, 1 slots."""
    level = e_slots.astype(np.float64)
    levels = []
    while level.shape[1] > 1:
        level = level[:, 0::2] + level[:, 1::2]
        levels.append(level)
    return levels


def normalizer_default(e_slots: F32) -> F64:
    """S = the root of the 5-level binary64 pairwise tree over the 32 slots (clause 6.2)."""
    return tree_levels(e_slots)[-1][:, 0]


# --- clause 7: counts and the remainder -------------------------------------------------------


def probabilities_default(e_slots: F32, s: F64) -> F64:
    """p_i = RN64(e_i / S) (clause 7.1)."""
    return e_slots.astype(np.float64) / s[:, None]


def counts_default(p: F64) -> I64:
    """c_i = floor(p_i * 2^24); the product is exact (clause 7.2)."""
    return np.floor(p * float(TICKETS)).astype(np.int64)


def allocate_default(p: F64, c: I64, argmax_slot: I64) -> I64:
    """t = c, plus the remainder R = 2^24 - sum c on the argmax slot (clause 7.3)."""
    del p
    t = c.copy()
    remainder = TICKETS - c.sum(axis=1)
    t[np.arange(t.shape[0]), argmax_slot] += remainder
    return t


# --- clause 8.1: support ----------------------------------------------------------------------


def support_default(slot_ids: I64, t: I64, slot_logits: F32) -> tuple[I32, I32]:
    """Tokens with t > 0 in ascending ID order, padded with (id -1, tickets 0) to 32 (clause 8.1)."""
    del slot_logits
    keyed = np.where(t > 0, slot_ids, np.iinfo(np.int64).max)
    order = np.argsort(keyed, axis=1, kind="stable")
    ids = np.take_along_axis(slot_ids, order, axis=1)
    tickets = np.take_along_axis(t, order, axis=1)
    live = tickets > 0
    return np.where(live, ids, -1).astype(np.int32), np.where(live, tickets, 0).astype(np.int32)


# --- clause 9: the draw -----------------------------------------------------------------------


def lo32(x: U64) -> U32:
    """Low 32 bits of a uint64 (clause 0.4)."""
    return (x & _LOW32).astype(np.uint32)


def hi32(x: U64) -> U32:
    """High 32 bits of a uint64 (clause 0.4)."""
    return (x >> np.uint64(32)).astype(np.uint32)


def key_default(seed: U64) -> tuple[U32, U32]:
    """(k0, k1) = first two words of Philox4x32-10((0x70726F70, 0, 0, 0), (lo32 s, hi32 s)) (clause 9.2)."""
    zero = np.zeros(seed.shape, dtype=np.uint32)
    domain = np.full(seed.shape, DOMAIN_WORD, dtype=np.uint32)
    words = philox4x32_10_np(domain, zero, zero, zero, lo32(seed), hi32(seed))
    return np.asarray(words[0], dtype=np.uint32), np.asarray(words[1], dtype=np.uint32)


def block_default(k0: U32, k1: U32, round: U64, position: U64) -> U32:
    """x = Philox4x32-10((lo32 p, hi32 p, lo32 n, hi32 n), (k0, k1)) as uint32 [4, n] (clause 9.3)."""
    words = philox4x32_10_np(lo32(position), hi32(position), lo32(round), hi32(round), k0, k1)
    return np.stack([np.asarray(w, dtype=np.uint32) for w in words])


def ticket_default(x: U32) -> I64:
    """u = x[0] >> 8, in [0, 2^24) (clause 9.4)."""
    u: I64 = (x[0] >> np.uint32(8)).astype(np.int64)
    return u


def pick_default(ids: I32, tickets: I32, u: I64) -> I32:
    """The entry whose half-open cumulative ticket interval, in support order, holds u (clause 9.5)."""
    cumulative = np.cumsum(tickets.astype(np.int64), axis=1)
    entry = np.argmax(cumulative > u[:, None], axis=1)
    token: I32 = ids[np.arange(ids.shape[0]), entry].astype(np.int32)
    return token


# --- the stages and the driver ----------------------------------------------------------------


@dataclass(frozen=True)
class Stages:
    """The replaceable stages of the fast reference (see the module docstring for shapes)."""

    screen: Callable[[F32, F32], tuple[I32, F32]] = screen_default
    select: Callable[[F32, int], I64] = select_default
    greedy: Callable[[F32], npt.NDArray[np.bool_]] = greedy_default
    scale: Callable[[F32, F32, np.float32], tuple[F32, F32]] = scale_default
    exp: Callable[[F32], F32] = exp_default
    softmax: Callable[..., tuple[F32, F32, F32]] = softmax_default
    slot_order: Callable[[I64, F32], I64] = slot_order_default
    normalizer: Callable[[F32], F64] = normalizer_default
    probabilities: Callable[[F32, F64], F64] = probabilities_default
    counts: Callable[[F64], I64] = counts_default
    allocate: Callable[[F64, I64, I64], I64] = allocate_default
    support: Callable[[I64, I64, F32], tuple[I32, I32]] = support_default
    key: Callable[[U64], tuple[U32, U32]] = key_default
    block: Callable[[U32, U32, U64, U64], U32] = block_default
    ticket: Callable[[U32], I64] = ticket_default
    pick: Callable[[I32, I32, I64], I32] = pick_default


DEFAULT_STAGES = Stages()


@dataclass
class _Sampled:
    """Intermediates of the sampled rows, kept for the trace."""

    rows: I64  # batch indices
    slot_ids: I64  # [n, 32], -1 on padding
    d: F32  # [n, 32] in slot order, +0 on padding
    z: F32
    e: F32
    s: F64
    p: F64
    c: I64
    t: I64
    k0: U32
    k1: U32
    x: U32
    u: I64


def _bits32(a: Any) -> list[int]:
    return [int(v) for v in np.asarray(a, dtype=np.float32).view(np.uint32).tolist()]


def _bits64(a: Any) -> list[int]:
    return [int(v) for v in np.asarray(a, dtype=np.float64).view(np.uint64).tolist()]


def propose_with(
    stages: Stages,
    logits: Any,
    temperature: Any,
    seed: Any,
    round: Any,
    position: Any,
    *,
    tau: Any = TAU_DEFAULT,
    trace: bool = False,
) -> Proposal:
    """Run the rule with the given stages (clauses 2-9); rows are processed independently (clause 2.4)."""
    call = validate_call(logits, temperature, seed, round, position, tau)
    batch, vocab = call.batch, call.vocab
    k = min(K_MAX, vocab)  # clause 3.2
    tau32 = np.uint32(call.tau_bits).view(np.float32)
    status_out, token_out, ids_out, tickets_out = empty_outputs(batch)  # clause 2.3 for failed rows

    status, screened = stages.screen(call.logits, call.temperature)
    status_out[:] = status
    ok_rows = np.flatnonzero(status == Status.OK)
    cand = np.zeros((0, k), dtype=np.int64)
    m = np.zeros(0, dtype=np.float32)
    sampled: _Sampled | None = None
    if ok_rows.size:
        ok_logits = screened if ok_rows.size == batch else screened[ok_rows]
        cand = stages.select(ok_logits, k)
        a_star = cand[:, 0]  # clause 3.3
        m = ok_logits[np.arange(ok_rows.size), a_star]

        greedy = stages.greedy(call.temperature[ok_rows])  # clause 4.1
        g_rows = ok_rows[greedy]
        token_out[g_rows] = a_star[greedy]
        ids_out[g_rows, 0] = a_star[greedy]
        tickets_out[g_rows, 0] = TICKETS

        live = ~greedy
        if live.any():
            s_rows = ok_rows[live]
            s_logits = ok_logits if live.all() else ok_logits[live]
            s_cand = cand[live]
            l_c = np.take_along_axis(s_logits, s_cand, axis=1)
            d, z, e = stages.softmax(l_c, s_cand, m[live], tau32, stages.scale, stages.exp)

            perm = stages.slot_order(s_cand, l_c)
            pad = K_MAX - k
            slot_ids = np.pad(
                np.take_along_axis(s_cand, perm, axis=1), ((0, 0), (0, pad)), constant_values=-1
            )
            slot_logits = np.pad(
                np.take_along_axis(l_c, perm, axis=1), ((0, 0), (0, pad)), constant_values=-np.inf
            )

            def slotted(a: F32) -> F32:
                return np.pad(np.take_along_axis(a, perm, axis=1), ((0, 0), (0, pad)))

            e_slots = slotted(e)
            argmax_slot = np.argmax(slot_ids == s_cand[:, :1], axis=1).astype(np.int64)

            s = stages.normalizer(e_slots)
            p = stages.probabilities(e_slots, s)
            c = stages.counts(p)
            t = stages.allocate(p, c, argmax_slot)
            sup_ids, sup_tickets = stages.support(slot_ids, t, slot_logits)
            ids_out[s_rows] = sup_ids
            tickets_out[s_rows] = sup_tickets

            k0, k1 = stages.key(call.seed[s_rows])
            x = stages.block(k0, k1, call.round[s_rows], call.position[s_rows])
            u = stages.ticket(x)
            token_out[s_rows] = stages.pick(sup_ids, sup_tickets, u)
            if trace:
                sampled = _Sampled(
                    rows=s_rows, slot_ids=slot_ids, d=slotted(d), z=slotted(z), e=e_slots,
                    s=s, p=p, c=c, t=t, k0=k0, k1=k1, x=x, u=u,
                )  # fmt: skip

    proposal_trace = None
    if trace:
        proposal_trace = _build_trace(
            status=status_out, token=token_out, ids=ids_out, tickets=tickets_out,
            ok_rows=ok_rows, cand=cand, m=m, sampled=sampled, k=k,
        )  # fmt: skip
    return Proposal(
        status=status_out, token=token_out, ids=ids_out, tickets=tickets_out, trace=proposal_trace
    )


def _build_trace(
    *,
    status: I32,
    token: I32,
    ids: I32,
    tickets: I32,
    ok_rows: I64,
    cand: I64,
    m: F32,
    sampled: _Sampled | None,
    k: int,
) -> list[RowTrace]:
    """RowTrace per row (clause 12.3), the same fields as the exact reference's."""
    out: list[RowTrace] = [
        RowTrace(status=int(status[r]), path="failed", token=int(token[r])) for r in range(status.size)
    ]
    ok_index = {int(r): i for i, r in enumerate(ok_rows.tolist())}
    s_index = {} if sampled is None else {int(r): i for i, r in enumerate(sampled.rows.tolist())}
    for r, i in ok_index.items():
        live = ids[r] >= 0
        common: dict[str, Any] = dict(
            status=int(status[r]),
            token=int(token[r]),
            order=tuple(int(v) for v in cand[i].tolist()),
            argmax=int(cand[i, 0]),
            m_bits=_bits32(m[i : i + 1])[0],
            support_ids=tuple(int(v) for v in ids[r][live].tolist()),
            support_tickets=tuple(int(v) for v in tickets[r][live].tolist()),
        )
        if r not in s_index:
            out[r] = RowTrace(path="greedy", **common)
            continue
        assert sampled is not None
        j = s_index[r]
        tree = tree_levels(sampled.e[j : j + 1])
        out[r] = RowTrace(
            path="sampled",
            slot_ids=tuple(int(v) for v in sampled.slot_ids[j, :k].tolist()),
            d_bits=tuple(_bits32(sampled.d[j, :k])),
            z_bits=tuple(_bits32(sampled.z[j, :k])),
            e_bits=tuple(_bits32(sampled.e[j, :k])),
            tree=tuple(tuple(_bits64(level[0])) for level in tree),
            s_bits=_bits64(sampled.s[j : j + 1])[0],
            p_bits=tuple(_bits64(sampled.p[j, :k])),
            counts=tuple(int(v) for v in sampled.c[j, :k].tolist()),
            remainder=int(TICKETS - int(sampled.c[j].sum())),
            slot_tickets=tuple(int(v) for v in sampled.t[j, :k].tolist()),
            key=(int(sampled.k0[j]), int(sampled.k1[j])),
            block=(int(sampled.x[0, j]), int(sampled.x[1, j]), int(sampled.x[2, j]), int(sampled.x[3, j])),
            u=int(sampled.u[j]),
            **common,
        )
    return out


def propose_fast(
    logits: Any,
    temperature: Any,
    seed: Any,
    round: Any,
    position: Any,
    *,
    tau: Any = TAU_DEFAULT,
    trace: bool = False,
) -> Proposal:
    """The fast reference (clause 12.2): propose_with(DEFAULT_STAGES, ...)."""
    return propose_with(DEFAULT_STAGES, logits, temperature, seed, round, position, tau=tau, trace=trace)

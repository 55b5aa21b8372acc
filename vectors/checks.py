"""Properties that flagged vectors claim, checked on the exact reference's traces at generation time.

A flag such as ``tree_vs_sequential`` promises that a sequential binary64 sum gives another S and other
tickets than the clause-6.2 tree. The inputs of such vectors come from searches (``vectors/search.py``);
these checks recompute the wrong variant from the exact trace, with host binary64 arithmetic (IEEE
round-to-nearest-even, which is all the variants need), and stop the generator if a vector does not
deliver what its flag says.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence

import numpy as np

from dyadic24.api import TICKETS, RowTrace
from dyadic24.vectors.case import Case

RowPredicate = Callable[[RowTrace], bool]


def f32_value(bits: int) -> float:
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


def f64_value(bits: int) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", bits))[0])


def slot_e(trace: RowTrace) -> list[float]:
    """The 32 binary64 slots of clause 6.1 (+0 after the K candidates)."""
    vals = [f32_value(b) for b in trace.e_bits]
    return (vals + [0.0] * 32)[:32]


def slot_count(trace: RowTrace) -> int:
    return len(trace.slot_ids)


def argmax_slot(trace: RowTrace) -> int:
    return trace.slot_ids.index(trace.argmax)


def tree_sum(vals: Sequence[float]) -> float:
    level = list(vals)
    while len(level) > 1:
        level = [level[2 * k] + level[2 * k + 1] for k in range(len(level) // 2)]
    return level[0]


def sequential_sum(vals: Sequence[float]) -> float:
    s = 0.0
    for v in vals:
        s += v
    return s


def descending_sum(vals: Sequence[float]) -> float:
    return sequential_sum(sorted(vals, reverse=True))


def numpy_sum(vals: Sequence[float]) -> float:
    return float(np.sum(np.array(vals, dtype=np.float64)))


def binary32_sum(vals: Sequence[float]) -> float:
    s = np.float32(0.0)
    for v in vals:
        s = np.float32(s + np.float32(v))
    return float(s)


SUMS: dict[str, Callable[[Sequence[float]], float]] = {
    "sequential": sequential_sum,
    "descending": descending_sum,
    "numpy": numpy_sum,
    "binary32": binary32_sum,
}


def floor_first(p: Sequence[float], a_slot: int) -> list[int]:
    """Clauses 7.2-7.3 from binary64 p (the product by 2^24 is exact, so int() is the floor)."""
    c = [math.floor(v * TICKETS) for v in p]
    t = list(c)
    t[a_slot] += TICKETS - sum(c)
    return t


def allocate_slots(vals: Sequence[float], s: float, a_slot: int) -> list[int]:
    return floor_first([v / s for v in vals], a_slot)


def tickets_with_sum(trace: RowTrace, s: float) -> list[int]:
    return allocate_slots(slot_e(trace), s, argmax_slot(trace))[: slot_count(trace)]


def exact_s(trace: RowTrace) -> float:
    assert trace.s_bits is not None
    return f64_value(trace.s_bits)


def sum_differs(kind: str) -> RowPredicate:
    """S by the ``kind`` summation differs from the tree's S, and so do the tickets (clause 6.2)."""

    def pred(trace: RowTrace) -> bool:
        if trace.path != "sampled":
            return False
        vals = slot_e(trace)
        alt = SUMS[kind](vals)
        if alt == exact_s(trace):
            return False
        assert tree_sum(vals) == exact_s(trace), "host tree sum disagrees with the trace"
        return tickets_with_sum(trace, alt) != list(trace.slot_tickets)[: slot_count(trace)]

    return pred


def largest_remainder_differs(trace: RowTrace) -> bool:
    """Hamilton allocation (R tickets to the R largest fractional parts) differs from clause 7.3."""
    if trace.path != "sampled" or not trace.remainder:
        return False
    p = [f64_value(b) for b in trace.p_bits]
    c = list(trace.counts)
    frac = [v * TICKETS - math.floor(v * TICKETS) for v in p]
    order = sorted(range(len(c)), key=lambda i: (-frac[i], i))
    t = list(c)
    for i in order[: trace.remainder]:
        t[i] += 1
    return t != list(trace.slot_tickets)


def near_integer_count(limit_log2: int = -20, exact: bool | None = None) -> RowPredicate:
    """Some p_i * 2^24 within 2^limit of an integer (exactly integer or not, as asked), i != a*."""

    def pred(trace: RowTrace) -> bool:
        if trace.path != "sampled":
            return False
        a = argmax_slot(trace)
        for i, b in enumerate(trace.p_bits):
            x = f64_value(b) * TICKETS
            if i == a or x == 0:
                continue
            dist = abs(x - round(x))
            if dist <= 2.0**limit_log2 and (exact is None or (dist == 0) == exact):
                return True
        return False

    return pred


def remainder_is(r: int) -> RowPredicate:
    return lambda t: t.path == "sampled" and t.remainder == r


def remainder_at_least(r: int) -> RowPredicate:
    return lambda t: t.path == "sampled" and (t.remainder or 0) >= r


def u_on_interval_edge(first: bool) -> RowPredicate:
    """u (clause 9.4) is the first (or last) ticket of the chosen token's interval (clause 9.5)."""

    def pred(trace: RowTrace) -> bool:
        if trace.path != "sampled" or trace.u is None:
            return False
        start = 0
        for tid, t in zip(trace.support_ids, trace.support_tickets, strict=True):
            if start <= trace.u < start + t:
                assert tid == trace.token
                return trace.u == (start if first else start + t - 1)
            start += t
        raise AssertionError("u outside the support")

    return pred


def has_subnormal(field: str) -> RowPredicate:
    """Some binary32 value of trace field d / z / e is subnormal (clause 0.3)."""

    def pred(trace: RowTrace) -> bool:
        vals: tuple[int, ...] = getattr(trace, field)
        return any((v & 0x7F800000) == 0 and (v & 0x7FFFFF) != 0 for v in vals)

    return pred


def has_value(field: str, bits: int) -> RowPredicate:
    return lambda t: bits in getattr(t, field)


def path_is(path: str) -> RowPredicate:
    return lambda t: t.path == path


def status_is(status: int) -> RowPredicate:
    return lambda t: t.status == status


def any_row(pred: RowPredicate, what: str) -> Callable[[Case, list[RowTrace]], None]:
    def check(case: Case, traces: list[RowTrace]) -> None:
        if not any(pred(t) for t in traces):
            raise AssertionError(f"{case.comment!r}: no row has the property {what!r}")

    return check


def every_row(pred: RowPredicate, what: str) -> Callable[[Case, list[RowTrace]], None]:
    def check(case: Case, traces: list[RowTrace]) -> None:
        bad = [i for i, t in enumerate(traces) if not pred(t)]
        if bad:
            raise AssertionError(f"{case.comment!r}: rows {bad} lack the property {what!r}")

    return check


# ---- mistakes whose effect on the outputs needs a searched input (vectors/search_edges.py)


def pick_token(support_ids: Sequence[int], support_tickets: Sequence[int], u: int) -> int:
    """Clause 9.5: the support entry whose half-open cumulative interval holds u."""
    start = 0
    for tid, t in zip(support_ids, support_tickets, strict=True):
        if start <= u < start + t:
            return tid
        start += t
    raise AssertionError("u outside the support")


def philox_mulhi_double(counter: Sequence[int], key: Sequence[int]) -> tuple[int, int, int, int]:
    """Philox4x32-10 (clause 9.1) with each high product word taken through binary64:
    hi = floor(RN64(M * c) / 2^32) (Python floats are IEEE binary64, the product is one rounding);
    the low words are exact."""
    from dyadic24.reference.philox import M0, M1, ROUNDS, W0, W1

    m32 = 0xFFFFFFFF
    c0, c1, c2, c3 = (w & m32 for w in counter)
    k0, k1 = key[0] & m32, key[1] & m32
    for r in range(ROUNDS):
        if r:
            k0 = (k0 + W0) & m32
            k1 = (k1 + W1) & m32
        hi0 = math.floor(float(M0) * float(c0) / 2.0**32)
        hi1 = math.floor(float(M1) * float(c2) / 2.0**32)
        lo0, lo1 = (M0 * c0) & m32, (M1 * c2) & m32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def philox_double_token(seed: int, round: int, position: int, trace: RowTrace) -> tuple[tuple[int, int], int]:
    """(key, token) of a sampled row under the binary64-product Philox (clauses 9.2-9.5)."""
    from dyadic24.reference.philox import DOMAIN_WORD

    m32 = 0xFFFFFFFF
    k = philox_mulhi_double((DOMAIN_WORD, 0, 0, 0), (seed & m32, seed >> 32))[:2]
    x = philox_mulhi_double((position & m32, position >> 32, round & m32, round >> 32), k)
    return (k[0], k[1]), pick_token(trace.support_ids, trace.support_tickets, x[0] >> 8)


def philox_double_changes_token(key_differs: bool) -> Callable[[Case, list[RowTrace]], None]:
    """Some sampled row draws another token when Philox's products are taken in binary64, and its
    proposal key (clause 9.2) differs (``key_differs``) or is right while the block (9.3) is not."""

    def check(case: Case, traces: list[RowTrace]) -> None:
        seeds, rounds, positions = case.seeds()
        for s, n, p, t in zip(seeds, rounds, positions, traces, strict=True):
            if t.path != "sampled" or t.key is None:
                continue
            key, token = philox_double_token(s, n, p, t)
            if (key != tuple(t.key)) == key_differs and token != t.token:
                return
        what = "key" if key_differs else "block (with the right key)"
        raise AssertionError(f"{case.comment!r}: no row whose binary64-product {what} changes the token")

    return check


def p_reciprocal_changes_count(trace: RowTrace) -> bool:
    """Some count of a token other than a* differs with p = RN64(e * RN64(1/S)) (clause 7.1), so the
    tickets differ (the argmax's own count does not matter: its tickets are 2^24 minus the others')."""
    if trace.path != "sampled":
        return False
    s = exact_s(trace)
    inv = 1.0 / s
    a = argmax_slot(trace)
    for i, (e, c) in enumerate(zip(slot_e(trace), trace.counts, strict=False)):
        if i != a and math.floor(e * inv * TICKETS) != c:
            return True
    return False


def is_subnormal32(bits: int) -> bool:
    return (bits & 0x7F800000) == 0 and (bits & 0x7FFFFF) != 0


def ftz_exp_changes_tickets(trace: RowTrace) -> bool:
    """Flushing the subnormal e to +0 (FTZ, clause 5.3) changes S and the tickets."""
    if trace.path != "sampled" or not any(is_subnormal32(b) for b in trace.e_bits):
        return False
    flushed = [0.0 if is_subnormal32(b) else f32_value(b) for b in trace.e_bits]
    vals = (flushed + [0.0] * 32)[:32]
    s = tree_sum(vals)
    if s == exact_s(trace):
        return False
    return allocate_slots(vals, s, argmax_slot(trace))[: slot_count(trace)] != list(trace.slot_tickets)


TILE = 4096  # the tile width of the tiled mutants (conformance/mutants/tiled.py)


def tiled_softmax_e(logits: Sequence[int], trace: RowTrace, tau_bits: int) -> list[int]:
    """e per slot by a vocabulary-tiled softmax: RN32(RN32(exp(RN32(RN32(l - m_t) / tau))) *
    RN32(exp(RN32(RN32(m_t - m) / tau)))), m_t the largest candidate logit of the token's tile of
    4,096 IDs; exact IEEE operations (reference.ieee) and the correctly rounded exp."""
    from dyadic24.reference.exp_exact import exp32
    from dyadic24.reference.ieee import NEG_INF32, decode32, div32, key32, round_binary32, sub32

    m = trace.m_bits or 0
    tile_max: dict[int, int] = {}
    for tid in trace.slot_ids:
        b = int(logits[tid])
        best = tile_max.get(tid // TILE)
        if best is None or key32(b) > key32(best):
            tile_max[tid // TILE] = b
    out = []
    for tid in trace.slot_ids:
        b = int(logits[tid])
        if b == NEG_INF32:
            out.append(0)
            continue
        m_t = tile_max[tid // TILE]
        local = exp32(div32(sub32(b, m_t), tau_bits))
        factor = exp32(div32(sub32(m_t, m), tau_bits))
        out.append(round_binary32(decode32(local) * decode32(factor)))
    return out


def tiled_softmax_changes_tickets(case: Case, traces: list[RowTrace]) -> None:
    """Some sampled row gets other tickets from the tiled softmax's e (clause 5.3)."""
    for r, t in zip(case.rows, traces, strict=True):
        if t.path != "sampled":
            continue
        e_bits = tiled_softmax_e([int(v) for v in r.logits], t, case.tau_bits)
        if e_bits == list(t.e_bits):
            continue
        vals = ([f32_value(b) for b in e_bits] + [0.0] * 32)[:32]
        alt = allocate_slots(vals, tree_sum(vals), argmax_slot(t))[: slot_count(t)]
        if alt != list(t.slot_tickets):
            return
    raise AssertionError(f"{case.comment!r}: the tiled softmax gives the same tickets")


def tiles_reversed_order(logits: Sequence[int]) -> list[int]:
    """Every ID in the order of a merge of per-tile lists that takes ties from the later tile first:
    value descending (clause 3.1 equality), then tile descending, then ID ascending within the tile."""
    from dyadic24.reference.ieee import key32

    return sorted(range(len(logits)), key=lambda i: (-key32(int(logits[i])), -(i // TILE), i))


def tiled_merge_changes_outputs(case: Case, traces: list[RowTrace]) -> None:
    """Some row's outputs change when ties across tiles go to the later tile (clause 3.1): its greedy
    token, its tickets (a* moves and R > 0), or its ids (a support token drops out of C)."""
    for r, t in zip(case.rows, traces, strict=True):
        if t.path not in ("sampled", "greedy") or t.order is None:
            continue
        order = tiles_reversed_order([int(v) for v in r.logits])[: len(t.order)]
        if order[0] != t.argmax and (t.path == "greedy" or t.remainder):
            return
        if set(t.support_ids) - set(order):
            return
    raise AssertionError(f"{case.comment!r}: merging ties from the later tile changes no output")

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

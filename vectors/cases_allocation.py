"""golden_allocation.json: floor-first allocation and the support (clauses 7.1-7.4, 8.1)."""

from __future__ import annotations

import math

import numpy as np

from dyadic24.api import TICKETS, RowTrace
from dyadic24.vectors.case import NINF, ONE, PZERO, Case, case, f32, row
from dyadic24.vectors.checks import (
    any_row,
    f64_value,
    largest_remainder_differs,
    near_integer_count,
    p_reciprocal_changes_count,
    remainder_at_least,
    remainder_is,
    slot_e,
)
from dyadic24.vectors.found_inputs import found
from dyadic24.vectors.rows import bell, uniform


def remainder_not_first(trace: RowTrace) -> bool:
    """R > 0 and a* is not the first support entry (catches R given to entry 0)."""
    return trace.path == "sampled" and bool(trace.remainder) and trace.support_ids[0] != trace.argmax


def zero_ticket_candidate(trace: RowTrace) -> bool:
    """Some candidate has e > 0 and no tickets (it must not appear in the support, clause 8.1)."""
    if trace.path != "sampled":
        return False
    return any(e > 0 and t == 0 for e, t in zip(slot_e(trace), trace.slot_tickets, strict=False))


def p_binary32_differs(trace: RowTrace) -> bool:
    """p = RN32(e / RN32(S)) and floor(p * 2^24) give other tickets."""
    if trace.path != "sampled":
        return False
    s32 = np.float32(f64_value(trace.s_bits or 0))
    c = [math.floor(float(np.float32(np.float32(e) / s32)) * TICKETS) for e in slot_e(trace)][
        : len(trace.slot_ids)
    ]
    t = list(c)
    t[trace.slot_ids.index(trace.argmax)] += TICKETS - sum(c)
    return t != list(trace.slot_tickets)


def cases() -> list[Case]:
    out = []
    for n in range(4):
        bits = bell(f"alloc-lr-{n}", 32 + 16 * n, scale=1.5)
        out.append(
            case(
                f"bell row {n} (V = {32 + 16 * n}): largest-remainder allocation differs",
                ["largest_remainder_differs"],
                row(bits),
                checks=[any_row(largest_remainder_differs, "Hamilton differs")],
            )
        )
    for n, fbits in enumerate(found().rows["near_integer"]):
        out.append(
            case(
                f"some p * 2^24 within 2^-20 of an integer (row {n})",
                ["near_integer_count"],
                row(np.array(fbits, dtype=np.uint32)),
                checks=[any_row(near_integer_count(-20, exact=False), "p * 2^24 near an integer")],
            )
        )
    for n, (zb, zc) in enumerate(found().pairs_to_one[:3]):
        fbits = [PZERO, zb, zc] + [NINF] * (5 + n)
        out.append(
            case(
                f"e = 1, e_b, e_c with e_b + e_c = 1: S = 2, every count exact, R = 0 (pair {n})",
                ["near_integer_count", "remainder_zero", "tau_one", "few_finite"],
                row(np.array(fbits, dtype=np.uint32)),
                tau_bits=ONE,
                checks=[
                    any_row(remainder_is(0), "R = 0"),
                    any_row(near_integer_count(-20, exact=True), "exact integer count"),
                ],
            )
        )
    out.append(
        case(
            "16 equal logits: S = 16, p = 1/16, R = 0",
            ["remainder_zero", "argmax_tie", "vocab_lt_32"],
            row(np.full(16, f32(3.0), dtype=np.uint32)),
            checks=[any_row(remainder_is(0), "R = 0")],
        )
    )
    out.append(
        case(
            "V = 1 sampled: R = 0",
            ["remainder_zero", "vocab_1"],
            row([f32(1.0)]),
            checks=[any_row(remainder_is(0), "R = 0")],
        )
    )
    for n, (r, fbits) in enumerate(found().remainder_max):
        out.append(
            case(
                f"[0, x * 31] with tau = 1: R = {r}, the largest found (row {n})",
                ["remainder_max", "tau_one"],
                row(np.array(fbits, dtype=np.uint32)),
                tau_bits=ONE,
                checks=[any_row(remainder_at_least(r), f"R >= {r}")],
            )
        )
    for n in range(3):
        bits = uniform(f"alloc-r2a-{n}", 40, -3.0, 0.0)
        bits[30 + n] = f32(1.0)
        out.append(
            case(
                f"a* = {30 + n} is not the first support entry and R > 0",
                ["remainder_to_argmax"],
                row(bits),
                checks=[any_row(remainder_not_first, "R to a*, not to entry 0")],
            )
        )
    for n, spread in enumerate((30.0, 25.0, 40.0)):
        bits = uniform(f"alloc-zero-{n}", 48, -spread, 0.0)
        out.append(
            case(
                f"candidates with e > 0 but no tickets (logits in [-{spread:g}, 0])",
                ["zero_ticket_excluded"],
                row(bits),
                checks=[any_row(zero_ticket_candidate, "e > 0, t = 0")],
            )
        )
    for n, fbits in enumerate(found().rows["variant_p_binary32"]):
        out.append(
            case(
                f"p in binary32 changes the tickets (row {n})",
                ["p_binary32"],
                row(np.array(fbits, dtype=np.uint32)),
                checks=[any_row(p_binary32_differs, "binary32 p differs")],
            )
        )
    for n, hexrow in enumerate(found().extra["pReciprocal"]):
        out.append(
            case(
                f"[0, z1, z2] with tau = 1: p = e * RN64(1/S) changes a count (row {n})",
                ["p_reciprocal", "tau_one", "vocab_lt_32"],
                row(np.array([int(w, 16) for w in hexrow], dtype=np.uint32)),
                tau_bits=ONE,
                checks=[any_row(p_reciprocal_changes_count, "reciprocal p changes a count")],
            )
        )
    return out

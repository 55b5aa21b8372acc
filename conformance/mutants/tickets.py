"""Ticket mistakes: normalisation (clause 7.1), counts (7.2), the remainder (7.3)."""

from __future__ import annotations

import numpy as np

from dyadic24.api import TICKETS
from dyadic24.conformance.mutants._base import with_stages
from dyadic24.reference.fast import F32, F64, I64


def probabilities_binary32(e_slots: F32, s: F64) -> F64:
    """p = RN32(e / RN32(S)): the normalisation done in binary32."""
    p32 = np.divide(e_slots, s.astype(np.float32)[:, None], dtype=np.float32)
    return p32.astype(np.float64)


def probabilities_reciprocal(e_slots: F32, s: F64) -> F64:
    """p = RN64(e * RN64(1 / S)): one division per row and a multiplication per slot, the strength
    reduction every compiler makes under fast-math and hand-written kernels make to save K - 1
    divisions. Two roundings instead of one: p is off by one binary64 ulp for many slots, which
    changes a count only when e / S * 2^24 lies within about one ulp of an integer (rare: a few rows
    per billion), so the tickets differ in those rows only."""
    inv = 1.0 / s
    return e_slots.astype(np.float64) * inv[:, None]


def counts_rounded(p: F64) -> I64:
    """c = round(p * 2^24) instead of floor."""
    return np.rint(p * float(TICKETS)).astype(np.int64)


def allocate_largest_remainder(p: F64, c: I64, argmax_slot: I64) -> I64:
    """The remainder spread one ticket each over the largest fractional parts (Hamilton's method)."""
    del argmax_slot
    frac = p * float(TICKETS) - c
    remainder = TICKETS - c.sum(axis=1)
    order = np.argsort(-frac, axis=1, kind="stable")
    t = c.copy()
    for r in range(t.shape[0]):
        t[r, order[r, : int(remainder[r])]] += 1
    return t


def allocate_lowest_id(p: F64, c: I64, argmax_slot: I64) -> I64:
    """The remainder given to slot 0, the lowest token ID of C."""
    del p, argmax_slot
    t = c.copy()
    t[:, 0] += TICKETS - c.sum(axis=1)
    return t


def allocate_highest_count(p: F64, c: I64, argmax_slot: I64) -> I64:
    """The remainder given to the slot with the most tickets (np.argmax: the lowest ID among equal counts)."""
    del p, argmax_slot
    t = c.copy()
    t[np.arange(t.shape[0]), np.argmax(c, axis=1)] += TICKETS - c.sum(axis=1)
    return t


FAMILY = {
    "p_binary32": (
        with_stages("p_binary32", probabilities=probabilities_binary32),
        "7.1",
        "p = e / S computed in binary32",
    ),
    "p_reciprocal": (
        with_stages("p_reciprocal", probabilities=probabilities_reciprocal),
        "7.1",
        "p = e * RN64(1/S) instead of the IEEE division RN64(e / S)",
    ),
    "counts_rounded": (
        with_stages("counts_rounded", counts=counts_rounded),
        "7.2",
        "c = round(p * 2^24) instead of floor",
    ),
    "largest_remainder": (
        with_stages("largest_remainder", allocate=allocate_largest_remainder),
        "7.3",
        "the remainder R spread over the largest fractional parts (largest-remainder method)",
    ),
    "remainder_lowest_id": (
        with_stages("remainder_lowest_id", allocate=allocate_lowest_id),
        "7.3",
        "the remainder R given to the lowest token ID instead of a*",
    ),
    "remainder_highest_count": (
        with_stages("remainder_highest_count", allocate=allocate_highest_count),
        "7.3",
        "the remainder R given to the token with the highest count (lowest ID among equal counts)",
    ),
}

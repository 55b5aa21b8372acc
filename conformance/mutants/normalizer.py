"""Normaliser mistakes: slot placement (clause 6.1) and summation order (clause 6.2)."""

from __future__ import annotations

import numpy as np

from dyadic24.conformance.mutants._base import with_stages
from dyadic24.reference.fast import F32, F64, I64


def sum_sequential(e_slots: F32) -> F64:
    """S = (((e0 + e1) + e2) + ...) in binary64: a plain loop over the slots."""
    return np.cumsum(e_slots.astype(np.float64), axis=1)[:, -1]


def sum_numpy_pairwise(e_slots: F32) -> F64:
    """S = np.sum over the 32 slots: numpy's 8-accumulator pairwise sum, not the 5-level tree."""
    wide = e_slots.astype(np.float64)
    return np.array([np.sum(row) for row in wide], dtype=np.float64)


def sum_descending(e_slots: F32) -> F64:
    """S summed from the largest value down (the "accurate summation" habit), sequentially."""
    wide = -np.sort(-e_slots.astype(np.float64), axis=1)
    return np.cumsum(wide, axis=1)[:, -1]


def slots_skip_neg_inf(ids: I64, l_c: F32) -> I64:
    """Only finite candidates packed into the leading slots (ascending ID), -inf candidates after them."""
    return np.lexsort((ids, np.isneginf(l_c)), axis=1).astype(np.int64)


def slots_in_rank_order(ids: I64, l_c: F32) -> I64:
    """Slots filled in the order of C (largest logit first) instead of ascending token ID."""
    del l_c
    return np.broadcast_to(np.arange(ids.shape[1], dtype=np.int64), ids.shape).copy()


FAMILY = {
    "sum_sequential": (
        with_stages("sum_sequential", normalizer=sum_sequential),
        "6.2",
        "S summed sequentially in binary64 instead of the 5-level pairwise tree",
    ),
    "sum_numpy_pairwise": (
        with_stages("sum_numpy_pairwise", normalizer=sum_numpy_pairwise),
        "6.2",
        "S = np.sum over the 32 slots (numpy's own pairwise scheme)",
    ),
    "sum_descending": (
        with_stages("sum_descending", normalizer=sum_descending),
        "6.2",
        "S summed in descending-value order",
    ),
    "slots_skip_neg_inf": (
        with_stages("slots_skip_neg_inf", slot_order=slots_skip_neg_inf),
        "6.1",
        "the tree skips -inf slots: finite values packed into the leading slots",
    ),
    "slots_in_rank_order": (
        with_stages("slots_in_rank_order", slot_order=slots_in_rank_order),
        "6.1",
        "slots filled in candidate (logit) order instead of ascending token ID",
    ),
}

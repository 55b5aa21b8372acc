"""Candidate-order mistakes (clause 3.1)."""

from __future__ import annotations

import numpy as np

from dyadic24.conformance.mutants._base import with_stages
from dyadic24.reference.fast import F32, I64, U32, order_key32, top_k_by_key

_SIGN = np.uint32(0x80000000)


def select_ties_higher_id(logits: F32, k: int) -> I64:
    """Equal logits ordered by descending ID (e.g. a descending stable sort of (logit, id) pairs)."""
    rank = np.arange(logits.shape[1], dtype=np.uint64)
    key = (order_key32(logits).astype(np.uint64) << np.uint64(32)) | rank
    return top_k_by_key(key, k)


def raw_key32(logits: F32) -> U32:
    """The usual radix-select key of the raw bits, without canonicalising -0: -0 sorts below +0."""
    bits = np.ascontiguousarray(logits).view(np.uint32)
    return np.where(bits >= _SIGN, ~bits, bits | _SIGN)


def select_negzero_below(logits: F32, k: int) -> I64:
    v = logits.shape[1]
    rank = np.uint64(0xFFFFFFFF) - np.arange(v, dtype=np.uint64)
    key = (raw_key32(logits).astype(np.uint64) << np.uint64(32)) | rank
    return top_k_by_key(key, k)


FAMILY = {
    "ties_higher_id": (
        with_stages("ties_higher_id", select=select_ties_higher_id),
        "3.1",
        "equal logits ordered with the higher token ID first",
    ),
    "negzero_below_poszero": (
        with_stages("negzero_below_poszero", select=select_negzero_below),
        "3.1",
        "-0 ordered below +0 (radix select on the raw bits), so +0 wins a tie with a lower-ID -0",
    ),
}

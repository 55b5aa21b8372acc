"""Support-order mistakes (clause 8.1)."""

from __future__ import annotations

import numpy as np

from dyadic24.conformance.mutants._base import with_stages
from dyadic24.reference.fast import F32, I32, I64, order_key32


def support_by_logit(slot_ids: I64, t: I64, slot_logits: F32) -> tuple[I32, I32]:
    """The support listed in candidate order (largest logit first, ties by ID) instead of ascending ID."""
    key = order_key32(slot_logits).astype(np.int64)
    live = t > 0
    order = np.lexsort((slot_ids, -key, ~live), axis=1)
    ids = np.take_along_axis(slot_ids, order, axis=1)
    tickets = np.take_along_axis(t, order, axis=1)
    keep = tickets > 0
    return np.where(keep, ids, -1).astype(np.int32), np.where(keep, tickets, 0).astype(np.int32)


FAMILY = {
    "support_by_logit": (
        with_stages("support_by_logit", support=support_by_logit),
        "8.1",
        "support listed by descending logit instead of ascending token ID (the draw then follows that order)",
    ),
}

"""Batch-level mistakes: a row's outputs depending on the other rows (clause 2.4)."""

from __future__ import annotations

import numpy as np

from dyadic24.api import Status
from dyadic24.conformance.mutants._base import with_stages
from dyadic24.reference.fast import F32, I32, screen_default


def screen_batchwide(logits: F32, temperature: F32) -> tuple[I32, F32]:
    """One isnan().any() / isinf().any() over the whole batch: one bad row fails every row."""
    status, out = screen_default(logits, temperature)
    if np.isnan(logits).any():
        status[:] = Status.NAN_LOGIT
    elif (logits == np.inf).any():
        status[:] = Status.POS_INF_LOGIT
    return status, out


FAMILY = {
    "batch_failure": (
        with_stages("batch_failure", screen=screen_batchwide),
        "2.4",
        "a NaN or +inf logit in one row fails the whole batch (batch-wide isnan/isinf check)",
    ),
}

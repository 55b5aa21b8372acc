"""Row-status mistakes (clause 2.1)."""

from __future__ import annotations

import numpy as np

from dyadic24.api import Status
from dyadic24.conformance.mutants._base import with_stages
from dyadic24.reference.fast import F32, I32, screen_default


def screen_nan_as_neg_inf(logits: F32, temperature: F32) -> tuple[I32, F32]:
    """NaN logits masked to -inf (a "sanitize the logits" pass) instead of failing the row."""
    cleaned = np.where(np.isnan(logits), np.float32(-np.inf), logits).astype(np.float32)
    return screen_default(cleaned, temperature)


def screen_pos_inf_ok(logits: F32, temperature: F32) -> tuple[I32, F32]:
    """Only NaN and all -inf checked: a +inf logit is treated as an ordinary (largest) value."""
    status, out = screen_default(logits, temperature)
    t = temperature
    bad_t = np.isnan(t) | (t < 0) | (t == np.inf)
    pos = status == Status.POS_INF_LOGIT
    status[pos] = np.where(bad_t[pos], Status.BAD_TEMPERATURE, Status.OK)
    return status, out


def screen_negzero_temperature_bad(logits: F32, temperature: F32) -> tuple[I32, F32]:
    """ "T < 0" tested on the sign bit, so T = -0 is a bad temperature instead of greedy."""
    status, out = screen_default(logits, temperature)
    neg_zero = (temperature == 0) & np.signbit(temperature)
    status[neg_zero & (status == Status.OK)] = Status.BAD_TEMPERATURE
    return status, out


FAMILY = {
    "nan_as_neg_inf": (
        with_stages("nan_as_neg_inf", screen=screen_nan_as_neg_inf),
        "2.1",
        "NaN logits treated as -inf (masked) instead of failing the row with NAN_LOGIT",
    ),
    "pos_inf_ok": (
        with_stages("pos_inf_ok", screen=screen_pos_inf_ok),
        "2.1",
        "a +inf logit does not fail the row (no POS_INF_LOGIT status)",
    ),
    "negzero_temperature_bad": (
        with_stages("negzero_temperature_bad", screen=screen_negzero_temperature_bad),
        "2.1",
        "T = -0 rejected as negative (sign-bit test) instead of greedy",
    ),
}

"""exp mistakes (clause 5.3): not correctly rounded, or subnormal results flushed."""

from __future__ import annotations

import numpy as np

from dyadic24.conformance.mutants._base import with_stages
from dyadic24.reference.fast import F32
from dyadic24.reference.fast_exp import exp32_np

_LOG2E = np.float32(1.4426950408889634)
_MIN_NORMAL = np.float32(2.0**-126)


def exp_fp32(z: F32) -> F32:
    """numpy's binary32 exp (vectorised, accurate to about 1 ulp, not correctly rounded)."""
    return np.exp(z, dtype=np.float32)


def exp2_log2e(z: F32) -> F32:
    """exp2(z * log2(e)) in binary32, the usual GPU fast exp."""
    return np.exp2(np.multiply(z, _LOG2E, dtype=np.float32), dtype=np.float32)


def exp_ftz(z: F32) -> F32:
    """Correctly rounded, but subnormal results flushed to +0 (FTZ)."""
    e = exp32_np(z)
    return np.where(e < _MIN_NORMAL, np.float32(0.0), e).astype(np.float32)


FAMILY = {
    "exp_fp32": (with_stages("exp_fp32", exp=exp_fp32), "5.3", "binary32 numpy exp, not correctly rounded"),
    "exp2_log2e": (
        with_stages("exp2_log2e", exp=exp2_log2e),
        "5.3",
        "exp computed as exp2(z * log2e) in binary32",
    ),
    "ftz_exp": (
        with_stages("ftz_exp", exp=exp_ftz),
        "5.3",
        "subnormal exp results flushed to zero (FTZ)",
    ),
}

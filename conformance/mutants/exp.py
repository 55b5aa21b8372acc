"""exp mistakes (clause 5.3): not correctly rounded, or subnormal results flushed."""

from __future__ import annotations

import mpmath
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
    """exp2(z * log2(e)) in binary32, the usual GPU fast exp: the product rounded to binary32, then 2 to
    that power rounded to binary32. The power is taken with mpmath (96 bits, then binary64, then
    binary32) rather than numpy's binary32 exp2, whose SIMD code differs between CPUs (AVX-512 and
    AVX2 hosts gave different last bits), so that the kill matrix is the same on every machine."""
    p = np.multiply(z, _LOG2E, dtype=np.float32)
    flat = np.clip(p.astype(np.float64).ravel(), -400.0, 400.0)  # (beyond: 0 / inf in binary32 either way)
    with mpmath.workprec(96):
        pw = [float(mpmath.power(2, mpmath.mpf(v))) if np.isfinite(v) else float(np.exp2(v)) for v in flat]
    return np.asarray(pw, dtype=np.float64).astype(np.float32).reshape(np.shape(p))


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

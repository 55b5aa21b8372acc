"""Correctly rounded binary32 exp on numpy arrays (clause 5.3), for the fast reference.

Method: y = exp(z) in binary64 (z is exact in binary64), r = RN32(y) by numpy's binary64 -> binary32
conversion (round to nearest even, gradual underflow, overflow to inf). r is the correctly rounded
result unless a binary32 rounding midpoint lies between y and the exact exp(z). Lanes where y lies
within 2^-48 (relative) of a midpoint are recomputed by the exact reference exp32 (exp_exact).

Why the margin is safe: numpy's binary64 exp errs by less than 1 ulp of binary64. On x86-64 with
AVX-512F numpy uses its own table-driven kernel (Tang's method; measured worst case 0.66 ulp, about
2^-52.8 relative, over 2e5 inputs in [-104, 0]); elsewhere it calls the C library's exp (glibc: below
1 ulp). So |y - exp(z)| <= 2^-52 * exp(z), and if neither midpoint next to y is within 2^-48 * y, exp(z)
lies on the same side of both as y, and RN32(y) == RN32(exp(z)). The margin covers an exp that errs
by up to 8 ulp; tests/test_fast_exp.py checks the binary64 error (< 2^-51) on the machine running them.

The flag is computed exactly: midpoints of adjacent binary32 values have 25 significant bits (exact
in binary64, down to the midpoint 2^-150 between +0 and the least subnormal), 2^-48 * y is exact,
and y - mid is exact whenever it is anywhere near that limit (y and mid then agree within a factor 2:
Sterbenz's lemma), so rounding never moves a lane across the limit.
Positive z (outside the proposal rule, where z <= 0) is handled too, including the overflow
threshold 2^128 - 2^103, which is the midpoint between the largest finite binary32 and 2^128.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

MARGIN = 2.0**-48  # relative distance to a rounding midpoint below which the exact exp decides
_TWO_128 = 2.0**128  # the binary32 value "after" the largest finite one, for the overflow midpoint
_F32_MAX = np.float32(np.finfo(np.float32).max)


def near_midpoint(y: npt.NDArray[np.float64], r: npt.NDArray[np.float32]) -> npt.NDArray[np.bool_]:
    """Lanes where y (binary64, >= 0) lies within MARGIN * y of a rounding midpoint next to r = RN32(y)."""
    with np.errstate(over="ignore", invalid="ignore"):
        r64 = r.astype(np.float64)
        up64 = np.nextafter(r, np.float32(np.inf)).astype(np.float64)
        down64 = np.nextafter(r, np.float32(-np.inf)).astype(np.float64)
        # Beyond the largest finite binary32 the rounding grid continues at 2^128 (clause 0.3 overflow).
        r64 = np.where(np.isinf(r), _TWO_128, r64)
        up64 = np.where(r == _F32_MAX, _TWO_128, up64)
        down64 = np.where(np.isinf(r), np.float64(_F32_MAX), down64)
        mid_up = (r64 + up64) * 0.5
        mid_down = (r64 + down64) * 0.5
        limit = y * MARGIN
        flagged = (np.abs(y - mid_up) <= limit) | (np.abs(y - mid_down) <= limit)
    # y == 0 (binary64 underflow, exact exp far below 2^-150) and y == inf (z = +inf) are exact cases.
    return flagged & np.isfinite(y) & (y > 0)


def exp32_np(z: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """RN32(exp(z)) elementwise for binary32 z, subnormal results kept, exp(-inf) = +0 (clause 5.3)."""
    z = np.ascontiguousarray(z)
    if z.dtype != np.float32:
        raise TypeError(f"exp32_np: z must be float32, got {z.dtype}")
    with np.errstate(over="ignore", under="ignore"):
        y = np.exp(z.astype(np.float64))
        r = y.astype(np.float32)
    flagged = near_midpoint(y, r)
    if flagged.any():
        from dyadic24.reference.exp_exact import exp32

        flat_z = z.reshape(-1).view(np.uint32)
        flat_r = r.reshape(-1).view(np.uint32)
        for i in np.flatnonzero(flagged.reshape(-1)).tolist():
            flat_r[i] = exp32(int(flat_z[i]))
    return r

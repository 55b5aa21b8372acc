# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""Correctly rounded binary32 exp for the kernels (clause 5.3), shared by the rule and the sweep.

Method: y = exp(z) in binary64 (z is exact in binary64; ``tl.exp`` on float64 is libdevice's
``__nv_exp`` on the GPU and numpy's exp under the interpreter), then RN32(y) by the integer routine
:func:`round_to_binary32`, which also reports how far y lies from a binary32 rounding midpoint.

Why a lane that is not flagged is correctly rounded: both binary64 exps are accurate to within 1 ulp
of binary64 (libdevice documents 1 ulp for exp; numpy's AVX-512 kernel 0.54 ulp, glibc < 1 ulp), so
|y - exp(z)| < 2 ulp64(y) (the factor 2 covers exp(z) in the next binade). The lane is flagged when
y is within FLAG_ULPS = 16 ulp64(y) of a midpoint; otherwise exp(z) lies strictly on the same side
of every midpoint as y, and RN32(y) = RN32(exp(z)). (The bound leaves a factor of 8 for an error
model up to 8 ulp.)

Why a flagged lane is in the correction table: |exp(z) - mid| <= |y - mid| + |y - exp(z)| <
18 ulp64(y) <= 18 * 2^-52 * y < 2^-47 * mid (y and mid within 2^-47 of each other), and the table
(vectors/data/exp_near_midpoints.json) lists every binary32 z in [-104, 0] whose exact exp lies within
2^-47 (relative) of a midpoint, with its correctly rounded result. Outside [-104, 0) no lookup is
needed: exp(-0) = exp(+0) = 1 exactly, and for z < -104 (including -inf, clause 5.3) exp(z) <
exp(-104) < 0.97 * 2^-150, below the midpoint between +0 and the least subnormal, so the result is
+0. z is never positive or NaN in the rule (z = RN32(d / tau) with d <= 0, tau > 0).

The table lookup is a branch-free binary search with a fixed iteration count over the z bit
patterns, sorted ascending (all z in the table are negative, so their patterns are >= 2^31).
"""

from dyadic24.kernels.backend import select_backend

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from dyadic24.kernels.ieee_jit import round_to_binary32, widen32to64  # noqa: E402

FLAG_ULPS = tl.constexpr(16)
Z_MIN_MAG = tl.constexpr(0x42D00000)  # |z| = 104


@triton.jit
def exp_binary32(z, tab_z_ptr, tab_e_ptr, tab_n, TAB_ITERS: tl.constexpr):
    """RN32(exp(z)) for binary32 patterns z (int64 in [0, 2^32)); clause 5.3.

    Returns (e, flagged, found): e the binary32 result pattern, flagged the lanes near a midpoint
    whose result comes from the table, found the flagged lanes the table holds (diagnostics: by the
    argument above every flagged lane is found). TAB_ITERS must be >= bit_length(tab_n).
    """
    mag = z & 0x7FFFFFFF
    neg = ((z >> 31) & 1) == 1
    y = tl.exp(widen32to64(z))
    r, dist = round_to_binary32(y.to(tl.int64, bitcast=True))
    flagged = neg & (mag != 0) & (mag <= Z_MIN_MAG) & (dist <= FLAG_ULPS)
    found = flagged & False
    if tl.max(flagged.to(tl.int32)) != 0:  # (rare: the search's dependent loads are skipped)
        lo = tl.zeros_like(z)
        hi = tl.zeros_like(z) + tab_n
        for _ in tl.static_range(TAB_ITERS):
            active = flagged & (lo < hi)
            mid = (lo + hi) >> 1
            v = tl.load(tab_z_ptr + mid, mask=active, other=0)
            right = v < z
            lo = tl.where(active & right, mid + 1, lo)
            hi = tl.where(active & (v >= z), mid, hi)
        at = flagged & (lo < tab_n)
        zv = tl.load(tab_z_ptr + lo, mask=at, other=-1)
        found = at & (zv == z)
        ev = tl.load(tab_e_ptr + lo, mask=found, other=0)
        r = tl.where(found, ev, r)
    r = tl.where(mag == 0, 0x3F800000, r)
    r = tl.where(neg & (mag > Z_MIN_MAG), 0, r)
    return r, flagged, found

# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""Kernel of the exhaustive exp sweep: the rule's exp routine against an independent binary64 check.

For every binary32 pattern z in a range, ``sweep_kernel`` computes r = exp_binary32(z) (the very
function the proposal kernel calls, clause 5.3) and decides whether r is RN32(exp(z)) by locating an
independently computed y2 ~ exp(z) in r's rounding interval (the midpoints next to r, exact in
binary64). y2 shares nothing with the routine under test: not tl.exp (libdevice / numpy), not the
integer conversions of ieee_jit, not the table. It uses Cody-Waite reduction z = k ln2 + t (fdlibm's
ln2 split, k ln2_hi exact for |k| < 2^20), a degree-13 Taylor polynomial for |t| <= 0.35 (truncation
< 2^-57), Horner in binary64 (rounding error well below 2^-47 even in the worst-case bound 26 * 2^-53 *
exp(2|t|)) and an exact scaling by 2^k; conversions use the hardware float32 -> float64 cast.

Per z the kernel writes r and a code: bit 0 undecided (y2 within MARGIN * y2 of an end of the rounding
interval: the host decides with the exact reference), bit 1 wrong (y2 outside the interval by more
than the margin), bit 2 flagged by the routine (result from the table), bit 3 flagged and found,
bit 4 the finish's hardware path (clause5_hw_jit.exp_hw) vouched for a result that differs from r,
bit 5 the hardware path was unsure (the finish then takes exp_binary32).
"""

from dyadic24.kernels.backend import select_backend

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from dyadic24.kernels.clause5_hw_jit import bits_of_f32, exp_hw, f64_of_bits32  # noqa: E402
from dyadic24.kernels.exp_jit import exp_binary32  # noqa: E402

LN2_HI = tl.constexpr(6.93147180369123816490e-01)  # 0x3FE62E42FEE00000: 32 significant bits
LN2_LO = tl.constexpr(1.90821492927058770002e-10)  # 0x3DEA39EF35793C76
INV_LN2 = tl.constexpr(1.44269504088896338700e00)
MARGIN = tl.constexpr(2.0**-44)


@triton.jit
def independent_exp64(zf):
    """exp(zf) for binary64 zf in [-104, 0], relative error far below MARGIN (see module doc)."""
    k = (zf * INV_LN2 - 0.5).to(tl.int64)  # truncation toward zero: ceil(z/ln2 - 1/2), a nearest k
    kd = k.to(tl.float64)
    t = (zf - kd * LN2_HI) - kd * LN2_LO
    p = tl.zeros_like(t) + 1.6059043836821613e-10  # 1/13! (each coefficient is RN64(1/n!))
    p = p * t + 2.08767569878681e-09  # 1/12!
    p = p * t + 2.505210838544172e-08
    p = p * t + 2.755731922398589e-07
    p = p * t + 2.7557319223985893e-06
    p = p * t + 2.48015873015873e-05
    p = p * t + 1.984126984126984e-04
    p = p * t + 1.388888888888889e-03
    p = p * t + 8.333333333333333e-03
    p = p * t + 4.1666666666666664e-02
    p = p * t + 1.6666666666666666e-01
    p = p * t + 0.5
    p = p * t + 1.0
    p = p * t + 1.0
    scale = ((k + 1023) << 52).to(tl.float64, bitcast=True)  # 2^k, k in [-151, 0]
    return p * scale


@triton.jit(do_not_specialize=["start", "count", "tab_n"])
def sweep_kernel(
    start, count, tab_z_ptr, tab_e_ptr, tab_n, r_ptr, code_ptr, TAB_ITERS: tl.constexpr, BLOCK: tl.constexpr
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    live = offs < count
    z = (offs + start) & 0xFFFFFFFF
    r, flagged, found = exp_binary32(z, tab_z_ptr, tab_e_ptr, tab_n, TAB_ITERS)

    y2 = independent_exp64(f64_of_bits32(z))
    rv = f64_of_bits32(r)
    up = f64_of_bits32(r + 1)
    down = f64_of_bits32(tl.where(r == 0, 0, r - 1))
    mid_hi = (rv + up) * 0.5
    mid_lo = tl.where(r == 0, -1.0, (rv + down) * 0.5)  # below +0 there is no rounding boundary
    margin = y2 * MARGIN
    hi_gap = mid_hi - y2
    lo_gap = y2 - mid_lo
    ok = (hi_gap > margin) & (lo_gap > margin)
    wrong = (hi_gap < -margin) | (lo_gap < -margin)
    undecided = (ok == 0) & (wrong == 0)
    code = undecided.to(tl.int32) | (wrong.to(tl.int32) << 1) | (flagged.to(tl.int32) << 2)
    code = code | (found.to(tl.int32) << 3)
    e_hw, unsure = exp_hw(f64_of_bits32(z))
    hw_wrong = (unsure == 0) & (bits_of_f32(e_hw) != r)
    code = code | (hw_wrong.to(tl.int32) << 4) | (unsure.to(tl.int32) << 5)
    tl.store(r_ptr + offs, r.to(tl.int32), mask=live)
    tl.store(code_ptr + offs, code.to(tl.int8), mask=live)


@triton.jit(do_not_specialize=["n", "tab_n"])
def exp_kernel(z_ptr, out_ptr, n, tab_z_ptr, tab_e_ptr, tab_n, TAB_ITERS: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = exp_binary32(z[i]) for binary32 patterns (int32 views): the proposal's exp routine
    (clause 5.3) on given z, for `dyadic24 conform --exp-sweep` through the kernel adapter."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    live = offs < n
    z = tl.load(z_ptr + offs, mask=live, other=0).to(tl.int64) & 0xFFFFFFFF
    r, _flagged, _found = exp_binary32(z, tab_z_ptr, tab_e_ptr, tab_n, TAB_ITERS)
    tl.store(out_ptr + offs, r.to(tl.int32), mask=live)

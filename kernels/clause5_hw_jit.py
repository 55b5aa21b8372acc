# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""Clauses 5.1-5.3 on the hardware's binary64 unit: the finish's common case in ~60 instructions.

The integer routines of :mod:`dyadic24.kernels.ieee_jit` and :mod:`dyadic24.kernels.exp_jit` emulate
every widening and rounding with int64 operations (~800 dependent instructions per lane on an H200).
This path uses the conversions instead, which are exact or correctly rounded:

- binary32 -> binary64: ``cvt.f64.f32`` (exact; the PTX Triton emits carries no ``.ftz``, so
  subnormal inputs are widened, not flushed); numpy's astype alike under the interpreter.
- binary64 -> binary32: ``cvt.rn.f32.f64`` (round to nearest even, subnormal results kept, overflow to
  infinity; no ``.ftz``); numpy's astype alike.
- ``sub.f64`` and ``div.rn.f64``: IEEE binary64. d = RN32(RN64(l - m)) and z = RN32(RN64(d / tau))
  equal the single roundings of clauses 5.1 and 5.2 (spec Appendix B.6), subnormal and overflowing
  results included, so d and z need no check at all.
- exp: y = binary64 exp(z) (libdevice ``__nv_exp``; numpy's exp under the interpreter), then
  ``cvt.rn.f32.f64``. Correct unless y lies within FLAG_ULPS ulp64 of a binary32 rounding midpoint
  (exp_jit's argument), which for a normal binary32 result is a test on the 29 low bits of y.

A lane is ``unsure`` when its z lies in [-104, 0) and y is near a midpoint or below 2^-126 (a
subnormal binary32 result, whose dropped bits sit elsewhere); the caller then recomputes the row with
the integer routines and the near-midpoint table (exact for every input). z < -104 (including -inf)
gives +0 and z = +-0 gives 1, as in exp_jit. The PTX of these instructions is checked by
``aot_check`` (no ``.ftz`` on a conversion, ``div.rn.f64`` for the division).
"""

from dyadic24.kernels.backend import select_backend

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from dyadic24.kernels.exp_jit import FLAG_ULPS  # noqa: E402

LOW29 = tl.constexpr(0x1FFFFFFF)  # binary64 mantissa bits dropped by a normal binary32 rounding
HALF29 = tl.constexpr(1 << 28)
MIN_NORMAL32 = tl.constexpr(1.1754943508222875e-38)  # 2^-126 (exact in binary32 and binary64)


@triton.jit
def f64_of_bits32(b):
    """The binary32 value of a pattern (int64 in [0, 2^32)) as float64, exactly (clause 0.2)."""
    return b.to(tl.int32).to(tl.float32, bitcast=True).to(tl.float64)


@triton.jit
def bits_of_f32(x):
    """The binary32 pattern of a float32 tensor as int64 in [0, 2^32) (the integer routines' form)."""
    return x.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF


@triton.jit
def exp_hw(z64):
    """e = RN32(exp(z)) as float32 for binary32 values z given as float64 (clause 5.3), and ``unsure``:
    the lanes this path cannot vouch for (z in [-104, 0) with y near a midpoint or below 2^-126)."""
    y = tl.exp(z64)
    low = y.to(tl.int64, bitcast=True).to(tl.int32) & LOW29
    near = tl.abs(low - HALF29) <= FLAG_ULPS
    unsure = (z64 < 0.0) & (z64 >= -104.0) & (near | (y < MIN_NORMAL32))
    e = tl.where(z64 < -104.0, 0.0, tl.where(z64 == 0.0, 1.0, y.to(tl.float32)))
    return e, unsure


@triton.jit
def clause5_hw(lb, mb, tau_bits):
    """d, z, e (float32) of clauses 5.1-5.3 for candidate patterns lb, the maximum's pattern mb and tau's
    pattern, and ``unsure`` from exp_hw.

    Only valid for lanes of a row whose status is 0 (no NaN, no +inf, m finite); other rows take the
    integer routines."""
    d = (f64_of_bits32(lb) - f64_of_bits32(mb)).to(tl.float32)
    z = (d.to(tl.float64) / f64_of_bits32(tau_bits)).to(tl.float32)
    e, unsure = exp_hw(z.to(tl.float64))
    return d, z, e, unsure

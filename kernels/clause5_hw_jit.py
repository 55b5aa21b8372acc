# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""Clauses 5.1-5.3 on the hardware's binary64 unit: the finish's common case in ~60 instructions.

The integer routines of :mod:`dyadic24.kernels.ieee_jit` and :mod:`dyadic24.kernels.exp_jit` emulate
every widening and rounding with int64 operations (~800 dependent instructions per lane on an H200).
This path uses the conversions instead, which are exact or correctly rounded, and no branch: on the
GPU its chain then overlaps the slot order's sort (finish_jit.finish_core) instead of following it
(a libdevice exp or a binary64 division each end ptxas's scheduling region with their slow paths;
benchmarks/DESIGN.md "Finish", "Clause 5 on the binary64 unit"):

- binary32 -> binary64: ``cvt.f64.f32`` (exact; the PTX Triton emits carries no ``.ftz``, so
  subnormal inputs are widened, not flushed); numpy's astype alike under the interpreter.
- binary64 -> binary32: ``cvt.rn.f32.f64`` (round to nearest even, subnormal results kept, overflow to
  infinity; no ``.ftz``); numpy's astype alike.
- d: ``sub.f64``: d = RN32(RN64(l - m)) equals clause 5.1's single rounding (spec Appendix B.6).
- z: q = RN64(d * rtau) with rtau = RN64(1 / tau), computed once per program before the row's data
  arrive (:func:`tau_reciprocal`). |q - d / tau| < 2^-51 |d / tau| (two roundings of 2^-53), while
  d / tau lies at least 2^-49 (relative) from every rounding boundary of a normal binary32 result:
  a boundary is M 2^c with M odd, 2^24 < M < 2^25 (the overflow threshold included), d = D 2^a and
  tau = T 2^b with |D|, T < 2^24, so d - M 2^c tau = 2^g (a nonzero integer: the odd part of D
  cannot equal M times that of T), g = min(a, b + c), and |M 2^c tau| < 2^(49 + b + c). Hence
  RN32(q) = RN32(d / tau) = z. A subnormal quotient's boundaries have small M and can equal d / tau
  exactly (tau = 6, d = 3 x 2^-149), so 0 < |q| < 2^-126 is ``unsure``.
- exp: y = exp(z) in binary64 by :func:`exp64`, then ``cvt.rn.f32.f64``. Correct unless y lies within
  FLAG_ULPS ulp64 of a binary32 rounding midpoint (exp_jit's argument, which allows up to 8 ulp64 of
  error; exp64's is below 2), which for a normal binary32 result is a test on the 29 low bits of y.

A lane is ``unsure`` when its z is subnormal or lies in [-104, 0) with y near a midpoint or below
2^-126 (a subnormal binary32 result, whose dropped bits sit elsewhere); the caller then recomputes
the row with the integer routines and the near-midpoint table (exact for every input). z < -104
(including -inf) gives +0 and z = +-0 gives 1, as in exp_jit. The exhaustive sweep
(exp_sweep_jit, bit 4) checks exp_hw against exp_binary32 for every binary32 z in [-104, 0]. The
PTX of these instructions is checked by ``aot_check`` (no ``.ftz`` on a conversion, ``div.rn.f64``
for the reciprocal).
"""

from dyadic24.kernels.backend import select_backend

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from dyadic24.kernels.exp_jit import FLAG_ULPS  # noqa: E402

LOW29 = tl.constexpr(0x1FFFFFFF)  # binary64 mantissa bits dropped by a normal binary32 rounding
HALF29 = tl.constexpr(1 << 28)
MIN_NORMAL32 = tl.constexpr(1.1754943508222875e-38)  # 2^-126 (exact in binary32 and binary64)

# exp64: k = nearest integer to z / ln2 by adding 1.5 * 2^52 (the sum's rounding drops the fraction),
# r = z - k ln2 with ln2 split so that k * LN2_HI is exact for |k| < 2^9 and r's first step exact
# (Sterbenz), exp(r) on |r| <= 0.35 by a degree-11 polynomial (mpmath's chebyfit; relative error
# 2^-56.9 with these binary64 coefficients), times 2^k built from its bits. Every step is an explicit
# fma on binary64 constants (Triton rounds a Python float given to tl.fma to binary32), so the GPU and
# the interpreter (a true fma) compute the same bits.
EXP_SHIFTER = tl.constexpr(6755399441055744.0)  # 1.5 * 2^52
EXP_INV_LN2 = tl.constexpr(1.4426950408889634)  # 0x1.71547652b82fep+0
EXP_LN2_HI = tl.constexpr(0.6931471805598903)  # 0x1.62e42fefa3800p-1: ln2 to 44 bits
EXP_LN2_LO = tl.constexpr(5.497923018708371e-14)  # 0x1.ef35793c76730p-45: RN64(ln2 - LN2_HI)
EXP_Z_FLOOR = tl.constexpr(-110.0)  # below -104 the result is +0 whatever exp64 gives (k >= -159)
# the polynomial's coefficients, EXP_Cn of x^n
EXP_C11 = tl.constexpr(2.511118996532136e-08)
EXP_C10 = tl.constexpr(2.763413820537965e-07)
EXP_C9 = tl.constexpr(2.755723777338061e-06)
EXP_C8 = tl.constexpr(2.4801481392218248e-05)
EXP_C7 = tl.constexpr(0.0001984126989301463)
EXP_C6 = tl.constexpr(0.0013888888956173813)
EXP_C5 = tl.constexpr(0.008333333333318475)
EXP_C4 = tl.constexpr(0.041666666666473465)
EXP_C3 = tl.constexpr(0.16666666666666682)
EXP_C2 = tl.constexpr(0.500000000000002)
EXP_C1 = tl.constexpr(1.0)
EXP_C0 = tl.constexpr(1.0)


@triton.jit
def f64_of_bits32(b):
    """The binary32 value of a pattern (int64 in [0, 2^32)) as float64, exactly (clause 0.2)."""
    return b.to(tl.int32).to(tl.float32, bitcast=True).to(tl.float64)


@triton.jit
def bits_of_f32(x):
    """The binary32 pattern of a float32 tensor as int64 in [0, 2^32) (the integer routines' form)."""
    return x.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF


@triton.jit
def _c64(x, value: tl.constexpr):
    """``value`` as a binary64 tensor of x's shape (exact; see EXP_SHIFTER's note)."""
    return tl.full(x.shape, value, tl.float64)


@triton.jit
def exp64(z64):
    """exp(z) in binary64 for z in [EXP_Z_FLOOR, 0], within 2 ulp64, without a branch (module doc);
    z below the floor gives exp(EXP_Z_FLOOR)."""
    z = tl.maximum(z64, EXP_Z_FLOOR)
    kd = tl.fma(z, _c64(z, EXP_INV_LN2), _c64(z, EXP_SHIFTER)) - EXP_SHIFTER
    r = tl.fma(kd, _c64(z, -EXP_LN2_HI), z)
    r = tl.fma(kd, _c64(z, -EXP_LN2_LO), r)
    p = _c64(z, EXP_C11)
    p = tl.fma(p, r, _c64(z, EXP_C10))
    p = tl.fma(p, r, _c64(z, EXP_C9))
    p = tl.fma(p, r, _c64(z, EXP_C8))
    p = tl.fma(p, r, _c64(z, EXP_C7))
    p = tl.fma(p, r, _c64(z, EXP_C6))
    p = tl.fma(p, r, _c64(z, EXP_C5))
    p = tl.fma(p, r, _c64(z, EXP_C4))
    p = tl.fma(p, r, _c64(z, EXP_C3))
    p = tl.fma(p, r, _c64(z, EXP_C2))
    p = tl.fma(p, r, _c64(z, EXP_C1))
    p = tl.fma(p, r, _c64(z, EXP_C0))
    scale = ((kd.to(tl.int64) + 1023) << 52).to(tl.float64, bitcast=True)  # 2^k, k in [-159, 0]
    return p * scale


@triton.jit
def tau_reciprocal(tau_bits):
    """rtau = RN64(1 / tau) for clause5_hw (``div.rn.f64``; a program computes it once, at its start,
    so that the division's slow path stays off the finish's chain)."""
    return 1.0 / f64_of_bits32(tau_bits)


@triton.jit
def exp_hw(z64):
    """e = RN32(exp(z)) as float32 for binary32 values z given as float64 (clause 5.3), and ``unsure``:
    the lanes this path cannot vouch for (z in [-104, 0) with y near a midpoint or below 2^-126)."""
    y = exp64(z64)
    low = y.to(tl.int64, bitcast=True).to(tl.int32) & LOW29
    near = tl.abs(low - HALF29) <= FLAG_ULPS
    unsure = (z64 < 0.0) & (z64 >= -104.0) & (near | (y < MIN_NORMAL32))
    e = tl.where(z64 < -104.0, 0.0, tl.where(z64 == 0.0, 1.0, y.to(tl.float32)))
    return e, unsure


@triton.jit
def clause5_hw(lb, mb, rtau):
    """d, z, e (float32) of clauses 5.1-5.3 for candidate patterns lb, the maximum's pattern mb and
    rtau = RN64(1 / tau) (tau_reciprocal), and ``unsure``: a subnormal z or exp_hw's.

    Only valid for lanes of a row whose status is 0 (no NaN, no +inf, m finite); other rows take the
    integer routines."""
    d = (f64_of_bits32(lb) - f64_of_bits32(mb)).to(tl.float32)
    q = d.to(tl.float64) * rtau
    z = q.to(tl.float32)
    e, unsure = exp_hw(z.to(tl.float64))
    unsure = unsure | ((q != 0.0) & (q > -MIN_NORMAL32))  # (q <= 0: d <= 0, tau > 0)
    return d, z, e, unsure

"""Correctly rounded binary32 exp, exact to the last bit (clause 5.3).

``exp32(z_bits)`` returns RN32(exp(z)): the binary32 nearest to the exact exp of the binary32 ``z``,
ties to even (which never occur, see below), subnormal results kept, exp(-inf) = +0, exp(+inf) = +inf.

Method: a rigorous enclosure in integer fixed point, refined until it decides the rounding.
Only Python integers are used; no host floats and no library exp, so the result is proved, not trusted.

1. Argument reduction. ln 2 is enclosed once in [A_lo, A_hi] / 2^W from the series
   ln 2 = 2 atanh(1/3) = sum_k 2 / ((2k+1) 3^(2k+1)), summed with floor divisions (each term is off by
   less than one unit, the tail after the first zero term is below 9/8 of a unit). With
   n = floor((z + ln2/2) / ln2) (any integer is correct; this one makes |r| <= ln2/2 + 2^-60), the
   reduced argument r = z - n ln 2 lies in the exact dyadic interval [R_lo, R_hi] / 2^W built from the
   enclosures of z * 2^W (exact unless z has bits below 2^-W) and of ln 2.
2. Taylor series at x = R_lo / 2^W, |x| < 1: T_0 = 2^W, T_k = trunc(T_{k-1} X / (k 2^W)), summed until
   a term is 0 (index N). Each truncation adds an error below one unit and the earlier errors are
   multiplied by |x|/k <= 1, so |T_k - 2^W x^k/k!| <= k, in all at most N(N+1)/2; the true terms after
   N are below N / (N+1)^j, summing to at most 1. Hence |S - 2^W exp(x)| <= N(N+1)/2 + 1 =: E.
   The upper end uses exp(R_hi/2^W) <= exp(R_lo/2^W) (1 + 2w) for w = (R_hi - R_lo)/2^W <= 1.
3. exp(z) = 2^n exp(r) lies in [L, U] * 2^(n - W). Both ends are rounded with the exact integer
   RN32 of reference.ieee; if they agree, monotonicity of rounding gives RN32(exp(z)). Otherwise W is
   doubled and the enclosure recomputed.

Why the loop terminates: RN32 is constant on every open interval that contains no rounding midpoint
(the midpoints between adjacent binary32 numbers, 2^-150 between 0 and the smallest subnormal, and the
overflow threshold 2^128 - 2^103), and these are all dyadic rationals. For rational (here dyadic)
z != 0, exp(z) is transcendental by the Lindemann-Weierstrass theorem, so it is never such a point;
it lies at a positive distance from the nearest one, and the enclosure width, about 2^(10 - W)
relative, drops below that distance for a finite W. z = +-0 is answered exactly (exp(0) = 1) before
the loop. In practice the first precision, W = 64, decides every binary32 z in [-104, 0]: the
exhaustive search (vectors/data/exp_near_midpoints.json) finds none closer than 2^-52.6 (relative)
to a midpoint, and the W = 64 enclosure is about 2^-54 wide.

Shortcuts, each with a proof: |z| < 2^-26 gives 1 (|exp(z) - 1| < 2|z| < 2^-25 while the nearest
midpoints are 1 - 2^-25 and 1 + 2^-24); z >= 89 overflows (exp(89) > 4.4e38 > 2^128); z <= -104 gives
+0 (exp(-104) < 6.9e-46 < 2^-150 = 7.0e-46, below half the smallest subnormal).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from dyadic24.reference.ieee import MASK32, NAN32, ONE32, POS_INF32, round_ratio32

_W_FIRST: Final = 64  # first working precision; enough for all but about 2^-30 of the inputs


def _ln2_series(prec: int) -> tuple[int, int]:
    """(lo, hi) with lo <= ln(2) * 2^prec <= hi, by ln 2 = sum_k 2 / ((2k+1) 3^(2k+1))."""
    num = 2 << prec
    total = 0
    terms = 0
    k = 0
    power = 3
    while True:
        term = num // ((2 * k + 1) * power)
        if term == 0:
            break
        total += term
        terms += 1
        k += 1
        power *= 9
    # each floor loses < 1; the first zero term and all later ones sum to < 1 + 1/8 (ratio <= 1/9)
    return total, total + terms + 2


@lru_cache(maxsize=16)
def _ln2_bounds(w: int) -> tuple[int, int]:
    """(A_lo, A_hi) with A_lo <= ln(2) * 2^w <= A_hi, A_hi - A_lo <= 2."""
    extra = 32
    lo, hi = _ln2_series(w + extra)
    return lo >> extra, -((-hi) >> extra)


def _enclose(negative: bool, m: int, e: int, w: int) -> int | None:
    """RN32(exp(z)) for z = (-1)^negative m 2^e when the precision-w enclosure decides it, else None."""
    a_lo, a_hi = _ln2_bounds(w)
    sh = e + w
    if sh >= 0:
        z_abs, inexact = m << sh, 0
    else:
        z_abs, inexact = m >> -sh, int(m & ((1 << -sh) - 1) != 0)
    if negative:
        z_lo, z_hi = -z_abs - inexact, -z_abs
    else:
        z_lo, z_hi = z_abs, z_abs + inexact
    n = (z_lo + (a_lo >> 1)) // a_lo
    if n >= 0:
        r_lo, r_hi = z_lo - n * a_hi, z_hi - n * a_lo
    else:
        r_lo, r_hi = z_lo - n * a_lo, z_hi - n * a_hi
    # Taylor series of exp at x = r_lo / 2^w with terms truncated toward zero.
    term = 1 << w
    total = term
    k = 0
    while term:
        k += 1
        prod = term * r_lo
        q = abs(prod) // (k << w)
        term = q if prod >= 0 else -q
        total += term
    err = k * (k + 1) // 2 + 1
    lower = total - err
    upper = total + err
    upper += ((2 * upper * (r_hi - r_lo)) >> w) + 1
    s = n - w
    lo_bits = round_ratio32(False, lower, 1, s)
    hi_bits = round_ratio32(False, upper, 1, s)
    return lo_bits if lo_bits == hi_bits else None


@lru_cache(maxsize=1 << 16)
def exp32(z_bits: int) -> int:
    """RN32(exp(z)) for the binary32 z given by its bits (clause 5.3); exp(-inf) = +0, exp(+-0) = 1."""
    z_bits &= MASK32
    negative = bool(z_bits >> 31)
    biased = (z_bits >> 23) & 0xFF
    frac = z_bits & 0x7FFFFF
    if biased == 0xFF:
        if frac:
            return NAN32
        return 0 if negative else POS_INF32
    if biased == 0:
        m, e = frac, -149
    else:
        m, e = frac | 0x800000, biased - 150
    if m == 0:
        return ONE32  # exp(+-0) = 1 exactly
    if m.bit_length() + e <= -26:
        return ONE32  # |z| < 2^-26, see the module docstring
    whole = m << e if e >= 0 else m >> -e  # floor(|z|)
    if negative:
        if whole >= 104:
            return 0  # exp(z) <= exp(-104) < 2^-150
    elif whole >= 89:
        return POS_INF32  # exp(z) >= exp(89) > 2^128
    w = _W_FIRST
    while True:
        bits = _enclose(negative, m, e, w)
        if bits is not None:
            return bits
        w *= 2

"""Exact IEEE 754 binary32 / binary64 arithmetic on bit patterns (clauses 0.2, 0.3).

Every value is an ``int`` bit pattern; every operation forms the exact mathematical result as a ratio
of Python integers scaled by a power of two and rounds it once, to nearest with ties to even, keeping
subnormals (gradual underflow) and overflowing to infinity (clause 0.3). No host floating point takes
part in the semantic path, so the results do not depend on the machine's FPU, compiler flags, FTZ/DAZ
modes or x87 double rounding.

The operations used by dyadic24-floor-first-v1 are ``sub32`` (clause 5.1), ``div32`` (clause 5.2),
``add64`` (clause 6.2), ``div64`` (clause 7.1), the widening ``widen32to64`` (clause 6.1) and the
total-order key ``key32`` (clause 3.1). NaN results are the canonical quiet NaN (0x7FC00000,
0x7FF8000000000000); the rule never lets a NaN reach an output, so payloads are not specified.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final

# (precision p including the hidden bit, exponent of the smallest subnormal's quantum, bits of +inf)
_P32: Final = 24
_QMIN32: Final = -149  # emin - p + 1 = -126 - 24 + 1
_INF32: Final = 0x7F800000
_P64: Final = 53
_QMIN64: Final = -1074  # -1022 - 53 + 1
_INF64: Final = 0x7FF0000000000000

SIGN32: Final = 0x80000000
SIGN64: Final = 0x8000000000000000
POS_INF32: Final = _INF32
NEG_INF32: Final = _INF32 | SIGN32
POS_INF64: Final = _INF64
NEG_INF64: Final = _INF64 | SIGN64
NAN32: Final = 0x7FC00000  # canonical quiet NaN
NAN64: Final = 0x7FF8000000000000
ONE32: Final = 0x3F800000
ONE64: Final = 0x3FF0000000000000
MASK32: Final = 0xFFFFFFFF
MASK64: Final = 0xFFFFFFFFFFFFFFFF

# Classes returned by the private decoders.
_FINITE: Final = 0
_INF: Final = 1
_NAN: Final = 2


# ---------------------------------------------------------------- classification (clause 0.2)


def is_nan32(bits: int) -> bool:
    """True for every binary32 NaN pattern (quiet or signalling, either sign)."""
    return (bits & 0x7FFFFFFF) > _INF32


def is_inf32(bits: int) -> bool:
    """True for +inf and -inf."""
    return (bits & 0x7FFFFFFF) == _INF32


def is_neg32(bits: int) -> bool:
    """The sign bit (so -0 and -inf count, NaNs by their sign bit)."""
    return bool(bits & SIGN32)


def is_zero32(bits: int) -> bool:
    """+0 or -0."""
    return (bits & 0x7FFFFFFF) == 0


def is_nan64(bits: int) -> bool:
    return (bits & ~SIGN64 & MASK64) > _INF64


def is_inf64(bits: int) -> bool:
    return (bits & ~SIGN64 & MASK64) == _INF64


# ---------------------------------------------------------------- decoding


def _split32(bits: int) -> tuple[int, int, int, int]:
    """(class, sign, integer significand, exponent) with value = (-1)^sign * m * 2^e for finite."""
    sign = bits >> 31
    biased = (bits >> 23) & 0xFF
    frac = bits & 0x7FFFFF
    if biased == 0xFF:
        return (_NAN if frac else _INF), sign, 0, 0
    if biased == 0:
        return _FINITE, sign, frac, _QMIN32
    return _FINITE, sign, frac | 0x800000, biased - 150


def _split64(bits: int) -> tuple[int, int, int, int]:
    sign = bits >> 63
    biased = (bits >> 52) & 0x7FF
    frac = bits & 0xFFFFFFFFFFFFF
    if biased == 0x7FF:
        return (_NAN if frac else _INF), sign, 0, 0
    if biased == 0:
        return _FINITE, sign, frac, _QMIN64
    return _FINITE, sign, frac | 0x10000000000000, biased - 1075


def _to_fraction(sign: int, m: int, e: int) -> Fraction:
    value = Fraction(m << e) if e >= 0 else Fraction(m, 1 << -e)
    return -value if sign else value


def decode32(bits: int) -> Fraction:
    """The exact value of a finite binary32 pattern; ValueError for infinities and NaNs."""
    cls, sign, m, e = _split32(bits & MASK32)
    if cls != _FINITE:
        raise ValueError(f"binary32 0x{bits:08x} is not finite")
    return _to_fraction(sign, m, e)


def decode64(bits: int) -> Fraction:
    """The exact value of a finite binary64 pattern; ValueError for infinities and NaNs."""
    cls, sign, m, e = _split64(bits & MASK64)
    if cls != _FINITE:
        raise ValueError(f"binary64 0x{bits:016x} is not finite")
    return _to_fraction(sign, m, e)


def significand_exponent32(bits: int) -> tuple[int, int, int]:
    """(sign, m, e) of a finite binary32 with value (-1)^sign * m * 2^e, m >= 0 an integer."""
    cls, sign, m, e = _split32(bits & MASK32)
    if cls != _FINITE:
        raise ValueError(f"binary32 0x{bits:08x} is not finite")
    return sign, m, e


def significand_exponent64(bits: int) -> tuple[int, int, int]:
    """(sign, m, e) of a finite binary64 with value (-1)^sign * m * 2^e, m >= 0 an integer."""
    cls, sign, m, e = _split64(bits & MASK64)
    if cls != _FINITE:
        raise ValueError(f"binary64 0x{bits:016x} is not finite")
    return sign, m, e


# ---------------------------------------------------------------- rounding (clause 0.3)


def _round_magnitude(n: int, d: int, s: int, p: int, qmin: int, inf: int) -> int:
    """Bits (without sign) of RN(n / d * 2^s) for integers n > 0, d > 0, in the format (p, qmin, inf).

    Integer arithmetic only: the binade comes from bit lengths, the significand from one divmod.
    """
    e = n.bit_length() - d.bit_length()
    # floor(log2(n/d)) is e or e - 1.
    if e >= 0:
        if n < d << e:
            e -= 1
    elif n << -e < d:
        e -= 1
    big_e = e + s  # floor(log2 of the value)
    if big_e < qmin - 1:
        return 0  # below half the smallest subnormal: rounds to zero
    q = max(big_e - p + 1, qmin)  # below 2^(qmin + p - 1), the subnormal range, the quantum is fixed
    t = s - q
    if t >= 0:
        m, r = divmod(n << t, d)
        den = d
    else:
        den = d << -t
        m, r = divmod(n, den)
    r2 = r << 1
    if r2 > den or (r2 == den and m & 1):
        m += 1
    # For normal results m has the hidden bit 2^(p-1), which lands in the exponent field; a carry to
    # m = 2^p lands there too, and subnormal results (q = qmin, m < 2^(p-1)) get exponent field 0.
    bits = ((q - qmin) << (p - 1)) + m
    return inf if bits >= inf else bits


def round_ratio32(negative: bool, n: int, d: int, s: int = 0) -> int:
    """RN32((-1)^negative * n / d * 2^s) for integers n >= 0, d > 0 (n == 0 gives the zero of that sign)."""
    if n == 0:
        return SIGN32 if negative else 0
    mag = _round_magnitude(n, d, s, _P32, _QMIN32, _INF32)
    return mag | SIGN32 if negative else mag


def round_ratio64(negative: bool, n: int, d: int, s: int = 0) -> int:
    """Binary64 counterpart of :func:`round_ratio32`."""
    if n == 0:
        return SIGN64 if negative else 0
    mag = _round_magnitude(n, d, s, _P64, _QMIN64, _INF64)
    return mag | SIGN64 if negative else mag


def round_binary32(x: Fraction | int) -> int:
    """RN32(x) as bits: ties to even, subnormals kept, overflow to +-inf, exact zero to +0 (clause 0.3)."""
    x = Fraction(x)
    if x == 0:
        return 0
    n, d = x.numerator, x.denominator
    return round_ratio32(n < 0, abs(n), d)


def round_binary64(x: Fraction | int) -> int:
    """RN64(x) as bits: ties to even, subnormals kept, overflow to +-inf, exact zero to +0 (clause 0.3)."""
    x = Fraction(x)
    if x == 0:
        return 0
    n, d = x.numerator, x.denominator
    return round_ratio64(n < 0, abs(n), d)


# ---------------------------------------------------------------- operations (clauses 5.1, 5.2, 6.2, 7.1)


_Decoded = tuple[int, int, int, int]  # (class, sign, significand, exponent)
_Format = tuple[int, int, int, int, int]  # (sign bit, +inf bits, NaN bits, precision, qmin)
_F32: Final = (SIGN32, _INF32, NAN32, _P32, _QMIN32)
_F64: Final = (SIGN64, _INF64, NAN64, _P64, _QMIN64)


def _add(a: _Decoded, b: _Decoded, fmt: _Format) -> int:
    """IEEE addition a + b of decoded operands in the format ``fmt``."""
    sign_bit, inf, nan, p, qmin = fmt
    ca, sa, ma, ea = a
    cb, sb, mb, eb = b
    if _NAN in (ca, cb):
        return nan
    if _INF in (ca, cb):
        if ca == _INF and cb == _INF and sa != sb:
            return nan  # inf - inf
        s = sa if ca == _INF else sb
        return inf | sign_bit if s else inf
    if ma == 0 and mb == 0:
        # IEEE 754 clause 6.3: x + y with both zero is -0 only when both are -0 (round to nearest).
        return sign_bit if sa and sb else 0
    # Both exponents are >= qmin, so shifting to the smaller one keeps integers.
    e = min(ea, eb)
    ia = (ma << (ea - e)) * (-1 if sa else 1)
    ib = (mb << (eb - e)) * (-1 if sb else 1)
    total = ia + ib
    if total == 0:
        return 0  # exact cancellation gives +0 under round to nearest
    mag = _round_magnitude(abs(total), 1, e, p, qmin, inf)
    return mag | sign_bit if total < 0 else mag


def _div(a: _Decoded, b: _Decoded, fmt: _Format) -> int:
    """IEEE division a / b of decoded operands in the format ``fmt``."""
    sign_bit, inf, nan, p, qmin = fmt
    ca, sa, ma, ea = a
    cb, sb, mb, eb = b
    sign = sign_bit if sa != sb else 0
    if _NAN in (ca, cb):
        return nan
    if ca == _INF:
        return nan if cb == _INF else inf | sign
    if cb == _INF:
        return sign  # finite / inf = signed zero
    if mb == 0:
        return nan if ma == 0 else inf | sign  # 0/0 invalid, x/0 division by zero
    if ma == 0:
        return sign
    return _round_magnitude(ma, mb, ea - eb, p, qmin, inf) | sign


def sub32(a: int, b: int) -> int:
    """IEEE binary32 a - b, i.e. a + (-b) (clause 5.1): -0 - +0 = -0, x - x = +0, inf - inf = NaN."""
    return _add(_split32(a), _split32(b ^ SIGN32), _F32)


def add32(a: int, b: int) -> int:
    """IEEE binary32 a + b."""
    return _add(_split32(a), _split32(b), _F32)


def div32(a: int, b: int) -> int:
    """IEEE binary32 a / b, correctly rounded (clause 5.2: a true division, not a reciprocal product)."""
    return _div(_split32(a), _split32(b), _F32)


def add64(a: int, b: int) -> int:
    """IEEE binary64 a + b (clause 6.2)."""
    return _add(_split64(a), _split64(b), _F64)


def sub64(a: int, b: int) -> int:
    """IEEE binary64 a - b."""
    return _add(_split64(a), _split64(b ^ SIGN64), _F64)


def div64(a: int, b: int) -> int:
    """IEEE binary64 a / b (clause 7.1)."""
    return _div(_split64(a), _split64(b), _F64)


def widen32to64(bits: int) -> int:
    """Binary32 to binary64, exact (clause 6.1 puts the e_i into binary64 slots)."""
    cls, sign, m, e = _split32(bits & MASK32)
    sign64 = SIGN64 if sign else 0
    if cls == _NAN:
        return NAN64 | sign64
    if cls == _INF:
        return _INF64 | sign64
    if m == 0:
        return sign64
    return _round_magnitude(m, 1, e, _P64, _QMIN64, _INF64) | sign64


def key32(bits: int) -> int:
    """Total-order key of clause 3.1 for non-NaN binary32 logits: key32(a) < key32(b) iff a < b.

    -0 and +0 get the same key (IEEE equality); -inf gets the smallest key, +inf the largest. NaN
    logits never reach the order (clause 2.1 fails the row first).
    """
    mag = bits & 0x7FFFFFFF
    return -mag if bits & SIGN32 else mag

# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""Bit-level IEEE 754 helpers shared by the kernels (clauses 0.2, 0.3, 3.1, 7.2).

Every binary32 value travels as an int64 holding its uint32 bit pattern (0 <= b < 2^32), so no
float32 arithmetic, float32 cast, FTZ mode or fma contraction can touch a semantic value. The only
floating-point operations of the rule are binary64 additions, subtractions and divisions (IEEE on
the GPU and in numpy) and the binary64 exp of :mod:`dyadic24.kernels.exp_jit`; conversions between
formats are done here with integer operations. (The finish's common case uses the hardware
conversions instead, :mod:`dyadic24.kernels.clause5_hw_jit`; these routines are its exact fallback
and the reference the exhaustive sweep holds it to.)
"""

from dyadic24.kernels.backend import select_backend

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

KEY_PAD = tl.constexpr(-(1 << 63))  # below every real key (a real key's low word is >= 2^31 + 1)
F32_POS_INF = tl.constexpr(0x7F800000)
F32_NEG_INF = tl.constexpr(0xFF800000)
F32_ONE = tl.constexpr(0x3F800000)


@triton.jit
def widen32to64(b):
    """binary32 pattern (int64 in [0, 2^32)) -> the same value as float64, exactly (clause 0.2).

    Normal numbers and infinities are re-biased bit patterns. A subnormal m * 2^-149 (m < 2^23) is
    the integer m converted to binary64 (exact) with 149 subtracted from its exponent field, which is
    again exact because the result is a normal binary64 number. NaN keeps its payload bits.
    """
    sign = ((b >> 31) & 1) << 63
    ex = (b >> 23) & 0xFF
    man = b & 0x7FFFFF
    normal = sign | ((ex + 896) << 52) | (man << 29)  # 896 = 1023 - 127
    special = sign | (0x7FF << 52) | (man << 29)
    scaled = man.to(tl.float64).to(tl.int64, bitcast=True) - (149 << 52)
    sub = sign | tl.where(man == 0, 0, scaled)
    out = tl.where(ex == 0xFF, special, tl.where(ex == 0, sub, normal))
    return out.to(tl.float64, bitcast=True)


@triton.jit
def round_to_binary32(b):
    """RN32 of a binary64 value given by its bit pattern b (int64); clause 0.3.

    Returns (bits, dist): bits is the binary32 pattern (int64 in [0, 2^32)) of the value rounded to
    nearest, ties to even, with binary32 subnormals kept and overflow to infinity; dist is the
    distance, in units of the last place of the binary64 input, between the dropped bits and the
    rounding midpoint (0 means the input is a midpoint). Integer operations only.

    Used on the exact-enough binary64 results of l - m and d / tau: rounding the exact result first
    to binary64 and then to binary32 equals rounding it once (53 >= 2 * 24 + 2, Figueroa 1995, for
    +, -, *, /). The subnormal binary32 range needs no extra argument: a difference of two binary32
    numbers that lands there is exact, and a quotient a/b of binary32 numbers that lands there is
    either a binary32 midpoint or at least 2^-48 * |a/b| away from every midpoint (write a = A 2^ea,
    b = B 2^eb with 24-bit A, B; a nonzero a 2^150 - (2j+1) b is a multiple of 2^min(ea+150, eb),
    and |a/b| < 2^-126 forces eb - ea > 125), which a binary64 rounding error of 2^-53 * |a/b|
    cannot cross. The binary64 intermediate never overflows or underflows (|d / tau| < 2^278).
    """
    sign = (b >> 63) & 1
    a = b & 0x7FFFFFFFFFFFFFFF
    e = a >> 52
    f = a & 0xFFFFFFFFFFFFF
    full = tl.where(e == 0, f, f | (1 << 52))
    E = tl.where(e == 0, -1022, e - 1023)
    normal = E >= -126
    # dropped low bits: 29 for a normal binary32 result, more below 2^-126 (capped: full < 2^53)
    s = tl.where(normal, 29, tl.minimum(-97 - E, 60))
    q = (full >> s) + tl.where(normal, (E + 126) << 23, 0)
    rem = full & ((1 << s) - 1)
    half = 1 << (s - 1)
    up = (rem > half) | ((rem == half) & ((q & 1) == 1))
    r = q + up.to(tl.int64)  # a carry into the exponent field is the correct next binade / +inf
    r = tl.where(E >= 128, F32_POS_INF, r)
    r = tl.where(e == 0x7FF, tl.where(f == 0, F32_POS_INF, 0x7FC00000), r)
    dist = tl.where((E >= 128) | (e == 0x7FF), 1 << 62, tl.abs(rem - half))
    return r | (sign << 31), dist


@triton.jit
def sub32(a, b):
    """RN32(a - b) for binary32 patterns (clause 5.1): binary64 subtraction, then the integer RN32."""
    r, _ = round_to_binary32((widen32to64(a) - widen32to64(b)).to(tl.int64, bitcast=True))
    return r


@triton.jit
def div32(a, b):
    """RN32(a / b) for binary32 patterns (clause 5.2): IEEE binary64 division, then the integer RN32."""
    r, _ = round_to_binary32((widen32to64(a) / widen32to64(b)).to(tl.int64, bitcast=True))
    return r


@triton.jit
def floor_times_2_24(p):
    """floor(p * 2^24) for a float64 p in [0, 1] (clause 7.2), as int32: the product is exact (a
    power-of-two scaling; a binary64-subnormal p stays exact too) and non-negative, so the truncating
    conversion (cvt.rzi.s32.f64; numpy's astype under the interpreter) is the floor."""
    return (p * 16777216.0).to(tl.int32)


@triton.jit
def order_key(b, idx):
    """Clause 3.1 total order as an int64 key: larger key = earlier token; keys are unique per row.

    High word: the binary32 value as an order-preserving signed int32 (-0 canonicalised to +0 so that
    -0 and +0 tie, clause 3.1); low word: 0xFFFFFFFF - id, so among equal values the lower ID wins.
    (This is the unsigned key "uint32 order key << 32 | (0xFFFFFFFF - id)" with its top bit flipped so
    that signed int64 comparison applies; KEY_PAD is the flipped 0.)
    """
    bc = tl.where(b == 0x80000000, 0, b)
    s = tl.where(bc >= 0x80000000, bc - (1 << 32), bc)
    sk = tl.where(s < 0, s ^ 0x7FFFFFFF, s)
    return (sk << 32) + (0xFFFFFFFF - idx)


SRC_F32 = tl.constexpr(0)  # logits given as int32 views of binary32
SRC_BF16 = tl.constexpr(1)  # int16 views of bfloat16
SRC_F16 = tl.constexpr(2)  # int16 views of binary16


@triton.jit
def load_bits32(ptr, offs, mask, SRC: tl.constexpr):
    """Load logits (integer views) and widen exactly to binary32 patterns (clause 1.2), integers only.

    bfloat16 is the high half of a binary32. A binary16 number is re-biased (112 = 127 - 15); a
    binary16 subnormal m * 2^-24 (m < 2^10 with bit length L) is the normal binary32 2^(L-25) * ...
    with its leading bit shifted to bit 23 and dropped. No float conversion instruction is involved,
    so no flush-to-zero mode can touch bfloat16 subnormals.
    """
    return widen_bits32(tl.load(ptr + offs, mask=mask, other=0), SRC)


@triton.jit
def widen_bits32(loaded, SRC: tl.constexpr):
    """load_bits32's exact widening of loaded integer views to binary32 patterns (int64)."""
    raw = loaded.to(tl.int64)
    if SRC == SRC_F32:
        out = raw & 0xFFFFFFFF
    elif SRC == SRC_BF16:
        out = (raw & 0xFFFF) << 16
    else:
        h = raw & 0xFFFF
        sign = (h >> 15) << 31
        e = (h >> 10) & 0x1F
        m = h & 0x3FF
        length = tl.zeros_like(m)
        for k in tl.static_range(10):
            length += ((m >> k) != 0).to(tl.int64)
        sub = ((length + 102) << 23) | ((m << (24 - length)) & 0x7FFFFF)
        normal = ((e + 112) << 23) | (m << 13)
        special = (0xFF << 23) | (m << 13)
        mag = tl.where(e == 0x1F, special, tl.where(e == 0, tl.where(m == 0, 0, sub), normal))
        out = sign | mag
    return out

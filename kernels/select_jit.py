# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""Integer selection helpers shared by the tile and merge stages (clauses 1.2, 3.1, 3.2).

A key is the clause-3.1 order of one token as an int64: (value key << 32) + (2^32 - 1 - ID), unique
within a row, so that a larger key precedes (a larger value, or an equal value and a smaller ID);
KEY_PAD lies below every real key. The value key (value_key32) is an order-preserving int32 image of
the binary32 logit. Every count, rank, maximum and sum here is an integer reduction: exact in any
lane order, so the selection's result never depends on how Triton lays lanes out.
"""

from dyadic24.kernels.backend import select_backend

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from dyadic24.kernels.ieee_jit import KEY_PAD, SRC_BF16, SRC_F32, widen_bits32  # noqa: E402

K_C = tl.constexpr(32)  # clause 3.2: at most 32 candidates
INT32_MIN = tl.constexpr(-(1 << 31))
INT32_MAX = tl.constexpr((1 << 31) - 1)
SK_POS_INF = tl.constexpr(0x7F800000)  # value key of +inf
SK_NEG_INF = tl.constexpr(-2139095041)  # value key of -inf (0xFF800000 ^ 0x7FFFFFFF as int32)
PACK = tl.constexpr(16)  # two counts < 2^15 share one int32 reduction (low: strict, high: ties)
PACK_MASK = tl.constexpr(0xFFFF)
PACK_LIMIT = tl.constexpr(1 << 15)


@triton.jit
def load_bits_i32(ptr, offs, mask, SRC: tl.constexpr):
    """The binary32 patterns of the logits as int32 (clause 1.2; bit-identical to load_bits32 mod 2^32)."""
    return bits_i32(tl.load(ptr + offs, mask=mask, other=0), SRC)


@triton.jit
def bits_i32(raw, SRC: tl.constexpr):
    """load_bits_i32's widening of loaded integer views (clause 1.2)."""
    if SRC == SRC_F32:
        out = raw
    elif SRC == SRC_BF16:
        out = raw.to(tl.int32) << 16
    else:
        out = widen_bits32(raw, SRC).to(tl.int32)
    return out


@triton.jit
def value_key32(b):
    """The high word of a key (clause 3.1): an order-preserving int32 image of the binary32 value, -0
    canonicalised to +0 so that the two zeros tie. Negative patterns flip their 31 low bits (one xor
    with the sign-filled mask); -0 lands on -1, which becomes 0 (the same map as ieee_jit.order_key's
    high word on every one of the 2^32 patterns, checked exhaustively)."""
    k = b ^ ((b >> 31) & 0x7FFFFFFF)
    return tl.where(k == -1, 0, k)


@triton.jit
def key_value32(k):
    """The binary32 value (as float32) whose value key is k: value_key32's map is its own inverse on
    every key it gives (a negative pattern keeps its sign bit), and key 0 gives +0. The tile compares
    logits with a bound as binary32 values, which orders them as their keys do (-0 == +0 in both)."""
    return (k ^ ((k >> 31) & 0x7FFFFFFF)).to(tl.float32, bitcast=True)


@triton.jit
def count_pair(strict, tie, N: tl.constexpr):
    """(sum(strict), sum(tie)) over N < 2^15 lanes, as one packed integer reduction."""
    tl.static_assert(N < PACK_LIMIT)
    both = tl.sum(strict.to(tl.int32) + (tie.to(tl.int32) << PACK))
    n_strict = both & PACK_MASK
    n_tie = both >> PACK
    return n_strict, n_tie


@triton.jit
def scan_pair(strict, tie, N: tl.constexpr):
    """Inclusive prefix counts of two masks over N < 2^15 lanes, as one packed integer scan."""
    tl.static_assert(N < PACK_LIMIT)
    cs = tl.cumsum(strict.to(tl.int32) + (tie.to(tl.int32) << PACK), 0)
    c_strict = cs & PACK_MASK
    c_tie = cs >> PACK
    return c_strict, c_tie


@triton.jit
def kth32_value(vals, valid):
    """The 32nd largest of the valid int32 values, counted with multiplicity (INT32_MIN if fewer
    than 32 are valid): an integer count per lane, exact and order-free."""
    ge = valid[None, :] & (vals[None, :] >= vals[:, None])
    c = tl.sum(ge.to(tl.int32), axis=1)
    return tl.max(tl.where(valid & (c >= K_C), vals, INT32_MIN))


@triton.jit
def kth32_smallest(vals):
    """The 32nd smallest of the values (counted with multiplicity; INT32_MAX if fewer than 32):
    kth32_value of the bitwise complements, since ~ reverses the int32 order without overflow."""
    return ~kth32_value(~vals, vals == vals)  # noqa: PLR0124 (every lane valid: folds away)


@triton.jit
def rank_desc(s, valid):
    """Rank of each valid key among the valid keys in descending order (keys are unique)."""
    gt = valid[None, :] & (s[None, :] > s[:, None])
    return tl.sum(gt.to(tl.int32), axis=1)


@triton.jit
def top32(flat, BY_COUNT: tl.constexpr):
    """The 32 largest keys of a power-of-two-long vector (>= 32), descending, KEY_PAD past the real
    ones (clause 3.2): Triton's bitonic top-k (the GPU's), or with BY_COUNT exact integer ranks (the
    interpreter's: the same keys in the same order, and fast where the bitonic network is slow)."""
    if BY_COUNT:
        real = flat != KEY_PAD
        rank = rank_desc(flat, real)
        l32 = tl.arange(0, K_C)
        hit = real[:, None] & (rank[:, None] == l32[None, :])
        best = tl.sum(tl.where(hit, flat[:, None], 0), axis=0)  # one nonzero term per lane: exact
        best = tl.where(l32 < tl.sum(real.to(tl.int32)), best, KEY_PAD)
    else:
        best = tl.topk(flat, K_C)
    return best


@triton.jit
def top32_extract(keys):
    """The 32 largest keys (any power-of-two length >= 32), descending, KEY_PAD past the real ones:
    the maximum 32 times, each time below the previous one (integer max reductions, exact for any
    input). The fallback when a threshold admits too many keys, and the sharded kernels' selection."""
    lane = tl.arange(0, 32)
    prev = tl.max(keys)
    out = tl.where(lane == 0, prev, tl.full([32], KEY_PAD, tl.int64))
    for r in range(1, 32):
        prev = tl.max(tl.where(keys < prev, keys, KEY_PAD))
        out = tl.where(lane == r, prev, out)
    return out


@triton.jit
def popc32(x):
    """Set bits of int32 patterns (SWAR integer operations: exact under the interpreter, no libdevice)."""
    u = x.to(tl.uint32, bitcast=True)
    u = u - ((u >> 1) & 0x55555555)
    u = (u & 0x33333333) + ((u >> 2) & 0x33333333)
    u = (u + (u >> 4)) & 0x0F0F0F0F
    u = u + (u >> 8)
    u = u + (u >> 16)
    return (u & 0x3F).to(tl.int32)


@triton.jit
def bit_index(low):
    """log2 of a power of two given as an int32 bit pattern (bit 31 included), integer operations only."""
    return (
        ((low & -65536) != 0).to(tl.int32) * 16
        + ((low & -16711936) != 0).to(tl.int32) * 8  # 0xFF00FF00
        + ((low & -252645136) != 0).to(tl.int32) * 4  # 0xF0F0F0F0
        + ((low & -858993460) != 0).to(tl.int32) * 2  # 0xCCCCCCCC
        + ((low & -1431655766) != 0).to(tl.int32)  # 0xAAAAAAAA
    )

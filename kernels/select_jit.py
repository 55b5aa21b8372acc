# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""Selection helpers shared by the tile and merge stages (clauses 1.2, 3.1, 3.2).

A key is the clause-3.1 order of one token as an int64: (value key << 32) + (2^32 - 1 - ID), unique
within a row, so that a larger key precedes (a larger value, or an equal value and a smaller ID);
KEY_PAD lies below every real key. The value key (value_key32) is an order-preserving int32 image of
the binary32 logit. Every count, rank, maximum and sum here is an integer reduction: exact in any
lane order, so the selection's result never depends on how Triton lays lanes out; the one float
reduction, the tiles' NaN-propagating maximum (reduce_max_nan), is exact in any order too.

The 16-bit tile (tile16_jit) orders 32-bit words instead: (value_key16 << 16) + (2^16 - 1 - index in
the tile), the same order as the keys of the widened values (clause 1.2's widening is monotone and
exact), in one int32 compare.
"""

from dyadic24.kernels.backend import select_backend

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from dyadic24.kernels.ieee_jit import KEY_PAD, SRC_BF16, SRC_F16, SRC_F32, widen_bits32  # noqa: E402

K_C = tl.constexpr(32)  # clause 3.2: at most 32 candidates
INT32_MIN = tl.constexpr(-(1 << 31))
INT32_MAX = tl.constexpr((1 << 31) - 1)
SK_POS_INF = tl.constexpr(0x7F800000)  # value key of +inf
SK_NEG_INF = tl.constexpr(-2139095041)  # value key of -inf (0xFF800000 ^ 0x7FFFFFFF as int32)
PACK = tl.constexpr(16)  # two counts < 2^15 share one int32 reduction (low: strict, high: ties)
PACK_MASK = tl.constexpr(0xFFFF)
PACK_LIMIT = tl.constexpr(1 << 15)
WORD_PAD = tl.constexpr(-(1 << 31))  # below every 16-bit tile word (whose low half is >= 2^16 - 2^14)


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
def widen_i32(raw, SRC: tl.constexpr):
    """The tiles' widening of loaded integer views to binary32 patterns as int32 (clause 1.2): bits_i32,
    but binary16 by the hardware's conversion (cvt.f32.f16, no flush-to-zero form: aot_check's audit),
    one instruction instead of the integer routine's ~50. Exact for every binary16 value, subnormals
    included; a NaN stays a NaN with its payload perhaps quieted, which no output can see: the tiles
    only compare and take NaN-propagating maxima of what they widen here (whose NaN is canonical), and
    the column-group tile's selected elements are reloaded and widened by bits_i32 (DESIGN.md "Tile
    selection": "Comparisons, not keys, per element")."""
    if SRC == SRC_F16:
        out = raw.to(tl.float16, bitcast=True).to(tl.float32).to(tl.int32, bitcast=True)
    else:
        out = bits_i32(raw, SRC)
    return out


@triton.jit
def max_nan(a, b):
    """The binary32 maximum that returns NaN when either operand is NaN (max.NaN.f32 on the GPU,
    numpy's maximum under the interpreter): a column's maximum is NaN exactly when it holds a NaN."""
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def reduce_max_nan(x, axis: tl.constexpr, BY_COUNT: tl.constexpr):
    """The NaN-propagating maximum (max_nan) of x along axis: a reduction with max_nan on the GPU;
    with BY_COUNT (the interpreter's plan) tl.max and a NaN test per slice, the same maxima: the
    interpreter runs a reduction with a jit combine element by element in Python (5x slower on the
    accumulated stream of clause 13.2) and its tl.max ignores NaN."""
    if BY_COUNT:
        m = tl.max(x, axis)
        nan = tl.full(m.shape, 0x7FC00000, tl.int32).to(tl.float32, bitcast=True)
        m = tl.where(tl.max((x != x).to(tl.int32), axis) != 0, nan, m)  # noqa: PLR0124
    else:
        m = tl.reduce(x, axis, max_nan)
    return m


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
def value_key16(h):
    """value_key32 for 16-bit patterns (int16 bfloat16 / binary16), as int32 in [-2^15, 2^15): the
    same map on 16 bits (negative patterns flip their 15 low bits, -0 lands on -1 and becomes 0), so
    it orders the patterns as value_key32 orders their exact binary32 widenings (clause 1.2), -0 and
    +0 tied (clause 3.1)."""
    w = h.to(tl.int32)  # (sign-extended: the xor below then keeps the sign)
    k = w ^ ((w >> 31) & 0x7FFF)
    return tl.where(k == -1, 0, k)


@triton.jit
def key_value16(k):
    """The 16-bit pattern (int16) whose value_key16 is k (value_key16 is its own inverse on the keys it
    gives; key 0 gives +0)."""
    return (k ^ ((k >> 31) & 0x7FFF)).to(tl.int16)


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
def kth_value(vals, valid, K: tl.constexpr):
    """The K-th largest of the valid int32 values, counted with multiplicity (INT32_MIN if fewer
    than K are valid): an integer count per lane, exact and order-free."""
    ge = valid[None, :] & (vals[None, :] >= vals[:, None])
    c = tl.sum(ge.to(tl.int32), axis=1)
    return tl.max(tl.where(valid & (c >= K), vals, INT32_MIN))


@triton.jit
def kth32_value(vals, valid):
    """kth_value's 32nd largest (clause 3.2's count)."""
    return kth_value(vals, valid, K_C)


@triton.jit
def kth_smallest(vals, K: tl.constexpr):
    """The K-th smallest of the values (counted with multiplicity; INT32_MAX if fewer than K):
    kth_value of the bitwise complements, since ~ reverses the int32 order without overflow."""
    return ~kth_value(~vals, vals == vals, K)  # noqa: PLR0124 (every lane valid: folds away)


@triton.jit
def rank_desc(s, valid):
    """Rank of each valid key among the valid keys in descending order (keys are unique)."""
    gt = valid[None, :] & (s[None, :] > s[:, None])
    return tl.sum(gt.to(tl.int32), axis=1)


@triton.jit
def top32(flat, BY_COUNT: tl.constexpr):
    """The 32 largest of a power-of-two-long vector (>= 32) of int64 keys (padded with KEY_PAD) or of
    the 16-bit tile's and merge's int32 words (padded with WORD_PAD), descending, the pad past the
    real ones (clause 3.2): Triton's bitonic top-k (the GPU's; an int32 word takes one compare and
    exchange per step where an int64 key takes two), or with BY_COUNT exact integer ranks (the
    interpreter's: the same keys in the same order, and fast where the bitonic network is slow)."""
    if BY_COUNT:
        pad: tl.constexpr = KEY_PAD if flat.dtype == tl.int64 else WORD_PAD
        real = flat != pad
        rank = rank_desc(flat, real)
        l32 = tl.arange(0, K_C)
        hit = real[:, None] & (rank[:, None] == l32[None, :])
        best = tl.sum(tl.where(hit, flat[:, None], 0), axis=0)  # one nonzero term per lane: exact
        best = tl.where(l32 < tl.sum(real.to(tl.int32)), best, pad)
    else:
        best = tl.topk(flat, K_C)
    return best


@triton.jit
def top32_runs(flat, RUN: tl.constexpr, BY_COUNT: tl.constexpr, SORTED: tl.constexpr):
    """top32 of a power-of-two-long vector (>= 32) whose aligned runs of RUN lanes (a power of two
    from 2 to 32) are each bitonic (the merge's paired pool: a descending and an ascending run met
    lane by lane). The same keys in the same order as top32: on the GPU Triton's top-k network less
    its first log2 RUN stages, which sort each run of RUN from scratch, replaced by one bitonic merge
    of log2 RUN steps (a bitonic run needs no more to be sorted): 3 of 33 exchange steps fewer for
    runs of 8, 6 for 16, 10 for 32. Its folds (each lane keeps the larger of itself and the same lane
    of the opposite sorted run of 32) take the partner by a gather, one exchange through shared
    memory, where Triton's network takes a maximum between warps, two exchanges and a shuffle; every
    lane keeps its place, so the vector keeps its length with the folded runs repeated, and its first
    32 lanes are gathered at the end (DESIGN.md "Merge"). Not SORTED (and a vector of
    more than 32): the same 32 keys, in the order the last fold leaves them (the larger of each lane
    of two opposite sorted runs: a bitonic sequence), without the last merge's 5 steps."""
    if BY_COUNT:
        best = top32(flat, BY_COUNT)
    else:
        n: tl.constexpr = flat.shape[0]
        N: tl.constexpr = (
            (n >= 2)
            + (n >= 4)
            + (n >= 8)
            + (n >= 16)
            + (n >= 32)
            + (n >= 64)
            + (n >= 128)
            + (n >= 256)
            + (n >= 512)
            + (n >= 1024)
        )  # (log2 of a power of two from constexpr comparisons)
        R: tl.constexpr = (RUN >= 2) + (RUN >= 4) + (RUN >= 8) + (RUN >= 16) + (RUN >= 32)
        tl.static_assert(RUN >= 2 and RUN <= K_C and n >= K_C and n <= 1024)
        h = tl.reshape(flat, [2] * N)  # (the hypercube: axis N - 1 - j is index bit j)
        h = _bitonic_merge(h, R, 2 if R < N else 1, N)  # runs sorted, alternating by bit R
        for i in tl.static_range(R + 1, 6):  # then Triton's top-k from its stage R + 1 on
            h = _bitonic_merge(h, i, 2 if i < N else 1, N)
        # the folds across bits 5 .. N - 1: each lane takes the larger of itself and its partner
        # across the bit by a gather (one exchange through shared memory: a maximum between warps
        # takes two), and keeps its place
        f = tl.arange(0, n)
        for i in tl.static_range(6, N + 1):
            hf = tl.reshape(h, [n])
            hf = tl.maximum(hf, tl.gather(hf, f ^ (1 << (i - 1)), 0))
            # runs of 32 alternating by bit i; the last fold's, descending, only when SORTED
            if SORTED or i < N:  # noqa: SIM108 (constexpr branch)
                h = _bitonic_merge(tl.reshape(hf, [2] * N), 5, 2 if i < N else 1, N, i)
            else:
                h = hf
        best = tl.reshape(h, [n])
        if N > 5:
            best = tl.gather(best, tl.arange(0, K_C), 0)  # (every 32 lanes hold C: the first)
    return best


@triton.jit
def _bitonic_merge(h, stage: tl.constexpr, order: tl.constexpr, N: tl.constexpr, BIT: tl.constexpr = -1):
    """Sort each aligned bitonic run of 2^stage lanes of the hypercube h (N axes of 2): ascending
    (order 0), descending (1), or by an index bit (2: ascending where it is 0), ``BIT`` or else
    ``stage``."""
    if order == 2:  # noqa: SIM108 (constexpr branch)
        flip = _bit_axis(N, stage if BIT < 0 else BIT)
    else:
        flip = order
    for i in tl.static_range(stage):
        h = _compare_swap(h, flip, stage - 1 - i, N)
    return h


@triton.jit
def _compare_swap(h, flip, j: tl.constexpr, N: tl.constexpr):
    """One step of a bitonic network along index bit j: each pair keeps (min, max), or (max, min)
    where flip is set. The partner is the pair's xor with one's own key (an xor reduction over the
    axis of 2)."""
    other = h ^ tl.reduce(h, N - 1 - j, _xor, keep_dims=True)
    return tl.where((h > other) != (flip ^ _bit_axis(N, j)).to(tl.int1), other, h)


@triton.jit
def _bit_axis(N: tl.constexpr, j: tl.constexpr):
    """Index bit j of a hypercube of N axes, shaped to broadcast against it."""
    return tl.reshape(tl.arange(0, 2), [1] * (N - j - 1) + [2] + [1] * j)


@triton.jit
def _xor(a, b):
    return a ^ b


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

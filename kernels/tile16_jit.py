# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""The column-group tile of 16-bit logits (bfloat16, binary16): the tile stage's selection built for
16-bit values (clauses 1.2, 2.1, 3.1, 3.2, 4.1; benchmarks/DESIGN.md "The 16-bit tile").

The same threshold selection as tile_jit._tile_fast (a bound theta from the column maxima, bit masks
of the elements above it and, when needed, of the lowest-ID ties at it, a compaction and an exact
order), with three changes that 16-bit values allow:

- The values stay 16-bit. Per element the tile takes NaN-propagating maxima and compares with theta
  in the logits' own format; on sm_90 ptxas runs both on packed pairs (HMNMX2 / VHMNMX and HSETP2 on
  the 32-bit registers the 16-byte loads fill, no widened copy), so the registers and the work per
  element are half the binary32 tile's. Both are exact: a comparison or maximum of two 16-bit values
  is that of their exact binary32 widenings (clause 1.2), -0 == +0, NaN unordered, and no
  flush-to-zero form is used (aot_check's audit). Under the interpreter, which holds bfloat16 as
  integers, bfloat16 is compared as its exact widening instead: the same results.
- The parts are one tensor axis: the tile is P parts of R x 1,024 elements, one 32-bit mask per
  part and column group, up to 16 LDG.128 per thread all in flight (tiles of 16,384: the binary32
  tile of 8,192's bytes and registers per program).
- The selected elements are ordered as 32-bit words (select_jit.value_key16 << 16) + (2^16 - 1 -
  index), unique in a tile of at most 2^14 elements and in the order of their clause-3.1 keys, so
  each compare and exchange of the top-32 network moves one int32 instead of an int64 key; only the
  32 selected are widened (clause 1.2) and keyed for the merge.

A tile that selects more than FCAP elements (adversarial data only) leaves them to the caller's exact
fallback (tile_jit._parts_fallback): tile16 returns whether it did.
"""

from dyadic24.kernels.backend import interpreting, select_backend

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from dyadic24.kernels.ieee_jit import KEY_PAD, SRC_BF16  # noqa: E402
from dyadic24.kernels.select_jit import (  # noqa: E402
    INT32_MIN,
    K_C,
    SK_NEG_INF,
    SK_POS_INF,
    WORD_PAD,
    bit_index,
    key_value16,
    key_value32,
    kth32_value,
    kth_smallest,
    popc32,
    reduce_max_nan,
    top32,
    value_key16,
    value_key32,
    widen_i32,
)

GW16 = tl.constexpr(8)  # 16-bit elements per 16-byte load: one thread's columns of a row
ROWS16 = tl.constexpr(4)  # rows of a part: a column group's elements of one part fill a 32-bit mask
INTERPRETED = tl.constexpr(interpreting())  # (the interpreter holds bfloat16 as integers: _values)
NEG_INF_BF16 = tl.constexpr(-128)  # 0xFF80 as int16: lanes past V read as -inf
NEG_INF_F16 = tl.constexpr(-1024)  # 0xFC00


@triton.jit
def tile16(
    logits_ptr,
    cand_ptr,
    flags_ptr,
    scratch_ptr,
    pid,
    row,
    tile,
    V,
    greedy_fast,
    ktag,
    ftag,
    TILE: tl.constexpr,
    SRC: tl.constexpr,
    BY_COUNT: tl.constexpr,
    NT: tl.constexpr,
    FCAP: tl.constexpr,
    SMALL: tl.constexpr,
):
    """The tile's candidates and flags as tile_jit._tile_fast stores them (cand[pid, :] its top 32 keys,
    descending, KEY_PAD past its end, xor ktag; flags[pid] NaN << 2 | +inf << 1 | live, xor ftag), for
    a TILE of 8 NT x 2^k 16-bit elements (k >= 0, at most 16,384) held by NT threads. Returns True when
    more than FCAP elements pass the bound and the caller must store the top 32 (its fallback); the
    flags are stored either way.

    Layout: element p PART + r W + c (W = GW16 NT columns) of P parts of R rows; thread t holds columns
    GW16 t .. GW16 t + 7 of every row of every part (its column group), so per column group the
    maxima and masks stay in its registers. Bound, ties and their bound phi are _tile_fast's (its
    docstring): theta = the smallest over the warps of each warp's (32 / warps)-th largest column
    maximum (BY_COUNT: the exact 32nd largest), 32 distinct columns reaching it. Greedy rows without a
    trace store the argmax alone (clause 4.1)."""
    W: tl.constexpr = GW16 * NT
    P: tl.constexpr = TILE // (ROWS16 * W) if TILE > ROWS16 * W else 1
    PART: tl.constexpr = TILE // P
    R: tl.constexpr = PART // W
    tl.static_assert(P * R * W == TILE and TILE <= (1 << 14))
    pp = tl.arange(0, P)[:, None, None]
    rr = tl.arange(0, R)[None, :, None]
    cc = tl.arange(0, W)[None, None, :]
    loc = pp * PART + rr * W + cc
    first_id = tile * TILE
    lim = tl.minimum(V - first_id, TILE).to(tl.int32)
    inb = loc < lim
    full = first_id + TILE <= V
    base = logits_ptr + (row * V + first_id)
    # (a full tile's loads unmasked in one block: all P R of a thread's 16-byte loads in flight before
    # the first use, as tile_jit._tile_bits; lanes past V are -inf, set by a select after the load:
    # as the load's `other`, the last tile of a V divisible by 16 read NaN on an H100 (DESIGN.md "The
    # 16-bit tile"))
    if full:
        raw = tl.load(base + loc)
    else:
        neg_inf = NEG_INF_BF16 if SRC == SRC_BF16 else NEG_INF_F16
        raw = tl.where(inb, tl.load(base + loc, mask=inb), neg_inf).to(tl.int16)
    x = _values(raw, SRC)
    # column maxima, NaN-propagating: the widening is exact and ptxas keeps these maxima in 16-bit
    # packed form; the parts' first, so that the first use needs every load (one DRAM round trip)
    # (under the interpreter by tl.max and a NaN test in every plan: the same maxima, without the
    # interpreter's reduction by a Python call per element)
    xw = x.to(tl.float32)
    FAST: tl.constexpr = BY_COUNT or INTERPRETED
    cmax = reduce_max_nan(reduce_max_nan(xw, 0, FAST), 0, FAST)
    gmax_f = reduce_max_nan(tl.reshape(cmax, [NT, GW16]), 1, FAST)
    gmax = value_key32(gmax_f.to(tl.int32, bitcast=True))
    # clause 2.1: each column's flag word, their maximum the tile's (_tile_fast)
    nan = gmax_f != gmax_f  # noqa: PLR0124 (the NaN test: a column with a NaN has a NaN maximum)
    words = (
        (nan.to(tl.int32) << 2) | ((gmax == SK_POS_INF).to(tl.int32) << 1) | (gmax > SK_NEG_INF).to(tl.int32)
    )
    tl.store(flags_ptr + pid, tl.max(words) ^ ftag)
    l32 = tl.arange(0, K_C)
    out = cand_ptr + pid * K_C
    over = False
    bit = 1 << (rr * GW16 + (cc & (GW16 - 1)))  # (distinct powers of two: sums are ORs)
    if greedy_fast:  # clause 4.1: the tile's largest key alone (lowest ID among equal values)
        top = tl.max(gmax)
        # (its first element by the masks of its equals: no index per element; lanes past V need no
        # mask: they follow every element of the row, and hold -inf)
        equal = _group_bits(tl.where(x == _as_values(top, SRC), bit, 0), NT)
        first = tl.min(_first_index(equal, PART, NT, TILE))
        amax = (top.to(tl.int64) << 32) + (0xFFFFFFFF - (first_id + first))  # its key (clause 3.1)
        tl.store(out + l32, tl.where(l32 == 0, amax, KEY_PAD) ^ ktag)
    else:
        # (a NaN below -inf could pull theta under the -inf of the lanes past V; the row fails anyway)
        if BY_COUNT:
            theta = tl.maximum(kth32_value(gmax, gmax >= INT32_MIN), SK_NEG_INF)  # (all counted)
        else:
            runs: tl.constexpr = NT // 32
            theta = tl.maximum(tl.min(tl.topk(tl.reshape(gmax, [runs, 32]), K_C // runs)), SK_NEG_INF)
        theta_x = _as_values(theta, SRC)
        gtb = _group_bits(tl.where(x > theta_x, bit, 0), NT)
        c_gt = tl.sum(popc32(gtb), axis=0)
        n_gt = tl.sum(c_gt)
        if n_gt >= K_C:  # ties are needed only while n_gt < 32
            bits = gtb
            cnt = c_gt
            n_sel = n_gt
        else:
            bits, cnt, n_sel = _with_ties(
                x, inb, loc, theta_x, bit, gtb, c_gt, n_gt, TILE, PART, NT, FCAP, BY_COUNT
            )
        over = n_sel > FCAP
        if n_sel <= FCAP:
            s_row = scratch_ptr + pid * FCAP
            _compact(bits, cnt, s_row, PART, NT)
            tl.debug_barrier()  # the indices were written by other threads of this program
            if n_sel <= SMALL:
                top = _selected_top32(s_row, base, first_id, n_sel, SMALL, SRC, BY_COUNT)
            else:
                top = _selected_top32(s_row, base, first_id, n_sel, FCAP, SRC, BY_COUNT)
            tl.store(out + l32, top ^ ktag)
    return over


@triton.jit
def _values(raw, SRC: tl.constexpr):
    """The 16-bit patterns as the values the tile compares: the 16-bit float itself, except bfloat16
    under the interpreter (which holds it as integers and compares those): its exact binary32
    widening there, which orders, ties and propagates NaN as the 16-bit value does."""
    if SRC == SRC_BF16:
        if INTERPRETED:
            out = (raw.to(tl.int32) << 16).to(tl.float32, bitcast=True)
        else:
            out = raw.to(tl.bfloat16, bitcast=True)
    else:
        out = raw.to(tl.float16, bitcast=True)
    return out


@triton.jit
def _as_values(k, SRC: tl.constexpr):
    """The value (as _values gives it) whose binary32 value key is k, for a k that is the key of a
    widened 16-bit value (a column maximum, or -inf): the 16-bit pattern is exact, bfloat16 by its
    high half, binary16 by one conversion (cvt.rn.f16.f32: exact for a binary16 value, subnormals
    included; a scalar per tile)."""
    f = key_value32(k)
    if SRC == SRC_BF16:
        out = _values((f.to(tl.int32, bitcast=True) >> 16).to(tl.int16), SRC)
    else:
        out = f.to(tl.float16)
    return out


@triton.jit
def _group_bits(x, NT: tl.constexpr):
    """Per part and column group of a [P, R, GW16 NT] tile: the sum of x over the group's elements of
    the part (their OR when x holds distinct powers of two), as [P, NT]."""
    s = tl.sum(x, axis=1)
    return tl.sum(tl.reshape(s, [s.shape[0], NT, GW16]), axis=2)


@triton.jit
def _bit_loc(bi, col, NT: tl.constexpr):
    """The index within its part of bit bi of column group col's mask (bit GW16 r + j: row r, column j)."""
    return (bi // GW16) * (NT * GW16) + col * GW16 + (bi % GW16)


@triton.jit
def _first_index(bits, PART: tl.constexpr, NT: tl.constexpr, TILE: tl.constexpr):
    """Per column group, the index of the first element its masks [P, NT] select (TILE if none): the
    lowest bit of its first part whose mask has one (within a column group the index grows with the
    bit, and every index of a part lies below every index of the next)."""
    part = tl.arange(0, bits.shape[0])[:, None]
    lo = _bit_loc(bit_index(bits & -bits), tl.arange(0, NT)[None, :], NT) + part * PART
    return tl.min(tl.where(bits != 0, lo, TILE), axis=0)


@triton.jit
def _with_ties(x, inb, loc, theta_x, bit, gtb, c_gt, n_gt, TILE: tl.constexpr, PART: tl.constexpr,
               NT: tl.constexpr, FCAP: tl.constexpr, BY_COUNT: tl.constexpr):  # fmt: skip
    """The selection when fewer than 32 elements lie above theta (Gaussian rows almost never): those and
    the ties at theta, or, when that is more than FCAP, the ties of lowest index up to a bound phi with
    at least 32 ties at or below it: 31 when the tile's first 32 elements all tie (a masked row's -inf:
    one reduction), else the smaller of the 32nd smallest of the column groups' lowest tie indices
    (ties spread over the groups: a plateau) and the 4th smallest of their 8th lowest (ties filling
    the first rows, where the first bound admits 8 x 32 ties, past FCAP, and this one 32).
    (bits, cnt, n_sel)."""
    eqb = _group_bits(tl.where(inb & (x == theta_x), bit, 0), NT)  # (lanes past V are not ties)
    c_eq = tl.sum(popc32(eqb), axis=0)
    n_eq = tl.sum(c_eq)
    # the first 32 elements: the first row of the first part, bits 0-7 of column groups 0-3
    part = tl.arange(0, eqb.shape[0])[:, None]
    head = tl.where((part == 0) & (tl.arange(0, NT)[None, :] < K_C // GW16), eqb & 0xFF, 0)
    c_head = tl.sum(popc32(head), axis=0)
    if n_gt + n_eq <= FCAP:
        bits = gtb | eqb
        cnt = c_gt + c_eq
        n_sel = n_gt + n_eq
    elif tl.sum(c_head) == K_C:
        bits = gtb | head
        cnt = c_gt + c_head
        n_sel = n_gt + K_C
    else:
        t1 = _first_index(eqb, PART, NT, TILE)
        tg = _first_index(_drop_lowest(eqb, GW16 - 1), PART, NT, TILE)
        if BY_COUNT:
            phi = tl.minimum(kth_smallest(t1, K_C), kth_smallest(tg, K_C // GW16))
        else:
            # (Triton's top-k, ~ reversing the order: the count's [NT, NT] matrix took ~100 spilled
            # registers at the register cap)
            phi = tl.minimum(~tl.min(tl.topk(~t1, K_C)), ~tl.min(tl.topk(~tg, K_C // GW16)))
        bits = gtb | (eqb & _group_bits(tl.where(loc <= phi, bit, 0), NT))
        cnt = tl.sum(popc32(bits), axis=0)
        n_sel = tl.sum(cnt)
    return bits, cnt, n_sel


@triton.jit
def _drop_lowest(bits, N: tl.constexpr):
    """Per column group, its masks [P, NT] less their N lowest-index set bits."""
    for _ in tl.static_range(N):
        _, _, bits = _take_lowest(bits)
    return bits


@triton.jit
def _take_lowest(bits):
    """Per column group of the masks [P, NT], its lowest-index set bit (0 if none): the lowest bit of
    its first part whose mask has one (first, that part; lowbit), and the masks with it cleared."""
    part = tl.arange(0, bits.shape[0])[:, None]
    first = tl.min(tl.where(bits != 0, part, bits.shape[0]), axis=0)
    mine = part == first[None, :]
    mask = tl.sum(tl.where(mine, bits, 0), axis=0)  # (one term)
    lowbit = mask & -mask
    return first, lowbit, tl.where(mine, bits ^ lowbit[None, :], bits)


@triton.jit
def _compact(bits, cnt, s_row, PART: tl.constexpr, NT: tl.constexpr):
    """Each column group's selected indices (its masks' set bits, first part first, lowest bit first)
    to consecutive slots of the program's workspace row s_row, after an exclusive scan of the counts."""
    slot = tl.cumsum(cnt, 0) - cnt
    kmax = tl.max(cnt)
    col = tl.arange(0, NT)
    n = kmax * 0
    while n < kmax:
        first, lowbit, bits = _take_lowest(bits)
        li = _bit_loc(bit_index(lowbit), col, NT) + first * PART
        tl.store(s_row + slot + n, li.to(tl.int64), mask=lowbit != 0)
        n += 1


@triton.jit
def _selected_top32(s_idx, base, first_id, n_sel, N: tl.constexpr, SRC: tl.constexpr, BY_COUNT: tl.constexpr):
    """The top 32 keys (descending, KEY_PAD past n_sel) of the tile's n_sel <= N selected elements,
    whose indices _compact wrote to s_idx[0:n_sel]: their 16-bit logits reloaded, ordered as 32-bit
    words (module docstring), and only the 32 kept widened (clause 1.2) and keyed (clause 3.1)."""
    lane = tl.arange(0, N)
    live = lane < n_sel
    li = tl.load(s_idx + lane, mask=live, other=0).to(tl.int32)
    h = tl.load(base + li, mask=live, other=0)
    top = top32(tl.where(live, (value_key16(h) << 16) + (0xFFFF - li), WORD_PAD), BY_COUNT)
    idx = 0xFFFF - (top & 0xFFFF)
    sk = value_key32(widen_i32(key_value16(top >> 16), SRC))
    key = (sk.to(tl.int64) << 32) + (0xFFFFFFFF - (first_id + idx))
    return tl.where(top != WORD_PAD, key, KEY_PAD)

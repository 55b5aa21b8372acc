# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""The tile stage: one program per (row, vocabulary tile) finds the tile's 32 largest keys and its
status flags (clauses 1.2, 2.1, 3.1, 3.2, 4.1).

The tile's top 32 keys are found by a value threshold: a proven lower bound theta of the tile's 32nd
value, then the compaction of what lies above it (and, when needed, of the lowest-ID ties at theta)
and an exact order. Every choice of bound and layout gives the same keys; the bound and the layout
only decide how much work that takes (benchmarks/DESIGN.md "Tile selection"):

- ``_tile_fast``, the column-group tile (tiles of 8 to 64 elements per thread): each thread holds one
  column group, theta comes from the column maxima, the selection is a bit mask per column, and
  per element only binary32 comparisons run (exact; no value key per element);
- ``_tile_part``, the strided-group tile of tiles too small for column groups (test plans); its
  selection (``_part_ranked``: a bound from strided group maxima, an exact rank; more than CAP
  elements above that bound take 32 successive maxima, select_jit.top32_extract) is also the
  column-group tile's exact fallback when more than FCAP elements pass its bound, run there part by
  part (``_parts_fallback``) so that it costs the common path no registers.

A greedy row without a trace stores only the tile's largest key (clause 4.1: the argmax is all it
needs). With TAGGED, every stored word carries the row's tag (tags_jit).
"""

from dyadic24.kernels.backend import select_backend

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait  # noqa: E402

from dyadic24.kernels.ieee_jit import F32_POS_INF, KEY_PAD, SRC_F32  # noqa: E402
from dyadic24.kernels.select_jit import (  # noqa: E402
    INT32_MAX,
    INT32_MIN,
    K_C,
    SK_NEG_INF,
    SK_POS_INF,
    bit_index,
    count_pair,
    key_value32,
    kth32_value,
    kth_smallest,
    load_bits_i32,
    max_nan,
    popc32,
    rank_desc,
    reduce_max_nan,
    scan_pair,
    top32,
    top32_extract,
    value_key32,
    widen_i32,
)
from dyadic24.kernels.tags_jit import row_tags  # noqa: E402
from dyadic24.kernels.tile16_jit import tile16  # noqa: E402

# benchmarks/DESIGN.md "Tile size, warps and registers" and "Tile selection":
WARPS = tl.constexpr(4)  # warps per tile program
NT = tl.constexpr(32 * WARPS.value)  # column groups of the column-group tile: one per thread
GROUPS = tl.constexpr(128)  # _part_ranked's strided groups (the 32nd largest maximum bounds the 32nd)
CAP = tl.constexpr(64)  # _part_ranked's compaction slots (more above its bound: 32 successive maxima)
FCAP = tl.constexpr(128)  # _tile_fast's compaction slots (more: _parts_fallback); the workspace's row width
SMALL_SEL = tl.constexpr(64)  # _tile_fast orders at most this many selected elements in 64 lanes
MAX_TILE16 = tl.constexpr(16384)  # the 16-bit tile's largest (tile16_jit: indices in 14 bits)


# V is specialised (a vocabulary that is a multiple of 16 is known to give 64-byte aligned rows, so
# the logits are read with 16-byte loads); n_tiles is not (no variant per "== 1" / "% 16" pattern).
@triton.jit(do_not_specialize=["n_tiles", "n_rows"])
def tile_kernel(
    logits_ptr,
    cand_ptr,
    flags_ptr,
    scratch_ptr,
    counter_ptr,
    temp_ptr,
    V,
    n_tiles,
    n_rows,
    TILE: tl.constexpr,
    SRC: tl.constexpr,
    TRACE: tl.constexpr,
    BY_COUNT: tl.constexpr,
    TAGGED: tl.constexpr,
    PDL: tl.constexpr,
    WAIT: tl.constexpr,
    STAGGER: tl.constexpr,
    SLOTS: tl.constexpr,
    WAVE: tl.constexpr,
):
    """Per (row, tile), program (tile, y, z) of a grid (n_tiles, Y, Z) with row = y + z Y < n_rows
    (tile_grid): the tile's top 32 keys at cand[row, tile, :] (clauses 3.1, 3.2: descending,
    KEY_PAD past the tile's end) and its status flags at flags[row, tile] (clause 2.1: NaN << 2 |
    +inf << 1 | live; the maximum over the row's tiles gives the row's status, since that bit order
    is the status precedence). Logits of any format are widened to binary32 patterns by integer
    operations (clause 1.2). A greedy row without a trace (clause 4.1) stores only the tile's largest
    key, in lane 0.

    TAGGED: every stored word carries the row's tag (tags_jit). PDL: the merge, a programmatic
    dependent launch, may be scheduled at once. WAIT: this kernel is itself a programmatic dependent
    launch of the stream's previous kernel and waits for that grid's end before anything else.
    STAGGER (ns, GPU only; timing, no output depends on it): SM slot g = pid // SLOTS of the first
    WAVE slots starts g * STAGGER ns late, so that the slots' loads reach the memory in turn
    (DESIGN.md "Stagger"). 16-bit logits in a tile of 8 NT x 2^k (1,024 to 16,384) take the 16-bit
    tile (tile16_jit; DESIGN.md "The 16-bit tile"), in others the binary32 tile on their widening."""
    # (row and tile from the grid's axes, not pid // n_tiles: that division, ~30 dependent instructions
    # with a MUFU.RCP, delayed every program's first load; DESIGN.md "Two launches and the polling merge")
    tile = tl.program_id(0).to(tl.int64)
    row = tl.program_id(1).to(tl.int64) + tl.program_id(2).to(tl.int64) * tl.num_programs(1)
    pid = row * n_tiles + tile  # (the program's place in launch order: x fastest)
    if WAIT:
        # before any read and before the merge may start: only the launch overlaps the previous
        # kernel (DESIGN.md "Two launches and the polling merge")
        gdc_wait()
    if PDL:
        gdc_launch_dependents()
    if row < n_rows:
        _tile_program(
            logits_ptr, cand_ptr, flags_ptr, scratch_ptr, counter_ptr, temp_ptr, V, pid, row, tile, TILE,
            SRC, TRACE, BY_COUNT, TAGGED, STAGGER, SLOTS, WAVE,
        )  # fmt: skip


@triton.jit
def _tile_program(
    logits_ptr,
    cand_ptr,
    flags_ptr,
    scratch_ptr,
    counter_ptr,
    temp_ptr,
    V,
    pid,
    row,
    tile,
    TILE: tl.constexpr,
    SRC: tl.constexpr,
    TRACE: tl.constexpr,
    BY_COUNT: tl.constexpr,
    TAGGED: tl.constexpr,
    STAGGER: tl.constexpr,
    SLOTS: tl.constexpr,
    WAVE: tl.constexpr,
):
    """tile_kernel's program of a row of the batch."""
    if STAGGER > 0:  # noqa: SIM102 (constexpr, then runtime)
        if pid >= SLOTS and pid < SLOTS * WAVE:
            _hold(pid // SLOTS * STAGGER)
    greedy_fast = False
    if not TRACE:
        greedy_fast = (tl.load(temp_ptr + row) & 0x7FFFFFFF) == 0
    _word, ktag, ftag = row_tags(counter_ptr, row, TAGGED)
    if SRC != SRC_F32 and TILE >= 8 * NT and TILE <= MAX_TILE16 and (TILE & (TILE - 1)) == 0:
        over = tile16(
            logits_ptr, cand_ptr, flags_ptr, scratch_ptr, pid, row, tile, V, greedy_fast, ktag, ftag,
            TILE, SRC, BY_COUNT, NT, FCAP, SMALL_SEL,
        )  # fmt: skip
        if over:  # (its flags are stored)
            # a call is a block the membar pass does not see into: without this barrier the callee's
            # reductions reused tile16's shared scratch while slower warps still read it (racecheck,
            # H100, 2026-12-06: 240 hazards, then an illegal address from a corrupted scan)
            tl.debug_barrier()
            _parts_fallback_call(
                logits_ptr, cand_ptr, scratch_ptr + pid * FCAP, pid, row, tile, V, ktag, TILE, SRC, BY_COUNT
            )
    elif TILE >= 8 * NT and (TILE <= 64 * NT or TILE == 96 * NT):
        _tile_fast(
            logits_ptr, cand_ptr, flags_ptr, scratch_ptr, pid, row, tile, V, greedy_fast, ktag, ftag,
            TILE, SRC, BY_COUNT,
        )  # fmt: skip
    else:
        _tile_part(
            logits_ptr, cand_ptr, flags_ptr, scratch_ptr + pid * (FCAP - CAP), pid, row, tile, V,
            greedy_fast, ktag, ftag, TILE, SRC,
        )  # fmt: skip


@triton.jit
def _tile_fast(
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
):
    """The column-group tile: the tile's candidates and flags (as _tile_part) with little work per element.

    Layout. The tile is an [R, GW NT] array, element r * GW NT + c; column group t is columns GW t ..
    GW t + GW - 1, GW = the elements of one 16-byte load (4 binary32, 8 bfloat16 / binary16), so
    that thread t holds its R x GW elements and group reductions stay in registers. A tile of more
    than 32 NT elements is two such arrays (PARTS = 2; the second from element TILE / 2 on), and the
    tile of 96 NT (propose.TILE_3) three (PARTS = 3, from 0, TILE / 3 and 2 TILE / 3); the elements
    of column group t in every part form one group with one selection mask per part (a 32-bit mask
    holds R GW <= 32 bits): per element the same work, per tile the bound, scan, compaction and top
    32 once for two or three times the elements.

    Bound (clause 3.2). Any theta that 32 distinct elements reach bounds the tile's 32nd value: its
    top 32 keys are the elements above theta and, when fewer than 32 of those exist, the lowest-ID
    elements at theta. On the GPU theta is the smallest over the NT / 32 warps of the warp's
    (32 / warps)-th largest column maximum (32 distinct columns reach it, and no exchange between
    warps is needed); BY_COUNT (the interpreter) takes the 32nd largest column maximum by an exact
    count. When the ties at theta are needed and too many, a bound phi on their indices with at
    least 32 ties at or below it limits them (_with_ties).

    Selection. Each column records its selected elements as a bit mask, formed for the ties only
    when fewer than 32 elements lie above theta (_eq_masks), and writes their indices to consecutive
    slots of the program's row of the workspace after an exclusive scan of the column counts; the
    selected elements (at most FCAP) are reloaded, keyed and ordered (_selected_top32). More than
    FCAP selected (large values crowded into a few warps' columns) takes _parts_fallback: the layout
    is a matter of speed only, the bounds hold for any partition into columns.

    Values, not keys, per element. Each element costs one NaN-propagating binary32 maximum (its
    column's) and one binary32 comparison per mask; value keys (value_key32) are formed only per
    column and for the reloaded selection. A binary32 comparison orders non-NaN values exactly as
    their keys do (-0 == +0 in both) and rounds nothing; the PTX holds no flush-to-zero form of it
    (aot_check's audit), so subnormals compare as themselves. A NaN makes its column's maximum NaN,
    which sets the NaN flag; the row then fails (clause 2.3) and what the tile selects for it is
    never used. Lanes past V read as -inf."""
    GW: tl.constexpr = 4 if SRC == SRC_F32 else 8  # elements per 16-byte load: one thread's columns
    # a 32-bit mask holds a group's elements of one part (PART elements): TILE_3 (three parts) fits
    # one program per SM where BIG_TILE (two) needs two on some (DESIGN.md "Tile size, warps and registers")
    PARTS: tl.constexpr = 3 if TILE > NT * 64 else (2 if TILE > NT * 32 else 1)
    PART: tl.constexpr = TILE // PARTS
    R: tl.constexpr = PART // (NT * GW)
    rr = tl.arange(0, R)[:, None]
    cc = tl.arange(0, NT * GW)[None, :]
    loc = rr * (NT * GW) + cc
    first_id = tile * TILE
    lim = tl.minimum(V - first_id, TILE).to(tl.int32)
    inb = loc < lim
    full = first_id + TILE <= V
    base = logits_ptr + (row * V + first_id)
    inb2 = loc + PART < lim
    inb3 = loc + 2 * PART < lim
    b, b2, b3 = _tile_bits(base, loc, inb, inb2, inb3, full, PART, PARTS, SRC)
    x = b.to(tl.float32, bitcast=True)
    x2 = b2.to(tl.float32, bitcast=True)
    x3 = b3.to(tl.float32, bitcast=True)
    # per element only binary32 comparisons and a NaN-propagating maximum (one instruction each);
    # value keys are formed per column group (DESIGN.md "Tile selection": "Comparisons, not keys")
    # (the parts' maximum first: every first use then needs every part's loads, so ptxas issues all
    # of them before it; reducing one part first left the next part's loads behind the first's data)
    xm = x
    if PARTS >= 2:
        xm = max_nan(x, x2)
    if PARTS == 3:
        xm = max_nan(xm, x3)
    cmax = reduce_max_nan(xm, 0, BY_COUNT)
    gmax_f = reduce_max_nan(tl.reshape(cmax, [NT, GW]), 1, BY_COUNT)
    gmax = value_key32(gmax_f.to(tl.int32, bitcast=True))
    # clause 2.1: each column's flag word, then their maximum (one reduction): the bits' order is the
    # status precedence, so the row's status from the maximum over all words equals the status from
    # the tile's word as _tile_part forms it (only bits below a set NaN bit differ)
    nan = gmax_f != gmax_f  # noqa: PLR0124 (the NaN test: a column with a NaN has a NaN maximum)
    words = (
        (nan.to(tl.int32) << 2) | ((gmax == SK_POS_INF).to(tl.int32) << 1) | (gmax > SK_NEG_INF).to(tl.int32)
    )
    flags = tl.max(words)
    tl.store(flags_ptr + pid, flags ^ ftag)
    l32 = tl.arange(0, K_C)
    out = cand_ptr + pid * K_C
    if greedy_fast:  # clause 4.1: the tile's largest key alone (lowest ID among equal values)
        top = tl.max(gmax)
        top_f = key_value32(top)
        first = tl.min(tl.min(tl.where(inb & (x == top_f), loc, TILE), axis=0))
        if PARTS >= 2:
            at2 = tl.where(inb2 & (x2 == top_f), loc + PART, TILE)
            first = tl.minimum(first, tl.min(tl.min(at2, axis=0)))
        if PARTS == 3:
            at3 = tl.where(inb3 & (x3 == top_f), loc + 2 * PART, TILE)
            first = tl.minimum(first, tl.min(tl.min(at3, axis=0)))
        amax = (top.to(tl.int64) << 32) + (0xFFFFFFFF - (first_id + first))  # its key (clause 3.1)
        tl.store(out + l32, tl.where(l32 == 0, amax, KEY_PAD) ^ ktag)
    else:
        # (a NaN below -inf could pull theta under the -inf of the lanes past V; the row fails anyway)
        if BY_COUNT:
            theta = tl.maximum(kth32_value(gmax, gmax >= INT32_MIN), SK_NEG_INF)  # (all counted)
        else:
            runs: tl.constexpr = NT // 32
            theta = tl.maximum(tl.min(tl.topk(tl.reshape(gmax, [runs, 32]), K_C // runs)), SK_NEG_INF)
        bit = 1 << (rr * GW + (cc & (GW - 1)))  # (distinct powers of two: sums are ORs)
        theta_f = key_value32(theta)  # (x > theta_f exactly when value_key32(x) > theta, x not NaN)
        gtb, gtb2, gtb3, c_gt, n_gt = _gt_masks(x, x2, x3, theta_f, bit, PARTS, GW)
        col = tl.arange(0, NT)  # (the compaction's column indices)
        if n_gt >= K_C:  # ties are needed only while n_gt < 32
            bits = gtb
            bits2 = gtb2
            bits3 = gtb3
            cnt = c_gt
            n_sel = n_gt
        else:  # (the ties' masks only here)
            eqb, eqb2, eqb3, c_eq, n_eq = _eq_masks(x, inb, x2, inb2, x3, inb3, full, theta_f, bit, PARTS, GW)
            bits, bits2, bits3, cnt, n_sel = _with_ties(
                gtb, eqb, gtb2, eqb2, gtb3, eqb3, c_gt, c_eq, n_gt, n_eq, loc, bit, TILE, PARTS, GW
            )
        if n_sel <= FCAP:
            # each column's selected indices to consecutive slots of the program's row, lowest bit first
            # (first part first)
            s_row = scratch_ptr + pid * FCAP
            slot = tl.cumsum(cnt, 0) - cnt
            kmax = tl.max(cnt)
            n = kmax * 0
            while n < kmax:
                if PARTS == 1:
                    lowbit = bits & -bits
                    li = _bit_loc(bit_index(lowbit), col, GW)
                    bits = bits ^ lowbit
                else:
                    lowbit, in1, in2, bits, bits2, bits3 = _take_lowest(bits, bits2, bits3, PARTS)
                    off = tl.where(in1, 0, tl.where(in2, PART, 2 * PART))  # (the part's first element)
                    li = _bit_loc(bit_index(lowbit), col, GW) + off
                tl.store(s_row + slot + n, li.to(tl.int64), mask=lowbit != 0)
                n += 1
            tl.debug_barrier()  # the indices were written by other threads of this program
            # (the common case, ~50 selected for Gaussian logits, orders 64 lanes: one merge round and
            # one exchange between warps fewer than FCAP)
            if n_sel <= SMALL_SEL:
                top = _selected_top32(s_row, base, first_id, n_sel, SMALL_SEL, SRC, BY_COUNT)
            else:
                top = _selected_top32(s_row, base, first_id, n_sel, FCAP, SRC, BY_COUNT)
            tl.store(out + l32, top ^ ktag)
        else:
            _parts_fallback(
                logits_ptr, cand_ptr, scratch_ptr + pid * FCAP, pid, row, tile, V, ktag, TILE, SRC, BY_COUNT
            )


@triton.jit
def _tile_part(
    logits_ptr,
    cand_ptr,
    flags_ptr,
    s_base,
    pid,
    row,
    tile,
    V,
    greedy_fast,
    ktag,
    ftag,
    TILE: tl.constexpr,
    SRC: tl.constexpr,
):
    """The strided-group tile: the tile's candidates and flags NaN << 2 | +inf << 1 | live (clause
    2.1; a NaN gets the largest key, so the tile's largest key alone tells NaN, else +inf, else
    "anything but -inf"), its top 32 keys by _part_ranked. The workspace row is s_base + pid * CAP
    (callers pass scratch_ptr + pid * (FCAP - CAP), so that it is the program's row of FCAP slots)."""
    first_id = tile * TILE
    loc, inb, sk, gm = _part_keys(logits_ptr + (row * V + first_id), V - first_id, TILE, SRC)
    top = tl.max(gm)
    flags = (
        ((top == INT32_MAX).to(tl.int32) << 2)
        | ((top == SK_POS_INF).to(tl.int32) << 1)
        | (top > SK_NEG_INF).to(tl.int32)
    )
    tl.store(flags_ptr + pid, flags ^ ftag)
    l32 = tl.arange(0, K_C)
    out = cand_ptr + pid * K_C
    if greedy_fast:  # clause 4.1: the tile's largest key alone, in lane 0
        first = tl.min(tl.where(inb & (sk == top), loc, TILE))
        amax = (top.to(tl.int64) << 32) + (0xFFFFFFFF - (first_id + first))  # its key (clause 3.1)
        tl.store(out + l32, tl.where(l32 == 0, amax, KEY_PAD) ^ ktag)
    else:
        _part_ranked(sk, inb, loc, gm, first_id, s_base + pid * CAP, out, ktag, TILE)


@triton.jit(noinline=True)
def _parts_fallback_call(logits_ptr, cand_ptr, s_row, pid, row, tile, V, ktag, TILE: tl.constexpr,
                         SRC: tl.constexpr, BY_COUNT: tl.constexpr):  # fmt: skip
    """_parts_fallback out of line (the 16-bit tile's): its registers and spills stay in its own frame,
    so the common path's allocation does not carry them (inlined, ~100 spilled registers at a cap of 96,
    some on the common path)."""
    _parts_fallback(logits_ptr, cand_ptr, s_row, pid, row, tile, V, ktag, TILE, SRC, BY_COUNT)


@triton.jit
def _parts_fallback(logits_ptr, cand_ptr, s_row, pid, row, tile, V, ktag, TILE: tl.constexpr,
                    SRC: tl.constexpr, BY_COUNT: tl.constexpr):  # fmt: skip
    """_tile_fast's fallback (more than FCAP selected; the tile's flags are already stored), part by
    part: the top 32 keys of each PART-lane part by _part_ranked, the first in slots CAP .. CAP + 31 of
    the program's workspace row s_row, each later one in CAP + 32 .. CAP + 63 and merged into the
    running top 32 in the first (keys are unique, so the tile's top 32 are among its parts' top 32).
    A part of 8 lanes per thread in a loop needs a fraction of the registers and code of the whole
    tile: compiled into every tile program, the fallback no longer sets their register allocation
    (DESIGN.md "Tile selection": "Fallbacks, for adversarial tiles only")."""
    PART: tl.constexpr = 8 * NT
    first_id = tile * TILE
    base = logits_ptr + (row * V + first_id)
    lane = tl.arange(0, 2 * K_C)
    for p in range(TILE // PART):  # (a loop, not unrolled: one copy of the part's code)
        loc, inb, sk, gm = _part_keys(base + p * PART, V - first_id - p * PART, PART, SRC)
        dst = s_row + CAP + K_C * tl.minimum(p, 1)
        _part_ranked(sk, inb, loc, gm, first_id + p * PART, s_row, dst, 0, PART)
        tl.debug_barrier()  # (the next part reuses the compaction slots; the merge reads both lists)
        if p > 0:
            best = top32(tl.load(s_row + CAP + lane), BY_COUNT)
            tl.debug_barrier()  # (every thread has read both lists before the running top 32 changes)
            tl.store(s_row + CAP + tl.arange(0, K_C), best)
            tl.debug_barrier()
    tl.store(cand_ptr + pid * K_C + tl.arange(0, K_C), tl.load(s_row + CAP + tl.arange(0, K_C)) ^ ktag)


@triton.jit
def _part_keys(base, avail, TILE: tl.constexpr, SRC: tl.constexpr):
    """The strided-group tile's per-element state over TILE lanes of which the first avail (at most
    TILE) lie in the row: (loc, inb, sk, gm), sk the int32 value keys (a NaN INT32_MAX, lanes past
    the row INT32_MIN) and gm the maxima of the G = min(GROUPS, TILE) strided groups (lane g holds
    the lanes g mod G). Per-element state is int32; keys are formed only for the compaction."""
    G: tl.constexpr = GROUPS if TILE > GROUPS else TILE
    loc = tl.arange(0, TILE)
    inb = loc < tl.minimum(avail, TILE).to(tl.int32)
    b = load_bits_i32(base, loc, inb, SRC)
    sk = tl.where(inb, tl.where((b & 0x7FFFFFFF) > F32_POS_INF, INT32_MAX, value_key32(b)), INT32_MIN)
    gm = tl.max(tl.reshape(sk, [TILE // G, G]), axis=0)
    return loc, inb, sk, gm


@triton.jit
def _part_ranked(sk, inb, loc, gm, first_id, s_row, dst, dtag, TILE: tl.constexpr):
    """The top 32 keys (clause 3.1) of a strided-group tile, stored at dst[rank] xor dtag, KEY_PAD
    past the real ones. theta = the 32nd largest (with multiplicity) of the strided group maxima gm;
    32 distinct elements have a value >= theta, so the top 32 keys are every element of value > theta
    when there are at least 32 of those, otherwise all of them and the lowest-ID elements of value
    theta. These (at most CAP) are compacted as keys into s_row[0:CAP] and ranked by an exact integer
    count. More than CAP above theta (adversarial data) takes 32 successive maxima."""
    G: tl.constexpr = GROUPS if TILE > GROUPS else TILE
    l32 = tl.arange(0, K_C)
    if G == K_C:  # noqa: SIM108 (constexpr branch)
        theta = tl.min(gm)
    else:
        theta = kth32_value(gm, gm > INT32_MIN)
    gt = inb & (sk > theta)
    eq = inb & (sk == theta)
    n_gt, n_eq = count_pair(gt, eq, TILE)
    if n_gt <= CAP:
        c_gt, c_eq = scan_pair(gt, eq, TILE)
        need = K_C - n_gt
        sel = gt | (eq & (c_eq <= need))
        slot = tl.where(gt, c_gt - 1, n_gt + c_eq - 1)
        tl.store(s_row + slot, (sk.to(tl.int64) << 32) + (0xFFFFFFFF - (first_id + loc)), mask=sel)
        n_sel = n_gt + tl.minimum(tl.maximum(need, 0), n_eq)
        tl.debug_barrier()  # the compacted keys were written by other threads of this program
        lane = tl.arange(0, CAP)
        live = lane < n_sel
        s = tl.load(s_row + lane, mask=live, other=KEY_PAD)
        rank = rank_desc(s, live)
        tl.store(dst + rank, s ^ dtag, mask=live & (rank < K_C))
        tl.store(dst + l32, tl.full([K_C], KEY_PAD, tl.int64) ^ dtag, mask=l32 >= n_sel)
    else:
        key = tl.where(inb, (sk.to(tl.int64) << 32) + (0xFFFFFFFF - (first_id + loc)), KEY_PAD)
        tl.store(dst + l32, top32_extract(key) ^ dtag)


@triton.jit
def _tile_bits(base, loc, inb, inb2, inb3, full, PART: tl.constexpr, PARTS: tl.constexpr, SRC: tl.constexpr):
    """A tile's binary32 patterns as int32 (clause 1.2), lanes past V as -inf (0xFF800000): (first,
    second, third part), a part the tile lacks equal to the first.

    A full tile loads without a mask in a block of its own, all parts in the same block: with only
    the masked form, or with one block per part, ptxas kept some of a thread's 16-byte loads behind
    the first ones' data, DRAM round trips in a row instead of one (aot_check audits the SASS). The
    same bits either way."""
    if full:
        b = widen_i32(tl.load(base + loc), SRC)
        b2 = b
        b3 = b
        if PARTS >= 2:
            b2 = widen_i32(tl.load(base + PART + loc), SRC)
        if PARTS == 3:
            b3 = widen_i32(tl.load(base + 2 * PART + loc), SRC)
    else:
        b = tl.where(inb, widen_i32(tl.load(base + loc, mask=inb, other=0), SRC), -8388608)
        b2 = b
        b3 = b
        if PARTS >= 2:
            b2 = tl.where(inb2, widen_i32(tl.load(base + PART + loc, mask=inb2, other=0), SRC), -8388608)
        if PARTS == 3:
            b3 = tl.where(inb3, widen_i32(tl.load(base + 2 * PART + loc, mask=inb3, other=0), SRC), -8388608)
    return b, b2, b3


@triton.jit
def _group_bits(x, GW: tl.constexpr):
    """Per column group of an [R, GW NT] tile (one thread's R x GW elements): the sum of x over the
    group's elements, which is their OR when x holds distinct powers of two (_tile_fast's ``bit``)."""
    return tl.sum(tl.reshape(tl.sum(x, axis=0), [NT, GW]), axis=1)


@triton.jit
def _bit_loc(bi, col, GW: tl.constexpr):
    """The index within its part of bit bi of column group col's mask (bit GW r + j: row r, column j)."""
    return (bi // GW) * (NT * GW) + col * GW + (bi % GW)


@triton.jit
def _gt_masks(x, x2, x3, theta, bit, PARTS: tl.constexpr, GW: tl.constexpr):
    """The elements above theta (binary32 values, a binary32 comparison) as one bit mask per column
    group and part (gtb2, gtb3 for the second and third, equal to gtb for parts the tile lacks), the
    groups' counts and the tile's total: (gtb, gtb2, gtb3, c_gt, n_gt). Masks, not per-element flags:
    nothing per element stays live past this point, and the counts are the masks' popcounts."""
    gtb = _group_bits(tl.where(x > theta, bit, 0), GW)
    c_gt = popc32(gtb)
    gtb2 = gtb
    gtb3 = gtb
    if PARTS >= 2:
        gtb2 = _group_bits(tl.where(x2 > theta, bit, 0), GW)
        c_gt += popc32(gtb2)
    if PARTS == 3:
        gtb3 = _group_bits(tl.where(x3 > theta, bit, 0), GW)
        c_gt += popc32(gtb3)
    return gtb, gtb2, gtb3, c_gt, tl.sum(c_gt)


@triton.jit
def _eq_masks(x, inb, x2, inb2, x3, inb3, full, theta, bit, PARTS: tl.constexpr, GW: tl.constexpr):
    """The elements at theta as _gt_masks forms those above it (eqb, eqb2, eqb3, c_eq, n_eq); formed
    only when fewer than 32 lie above theta (Gaussian rows almost never: DESIGN.md "Tile selection")."""
    eqb = _group_bits(tl.where(x == theta, bit, 0), GW)
    if not full:  # lanes past V read as -inf and must not tie with theta = -inf
        eqb = eqb & _group_bits(tl.where(inb, bit, 0), GW)
    c_eq = popc32(eqb)
    eqb2 = eqb
    eqb3 = eqb
    if PARTS >= 2:
        eqb2 = _group_bits(tl.where(x2 == theta, bit, 0), GW)
        if not full:
            eqb2 = eqb2 & _group_bits(tl.where(inb2, bit, 0), GW)
        c_eq += popc32(eqb2)
    if PARTS == 3:
        eqb3 = _group_bits(tl.where(x3 == theta, bit, 0), GW)
        if not full:
            eqb3 = eqb3 & _group_bits(tl.where(inb3, bit, 0), GW)
        c_eq += popc32(eqb3)
    return eqb, eqb2, eqb3, c_eq, tl.sum(c_eq)


@triton.jit
def _with_ties(gtb, eqb, gtb2, eqb2, gtb3, eqb3, c_gt, c_eq, n_gt, n_eq, loc, bit, TILE: tl.constexpr,
               PARTS: tl.constexpr, GW: tl.constexpr):  # fmt: skip
    """_tile_fast's selection when fewer than 32 elements lie above theta: those and the ties at theta,
    or, when that is more than FCAP, the ties of lowest ID up to a bound phi with at least 32 ties at
    or below it: 31 when the tile's first 32 elements all tie (a masked row's -inf: one reduction),
    else the smaller of the 32nd smallest of the column groups' lowest tie indices (ties spread over
    the groups: a plateau) and the (32 / GW)-th smallest of their GW-th lowest (ties filling the first
    rows, where the first bound admits GW x 32 ties and this one 32).
    (bits, bits2, bits3, cnt, n_sel) as _tile_fast's."""
    # the first 32 elements: the first row of the first part, bits 0 to GW - 1 of groups 0 to 32 / GW - 1
    head = tl.where(tl.arange(0, NT) < K_C // GW, eqb & ((1 << GW) - 1), 0)
    c_head = popc32(head)
    if n_gt + n_eq <= FCAP:
        bits = gtb | eqb
        bits2 = gtb2 | eqb2
        bits3 = gtb3 | eqb3
        cnt = c_gt + c_eq
        n_sel = n_gt + n_eq
    elif tl.sum(c_head) == K_C:
        bits = gtb | head
        bits2 = gtb2
        bits3 = gtb3
        cnt = c_gt + c_head
        n_sel = n_gt + K_C
    else:
        PART: tl.constexpr = TILE // PARTS
        t1 = _lowest_tie(eqb, eqb2, eqb3, TILE, PARTS, GW)
        m = eqb
        m2 = eqb2
        m3 = eqb3
        for _ in tl.static_range(GW - 1):  # (each column group's GW - 1 lowest ties dropped)
            _, _, _, m, m2, m3 = _take_lowest(m, m2, m3, PARTS)
        tg = _lowest_tie(m, m2, m3, TILE, PARTS, GW)
        phi = tl.minimum(kth_smallest(t1, K_C), kth_smallest(tg, K_C // GW))
        bits = gtb | (eqb & _group_bits(tl.where(loc <= phi, bit, 0), GW))
        cnt = popc32(bits)
        bits2 = bits
        bits3 = bits
        if PARTS >= 2:
            bits2 = gtb2 | (eqb2 & _group_bits(tl.where(loc + PART <= phi, bit, 0), GW))
            cnt += popc32(bits2)
        if PARTS == 3:
            bits3 = gtb3 | (eqb3 & _group_bits(tl.where(loc + 2 * PART <= phi, bit, 0), GW))
            cnt += popc32(bits3)
        n_sel = tl.sum(cnt)
    return bits, bits2, bits3, cnt, n_sel


@triton.jit
def _take_lowest(m, m2, m3, PARTS: tl.constexpr):
    """Per column group, the lowest set bit of its first part whose mask has one (parts in index
    order; 0 if none), whether that part is the first (in1) or the second (in2), and the masks with
    it cleared there. Of two parts the second has it whenever the first has none (LLVM folds the
    third part's terms away); of one, m2 and m3 are m and their results unused."""
    in1 = m != 0
    in2 = m == 0
    if PARTS == 3:
        in2 = in2 & (m2 != 0)
    lowbit = tl.where(in1, m, tl.where(in2, m2, m3))
    lowbit = lowbit & -lowbit
    m = tl.where(in1, m ^ lowbit, m)
    m2 = tl.where(in2, m2 ^ lowbit, m2)
    if PARTS == 3:
        m3 = tl.where(in1 | in2, m3, m3 ^ lowbit)
    return lowbit, in1, in2, m, m2, m3


@triton.jit
def _lowest_tie(eqb, eqb2, eqb3, TILE: tl.constexpr, PARTS: tl.constexpr, GW: tl.constexpr):
    """Per column group, the index of its lowest tie (TILE if none): its first part's mask's lowest bit
    (within a column the index grows with the bit, and every index of a part is below every index of
    the next)."""
    PART: tl.constexpr = TILE // PARTS
    col = tl.arange(0, NT)
    lo = bit_index(eqb & -eqb)
    tmin = tl.where(eqb != 0, _bit_loc(lo, col, GW), TILE)
    if PARTS >= 2:
        lo2 = bit_index(eqb2 & -eqb2)
        tmin2 = PART + _bit_loc(lo2, col, GW)
        tmin = tl.where((eqb == 0) & (eqb2 != 0), tmin2, tmin)
    if PARTS == 3:
        lo3 = bit_index(eqb3 & -eqb3)
        tmin3 = 2 * PART + _bit_loc(lo3, col, GW)
        tmin = tl.where((eqb == 0) & (eqb2 == 0) & (eqb3 != 0), tmin3, tmin)
    return tmin


@triton.jit
def _selected_top32(s_idx, base, first_id, n_sel, N: tl.constexpr, SRC: tl.constexpr, BY_COUNT: tl.constexpr):
    """The top 32 keys (descending, KEY_PAD past n_sel) of a tile's n_sel <= N selected elements,
    whose tile-local indices _tile_fast wrote to s_idx[0:n_sel]; their logits are read again."""
    lane = tl.arange(0, N)
    live = lane < n_sel
    li = tl.load(s_idx + lane, mask=live, other=0).to(tl.int32)
    sk = value_key32(load_bits_i32(base, li, live, SRC))
    key = tl.where(live, (sk.to(tl.int64) << 32) + (0xFFFFFFFF - (first_id + li)), KEY_PAD)
    return top32(key, BY_COUNT)


@triton.jit
def _globaltimer(dep, nap):
    """%globaltimer (ns; GPU only), read once dep is known, after a 128 ns nanosleep when nap != 0."""
    return tl.inline_asm_elementwise(
        "{ .reg .pred p; setp.ne.s64 p, $2, 0; @p nanosleep.u32 128; mov.u64 $0, %globaltimer; }",
        "=l,l,l", [dep.to(tl.int64), nap.to(tl.int64)], dtype=tl.int64, is_pure=False, pack=1,
    )  # fmt: skip


@triton.jit
def _hold(d):
    """Wait about d ns (GPU only): the stagger's wait, no effect on any output."""
    t0 = _globaltimer(d, d * 0)
    t = t0
    while t < t0 + d:
        t = _globaltimer(t, d * 0 + 1)

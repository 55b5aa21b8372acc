# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""The merge stage: one program per row merges the tiles' candidates into C, decides the status and
runs the finish (clauses 2.1, 3.2, 3.3, 4.1, 5-9, 12.1, 12.3).

The tiles' lists are sorted, so C (the row's top 32 keys) is usually the top 32 of a pool of every
tile's leading MPOOL_K keys, halved by pairing tiles (_merge_pool_pairs, which proves when that is so
and otherwise adds the whole lists of the few "hot" pairs). A row of one tile needs no merge: its list
is C. Without a pool (more than 128 tiles) the merge takes a value threshold over every candidate
(_merge_threshold), whose fallback is 32 successive maxima (_merge_extract). The merge is launched as
a programmatic dependent of the tile kernel and, where tags apply, polls the tile programs' tagged
words (tags_jit) instead of waiting for the tile grid's end (benchmarks/DESIGN.md "Two launches and
the polling merge", "Merge").
"""

from dyadic24.kernels.backend import select_backend

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.language.extra.cuda import gdc_wait  # noqa: E402

from dyadic24.kernels.clause5_hw_jit import tau_reciprocal  # noqa: E402
from dyadic24.kernels.finish_jit import (  # noqa: E402
    draw_words,
    early_draw,
    finish_best,
    greedy_outputs,
    load_inputs,
)
from dyadic24.kernels.ieee_jit import KEY_PAD, SRC_BF16, SRC_F32  # noqa: E402
from dyadic24.kernels.select_jit import (  # noqa: E402
    K_C,
    WORD_PAD,
    count_pair,
    kth32_value,
    rank_desc,
    scan_pair,
    top32,
    top32_extract,
    top32_runs,
)
from dyadic24.kernels.tags_jit import FLAG_TAG_LIMIT, SPIN_LIMIT, next_epoch, row_tags, untag_keys  # noqa: E402

# benchmarks/DESIGN.md "Merge":
FCHUNK = tl.constexpr(64)  # flag words per step of the flags' maximum; tags apply up to this many tiles
CHUNK = tl.constexpr(2048)  # candidate keys per step of the threshold merge (64 tiles)
POOL = tl.constexpr(128)  # leading keys whose 32nd largest value bounds the threshold merge's 32nd value
MCAP = tl.constexpr(64)  # the threshold merge's compaction slots (more above its bound: _merge_extract)
MERGE_THREADS = tl.constexpr(256)  # a merge program's threads (8 warps; propose.MERGE_WARPS)


# (while loops, not range(), over runtime bounds: the interpreter cannot take a runtime range bound
# under numpy >= 2.3)
@triton.jit(do_not_specialize=["V", "n_tiles", "tau_bits", "tab_n"])
def merge_kernel(
    logits_ptr,
    cand_ptr,
    flags_ptr,
    mscratch_ptr,
    counter_ptr,
    temp_ptr,
    seed_ptr,
    round_ptr,
    pos_ptr,
    tab_z_ptr,
    tab_e_ptr,
    status_ptr,
    token_ptr,
    ids_ptr,
    tickets_ptr,
    trace_ptr,
    V,
    n_tiles,
    tau_bits,
    tab_n,
    TAB_ITERS: tl.constexpr,
    TRACE: tl.constexpr,
    SRC: tl.constexpr,
    MPOOL_T: tl.constexpr,
    MPOOL_K: tl.constexpr,
    BY_COUNT: tl.constexpr,
    TILE: tl.constexpr,
    PDL: tl.constexpr,
    TAGGED: tl.constexpr,
    IDS26: tl.constexpr,
):
    """One program per row: the status (clause 2.1: the maximum of the tiles' flag words), C from the
    tiles' sorted lists (clause 3.2: every tile's list holds its top 32 keys, so the row's top 32 is
    the top 32 of their union), then a greedy row's argmax (clauses 3.3, 4.1) or the sampled finish
    (finish_jit.finish_core: clauses 3.3, 5-9, 12.1, and the trace of clause 12.3). The clause-9 draw
    is computed at the start, while the merge waits for memory (finish_jit.early_draw).

    MPOOL_T tiles of MPOOL_K pooled keys (propose.Plan.pool_shape): MPOOL_T >= 2 the paired pool,
    1 a one-tile row, 0 the threshold merge; the pool's top 32 sorts each pair's bitonic run of
    MPOOL_K lanes by one merge (select_jit.top32_runs). IDS26: V <= 2^26 (the finish's slot
    order sorts int32 words; finish_jit.finish_core). PDL (a programmatic
    dependent launch): the program may start while the tile programs run; untagged it waits for
    their grid (gdc_wait) before it reads anything they wrote, TAGGED it loads their words at once
    and reloads until every word carries the row's tag (_pool_validated), then advances the row's
    epoch for the next launch. The row's inputs (temperature, seed, round, position) were written
    before the tile kernel started. Candidates and flags are read through L2 (.cg)."""
    row = tl.program_id(0).to(tl.int64)
    rtau = tau_reciprocal(tau_bits)  # (here, before the poll: its division's slow path off the chain)
    greedy_fast = False  # clause 4.1 without a trace: the argmax is all a greedy row needs
    if not TRACE:
        greedy_fast = (tl.load(temp_ptr + row) & 0x7FFFFFFF) == 0
    word, ktag, ftag = row_tags(counter_ptr, row, TAGGED)
    inputs = (temp_ptr, seed_ptr, round_ptr, pos_ptr)  # (the tuples of finish_jit's module comment)
    table = (tab_z_ptr, tab_e_ptr, tab_n)
    outs = (status_ptr, token_ptr, ids_ptr, tickets_ptr)
    if TAGGED:
        # the draw's inputs and the tiles' words, loaded at once (no load waits behind another)
        loaded = load_inputs(row, inputs)
        sa, sb, sf = _pool_loads(
            cand_ptr + row * (n_tiles * K_C), flags_ptr + row * n_tiles, n_tiles, MPOOL_T, MPOOL_K, False
        )
    else:
        loaded = (0, 0, 0, 0)
        sa = 0
        sb = 0
        sf = 0
        if PDL:
            gdc_wait()
    _merge_row(
        logits_ptr, cand_ptr, flags_ptr, mscratch_ptr, inputs, table, outs, trace_ptr, row, V, n_tiles,
        tau_bits, rtau, greedy_fast, sa, sb, sf, ktag, ftag, loaded, TAB_ITERS, TRACE, SRC, MPOOL_T, MPOOL_K,
        BY_COUNT, TILE, TAGGED, IDS26,
    )  # fmt: skip
    if TAGGED:
        tl.store(counter_ptr + row, next_epoch(word))


@triton.jit
def _merge_row(
    logits_ptr,
    cand_ptr,
    flags_ptr,
    mscratch_ptr,
    inputs,
    table,
    outs,
    trace_ptr,
    row,
    V,
    n_tiles,
    tau_bits,
    rtau,
    greedy_fast,
    spec_a,
    spec_b,
    spec_f,
    ktag,
    ftag,
    loaded,
    TAB_ITERS: tl.constexpr,
    TRACE: tl.constexpr,
    SRC: tl.constexpr,
    MPOOL_T: tl.constexpr,
    MPOOL_K: tl.constexpr,
    BY_COUNT: tl.constexpr,
    TILE: tl.constexpr,
    TAGGED: tl.constexpr,
    IDS26: tl.constexpr,
):
    """merge_kernel's row once the tiles' words may be read: the flags' maximum (clause 2.1), the draw,
    C (clause 3.2) and the greedy outputs or the finish. TAGGED: spec_a, spec_b and spec_f are the
    pool's and the flags' words as loaded at the start (_pool_loads), ktag and ftag the row's tags,
    ``loaded`` the draw's inputs (finish_jit.load_inputs)."""
    n_cand = n_tiles * K_C
    cbase = cand_ptr + row * n_cand
    if MPOOL_T > 1 and not TAGGED:
        pool_q = _pool_pair_max(cbase, n_tiles, MPOOL_T, MPOOL_K)
    elif MPOOL_T == 1:
        one = tl.load(cbase + tl.arange(0, K_C), cache_modifier=".cg")  # a one-tile row's list is its C
    # ---- clause 2.1: the maximum flag word over the tiles (integer reduction, order-free)
    fo = tl.arange(0, FCHUNK).to(tl.int64)
    if not TAGGED:
        acc = tl.load(flags_ptr + row * n_tiles + fo, mask=fo < n_tiles, other=0, cache_modifier=".cg")
    # ---- clause 9: the draw, before C is known (finish_core discards it for other than sampled rows)
    if TAGGED:  # noqa: SIM108 (constexpr branch)
        draw = draw_words(loaded)
    else:
        draw = early_draw(row, inputs)
    tb = draw[0]
    if TAGGED:
        pool_q, fmax, _reloads = _pool_validated(
            cbase, flags_ptr + row * n_tiles, n_tiles, spec_a, spec_b, spec_f, ktag, ftag, MPOOL_T, MPOOL_K
        )
    else:
        fstart = row * 0 + FCHUNK
        while fstart < n_tiles:
            o = fstart + fo
            f = tl.load(flags_ptr + row * n_tiles + o, mask=o < n_tiles, other=0, cache_modifier=".cg")
            acc = tl.maximum(acc, f)
            fstart += FCHUNK
        fmax = tl.max(acc)
    # ---- clause 3.2: C, then clauses 3.3, 4.1 (greedy) or 3.3, 5-9 (finish_core), 12.1, 12.3 (tb:
    # the temperature's bits, loaded with the draw's inputs)
    if greedy_fast and TAGGED:
        # the pool holds every tile's lane 0, its largest key (the tiles of a greedy row store only it)
        greedy_outputs(row, tl.max(pool_q), fmax, tb, outs)
    elif greedy_fast:
        # every tile stored its largest key in lane 0; C is not needed past a* (clause 4.1)
        am = tl.load(cbase + fo * K_C, mask=fo < n_tiles, other=KEY_PAD, cache_modifier=".cg")
        tstart = row * 0 + FCHUNK
        while tstart < n_tiles:
            o = tstart + fo
            am = tl.maximum(
                am, tl.load(cbase + o * K_C, mask=o < n_tiles, other=KEY_PAD, cache_modifier=".cg")
            )
            tstart += FCHUNK
        greedy_outputs(row, tl.max(am), fmax, tb, outs)
    else:
        # C leaves the pool's network in clause-3.1 order only where it is sorted anyway or the trace
        # needs that order (select_jit.top32_runs; a pool of 32 lanes, MPOOL_T = 2, has no fold)
        SORTED_C: tl.constexpr = TRACE or BY_COUNT or MPOOL_T <= 1 or MPOOL_T // 2 * MPOOL_K <= K_C
        if MPOOL_T > 1:
            best = _merge_pool_pairs(
                cbase, mscratch_ptr + row * (MCAP + K_C), pool_q, n_tiles, ktag, TILE, MPOOL_T, MPOOL_K,
                BY_COUNT, TAGGED, SORTED_C, SRC,
            )  # fmt: skip
        elif MPOOL_T == 1:
            best = one
        else:
            best = _merge_threshold(cbase, mscratch_ptr + row * (MCAP + K_C), n_tiles)
        finish_best(
            logits_ptr, best, fmax, row, V, draw, table, outs, trace_ptr, tau_bits, rtau, TAB_ITERS, TRACE,
            SRC, BY_COUNT, IDS26, SORTED_C,
        )  # fmt: skip


# ---------------------------------------------------------------- the paired pool (clause 3.2)


@triton.jit
def _pair_lanes(n_tiles, MPOOL_T: tl.constexpr, MPOOL_K: tl.constexpr):
    """Lane f = t * MPOOL_K + j of the paired pool pairs tile t with tile t + H, H = MPOOL_T / 2:
    f, t, j and whether each of the two tiles exists (a_live, b_live)."""
    H: tl.constexpr = MPOOL_T // 2
    f = tl.arange(0, H * MPOOL_K)
    t = f // MPOOL_K
    return f, t, f - t * MPOOL_K, t < n_tiles, t + H < n_tiles


@triton.jit
def _pair_slots(cbase, n_tiles, MPOOL_T: tl.constexpr, MPOOL_K: tl.constexpr):
    """Where lane t * MPOOL_K + j of the paired pool reads: tile t's j-th key and tile t + H's
    (MPOOL_K - 1 - j)-th (addresses and masks: a_ptr, a_live, b_ptr, b_live)."""
    _f, t, j, la, lb = _pair_lanes(n_tiles, MPOOL_T, MPOOL_K)
    return cbase + t * K_C + j, la, cbase + (t + MPOOL_T // 2) * K_C + (MPOOL_K - 1 - j), lb


@triton.jit
def _pool_pair_max(cbase, n_tiles, MPOOL_T: tl.constexpr, MPOOL_K: tl.constexpr):
    """The pool of every tile's first MPOOL_K keys, halved by pairing tile t with tile t + H: lane
    t * MPOOL_K + j holds the larger of tile t's j-th key and tile t + H's (MPOOL_K - 1 - j)-th
    (_pair_slots). A descending and an ascending run meet lane by lane, so each pair keeps exactly its
    MPOOL_K largest pooled keys (the bitonic half-cleaner)."""
    pa, la, pb, lb = _pair_slots(cbase, n_tiles, MPOOL_T, MPOOL_K)
    a = tl.load(pa, mask=la, other=KEY_PAD, cache_modifier=".cg")
    b = tl.load(pb, mask=lb, other=KEY_PAD, cache_modifier=".cg")
    return tl.maximum(a, b)


@triton.jit
def _merge_pool_pairs(
    cbase,
    sbase,
    q,
    n_tiles,
    ktag,
    TILE: tl.constexpr,
    MPOOL_T: tl.constexpr,
    MPOOL_K: tl.constexpr,
    BY_COUNT: tl.constexpr,
    TAGGED: tl.constexpr,
    SORTED: tl.constexpr,
    SRC: tl.constexpr,
):
    """C from the halved pool ``q`` (_pool_pair_max; clause 3.2); sbase: the row's merge scratch, for
    the hot pairs' path (_hot_pairs).

    best = the top 32 of q, c = its 32nd key; a pair is hot when its MPOOL_K kept keys are all in best
    (all >= c). Without a hot pair, C = best. Proof, for a key x of C in tile t of pair p, at position
    j of the tile's list: (i) j < MPOOL_K: x is pooled and in the pool's top 32 (fewer than 32 row
    keys lie above it). Were x dropped by its pair, the pair's MPOOL_K kept keys would all lie above
    x; were the smallest of them, y, below c, q would hold 32 keys >= c > y > x and x would not be in
    the pool's top 32; so all kept keys are >= c, in best, and p is hot. Else x is kept, and in best
    (its rank in q is at most its rank in the pool). (ii) j >= MPOOL_K: the tile's MPOOL_K pooled
    keys lie above x, so they are in C and by (i) in best: p is hot. Hence when p is not hot, C's
    keys from p's tiles are in best. With hot pairs (at most 32 / MPOOL_K: their kept keys are in
    best), C is the top 32 of best without the hot pairs' keys and the hot pairs' tiles' whole lists
    (one reload; no key occurs twice; TAGGED: checked and untagged by _tagged_lists). Gaussian logits
    almost never have a hot pair (two tiles holding MPOOL_K of the row's 32 largest); rows whose
    likely tokens share an ID range do. SORTED: C in clause-3.1 order; else in any lane order (the
    network's, top32_runs; the hot pairs' path still sorts). 16-bit logits' keys (SRC) are ordered as
    32-bit words (_top32_words16)."""
    NG: tl.constexpr = MPOOL_T // 2  # pairs: tiles t and t + NG
    if SRC == SRC_F32:
        best = top32_runs(q, MPOOL_K, BY_COUNT, SORTED)  # (each pair's MPOOL_K lanes: a bitonic run)
    else:
        best = _top32_words16(q, TILE, NG, MPOOL_K, SRC, BY_COUNT, SORTED)
    if MPOOL_K < K_C:
        pair = _key_pair(best, TILE, NG)
        if _any_full(pair, NG, MPOOL_K) != 0:  # (the common path's test; the lanes only when needed)
            # the hot pairs' path is a call (a noinline function takes scalars only: best goes
            # through the row's merge scratch), so that the common path's code is one run with no
            # inline rare block in it (DESIGN.md "Merge": that block's form moved B <= 16 by 1.3 us)
            lane = tl.arange(0, K_C)
            tl.store(sbase + lane, best)
            tl.debug_barrier()
            _hot_pairs(sbase, cbase, n_tiles, ktag, TILE, MPOOL_T, MPOOL_K, BY_COUNT, TAGGED)
            tl.debug_barrier()
            best = tl.load(sbase + lane, cache_modifier=".cg")
    return best


@triton.jit
def _top32_words16(q, TILE: tl.constexpr, NG: tl.constexpr, K: tl.constexpr, SRC: tl.constexpr,
                   BY_COUNT: tl.constexpr, SORTED: tl.constexpr):  # fmt: skip
    """top32_runs of the halved pool q (_pool_pair_max) of 16-bit logits' keys, each exchange of the
    network moving one int32 word instead of an int64 key. Lane p K + j holds tile p's j-th key or
    tile p + NG's (K - 1 - j)-th; its word is (v << 9) | (511 - (t K + r)), t the key's tile, r its
    rank in the tile's list (t K + r < MERGE_POOL = 512) and v its value key shifted right by 16
    (bfloat16) or 13 (binary16): a widened 16-bit value's binary32 pattern has those low bits zero,
    so its value key has them constant per sign and v orders and ties as the key's value does
    (clause 1.2; checked on every pattern of both formats; a NaN that cvt.f32.f16 widened to the
    canonical 0x7FFFFFFF ties with every such NaN, as its key does). Equal values order by tile,
    then by rank, that is by ID (clause 3.1): the words order as the keys do, strictly, so each
    pair's run stays bitonic. KEY_PAD lanes are WORD_PAD, below every word (|v << 9| < 2^28). The 32
    kept keys come back by one gather of their lanes.
    BY_COUNT: the words' exact ranks (top32_runs' BY_COUNT), descending."""
    tl.static_assert(2 * NG * K <= 512)
    lane = tl.arange(0, NG * K)
    pair = lane // K
    ids = (~q.to(tl.int32)).to(tl.uint32, bitcast=True)  # (the key's low word is 2^32 - 1 - ID)
    tile = (ids // TILE).to(tl.int32)
    rank = tl.where(tile == pair, lane % K, K - 1 - lane % K)
    S: tl.constexpr = 16 if SRC == SRC_BF16 else 13
    word = ((((q >> 32).to(tl.int32)) >> S) << 9) | (511 - (tile * K + rank))
    word = tl.where(q != KEY_PAD, word, WORD_PAD)
    top = top32_runs(word, K, BY_COUNT, SORTED)
    o = 511 - (top & 511)
    t = o // K
    src = (t % NG) * K + tl.where(t < NG, o % K, K - 1 - o % K)
    return tl.where(top != WORD_PAD, tl.gather(q, src, 0), KEY_PAD)


@triton.jit(noinline=True)
def _hot_pairs(
    sbase,
    cbase,
    n_tiles,
    ktag,
    TILE: tl.constexpr,
    MPOOL_T: tl.constexpr,
    MPOOL_K: tl.constexpr,
    BY_COUNT: tl.constexpr,
    TAGGED: tl.constexpr,
):
    """C of a row with hot pairs (_merge_pool_pairs, which proves it), out of line: best, the pool's
    top 32, in and out through sbase (K_C keys of the row's merge scratch)."""
    NG: tl.constexpr = MPOOL_T // 2
    HOT: tl.constexpr = K_C // MPOOL_K
    # the hot lists' rows: HOT, or more (not live) so that _tagged_lists has a lane per thread
    HROWS: tl.constexpr = HOT if HOT * 2 * K_C >= MERGE_THREADS else MERGE_THREADS // (2 * K_C)
    best = tl.load(sbase + tl.arange(0, K_C), cache_modifier=".cg")
    pair = _key_pair(best, TILE, NG)
    full = _full_groups(pair, NG, MPOOL_K)
    p = tl.arange(0, NG)
    hp = tl.max((full[None, :] != 0) & (pair[None, :] == p[:, None]), axis=1).to(tl.int32)
    hot_pair = _set_lanes(hp, HROWS)
    side = tl.arange(0, 2)[None, :, None]
    t3 = hot_pair[:, None, None] + side * NG  # [HROWS, 2, 1]: both tiles of each hot pair
    live = (tl.arange(0, HROWS) < tl.sum(hp))[:, None, None] & (t3 < n_tiles)
    j3 = tl.arange(0, K_C)[None, None, :]
    flat: tl.constexpr = HROWS * 2 * K_C
    if TAGGED:  # (flat: Triton 3.6 fails to compile the reload loop over the [HROWS, 2, 32] form)
        lists, _reloads = _tagged_lists(
            tl.reshape(cbase + t3 * K_C + j3, [flat]), tl.reshape(live & (j3 >= 0), [flat]), ktag
        )
    else:
        lists = tl.load(cbase + t3 * K_C + j3, mask=live, other=KEY_PAD, cache_modifier=".cg")
    lists_top = top32(tl.reshape(lists, [flat]), BY_COUNT)
    rest = tl.where(full != 0, KEY_PAD, best)
    best = top32(tl.reshape(tl.join(rest, lists_top), [2 * K_C]), BY_COUNT)
    tl.debug_barrier()  # (every thread has read best before any overwrites it)
    tl.store(sbase + tl.arange(0, K_C), best)


@triton.jit
def _key_pair(keys, TILE: tl.constexpr, NG: tl.constexpr):
    """The pool pair (tile % NG) of each real key's token ID, -1 for KEY_PAD. The key's low word is
    2^32 - 1 - ID (clause 3.1), so the ID is its 32-bit complement; IDs are below 2^31 and TILE and NG
    powers of two, so unsigned 32-bit arithmetic gives the pair in two shifts and a mask."""
    # (complemented as int32, then bitcast: the same bits and the same xor on the GPU, but Triton's
    # interpreter before 3.9 builds ~'s all-ones uint32 from -1, which numpy 2 refuses; triton#11210)
    ids = (~keys.to(tl.int32)).to(tl.uint32, bitcast=True)
    return tl.where(keys != KEY_PAD, ((ids // TILE) % NG).to(tl.int32), -1)


@triton.jit
def _any_full(group, NG: tl.constexpr, MPOOL_K: tl.constexpr):
    """Nonzero when some group (-1: none, else < NG) holds MPOOL_K lanes of the vector (none holds
    more): the groups' counts packed NIB bits apart into int32 sums (exact in any order; the warp's
    integer reduction), OR-ed, and since a count is at most MPOOL_K, a power of two, it equals
    MPOOL_K exactly when its bit log2(MPOOL_K) is set: one test of the OR, no per-lane extraction and
    no reduction of per-lane flags (_full_groups, on the rare path only)."""
    NIB: tl.constexpr = 4 if MPOOL_K < 16 else 8
    PER: tl.constexpr = 32 // NIB
    HIGH: tl.constexpr = MPOOL_K * (0x11111111 if NIB == 4 else 0x01010101)  # each field's bit log2 K
    live = group >= 0
    g = tl.where(live, group, 0)
    word = g // PER
    # (summed as uint32, the same adds: a top field of MPOOL_K = 8 reaches 2^31, which Triton's
    # interpreter before 3.9 refuses as an int32 sum under numpy 2 instead of wrapping it)
    one = tl.where(live, 1 << ((g - word * PER) * NIB), 0).to(tl.uint32, bitcast=True)
    hit = tl.sum(tl.where(word == 0, one, 0))
    for k in tl.static_range(1, (NG + PER - 1) // PER):
        hit = hit | tl.sum(tl.where(word == k, one, 0))
    hit = hit.to(tl.int32, bitcast=True)
    return (hit.to(tl.int64) & HIGH) != 0  # (int64: HIGH may exceed 2^31 - 1; the sign bits are not in it)


@triton.jit
def _full_groups(group, NG: tl.constexpr, MPOOL_K: tl.constexpr):
    """1 for the lanes whose group (-1: none, else < NG) holds MPOOL_K lanes of the vector (none
    holds more), else 0 (the rare path's lanes; _any_full tests for any). The groups' counts are
    packed NIB bits apart into int64 sums (integer, exact in any order): a few reductions instead of
    a [32, 32] matrix, whose two orientations of the vector cost layout changes through shared
    memory."""
    NIB: tl.constexpr = 4 if MPOOL_K < 16 else 8
    PER: tl.constexpr = 64 // NIB
    live = group >= 0
    g = tl.where(live, group, 0).to(tl.int64)
    word = g // PER
    shift = (g - word * PER) * NIB
    one = tl.where(live, (g * 0 + 1) << shift, 0)  # (a fresh tl.full would impose its own layout)
    full = live & False
    for k in tl.static_range((NG + PER - 1) // PER):
        packed = tl.sum(tl.where(word == k, one, 0))
        full = full | (live & (word == k) & (((packed >> shift) & ((1 << NIB) - 1)) == MPOOL_K))
    return full.to(tl.int32)


@triton.jit
def _set_lanes(flags, HOT: tl.constexpr):
    """The first HOT lanes where ``flags`` (0/1) is set, ascending (0 past the number set)."""
    order = tl.cumsum(flags, 0) - 1
    pick = (flags[:, None] != 0) & (order[:, None] == tl.arange(0, HOT)[None, :])
    return tl.sum(tl.where(pick, tl.arange(0, flags.shape[0])[:, None], 0), axis=0)  # one term per lane


# ---------------------------------------------------------------- tagged words (tags_jit)


@triton.jit
def _pool_loads(cbase, fbase, n_tiles, MPOOL_T: tl.constexpr, MPOOL_K: tl.constexpr, VOLATILE: tl.constexpr):
    """The raw (tagged) words of the paired pool (_pair_slots) and of the flags, the latter in a vector
    of the pool's length and layout (lane i: tile i's flag word; masked lanes read 0), so that
    pool_untag reduces both in one pass (the pool has MPOOL_T / 2 * MPOOL_K >= n_tiles lanes).
    VOLATILE: a reload, which must not be served from any cache but L2."""
    tl.static_assert(MPOOL_K >= 2)
    pa, la, pb, lb = _pair_slots(cbase, n_tiles, MPOOL_T, MPOOL_K)
    fo = tl.arange(0, MPOOL_T // 2 * MPOOL_K)
    pa, la = _copies(pa, la)
    pb, lb = _copies(pb, lb)
    fo, fm = _copies(fo, fo < n_tiles)
    if VOLATILE:
        a = tl.load(pa, mask=la, other=0, volatile=True)
        b = tl.load(pb, mask=lb, other=0, volatile=True)
        fl = tl.load(fbase + fo, mask=fm, other=0, volatile=True)
    else:
        a = tl.load(pa, mask=la, other=0, cache_modifier=".cg")
        b = tl.load(pb, mask=lb, other=0, cache_modifier=".cg")
        fl = tl.load(fbase + fo, mask=fm, other=0, cache_modifier=".cg")
    return a, b, fl


@triton.jit
def _copies(x, m):
    """x and the mask m, vectors of n lanes, as [R, n] with R = MERGE_THREADS // n copies where n is
    below MERGE_THREADS (else as they are): every polled word is loaded into a tensor with a lane for
    every thread. Triton replicates a vector of fewer lanes than threads, each copy loaded by its own
    thread at its own moment, and its reductions count one copy per lane: a copy loaded before the
    tile's store landed passed the tag check unseen, and that thread's finish, which stores the
    row's outputs too, used the previous launch's word (0.1-0.3 % of graph replays at V = 50,000,
    2026-12-03; DESIGN.md "Tags instead of a grid barrier"). With the copies every loaded word is a
    checked one; the merge then takes their maximum (_one_copy: all copies of a word are equal once
    checked, as a tile program writes each word once per launch)."""
    n: tl.constexpr = x.shape[0]
    if n < MERGE_THREADS:
        c = tl.arange(0, MERGE_THREADS // n)[:, None]
        x2 = x[None, :] + c * 0
        m2 = m[None, :] & (c >= 0)
    else:  # (a lane per thread already: the vector as it is)
        x2 = x
        m2 = m
    return x2, m2


@triton.jit
def _one_copy(x):
    """The [n] vector of validated [R, n] copies (all equal: each word is written once per launch)."""
    if len(x.shape) == 2:  # noqa: SIM108 (constexpr branch)
        y = tl.max(x, axis=0)
    else:
        y = x
    return y


@triton.jit
def _max_all(x):
    """The maximum over every lane of a vector or its [R, n] copies."""
    if len(x.shape) == 2:  # noqa: SIM108 (constexpr branch)
        y = tl.max(tl.max(x, axis=1))
    else:
        y = tl.max(x)
    return y


@triton.jit
def pool_untag(a, b, fl, n_tiles, ktag, ftag, MPOOL_T: tl.constexpr, MPOOL_K: tl.constexpr):
    """The paired pool (as _pool_pair_max, in _copies) from tagged words (_pool_loads), the maximum flag
    word and 1 if any word was stale. Flag words carry ftag (T << 23) above their three flag bits:
    untagged, a word written with T is below 2^23 and one written otherwise (another tag, none, zero fill)
    is not (and below 2^31). One reduction: a lane with a stale key adds 2^30, so the maximum is the
    maximum flag word exactly when it is below 2^23, and it is at least 2^23 when any word is stale."""
    f, _t, _j, la, lb = _pair_lanes(n_tiles, MPOOL_T, MPOOL_K)
    _f, fm = _copies(f, f < n_tiles)
    _f, la = _copies(f, la)
    _f, lb = _copies(f, lb)
    ka, sa = untag_keys(a, la, ktag)
    kb, sb = untag_keys(b, lb, ktag)
    fmax = _max_all(tl.where(fm, fl ^ ftag, 0) | ((sa | sb) << 30))
    return tl.maximum(ka, kb), fmax, (fmax >= FLAG_TAG_LIMIT).to(tl.int32)


@triton.jit
def _pool_validated(
    cbase, fbase, n_tiles, a, b, fl, ktag, ftag, MPOOL_T: tl.constexpr, MPOOL_K: tl.constexpr
):
    """The paired pool and the maximum flag word from the words loaded at the start, reloaded
    (volatile, through L2) until every word carries this launch's tag (every tile program's stores
    become visible), and the number of reloads (for benchmarks/probe_timeline.py)."""
    q, fmax, stale = pool_untag(a, b, fl, n_tiles, ktag, ftag, MPOOL_T, MPOOL_K)
    reloads = stale * 0
    while stale != 0:
        a, b, fl = _pool_loads(cbase, fbase, n_tiles, MPOOL_T, MPOOL_K, True)
        q, fmax, stale = pool_untag(a, b, fl, n_tiles, ktag, ftag, MPOOL_T, MPOOL_K)
        reloads += 1
        if SPIN_LIMIT:
            stale = tl.where(reloads < SPIN_LIMIT, stale, 0)
    return _one_copy(q), fmax, reloads


@triton.jit
def _tagged_lists(ptrs, live, ktag):
    """The keys at ``ptrs`` (KEY_PAD where not ``live``), untagged, reloaded until all carry this
    launch's tag (as _pool_validated), and the number of reloads. A lane per thread at least, so that
    no lane is loaded by two threads (_copies)."""
    tl.static_assert(ptrs.shape[0] >= MERGE_THREADS)
    x = tl.load(ptrs, mask=live, other=0, cache_modifier=".cg")
    k, stale = untag_keys(x, live, ktag)
    bad = tl.max(stale)
    reloads = bad * 0
    while bad != 0:
        x = tl.load(ptrs, mask=live, other=0, volatile=True)
        k, stale = untag_keys(x, live, ktag)
        bad = tl.max(stale)
        reloads += 1
        if SPIN_LIMIT:
            bad = tl.where(reloads < SPIN_LIMIT, bad, 0)
    return k, reloads


# ---------------------------------------------------------------- without a pool (> 128 tiles)


@triton.jit
def _merge_threshold(cbase, sbase, n_tiles):
    """The row's top 32 keys from the tiles' sorted candidate lists (clause 3.2), by a value threshold.

    theta = the 32nd largest value (with multiplicity) among the first J candidates of the first
    tiles (a pool of at most POOL keys, usually >= 32 real ones, else theta is the least value): a
    lower bound of the value of the row's 32nd key. Every row element of value > theta is in C when
    fewer than 32 exist, and C is among them otherwise; in the flat candidate array (tile by tile,
    each tile descending) the candidates of value exactly theta appear in ascending ID, so the
    lowest-ID ties are the first ones. Both kinds are compacted into the row's scratch (value > theta
    at 0..MCAP-1, ties at MCAP..MCAP+31), ranked by exact integer counts and placed by rank. More
    than MCAP candidates above theta takes _merge_extract.
    """
    n_cand = n_tiles * K_C
    p = tl.arange(0, POOL)
    # (each assigned first: Triton 3.7's interpreter refuses a constexpr-first expression given to
    # tl.maximum itself, a constexpr holding a tensor; an assignment unwraps it)
    ceil = (K_C + n_tiles - 1) // n_tiles
    share = POOL // n_tiles
    per = tl.minimum(K_C, tl.maximum(ceil, share))  # n_tiles * per >= 32
    pt = p // per
    pk = tl.load(cbase + pt * K_C + (p - pt * per), mask=pt < n_tiles, other=KEY_PAD, cache_modifier=".cg")
    co = tl.arange(0, CHUNK)
    k = tl.load(cbase + co, mask=co < n_cand, other=KEY_PAD, cache_modifier=".cg")  # overlaps the pool load
    theta = kth32_value((pk >> 32).to(tl.int32), pk != KEY_PAD)
    n_gt, n_eq = _compact_chunk(k, theta, sbase, n_tiles * 0, n_tiles * 0)
    cstart = n_tiles * 0 + CHUNK
    while cstart < n_cand:
        o = cstart + co
        k = tl.load(cbase + o, mask=o < n_cand, other=KEY_PAD, cache_modifier=".cg")
        n_gt, n_eq = _compact_chunk(k, theta, sbase, n_gt, n_eq)
        cstart += CHUNK
    l32 = tl.arange(0, K_C)
    if n_gt <= MCAP:
        tl.debug_barrier()  # the compacted keys were written by other threads of this program
        lane = tl.arange(0, MCAP)
        few = n_gt < K_C
        short = K_C - n_gt  # (assigned first, as ceil and share above)
        n_tie = tl.minimum(tl.maximum(short, 0), n_eq)
        # few above theta: lanes 0..31 hold them, lanes 32..63 the first ties; else lanes 0..n_gt-1
        idx = tl.where(few & (lane >= K_C), MCAP + lane - K_C, lane)
        live = tl.where(few, tl.where(lane < K_C, lane < n_gt, lane - K_C < n_tie), lane < n_gt)
        s = tl.load(sbase + idx, mask=live, other=KEY_PAD)
        rank = rank_desc(s, live)
        hit = live[:, None] & (rank[:, None] == l32[None, :])
        best = tl.sum(tl.where(hit, s[:, None], 0), axis=0)  # one nonzero term per lane: exact
        n_sel = tl.where(few, n_gt + n_tie, n_gt)
        best = tl.where(l32 < n_sel, best, KEY_PAD)
    else:
        best = _merge_extract(cbase, n_cand)
    return best


@triton.jit
def _compact_chunk(k, theta, sbase, n_gt, n_eq):
    """Append a chunk's candidates of value > theta (slots n_gt..) and = theta (slots MCAP + n_eq..)
    to the scratch row, in flat order; returns the updated counts."""
    v = (k >> 32).to(tl.int32)
    real = k != KEY_PAD
    gt = real & (v > theta)
    eq = real & (v == theta)
    c_gt, c_eq = scan_pair(gt, eq, CHUNK)
    pg = n_gt + c_gt - 1
    pe = n_eq + c_eq - 1
    tl.store(sbase + pg, k, mask=gt & (pg < MCAP))
    tl.store(sbase + MCAP + pe, k, mask=eq & (pe < K_C))
    d_gt, d_eq = count_pair(gt, eq, CHUNK)
    return n_gt + d_gt, n_eq + d_eq


@triton.jit
def _merge_extract(cbase, n_cand):
    """The row's top 32 keys by 32 successive maxima over chunks of candidates (any input)."""
    o = tl.arange(0, CHUNK).to(tl.int64)
    best = top32_extract(tl.load(cbase + o, mask=o < n_cand, other=KEY_PAD, cache_modifier=".cg"))
    cstart = n_cand * 0 + CHUNK
    while cstart < n_cand:
        o = cstart + tl.arange(0, CHUNK).to(tl.int64)
        top = top32_extract(tl.load(cbase + o, mask=o < n_cand, other=KEY_PAD, cache_modifier=".cg"))
        best = top32_extract(tl.reshape(tl.join(best, top), [2 * K_C]))
        cstart += CHUNK
    return best

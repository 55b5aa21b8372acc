# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""The kernels of one proposal position (clauses 2-9).

``tile_kernel``: one program per (row, vocabulary tile); writes the tile's 32 largest clause-3.1 keys
(padding with KEY_PAD) and a status flag word. ``merge_kernel``: one program per row; merges the
candidates into C (clause 3.2), decides the status (2.1) and runs the greedy (4) or sampled (5-9) path.
Both select by a value threshold (a proven lower bound of the 32nd value, then compaction of what lies
above it and an exact rank), falling back to 32 successive maxima when the bound admits too many. The
default tile path (``_tile_fast``) takes the bound from per-thread groups so that most of its work
stays in registers (falling back to the general threshold path), and the merge takes the top 32 of a
pool of every tile's leading keys, halved by pairing tiles (``_merge_pool_pairs``; or whole,
``_merge_pool``, adding the remaining keys of the few tiles that fail its check, ``_pool_refine``);
without a pool (very large V) it takes the general threshold path.
Options (propose.Plan): FUSED, the row's last tile program merges (one launch); SPLIT, the merge
stores C and ``finish_kernel`` runs clauses 3.3-9 with fewer warps (three launches); GREEDY_FAST,
greedy rows without trace find only the argmax (a device-side branch on the row's temperature).

Exactness rules followed here: every reduction is over integers (exact in any order) except the
clause-6.2 tree, whose levels are explicit pairwise additions (reshape to [n, 2], split, add: a
two-operand IEEE addition is commutative, so lane order cannot matter); NaN and infinities are found
by integer tests on bit patterns; the only floating-point operations are binary64 +, -, /, the
binary64 exp, the exact product p * 2^24 and conversions that are exact or correctly rounded
(clause5_hw_jit; no product feeds an addition, so fma contraction has nothing to fuse). Each output is
written by exactly one program, so results are deterministic and a row's outputs depend only on that
row (clause 2.4); the only atomic is FUSED's per-row arrival counter, which decides which program
merges, never what the merge computes.
"""

from dyadic24.kernels.backend import interpreting, select_backend

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait  # noqa: E402

from dyadic24.kernels.clause5_hw_jit import bits_of_f32, clause5_hw  # noqa: E402
from dyadic24.kernels.exp_jit import exp_binary32  # noqa: E402
from dyadic24.kernels.ieee_jit import (  # noqa: E402
    F32_POS_INF,
    KEY_PAD,
    SRC_BF16,
    SRC_F32,
    div32,
    floor_times_2_24,
    load_bits32,
    sub32,
    widen32to64,
    widen_bits32,
)
from dyadic24.kernels.philox_jit import draw_block  # noqa: E402

TICKETS = tl.constexpr(1 << 24)  # clause 7.3

# Trace row layout (int64 words); see dyadic24.kernels.trace for the decoder.
TR_K = tl.constexpr(0)
TR_ARGMAX = tl.constexpr(1)
TR_M = tl.constexpr(2)
TR_S = tl.constexpr(3)
TR_R = tl.constexpr(4)
TR_KEY = tl.constexpr(5)  # k0, k1
TR_BLOCK = tl.constexpr(7)  # x0..x3
TR_U = tl.constexpr(11)
TR_STATUS = tl.constexpr(12)
TR_PATH = tl.constexpr(13)  # 0 failed, 1 greedy, 2 sampled
TR_FLAGGED = tl.constexpr(14)  # lanes whose exp came from the near-midpoint table
TR_MISSED = tl.constexpr(15)  # flagged lanes absent from the table (must be 0)
TR_ORDER = tl.constexpr(16)  # 32 ids in clause-3.1 order
TR_SLOT_IDS = tl.constexpr(48)
TR_D = tl.constexpr(80)
TR_Z = tl.constexpr(112)
TR_E = tl.constexpr(144)
TR_P = tl.constexpr(176)
TR_COUNTS = tl.constexpr(208)
TR_TICKETS = tl.constexpr(240)
TR_TREE = tl.constexpr(272)  # 16 + 8 + 4 + 2 + 1 binary64 patterns
TRACE_WORDS = tl.constexpr(320)


INT32_MIN = tl.constexpr(-(1 << 31))
INT32_MAX = tl.constexpr((1 << 31) - 1)
SK_POS_INF = tl.constexpr(0x7F800000)  # value key of +inf
SK_NEG_INF = tl.constexpr(-2139095041)  # value key of -inf (0xFF800000 ^ 0x7FFFFFFF as int32)
K_C = tl.constexpr(32)  # clause 3.2: at most 32 candidates
SMALL_SEL = tl.constexpr(64)  # _tile_fast: a tile with at most this many selected sorts 64 lanes
# the finish's slot order by exact ranks in the kernels without a BY_COUNT plan choice (finish_kernel,
# finish_row) when interpreted: the same permutation as tl.sort, which the interpreter runs slowly
ORDER_BY_COUNT = tl.constexpr(interpreting())
# Reloads a polling loop (_pool_validated, _tagged_lists) takes before it gives up, under the
# interpreter only: it runs programs one after another, so one reload always suffices there, and a
# bug that leaves words stale then fails a test (stale keys name other IDs) instead of hanging it.
# 0 on the GPU: unbounded (the loop waits for other programs' stores), and no code is generated.
SPIN_LIMIT = tl.constexpr(8 if interpreting() else 0)
PACK = tl.constexpr(16)  # two counts < 2^15 share one int32 reduction (low: strict, high: ties)
PACK_MASK = tl.constexpr(0xFFFF)
PACK_LIMIT = tl.constexpr(1 << 15)
# FUSED arrival counter: (epoch << EPOCH_SHIFT) | programs arrived. The row's last program stores the
# next epoch (count 0) for the next launch; epochs cycle over EPOCHS values.
EPOCH_SHIFT = tl.constexpr(24)
COUNT_MASK = tl.constexpr((1 << 24) - 1)
EPOCHS = tl.constexpr(127)
TAG_BASE = tl.constexpr(0x80)  # TAGGED: epoch E tags with T = 0x80 + E, so T is in [0x80, 0xFE]
KEY_TAG_SHIFT = tl.constexpr(24)  # T is XORed into bits 24-31 of each stored key (its ID word)
FLAG_TAG_SHIFT = tl.constexpr(23)  # and into bits 23-30 of each flag word
FLAG_TAG_LIMIT = tl.constexpr(1 << 23)  # an untagged flag word is below this
KEY_TAG_LOW = tl.constexpr(1 << 24)  # the lowest bit of a key's tag


@triton.jit
def load_bits_i32(ptr, offs, mask, SRC: tl.constexpr):
    """The binary32 patterns of the logits as int32 (clause 1.2; bit-identical to load_bits32 mod 2^32)."""
    return _bits_i32(tl.load(ptr + offs, mask=mask, other=0), SRC)


@triton.jit
def _tile_bits(base, loc, inb, full, SRC: tl.constexpr):
    """A tile's binary32 patterns as int32, lanes past V as -inf (0xFF800000).

    A full tile loads without a mask in a block of its own. With only the masked form, ptxas kept six
    of a 4-warp program's eight 16-byte loads per thread in flight and issued the other two after the
    first ones' data had arrived (their registers reused): three DRAM round trips in a row instead of
    one (sm_90 SASS of the fused tile kernel; the 8-warp form has four loads and was not affected).
    With the branch every load is issued before the first use. The same bits either way.
    """
    if full:
        b = _bits_i32(tl.load(base + loc), SRC)
    else:
        b = tl.where(inb, _bits_i32(tl.load(base + loc, mask=inb, other=0), SRC), -8388608)
    return b


@triton.jit
def _bits_i32(raw, SRC: tl.constexpr):
    """load_bits_i32's widening of loaded integer views."""
    if SRC == SRC_F32:
        out = raw
    elif SRC == SRC_BF16:
        out = raw.to(tl.int32) << 16
    else:
        out = widen_bits32(raw, SRC).to(tl.int32)
    return out


@triton.jit
def value_key32(b):
    """The high word of order_key as int32: an order-preserving integer image of the binary32 value
    (clause 3.1; -0 is canonicalised to +0 so that the two zeros tie). Negative patterns flip their
    31 low bits (one xor with the sign-filled mask, no select); -0 lands on -1, which becomes 0 (the
    same map as order_key's high word on every one of the 2^32 patterns, checked exhaustively)."""
    k = b ^ ((b >> 31) & 0x7FFFFFFF)
    return tl.where(k == -1, 0, k)


@triton.jit
def _count_pair(strict, tie, N: tl.constexpr):
    """(sum(strict), sum(tie)) over N lanes; one packed integer reduction while N < 2^15."""
    if N < PACK_LIMIT:
        both = tl.sum(strict.to(tl.int32) + (tie.to(tl.int32) << PACK))
        n_strict = both & PACK_MASK
        n_tie = both >> PACK
    else:
        n_strict = tl.sum(strict.to(tl.int32))
        n_tie = tl.sum(tie.to(tl.int32))
    return n_strict, n_tie


@triton.jit
def _scan_pair(strict, tie, N: tl.constexpr):
    """Inclusive prefix counts of two masks (one packed integer scan while N < 2^15)."""
    if N < PACK_LIMIT:
        cs = tl.cumsum(strict.to(tl.int32) + (tie.to(tl.int32) << PACK), 0)
        c_strict = cs & PACK_MASK
        c_tie = cs >> PACK
    else:
        c_strict = tl.cumsum(strict.to(tl.int32), 0)
        c_tie = tl.cumsum(tie.to(tl.int32), 0)
    return c_strict, c_tie


@triton.jit
def _kth32_value(vals, valid):
    """The 32nd largest of the valid int32 values, counted with multiplicity (INT32_MIN if fewer
    than 32 are valid): an integer count per lane, exact and order-free."""
    ge = valid[None, :] & (vals[None, :] >= vals[:, None])
    c = tl.sum(ge.to(tl.int32), axis=1)
    return tl.max(tl.where(valid & (c >= K_C), vals, INT32_MIN))


@triton.jit
def _rank_desc(s, valid):
    """Rank of each valid key among the valid keys in descending order (keys are unique)."""
    gt = valid[None, :] & (s[None, :] > s[:, None])
    return tl.sum(gt.to(tl.int32), axis=1)


@triton.jit
def _row_tags(counter_ptr, temp_ptr, seed_ptr, round_ptr, pos_ptr, row, TAGGED: tl.constexpr):
    """TAGGED: the row's counter word, the key and flag tags of its epoch, and the draw's inputs
    (loaded at the start, so that no load of the merging program waits after the tiles' words);
    otherwise zeros (untagged words; the draw loads its inputs where it needs them)."""
    word = 0
    ktag = 0
    ftag = 0
    d_tb = 0
    d_seed = 0
    d_rnd = 0
    d_pos = 0
    if TAGGED:
        word = tl.load(counter_ptr + row, cache_modifier=".cg")
        tag = TAG_BASE + (word >> EPOCH_SHIFT)
        ktag = tag.to(tl.int64) << KEY_TAG_SHIFT
        ftag = tag << FLAG_TAG_SHIFT
        d_tb = tl.load(temp_ptr + row).to(tl.int64) & 0xFFFFFFFF
        d_seed = tl.load(seed_ptr + row)
        d_rnd = tl.load(round_ptr + row)
        d_pos = tl.load(pos_ptr + row)
    return word, ktag, ftag, d_tb, d_seed, d_rnd, d_pos


@triton.jit
def _globaltimer(dep, nap):
    """%globaltimer (ns; GPU only), read once dep is known, after a 128 ns nanosleep when nap != 0."""
    return tl.inline_asm_elementwise(
        "{ .reg .pred p; setp.ne.s64 p, $2, 0; @p nanosleep.u32 128; mov.u64 $0, %globaltimer; }",
        "=l,l,l", [dep.to(tl.int64), nap.to(tl.int64)], dtype=tl.int64, is_pure=False, pack=1,
    )  # fmt: skip


@triton.jit
def _hold(d):
    """Wait about d ns (GPU only): a timing aid, no effect on any output."""
    t0 = _globaltimer(d, d * 0)
    t = t0
    while t < t0 + d:
        t = _globaltimer(t, d * 0 + 1)


@triton.jit
def _next_epoch(word):
    """The counter word that opens the next launch of a row: its epoch advanced (wrapping after
    EPOCHS), count 0."""
    epoch = word >> EPOCH_SHIFT
    return tl.where(epoch >= EPOCHS - 1, 0, epoch + 1) << EPOCH_SHIFT


# Integer arguments are not specialised (Triton would compile a variant per "== 1" / "% 16 == 0"
# pattern of n_tiles, tau_bits, tab_n); V is, so that a row of a vocabulary that is a multiple of
# 16 is known to be 64-byte aligned and the logits are read with 16-byte loads.
@triton.jit(do_not_specialize=["n_tiles", "tau_bits", "tab_n"])
def tile_kernel(
    logits_ptr,
    cand_ptr,
    flags_ptr,
    scratch_ptr,
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
    TILE: tl.constexpr,
    GROUPS: tl.constexpr,
    CAP: tl.constexpr,
    POOL: tl.constexpr,
    MCAP: tl.constexpr,
    CHUNK: tl.constexpr,
    FCHUNK: tl.constexpr,
    TAB_ITERS: tl.constexpr,
    TRACE: tl.constexpr,
    SRC: tl.constexpr,
    USE_TL_TOPK: tl.constexpr,
    THRESHOLD: tl.constexpr,
    FUSED: tl.constexpr,
    GREEDY_FAST: tl.constexpr,
    EARLY_DRAW: tl.constexpr,
    FAST: tl.constexpr = False,
    NT: tl.constexpr = 128,
    FCAP: tl.constexpr = 128,
    MPOOL_T: tl.constexpr = 0,
    MPOOL_K: tl.constexpr = 0,
    BY_COUNT: tl.constexpr = False,
    WARP_BOUND: tl.constexpr = False,
    MPOOL_PAIRS: tl.constexpr = 0,
    RETRY: tl.constexpr = False,
    TAGGED: tl.constexpr = False,
    STALE_FIRST: tl.constexpr = 0,
    PDL: tl.constexpr = False,
    STAGGER: tl.constexpr = 0,
    SLOTS: tl.constexpr = 1,
    WAVE: tl.constexpr = 8,
):
    """Per (row, tile): the tile's top 32 keys (clause 3.1, descending, KEY_PAD past the tile's end)
    and its status flags (2.1). FUSED: the row's last tile program to finish also merges the row
    (clauses 2-9), so one launch serves a position.

    Cross-program protocol (FUSED): each program writes its candidates and flags, then adds 1 to the
    row's counter (acquire-release, GPU scope, after a CTA barrier so that the whole program's stores
    precede the release); the program that reads a count of n_tiles - 1 saw every other program's
    release, reads the candidates through L2 and stores the next epoch with a count of 0 for the next
    launch (CUDA-graph replays). The merge depends only on the candidates, never on which program
    arrives last.

    TAGGED (the fused form with a paired pool, V <= 2^24, n_tiles <= FCHUNK) takes the release and the
    acquire off the last program's path: a release waits for the program's stores to be acknowledged
    (MEMBAR.GPU) and the merge's loads then wait for the atomic, three L2 round trips in a row. Here
    every program XORs a tag T of the row's current epoch (read from the counter at the start; only
    the previous launch's last program changed it) into every key and flag word it stores, loads
    the merge pool and the flags before its relaxed arrival (both round trips overlap), and the last
    program accepts what it loaded only if every word carries T (_pool_untag), reloading otherwise
    until every store of the launch is visible. Validity never rests on memory ordering: aligned
    64- and 32-bit accesses are single-copy atomic, and a word that carries T was written in this
    launch (the previous writer of a slot used another tag, no tag, or the workspace's zero fill;
    _untag_keys). STALE_FIRST (tests only; bits 1, 2, 4: the pool's keys, the flags, the hot pairs'
    lists) makes the merge's first look see stale words.
    """
    pid = tl.program_id(0).to(tl.int64)
    if PDL:  # the two-launch merge may be scheduled now; it waits (gdc_wait) for this grid's stores
        gdc_launch_dependents()
    if STAGGER > 0:  # noqa: SIM102 (constexpr, then runtime)
        # (GPU only; timing, not bits) SM slot g = pid // SLOTS of the first WAVE loads g * STAGGER ns
        # late, so that the slots' loads reach DRAM in turn (propose.STAGGER_BYTES_PER_NS)
        if pid >= SLOTS and pid < SLOTS * WAVE:
            _hold(pid // SLOTS * STAGGER)
    row = pid // n_tiles
    tile = pid - row * n_tiles
    greedy_fast = False
    if GREEDY_FAST and not TRACE:
        greedy_fast = (tl.load(temp_ptr + row) & 0x7FFFFFFF) == 0
    # (TAGGED: the fused form, or the two-launch form whose merge polls: merge_kernel)
    _w, ktag, ftag, d_tb, d_seed, d_rnd, d_pos = _row_tags(
        counter_ptr, temp_ptr, seed_ptr, round_ptr, pos_ptr, row, TAGGED
    )
    if FAST:
        _tile_fast(
            logits_ptr, cand_ptr, flags_ptr, scratch_ptr, pid, row, tile, V, greedy_fast, ktag, ftag,
            TILE, NT, FCAP, GROUPS, CAP, SRC, USE_TL_TOPK, BY_COUNT, WARP_BOUND, RETRY,
        )  # fmt: skip
    else:
        _tile_part(
            logits_ptr, cand_ptr, flags_ptr, scratch_ptr, pid, row, tile, V, greedy_fast, ktag, ftag,
            TILE, GROUPS, CAP, SRC, USE_TL_TOPK, THRESHOLD,
        )  # fmt: skip
    if FUSED:
        tl.debug_barrier()
        if TAGGED:
            # issued before the arrival so that their round trip overlaps the atomic's
            sa, sb, sf = _pool_loads(
                cand_ptr + row * (n_tiles * K_C), flags_ptr + row * n_tiles, n_tiles, MPOOL_T, MPOOL_K, False
            )
            arrived = tl.atomic_add(counter_ptr + row, 1, sem="relaxed", scope="gpu")
        else:
            sa = 0
            sb = 0
            sf = 0
            arrived = tl.atomic_add(counter_ptr + row, 1, sem="acq_rel", scope="gpu")
        if (arrived & COUNT_MASK) == n_tiles - 1:
            tl.atomic_xchg(counter_ptr + row, _next_epoch(arrived), sem="relaxed", scope="gpu")
            _merge_row(
                logits_ptr, cand_ptr, flags_ptr, mscratch_ptr, temp_ptr, seed_ptr, round_ptr, pos_ptr,
                tab_z_ptr, tab_e_ptr, status_ptr, token_ptr, ids_ptr, tickets_ptr, trace_ptr, mscratch_ptr,
                row, V, n_tiles, tau_bits, tab_n, greedy_fast, sa, sb, sf, ktag, ftag,
                d_tb, d_seed, d_rnd, d_pos,
                POOL, MCAP, CHUNK, FCHUNK, TAB_ITERS, TRACE, SRC, USE_TL_TOPK, THRESHOLD, EARLY_DRAW, False,
                MPOOL_T, MPOOL_K, BY_COUNT, MPOOL_PAIRS, TILE, TAGGED, STALE_FIRST,
            )  # fmt: skip


@triton.jit
def _tile_part(
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
    GROUPS: tl.constexpr,
    CAP: tl.constexpr,
    SRC: tl.constexpr,
    USE_TL_TOPK: tl.constexpr,
    THRESHOLD: tl.constexpr,
):
    """The tile's candidates and flags NaN << 2 | +inf << 1 | live (clause 2.1: the maximum over the
    tiles decides the status, since the precedence NaN > +inf > all -inf is this bit order).

    Selection (THRESHOLD): theta = the 32nd largest (with multiplicity) of the GROUPS strided group
    maxima of the int32 value keys; 32 distinct elements have a value >= theta, so the tile's top 32
    keys are: every element with value > theta when there are at least 32 of those, otherwise all of
    them and the lowest-ID elements of value theta. These (at most CAP when the branch is taken) are
    compacted (as int64 keys) through a per-program scratch row, ranked by an exact integer count and
    stored at their rank. More than CAP elements above theta (adversarial data) takes the extraction
    path. Every stored key is XORed with ktag and the flag word with ftag (0 unless TAGGED).
    """
    # Per-element state is int32 (value keys, local indices); int64 keys are formed only for the
    # compaction store.
    loc = tl.arange(0, TILE)
    first_id = tile * TILE
    inb = loc < tl.minimum(V - first_id, TILE).to(tl.int32)
    b = load_bits_i32(logits_ptr + (row * V + first_id), loc, inb, SRC)
    # NaNs get the largest key (their order is irrelevant: the row fails, clause 2.3), so the
    # tile's largest key alone tells NaN, else +inf, else "anything but -inf"
    sk = tl.where(inb, tl.where((b & 0x7FFFFFFF) > F32_POS_INF, INT32_MAX, value_key32(b)), INT32_MIN)
    gm = tl.max(tl.reshape(sk, [TILE // GROUPS, GROUPS]), axis=0)  # strided groups: lane g holds g mod G
    top = tl.max(gm)
    flags = (
        ((top == INT32_MAX).to(tl.int32) << 2)
        | ((top == SK_POS_INF).to(tl.int32) << 1)
        | (top > SK_NEG_INF).to(tl.int32)
    )
    tl.store(flags_ptr + pid, flags ^ ftag)
    l32 = tl.arange(0, K_C)
    out = cand_ptr + pid * K_C
    if greedy_fast:
        # greedy row without trace: only the argmax is needed (clause 4.1), lane 0 of the tile
        first = tl.min(tl.where(inb & (sk == top), loc, TILE))
        amax = (top.to(tl.int64) << 32) + (0xFFFFFFFF - (first_id + first))
        tl.store(out + l32, tl.where(l32 == 0, amax, KEY_PAD) ^ ktag)
    elif THRESHOLD:
        if GROUPS == K_C:  # noqa: SIM108 (constexpr branch)
            theta = tl.min(gm)
        else:
            theta = _kth32_value(gm, gm > INT32_MIN)
        gt = inb & (sk > theta)
        eq = inb & (sk == theta)
        n_gt, n_eq = _count_pair(gt, eq, TILE)
        if n_gt <= CAP:
            c_gt, c_eq = _scan_pair(gt, eq, TILE)
            need = K_C - n_gt
            sel = gt | (eq & (c_eq <= need))
            slot = tl.where(gt, c_gt - 1, n_gt + c_eq - 1)
            s_key = scratch_ptr + pid * CAP
            tl.store(s_key + slot, (sk.to(tl.int64) << 32) + (0xFFFFFFFF - (first_id + loc)), mask=sel)
            n_sel = n_gt + tl.minimum(tl.maximum(need, 0), n_eq)
            tl.debug_barrier()  # the compacted keys were written by other threads of this program
            lane = tl.arange(0, CAP)
            live = lane < n_sel
            s = tl.load(s_key + lane, mask=live, other=KEY_PAD)
            rank = _rank_desc(s, live)
            tl.store(out + rank, s ^ ktag, mask=live & (rank < K_C))
            tl.store(out + l32, tl.full([K_C], KEY_PAD, tl.int64) ^ ktag, mask=l32 >= n_sel)
        else:
            key = tl.where(inb, (sk.to(tl.int64) << 32) + (0xFFFFFFFF - (first_id + loc)), KEY_PAD)
            tl.store(out + l32, top32(key, USE_TL_TOPK) ^ ktag)
    else:
        key = tl.where(inb, (sk.to(tl.int64) << 32) + (0xFFFFFFFF - (first_id + loc)), KEY_PAD)
        tl.store(out + l32, top32(key, USE_TL_TOPK) ^ ktag)


@triton.jit
def _group_bits(x, NT: tl.constexpr, GW: tl.constexpr):
    """Per column group of an [R, GW NT] tile (one thread's R x GW elements): the sum of x over the
    group's elements, which is their OR when x holds distinct powers of two (_tile_fast's ``bit``)."""
    return tl.sum(tl.reshape(tl.sum(x, axis=0), [NT, GW]), axis=1)


@triton.jit
def _popc32(x):
    """Set bits of int32 patterns (SWAR integer operations: exact under the interpreter, no libdevice)."""
    u = x.to(tl.uint32, bitcast=True)
    u = u - ((u >> 1) & 0x55555555)
    u = (u & 0x33333333) + ((u >> 2) & 0x33333333)
    u = (u + (u >> 4)) & 0x0F0F0F0F
    u = u + (u >> 8)
    u = u + (u >> 16)
    return (u & 0x3F).to(tl.int32)


@triton.jit
def _bit_loc(bi, col, NT: tl.constexpr, GW: tl.constexpr):
    """The half-tile index of bit bi of column group col's selection mask (bit GW r + j: row r, column j)."""
    return (bi // GW) * (NT * GW) + col * GW + (bi % GW)


@triton.jit
def _gt_masks(sk, sk2, theta, bit, NT: tl.constexpr, GW: tl.constexpr, HALVES: tl.constexpr):
    """The elements above theta as one bit mask per column group and half (bit GW r + j for the group's
    element in row r, column j; gtb2 for the second half, gtb2 = gtb with one half), the groups' counts
    and the tile's total: (gtb, gtb2, c_gt, n_gt). Masks instead of per-element flags: nothing per
    element stays live past this point (the flags had held ~550 instructions of each warp's ~1,430 in
    the register-capped tile, H200 ncu), and the counts are the masks' popcounts."""
    gtb = _group_bits(tl.where(sk > theta, bit, 0), NT, GW)
    c_gt = _popc32(gtb)
    gtb2 = gtb
    if HALVES == 2:
        gtb2 = _group_bits(tl.where(sk2 > theta, bit, 0), NT, GW)
        c_gt += _popc32(gtb2)
    return gtb, gtb2, c_gt, tl.sum(c_gt)


@triton.jit
def _eq_masks(sk, inb, sk2, inb2, full, theta, bit, NT: tl.constexpr, GW: tl.constexpr, HALVES: tl.constexpr):
    """The elements at theta as _gt_masks forms those above it, formed only when fewer than 32 lie above
    it (Gaussian rows almost never: the test per element and a reduction saved; H200, session 13: B = 64
    127.8 -> 119.7 us, benchmarks/NOTES.md item 66): (eqb, eqb2, c_eq, n_eq)."""
    eqb = _group_bits(tl.where(sk == theta, bit, 0), NT, GW)
    if not full:  # lanes past V read as -inf and must not tie with theta = -inf (~35 instructions
        # per warp of the per-element test are left to a vocabulary's last tile)
        eqb = eqb & _group_bits(tl.where(inb, bit, 0), NT, GW)
    c_eq = _popc32(eqb)
    eqb2 = eqb
    if HALVES == 2:
        eqb2 = _group_bits(tl.where(sk2 == theta, bit, 0), NT, GW)
        if not full:
            eqb2 = eqb2 & _group_bits(tl.where(inb2, bit, 0), NT, GW)
        c_eq += _popc32(eqb2)
    return eqb, eqb2, c_eq, tl.sum(c_eq)


@triton.jit
def _with_ties(gtb, eqb, gtb2, eqb2, c_gt, c_eq, n_gt, n_eq, loc, bit, TILE: tl.constexpr, NT: tl.constexpr,
               GW: tl.constexpr, FCAP: tl.constexpr, HALVES: tl.constexpr):  # fmt: skip
    """_tile_fast's selection when fewer than 32 elements lie above theta: those and the ties at theta,
    or, when that is more than FCAP, the ties of lowest ID bounded by phi = the 32nd smallest of the
    columns' lowest tie indices (a column's lowest tie is its mask's lowest bit: within a column the
    index grows with the bit, and every first-half index is below every second-half one; at least
    32 ties lie at or below phi). (bits, bits2, cnt, n_sel) as _tile_fast's."""
    if n_gt + n_eq <= FCAP:
        bits = gtb | eqb
        bits2 = gtb2 | eqb2
        cnt = c_gt + c_eq
        n_sel = n_gt + n_eq
    else:
        HALF: tl.constexpr = TILE // HALVES
        col = tl.arange(0, NT)
        lo = _bit_index(eqb & -eqb)
        tmin = tl.where(eqb != 0, _bit_loc(lo, col, NT, GW), TILE)
        if HALVES == 2:
            lo2 = _bit_index(eqb2 & -eqb2)
            tmin2 = HALF + _bit_loc(lo2, col, NT, GW)
            tmin = tl.where((eqb == 0) & (eqb2 != 0), tmin2, tmin)
        phi = _kth32_smallest(tmin)
        bits = gtb | (eqb & _group_bits(tl.where(loc <= phi, bit, 0), NT, GW))
        cnt = _popc32(bits)
        bits2 = bits
        if HALVES == 2:
            bits2 = gtb2 | (eqb2 & _group_bits(tl.where(loc + HALF <= phi, bit, 0), NT, GW))
            cnt += _popc32(bits2)
        n_sel = tl.sum(cnt)
    return bits, bits2, cnt, n_sel


@triton.jit
def _kth32_smallest(vals):
    """The 32nd smallest of the values (counted with multiplicity; INT32_MAX if fewer than 32):
    _kth32_value of the bitwise complements, since ~ reverses the int32 order without overflow."""
    return ~_kth32_value(~vals, vals == vals)  # noqa: PLR0124 (every lane valid: folds away)


@triton.jit
def _bit_index(low):
    """log2 of a power of two given as an int32 bit pattern (bit 31 included), integer operations only."""
    return (
        ((low & -65536) != 0).to(tl.int32) * 16
        + ((low & -16711936) != 0).to(tl.int32) * 8  # 0xFF00FF00
        + ((low & -252645136) != 0).to(tl.int32) * 4  # 0xF0F0F0F0
        + ((low & -858993460) != 0).to(tl.int32) * 2  # 0xCCCCCCCC
        + ((low & -1431655766) != 0).to(tl.int32)  # 0xAAAAAAAA
    )


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
    NT: tl.constexpr,
    FCAP: tl.constexpr,
    GROUPS: tl.constexpr,
    CAP: tl.constexpr,
    SRC: tl.constexpr,
    USE_TL_TOPK: tl.constexpr,
    BY_COUNT: tl.constexpr,
    WARP_BOUND: tl.constexpr,
    RETRY: tl.constexpr,
):
    """The tile's candidates and flags (as _tile_part) with per-thread groups and little per-element work.

    The tile is an [R, GW NT] array, element r * GW NT + c; column group t is columns GW t..GW t+GW-1,
    GW = the elements of one 16-byte load (4 binary32, 8 bfloat16 / binary16), so that thread t holds
    its R x GW elements and group reductions stay in registers. A tile of more than 32 NT elements is
    two such arrays (HALVES = 2; the second from element TILE / 2 on), whose elements of column group t
    form one group with one selection mask per half (a 32-bit mask holds R GW <= 32 bits): per element
    the same work, per tile the bound, scan, compaction and top 32 once for twice the elements.
    theta = the 32nd largest of the NT column maxima: 32 distinct elements have a value >= theta, so
    the tile's top 32 keys lie among the elements of value > theta and, when fewer than 32 of those
    exist, the lowest-ID elements of value theta. When those ties are too many, phi = the 32nd
    smallest of the columns' lowest tie indices bounds them (at least 32 ties lie at or below it).
    Each column records its selected elements as a bit mask and writes their indices to consecutive
    scratch slots after an exclusive scan of the NT column counts; the selected elements (at most
    FCAP) are reloaded, keyed and ordered by a bitonic top-k. BY_COUNT takes theta and the order from
    exact integer count matrices instead (same values; much faster under Triton's interpreter, whose
    generic reductions run element by element). WARP_BOUND takes a lower theta that needs no exchange
    between warps: the smallest over the NT / 32 runs of 32 consecutive columns (one warp's threads) of
    the run's (32 / runs)-th largest column maximum, which 32 distinct columns still reach (more
    elements pass it: ~50 instead of ~37 for Gaussian logits); with RETRY, more than FCAP above it
    retries with the exact bound. The masks of the ties at theta are formed only when fewer than 32
    elements lie above it (rare for real logits; one reduction fewer and no tie test per element
    otherwise). More than FCAP takes _tile_part (the
    layout is a performance matter only: the bounds hold for any partition into columns). Value keys
    by value_key32; a NaN maps above +inf or below -inf (the flags look at both ends); lanes past V
    read as -inf. Stored keys and flags are XORed with ktag / ftag (tile_kernel's TAGGED).
    """
    GW: tl.constexpr = 4 if SRC == SRC_F32 else 8  # elements per 16-byte load: one thread's columns
    HALVES: tl.constexpr = 2 if TILE > NT * 32 else 1  # a 32-bit mask holds a group's elements of one half
    HALF: tl.constexpr = TILE // HALVES
    R: tl.constexpr = HALF // (NT * GW)
    rr = tl.arange(0, R)[:, None]
    cc = tl.arange(0, NT * GW)[None, :]
    loc = rr * (NT * GW) + cc
    first_id = tile * TILE
    lim = tl.minimum(V - first_id, TILE).to(tl.int32)
    inb = loc < lim
    full = first_id + TILE <= V
    base = logits_ptr + (row * V + first_id)
    inb2 = loc + HALF < lim
    b = _tile_bits(base, loc, inb, full, SRC)
    b2 = b
    if HALVES == 2:  # (ptxas still issues all 16 loads before the first use: aot_check's load audit)
        b2 = _tile_bits(base + HALF, loc, inb2, full, SRC)
    sk = value_key32(b)  # (-0 ties +0, clause 3.1)
    cmax = tl.max(sk, axis=0)
    cmin = tl.min(sk, axis=0)
    sk2 = sk
    if HALVES == 2:
        sk2 = value_key32(b2)
        cmax = tl.maximum(cmax, tl.max(sk2, axis=0))
        cmin = tl.minimum(cmin, tl.min(sk2, axis=0))
    gmax = tl.max(tl.reshape(cmax, [NT, GW]), axis=1)
    gmin = tl.min(tl.reshape(cmin, [NT, GW]), axis=1)
    # each column's flag word, then their maximum (one reduction): the bits' order is the status
    # precedence (NaN > +inf > all -inf), so the row's status from the maximum over all words equals
    # the status from the tile's word as _tile_part forms it (only bits below a set NaN bit differ)
    nan = (gmax > F32_POS_INF) | (gmin < SK_NEG_INF)
    words = (
        (nan.to(tl.int32) << 2) | ((gmax == SK_POS_INF).to(tl.int32) << 1) | (gmax > SK_NEG_INF).to(tl.int32)
    )
    flags = tl.max(words)
    tl.store(flags_ptr + pid, flags ^ ftag)
    l32 = tl.arange(0, K_C)
    out = cand_ptr + pid * K_C
    if greedy_fast:
        top = tl.max(gmax)
        first = tl.min(tl.min(tl.where(inb & (sk == top), loc, TILE), axis=0))
        if HALVES == 2:
            first = tl.minimum(first, tl.min(tl.min(tl.where(inb2 & (sk2 == top), loc + HALF, TILE), axis=0)))
        amax = (top.to(tl.int64) << 32) + (0xFFFFFFFF - (first_id + first))
        tl.store(out + l32, tl.where(l32 == 0, amax, KEY_PAD) ^ ktag)
    else:
        # (a NaN below -inf could pull theta under the -inf of the lanes past V; the row fails anyway)
        if BY_COUNT:
            theta = tl.maximum(_kth32_value(gmax, gmax >= INT32_MIN), SK_NEG_INF)  # (all counted)
        elif WARP_BOUND:
            runs: tl.constexpr = NT // 32
            theta = tl.maximum(tl.min(tl.topk(tl.reshape(gmax, [runs, 32]), K_C // runs)), SK_NEG_INF)
        else:
            theta = tl.maximum(tl.min(tl.topk(gmax, K_C)), SK_NEG_INF)
        bit = 1 << (rr * GW + (cc & (GW - 1)))  # (distinct powers of two: sums are ORs)
        gtb, gtb2, c_gt, n_gt = _gt_masks(sk, sk2, theta, bit, NT, GW, HALVES)
        if WARP_BOUND and RETRY and not BY_COUNT:  # noqa: SIM102 (constexpr condition, then a runtime one)
            if n_gt > FCAP:
                # the per-warp bound is weak when the large values sit in a few warps' columns (a
                # vocabulary's likely tokens sharing an ID range): the exact bound before _tile_part
                theta = tl.maximum(tl.min(tl.topk(gmax, K_C)), SK_NEG_INF)
                gtb, gtb2, c_gt, n_gt = _gt_masks(sk, sk2, theta, bit, NT, GW, HALVES)
        col = tl.arange(0, NT)  # (the compaction's column indices)
        if n_gt >= K_C:  # ties are needed only while n_gt < 32
            bits = gtb
            bits2 = gtb2
            cnt = c_gt
            n_sel = n_gt
        else:  # (the ties' masks only here)
            eqb, eqb2, c_eq, n_eq = _eq_masks(sk, inb, sk2, inb2, full, theta, bit, NT, GW, HALVES)
            bits, bits2, cnt, n_sel = _with_ties(
                gtb, eqb, gtb2, eqb2, c_gt, c_eq, n_gt, n_eq, loc, bit, TILE, NT, GW, FCAP, HALVES
            )
        if n_sel <= FCAP:
            s_idx = scratch_ptr + pid * FCAP
            slot = tl.cumsum(cnt, 0) - cnt
            kmax = tl.max(cnt)
            n = kmax * 0
            while n < kmax:
                if HALVES == 2:  # the first half's bits, then the second's
                    first_half = bits != 0
                    lowbit = tl.where(first_half, bits, bits2)
                    lowbit = lowbit & -lowbit
                    bi = _bit_index(lowbit)
                    li = _bit_loc(bi, col, NT, GW) + tl.where(first_half, 0, HALF)
                    bits = tl.where(first_half, bits ^ lowbit, bits)
                    bits2 = tl.where(first_half, bits2, bits2 ^ lowbit)
                else:
                    lowbit = bits & -bits
                    bi = _bit_index(lowbit)
                    li = _bit_loc(bi, col, NT, GW)
                    bits = bits ^ lowbit
                tl.store(s_idx + slot + n, li.to(tl.int64), mask=lowbit != 0)
                n += 1
            tl.debug_barrier()  # the indices were written by other threads of this program
            # (the common case, ~50 selected for Gaussian logits, takes a bitonic top-k of 64 lanes:
            # one merge round and one exchange between warps fewer than FCAP = 128)
            if FCAP > SMALL_SEL:
                if n_sel <= SMALL_SEL:
                    top = _selected_top32(s_idx, base, first_id, n_sel, SMALL_SEL, SRC, BY_COUNT)
                else:
                    top = _selected_top32(s_idx, base, first_id, n_sel, FCAP, SRC, BY_COUNT)
            else:
                top = _selected_top32(s_idx, base, first_id, n_sel, FCAP, SRC, BY_COUNT)
            tl.store(out + l32, top ^ ktag)
        else:
            # (the fallback's scratch row, pid * CAP from its base, lies inside this program's row)
            _tile_part(
                logits_ptr, cand_ptr, flags_ptr, scratch_ptr + pid * (FCAP - CAP), pid, row, tile, V,
                greedy_fast, ktag, ftag, TILE, GROUPS, CAP, SRC, USE_TL_TOPK, True,
            )  # fmt: skip


@triton.jit
def _selected_top32(s_idx, base, first_id, n_sel, N: tl.constexpr, SRC: tl.constexpr, BY_COUNT: tl.constexpr):
    """The top 32 keys (descending, KEY_PAD past n_sel) of a tile's n_sel <= N selected elements,
    whose tile-local indices _tile_fast wrote to s_idx[0:n_sel]; their logits are read again."""
    lane = tl.arange(0, N)
    live = lane < n_sel
    li = tl.load(s_idx + lane, mask=live, other=0).to(tl.int32)
    b2 = load_bits_i32(base, li, live, SRC)
    sk2 = value_key32(b2)
    key = tl.where(live, (sk2.to(tl.int64) << 32) + (0xFFFFFFFF - (first_id + li)), KEY_PAD)
    return _top32(key, BY_COUNT)


@triton.jit(do_not_specialize=["V", "n_tiles", "tau_bits", "tab_n"])
def merge_kernel(
    logits_ptr,
    cand_ptr,
    flags_ptr,
    mscratch_ptr,
    best_ptr,
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
    POOL: tl.constexpr,
    MCAP: tl.constexpr,
    CHUNK: tl.constexpr,
    FCHUNK: tl.constexpr,
    TAB_ITERS: tl.constexpr,
    TRACE: tl.constexpr,
    SRC: tl.constexpr,
    USE_TL_TOPK: tl.constexpr,
    THRESHOLD: tl.constexpr,
    GREEDY_FAST: tl.constexpr,
    EARLY_DRAW: tl.constexpr,
    SPLIT: tl.constexpr,
    MPOOL_T: tl.constexpr = 0,
    MPOOL_K: tl.constexpr = 0,
    BY_COUNT: tl.constexpr = False,
    MPOOL_PAIRS: tl.constexpr = 0,
    TILE: tl.constexpr = 0,
    PDL: tl.constexpr = False,
    TAGGED: tl.constexpr = False,
    STALE_FIRST: tl.constexpr = 0,
):
    """One program per row (the two-launch form): C, status, greedy or sampled path (clauses 2-9).

    PDL (launched as a programmatic dependent of the tile kernel, whose programs all started before
    this one is scheduled): the program may start while the tile programs run; it waits for their
    grid's completion and stores (gdc_wait) before it reads anything they wrote, or with TAGGED it
    polls their tagged words instead, as the fused form's last program does (tile_kernel's
    docstring): the tile programs tag their keys and flags with the row's epoch, _pool_validated
    reloads until every word carries it, and this program then advances the epoch for the next
    launch (after the validation, so that every tile program has read the current one). The row's
    inputs (temperature, seed, round, position) were written before the tile kernel started."""
    row = tl.program_id(0).to(tl.int64)
    greedy_fast = False
    if GREEDY_FAST and not TRACE:
        greedy_fast = (tl.load(temp_ptr + row) & 0x7FFFFFFF) == 0
    word, ktag, ftag, d_tb, d_seed, d_rnd, d_pos = _row_tags(
        counter_ptr, temp_ptr, seed_ptr, round_ptr, pos_ptr, row, TAGGED
    )
    if TAGGED:
        sa, sb, sf = _pool_loads(
            cand_ptr + row * (n_tiles * K_C), flags_ptr + row * n_tiles, n_tiles, MPOOL_T, MPOOL_K, False
        )
    else:
        sa = 0
        sb = 0
        sf = 0
        if PDL:
            gdc_wait()
    _merge_row(
        logits_ptr, cand_ptr, flags_ptr, mscratch_ptr, temp_ptr, seed_ptr, round_ptr, pos_ptr,
        tab_z_ptr, tab_e_ptr, status_ptr, token_ptr, ids_ptr, tickets_ptr, trace_ptr, best_ptr,
        row, V, n_tiles, tau_bits, tab_n, greedy_fast, sa, sb, sf, ktag, ftag, d_tb, d_seed, d_rnd, d_pos,
        POOL, MCAP, CHUNK, FCHUNK, TAB_ITERS, TRACE, SRC, USE_TL_TOPK, THRESHOLD, EARLY_DRAW, SPLIT,
        MPOOL_T, MPOOL_K, BY_COUNT, MPOOL_PAIRS, TILE, TAGGED, STALE_FIRST,
    )  # fmt: skip
    if TAGGED:
        tl.store(counter_ptr + row, _next_epoch(word))


@triton.jit
def _merge_row(
    logits_ptr,
    cand_ptr,
    flags_ptr,
    mscratch_ptr,
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
    best_ptr,
    row,
    V,
    n_tiles,
    tau_bits,
    tab_n,
    greedy_fast,
    spec_a,
    spec_b,
    spec_f,
    ktag,
    ftag,
    d_tb,
    d_seed,
    d_rnd,
    d_pos,
    POOL: tl.constexpr,
    MCAP: tl.constexpr,
    CHUNK: tl.constexpr,
    FCHUNK: tl.constexpr,
    TAB_ITERS: tl.constexpr,
    TRACE: tl.constexpr,
    SRC: tl.constexpr,
    USE_TL_TOPK: tl.constexpr,
    THRESHOLD: tl.constexpr,
    EARLY_DRAW: tl.constexpr,
    SPLIT: tl.constexpr,
    MPOOL_T: tl.constexpr,
    MPOOL_K: tl.constexpr,
    BY_COUNT: tl.constexpr,
    MPOOL_PAIRS: tl.constexpr,
    TILE: tl.constexpr,
    TAGGED: tl.constexpr,
    STALE_FIRST: tl.constexpr,
):
    """C of one row from its tiles' candidates (clause 3.2), then the finish (clauses 2.1, 3.3-9), or
    with SPLIT C and the flag word stored for finish_kernel.

    Candidates and flags are read with .cg (through L2): in the fused kernel other programs wrote
    them during this launch. The merge pool's keys and the first chunk of flags are loaded before
    anything waits on memory, so their L2 round trips overlap. TAGGED (tile_kernel): the pool's and
    the flags' words were loaded before the arrival (spec_a, spec_b, spec_f) and carry the tags ktag
    and ftag, which _pool_untag checks and removes.
    """
    n_cand = n_tiles * K_C
    cbase = cand_ptr + row * n_cand
    if MPOOL_T > 0 and not TAGGED:
        if MPOOL_PAIRS:
            pool_q = _pool_pair_max(cbase, n_tiles, MPOOL_T, MPOOL_K)
        else:
            pool_keys = _pool_keys(cbase, n_tiles, MPOOL_T, MPOOL_K)
    # ---- clause 2.1: the maximum flag word over the tiles (integer reduction, order-free)
    # (while loops, not range(): the interpreter cannot take a runtime range bound under numpy >= 2.3)
    fo = tl.arange(0, FCHUNK).to(tl.int64)
    if not TAGGED:
        acc = tl.load(flags_ptr + row * n_tiles + fo, mask=fo < n_tiles, other=0, cache_modifier=".cg")
    if EARLY_DRAW and not SPLIT:
        if TAGGED:  # (its inputs were loaded at the start: tile_kernel)
            tb, k0, k1, x0, x1, x2, x3 = draw_words(d_tb, d_seed, d_rnd, d_pos)
        else:
            tb, k0, k1, x0, x1, x2, x3 = early_draw(row, temp_ptr, seed_ptr, round_ptr, pos_ptr)
    if TAGGED:
        pool_q, fmax, _reloads = _pool_validated(
            cbase, flags_ptr + row * n_tiles, n_tiles, spec_a, spec_b, spec_f, ktag, ftag,
            MPOOL_T, MPOOL_K, STALE_FIRST,
        )  # fmt: skip
    else:
        fstart = row * 0 + FCHUNK
        while fstart < n_tiles:
            o = fstart + fo
            f = tl.load(flags_ptr + row * n_tiles + o, mask=o < n_tiles, other=0, cache_modifier=".cg")
            acc = tl.maximum(acc, f)
            fstart += FCHUNK
        fmax = tl.max(acc)
    if greedy_fast and TAGGED:
        # the pool holds every tile's lane 0, its largest key (the tiles of a greedy row store only it)
        best = tl.where(tl.arange(0, K_C) == 0, tl.max(pool_q), KEY_PAD)
    elif greedy_fast:
        # every tile stored its argmax key in lane 0; C is not needed past a* (clause 4.1)
        l32 = tl.arange(0, K_C)
        am = tl.load(cbase + fo * K_C, mask=fo < n_tiles, other=KEY_PAD, cache_modifier=".cg")
        tstart = row * 0 + FCHUNK
        while tstart < n_tiles:
            o = tstart + fo
            am = tl.maximum(
                am, tl.load(cbase + o * K_C, mask=o < n_tiles, other=KEY_PAD, cache_modifier=".cg")
            )
            tstart += FCHUNK
        best = tl.where(l32 == 0, tl.max(am), KEY_PAD)
    elif MPOOL_T > 0:
        if MPOOL_PAIRS:
            best = _merge_pool_pairs(
                cbase, pool_q, n_tiles, ktag, TILE, MPOOL_T, MPOOL_K, BY_COUNT, TAGGED, STALE_FIRST,
                MPOOL_PAIRS,
            )  # fmt: skip
        else:
            best, hot = _merge_pool(pool_keys, MPOOL_T, MPOOL_K, BY_COUNT)
            if tl.max(hot) != 0:
                best = _pool_refine(cbase, hot, best, MPOOL_T, MPOOL_K, BY_COUNT)
    elif THRESHOLD:
        best = _merge_threshold(
            cbase, mscratch_ptr + row * (MCAP + K_C), n_tiles, POOL, MCAP, CHUNK, USE_TL_TOPK
        )
    else:
        best = _merge_extract(cbase, n_cand, CHUNK, USE_TL_TOPK)
    if SPLIT:
        # the finish runs in finish_kernel (fewer warps): hand over C and the flag word
        l32 = tl.arange(0, K_C)
        tl.store(best_ptr + row * (K_C + 1) + l32, best)
        tl.store(best_ptr + row * (K_C + 1) + K_C, fmax.to(tl.int64))
    elif greedy_fast:
        if TAGGED:  # noqa: SIM108 (constexpr branch)
            tb_g = d_tb
        else:
            tb_g = tl.load(temp_ptr + row).to(tl.int64) & 0xFFFFFFFF
        _greedy_outputs(row, best, fmax, tb_g, status_ptr, token_ptr, ids_ptr, tickets_ptr)
    elif EARLY_DRAW:  # (tb, k0..x3 from early_draw above)
        _finish_best(
            logits_ptr, best, fmax, row, V, tb, k0, k1, x0, x1, x2, x3, seed_ptr, round_ptr, pos_ptr,
            tab_z_ptr, tab_e_ptr, status_ptr, token_ptr, ids_ptr, tickets_ptr, trace_ptr, tau_bits, tab_n,
            TAB_ITERS, TRACE, SRC, True, BY_COUNT,
        )  # fmt: skip
    else:
        tb = tl.load(temp_ptr + row).to(tl.int64) & 0xFFFFFFFF
        zero_u = (tb & 0).to(tl.uint64)
        _finish_best(
            logits_ptr, best, fmax, row, V, tb, zero_u, zero_u, zero_u, zero_u, zero_u, zero_u, seed_ptr,
            round_ptr, pos_ptr, tab_z_ptr, tab_e_ptr, status_ptr, token_ptr, ids_ptr, tickets_ptr,
            trace_ptr, tau_bits, tab_n, TAB_ITERS, TRACE, SRC, False, BY_COUNT,
        )  # fmt: skip


@triton.jit
def _row_status(any_nan, any_pinf, any_live, tb):
    """Clause 2.1: the status from the row's flags and its temperature bits (precedence in this order)."""
    t_mag = tb & 0x7FFFFFFF
    bad_t = (t_mag > F32_POS_INF) | (((tb >> 31) == 1) & (t_mag != 0)) | (tb == F32_POS_INF)
    return tl.where(
        any_nan != 0, 1, tl.where(any_pinf != 0, 2, tl.where(any_live == 0, 3, tl.where(bad_t, 4, 0)))
    )


@triton.jit
def _greedy_outputs(row, best, fmax, tb, status_ptr, token_ptr, ids_ptr, tickets_ptr):
    """The outputs of a row whose temperature is +-0 (no trace): status (2.1), then a* with all 2^24
    tickets (4.1) or the failed row's values (2.3); ``best`` holds the row's largest key in lane 0,
    ``tb`` the temperature's bits (int64)."""
    lane = tl.arange(0, K_C)
    status = _row_status((fmax >> 2) & 1, (fmax >> 1) & 1, fmax & 1, tb)
    astar = 0xFFFFFFFF - (tl.max(best) & 0xFFFFFFFF)
    ok = status == 0
    tl.store(status_ptr + row, status.to(tl.int32))
    tl.store(token_ptr + row, tl.where(ok, astar, -1).to(tl.int32))
    tl.store(ids_ptr + row * 32 + lane, tl.where(ok & (lane == 0), astar, -1).to(tl.int32))
    tl.store(tickets_ptr + row * 32 + lane, tl.where(ok & (lane == 0), TICKETS, 0).to(tl.int32))


@triton.jit
def _finish_best(
    logits_ptr,
    best,
    fmax,
    row,
    V,
    tb,
    k0,
    k1,
    x0,
    x1,
    x2,
    x3,
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
    tau_bits,
    tab_n,
    TAB_ITERS: tl.constexpr,
    TRACE: tl.constexpr,
    SRC: tl.constexpr,
    HAVE_DRAW: tl.constexpr,
    BY_COUNT: tl.constexpr,
):
    """finish_core from C (``best``) and the maximum flag word of the row's tiles."""
    best = _one_per_thread(best)
    valid = best != KEY_PAD  # exactly the first K = min(32, V) lanes
    if TRACE:
        # the key canonicalised -0; the trace's d needs the original bits, so reload them
        ids = tl.where(valid, 0xFFFFFFFF - (best & 0xFFFFFFFF), -1)
        lb = load_bits32(logits_ptr + row * V, tl.where(valid, ids, 0), valid, SRC)
    else:
        lb = tl.where(valid, key_bits32(best), 0)  # -0 as +0: no output bit changes (key_bits32)
    finish_core(
        row, best, lb, (fmax >> 2) & 1, (fmax >> 1) & 1, fmax & 1, tb, k0, k1, x0, x1, x2, x3,
        seed_ptr, round_ptr, pos_ptr, tab_z_ptr, tab_e_ptr, status_ptr, token_ptr, ids_ptr,
        tickets_ptr, trace_ptr, tau_bits, tab_n, TAB_ITERS, TRACE, HAVE_DRAW, BY_COUNT,
    )  # fmt: skip


@triton.jit(do_not_specialize=["V", "tau_bits", "tab_n", "unit"])
def finish_kernel(
    logits_ptr,
    best_ptr,
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
    tau_bits,
    tab_n,
    unit,
    TAB_ITERS: tl.constexpr,
    TRACE: tl.constexpr,
    SRC: tl.constexpr,
    EARLY_DRAW: tl.constexpr,
):
    """One program per row (the three-launch form): the finish from merge_kernel's C and flag word,
    launched with fewer warps than the selection (its 32-lane reductions then stay inside a warp).

    ``unit`` = 1 at run time: offsets not provably contiguous keep the load from vectorising, so
    every thread holds one lane (a vectorised layout would run several lanes' exp in one thread)."""
    row = tl.program_id(0).to(tl.int64)
    l32 = tl.arange(0, K_C)
    best = tl.load(best_ptr + row * (K_C + 1) + l32 * unit)
    fmax = tl.load(best_ptr + row * (K_C + 1) + K_C).to(tl.int32)
    if EARLY_DRAW:
        tb, k0, k1, x0, x1, x2, x3 = early_draw(row, temp_ptr, seed_ptr, round_ptr, pos_ptr)
    else:
        tb = tl.load(temp_ptr + row).to(tl.int64) & 0xFFFFFFFF
        k0 = (tb & 0).to(tl.uint64)
        k1 = k0
        x0 = k0
        x1 = k0
        x2 = k0
        x3 = k0
    _finish_best(
        logits_ptr, best, fmax, row, V, tb, k0, k1, x0, x1, x2, x3, seed_ptr, round_ptr, pos_ptr,
        tab_z_ptr, tab_e_ptr, status_ptr, token_ptr, ids_ptr, tickets_ptr, trace_ptr, tau_bits, tab_n,
        TAB_ITERS, TRACE, SRC, EARLY_DRAW, ORDER_BY_COUNT,
    )  # fmt: skip


@triton.jit
def _merge_extract(cbase, n_cand, CHUNK: tl.constexpr, USE_TL_TOPK: tl.constexpr):
    """The row's top 32 keys by repeated top32 over chunks of candidates (any input; the slow path)."""
    o = tl.arange(0, CHUNK).to(tl.int64)
    best = top32(tl.load(cbase + o, mask=o < n_cand, other=KEY_PAD, cache_modifier=".cg"), USE_TL_TOPK)
    cstart = n_cand * 0 + CHUNK
    while cstart < n_cand:
        o = cstart + tl.arange(0, CHUNK).to(tl.int64)
        top = top32(tl.load(cbase + o, mask=o < n_cand, other=KEY_PAD, cache_modifier=".cg"), USE_TL_TOPK)
        best = top32(tl.reshape(tl.join(best, top), [2 * K_C]), USE_TL_TOPK)
        cstart += CHUNK
    return best


@triton.jit
def _merge_threshold(
    cbase,
    sbase,
    n_tiles,
    POOL: tl.constexpr,
    MCAP: tl.constexpr,
    CHUNK: tl.constexpr,
    USE_TL_TOPK: tl.constexpr,
):
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
    per = tl.minimum(K_C, tl.maximum((K_C + n_tiles - 1) // n_tiles, POOL // n_tiles))  # n_tiles * per >= 32
    pt = p // per
    pk = tl.load(cbase + pt * K_C + (p - pt * per), mask=pt < n_tiles, other=KEY_PAD, cache_modifier=".cg")
    co = tl.arange(0, CHUNK)
    k = tl.load(cbase + co, mask=co < n_cand, other=KEY_PAD, cache_modifier=".cg")  # overlaps the pool load
    theta = _kth32_value((pk >> 32).to(tl.int32), pk != KEY_PAD)
    n_gt, n_eq = _compact_chunk(k, theta, sbase, n_tiles * 0, n_tiles * 0, MCAP, CHUNK)
    cstart = n_tiles * 0 + CHUNK
    while cstart < n_cand:
        o = cstart + co
        k = tl.load(cbase + o, mask=o < n_cand, other=KEY_PAD, cache_modifier=".cg")
        n_gt, n_eq = _compact_chunk(k, theta, sbase, n_gt, n_eq, MCAP, CHUNK)
        cstart += CHUNK
    l32 = tl.arange(0, K_C)
    if n_gt <= MCAP:
        tl.debug_barrier()  # the compacted keys were written by other threads of this program
        lane = tl.arange(0, MCAP)
        few = n_gt < K_C
        n_tie = tl.minimum(tl.maximum(K_C - n_gt, 0), n_eq)
        # few above theta: lanes 0..31 hold them, lanes 32..63 the first ties; else lanes 0..n_gt-1
        idx = tl.where(few & (lane >= K_C), MCAP + lane - K_C, lane)
        live = tl.where(few, tl.where(lane < K_C, lane < n_gt, lane - K_C < n_tie), lane < n_gt)
        s = tl.load(sbase + idx, mask=live, other=KEY_PAD)
        rank = _rank_desc(s, live)
        hit = live[:, None] & (rank[:, None] == l32[None, :])
        best = tl.sum(tl.where(hit, s[:, None], 0), axis=0)  # one nonzero term per lane: exact
        n_sel = tl.where(few, n_gt + n_tie, n_gt)
        best = tl.where(l32 < n_sel, best, KEY_PAD)
    else:
        best = _merge_extract(cbase, n_cand, CHUNK, USE_TL_TOPK)
    return best


@triton.jit
def _pool_keys(cbase, n_tiles, MPOOL_T: tl.constexpr, MPOOL_K: tl.constexpr):
    """The first MPOOL_K candidates of each tile, [MPOOL_T, MPOOL_K] (KEY_PAD past the last tile)."""
    t2 = tl.arange(0, MPOOL_T)[:, None]
    j2 = tl.arange(0, MPOOL_K)[None, :]
    return tl.load(cbase + t2 * K_C + j2, mask=t2 < n_tiles, other=KEY_PAD, cache_modifier=".cg")


@triton.jit
def _top32(flat, BY_COUNT: tl.constexpr):
    """The 32 largest keys of a power-of-two-long vector (>= 32), descending, KEY_PAD past the real
    ones: Triton's bitonic top-k, or with BY_COUNT exact integer ranks (the interpreter's choice)."""
    if BY_COUNT:
        real = flat != KEY_PAD
        rank = _rank_desc(flat, real)
        l32 = tl.arange(0, K_C)
        hit = real[:, None] & (rank[:, None] == l32[None, :])
        best = tl.sum(tl.where(hit, flat[:, None], 0), axis=0)  # one nonzero term per lane: exact
        best = tl.where(l32 < tl.sum(real.to(tl.int32)), best, KEY_PAD)
    else:
        best = tl.topk(flat, K_C)
    return best


@triton.jit
def _set_lanes(flags, HOT: tl.constexpr):
    """The first HOT lanes where ``flags`` (0/1) is set, ascending (0 past the number set)."""
    order = tl.cumsum(flags, 0) - 1
    pick = (flags[:, None] != 0) & (order[:, None] == tl.arange(0, HOT)[None, :])
    return tl.sum(tl.where(pick, tl.arange(0, flags.shape[0])[:, None], 0), axis=0)  # one term per lane


@triton.jit
def _hot(kth, c32):
    """1 for the tiles whose MPOOL_K-th pooled key ``kth`` is real and >= c32, the pool's 32nd key:
    the tiles whose later keys may belong to C (only that key of a tile can be >= c32 without being
    in the pool's top 32)."""
    return ((kth != KEY_PAD) & (kth >= c32)).to(tl.int32)


@triton.jit
def _merge_pool(pk, MPOOL_T: tl.constexpr, MPOOL_K: tl.constexpr, BY_COUNT: tl.constexpr):
    """The top 32 of the pool ``pk`` (_pool_keys) and, per tile, whether C may hold more of its keys:
    the row's C equals the pool's top 32 unless some tile is hot (_hot; every key a tile lists later
    is smaller than its MPOOL_K-th), in which case the caller takes _pool_refine."""
    best = _top32(tl.reshape(pk, [MPOOL_T * MPOOL_K]), BY_COUNT)
    if MPOOL_K < K_C:  # noqa: SIM108 (constexpr branch)
        hot = _hot(tl.min(pk, axis=1), tl.min(best))  # a tile's listed keys descend: min = MPOOL_K-th
    else:
        hot = tl.arange(0, MPOOL_T) * 0
    return best, hot


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
    """The pool (_pool_keys) halved by pairing tile t with tile t + H, H = MPOOL_T / 2: lane
    t * MPOOL_K + j holds the larger of tile t's j-th key and tile t + H's (MPOOL_K - 1 - j)-th
    (_pair_slots). A descending and an ascending run meet lane by lane, so each pair keeps exactly its
    MPOOL_K largest pooled keys (the bitonic half-cleaner)."""
    pa, la, pb, lb = _pair_slots(cbase, n_tiles, MPOOL_T, MPOOL_K)
    a = tl.load(pa, mask=la, other=KEY_PAD, cache_modifier=".cg")
    b = tl.load(pb, mask=lb, other=KEY_PAD, cache_modifier=".cg")
    return tl.maximum(a, b)


@triton.jit
def _pool_loads(cbase, fbase, n_tiles, MPOOL_T: tl.constexpr, MPOOL_K: tl.constexpr, VOLATILE: tl.constexpr):
    """TAGGED: the raw (tagged) words of the paired pool (_pair_slots) and of the flags, the latter in
    a vector of the pool's length and layout (lane i: tile i's flag word; masked lanes read 0), so
    that _pool_untag reduces both in one pass. The pool has MPOOL_T / 2 * MPOOL_K >= n_tiles lanes."""
    tl.static_assert(MPOOL_K >= 2)
    pa, la, pb, lb = _pair_slots(cbase, n_tiles, MPOOL_T, MPOOL_K)
    fo = tl.arange(0, MPOOL_T // 2 * MPOOL_K)
    if VOLATILE:
        a = tl.load(pa, mask=la, other=0, volatile=True)
        b = tl.load(pb, mask=lb, other=0, volatile=True)
        fl = tl.load(fbase + fo, mask=fo < n_tiles, other=0, volatile=True)
    else:
        a = tl.load(pa, mask=la, other=0, cache_modifier=".cg")
        b = tl.load(pb, mask=lb, other=0, cache_modifier=".cg")
        fl = tl.load(fbase + fo, mask=fo < n_tiles, other=0, cache_modifier=".cg")
    return a, b, fl


@triton.jit
def _untag_keys(x, live, ktag):
    """Keys stored with the tag ktag (T << 24), untagged (KEY_PAD where not ``live``), and 1 where a
    live word does not carry T. After the XOR a word written with T has bits 24-31 0xFF (a real key:
    its ID word is 2^32 - 1 - ID, ID < 2^24) or 0x00 (KEY_PAD); one written with another tag T' in
    [0x80, 0xFE] has 0xFF ^ T ^ T' or T ^ T' there, with T ^ T' in [1, 0x7E]; one written untagged
    (another plan) or zero-filled (make_workspace) has T ^ 0xFF in [1, 0x7F] or T in [0x80, 0xFE]:
    none of them is 0x00 or 0xFF."""
    k = x ^ ktag
    top = (k >> KEY_TAG_SHIFT) & 0xFF
    stale = live & (top != 0) & (top != 0xFF)
    return tl.where(live, k, KEY_PAD), stale.to(tl.int32)


@triton.jit
def _pool_untag(a, b, fl, n_tiles, ktag, ftag, MPOOL_T: tl.constexpr, MPOOL_K: tl.constexpr):
    """The paired pool (as _pool_pair_max), the maximum flag word and whether any word was stale.
    Flag words carry ftag (T << 23) above their three flag bits: untagged, a word written with T is
    below 2^23 and one written otherwise (another tag, none, zero fill) is not (and below 2^31). One
    reduction: a lane with a stale key adds 2^30, so the maximum is the maximum flag word exactly
    when it is below 2^23, and it is at least 2^23 when any word is stale."""
    f, _t, _j, la, lb = _pair_lanes(n_tiles, MPOOL_T, MPOOL_K)
    ka, sa = _untag_keys(a, la, ktag)
    kb, sb = _untag_keys(b, lb, ktag)
    fmax = tl.max(tl.where(f < n_tiles, fl ^ ftag, 0) | ((sa | sb) << 30))
    return tl.maximum(ka, kb), fmax, (fmax >= FLAG_TAG_LIMIT).to(tl.int32)


@triton.jit
def _pool_validated(cbase, fbase, n_tiles, a, b, fl, ktag, ftag, MPOOL_T: tl.constexpr,
                    MPOOL_K: tl.constexpr, STALE_FIRST: tl.constexpr):  # fmt: skip
    """TAGGED: the paired pool and the maximum flag word from the words loaded before the arrival,
    reloaded (volatile, through L2) until every word carries this launch's tag (the other programs'
    stores precede their arrivals in program order, so they all become visible), and the number of
    reloads (for benchmarks/probe_timeline.py)."""
    if STALE_FIRST & 1:  # tests: the first look sees keys of another epoch
        a = a ^ KEY_TAG_LOW
    if STALE_FIRST & 2:  # and flag words of another epoch, reading NaN if taken as they are
        fl = fl ^ (FLAG_TAG_LIMIT | 4)
    q, fmax, stale = _pool_untag(a, b, fl, n_tiles, ktag, ftag, MPOOL_T, MPOOL_K)
    reloads = stale * 0
    while stale != 0:
        a, b, fl = _pool_loads(cbase, fbase, n_tiles, MPOOL_T, MPOOL_K, True)
        q, fmax, stale = _pool_untag(a, b, fl, n_tiles, ktag, ftag, MPOOL_T, MPOOL_K)
        reloads += 1
        if SPIN_LIMIT:
            stale = tl.where(reloads < SPIN_LIMIT, stale, 0)
    return q, fmax, reloads


@triton.jit
def _tagged_lists(ptrs, live, ktag, STALE_FIRST: tl.constexpr):
    """TAGGED: the keys at ``ptrs`` (KEY_PAD where not ``live``), untagged, reloaded until all carry
    this launch's tag (as _pool_validated)."""
    x = tl.load(ptrs, mask=live, other=0, cache_modifier=".cg")
    if STALE_FIRST & 4:
        x = x ^ KEY_TAG_LOW
    k, stale = _untag_keys(x, live, ktag)
    bad = tl.max(stale)
    reloads = bad * 0
    while bad != 0:
        x = tl.load(ptrs, mask=live, other=0, volatile=True)
        k, stale = _untag_keys(x, live, ktag)
        bad = tl.max(stale)
        reloads += 1
        if SPIN_LIMIT:
            bad = tl.where(reloads < SPIN_LIMIT, bad, 0)
    return k


@triton.jit
def _fold_quads(q, MPOOL_T: tl.constexpr, MPOOL_K: tl.constexpr):
    """The pairs' kept keys ``q`` (_pool_pair_max: pair p at lanes p MPOOL_K.., a bitonic run) halved
    again: pair p's keys sorted descending meet pair p + H / 2's sorted ascending lane by lane, so each
    quad keeps exactly its MPOOL_K largest (the half-cleaner once more)."""
    Q: tl.constexpr = MPOOL_T // 4
    lo, hi = tl.split(tl.permute(tl.reshape(q, [2, Q * MPOOL_K]), (1, 0)))
    a = tl.sort(tl.reshape(lo, [Q, MPOOL_K]), dim=1, descending=True)
    b = tl.sort(tl.reshape(hi, [Q, MPOOL_K]), dim=1, descending=False)
    return tl.reshape(tl.maximum(a, b), [Q * MPOOL_K])


@triton.jit
def _key_tile(keys, TILE: tl.constexpr):
    """The tile of each real key's token ID (-1 for KEY_PAD)."""
    ids = 0xFFFFFFFF - (keys & 0xFFFFFFFF)
    return tl.where(keys != KEY_PAD, ids // TILE, -1)


@triton.jit
def _full_groups(group, NG: tl.constexpr, MPOOL_K: tl.constexpr):
    """1 for the lanes whose group (-1: none, else < NG) holds MPOOL_K lanes of the vector (none
    holds more), and that flag's maximum. The groups' counts are packed NIB bits apart into int64
    sums (integer, exact in any order): a few reductions instead of a [32, 32] matrix, whose two
    orientations of the vector cost layout changes through shared memory."""
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
    full = full.to(tl.int32)
    return full, tl.max(full)


@triton.jit
def _merge_pool_pairs(
    cbase,
    q,
    n_tiles,
    ktag,
    TILE: tl.constexpr,
    MPOOL_T: tl.constexpr,
    MPOOL_K: tl.constexpr,
    BY_COUNT: tl.constexpr,
    TAGGED: tl.constexpr,
    STALE_FIRST: tl.constexpr,
    FOLDS: tl.constexpr,
):
    """C from the halved pool ``q`` (_pool_pair_max), the merge's first try when the pool pairs tiles.
    FOLDS = 2 halves it once more (_fold_quads): the groups are then quads of tiles t, t + H / 2,
    t + H, t + 3 H / 2, and "pair" below reads "group" (a group's kept keys are still its MPOOL_K
    largest pooled keys, which is all the proof uses).

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
    almost never have a hot pair (two tiles holding 8 of the row's 32 largest); rows whose likely
    tokens share an ID range do."""
    NG: tl.constexpr = MPOOL_T >> FOLDS  # groups: tiles t, t + NG, t + 2 NG, ...
    SIDES: tl.constexpr = 1 << FOLDS
    HOT: tl.constexpr = K_C // MPOOL_K
    if FOLDS == 2:
        q = _fold_quads(q, MPOOL_T, MPOOL_K)
    best = _top32(q, BY_COUNT)
    if MPOOL_K < K_C:
        tile = _key_tile(best, TILE)
        pair = tl.where(tile >= 0, tile % NG, -1)
        full, any_full = _full_groups(pair, NG, MPOOL_K)
        if any_full != 0:
            p = tl.arange(0, NG)
            hp = tl.max((full[None, :] != 0) & (pair[None, :] == p[:, None]), axis=1).to(tl.int32)
            hot_pair = _set_lanes(hp, HOT)
            side = tl.arange(0, SIDES)[None, :, None]
            t3 = hot_pair[:, None, None] + side * NG  # [HOT, SIDES, 1]: every tile of each hot group
            live = (tl.arange(0, HOT) < tl.sum(hp))[:, None, None] & (t3 < n_tiles)
            j3 = tl.arange(0, K_C)[None, None, :]
            flat: tl.constexpr = HOT * SIDES * K_C
            if TAGGED:  # (flat: Triton 3.6 fails to compile the reload loop over the [HOT, SIDES, 32] form)
                lists = _tagged_lists(
                    tl.reshape(cbase + t3 * K_C + j3, [flat]), tl.reshape(live & (j3 >= 0), [flat]), ktag,
                    STALE_FIRST,
                )  # fmt: skip
            else:
                lists = tl.load(cbase + t3 * K_C + j3, mask=live, other=KEY_PAD, cache_modifier=".cg")
            lists_top = _top32(tl.reshape(lists, [flat]), BY_COUNT)
            rest = tl.where(full != 0, KEY_PAD, best)
            best = _top32(tl.reshape(tl.join(rest, lists_top), [2 * K_C]), BY_COUNT)
    return best


@triton.jit
def _pool_refine(cbase, hot, best, MPOOL_T: tl.constexpr, MPOOL_K: tl.constexpr, BY_COUNT: tl.constexpr):
    """C when the pool's check failed: the top 32 of the pool's top 32 (``best``) and the remaining
    keys of every hot tile (``hot``, [MPOOL_T] 0/1; _hot: one whose MPOOL_K-th key is real and >= c32,
    the pool's 32nd key).

    Exact: the row's 32nd key is >= c32 (the pool's top 32 are 32 keys of the row), so a key x of C
    at position j of its tile's sorted list is either pooled (j < MPOOL_K; x >= c32 puts it in the
    pool's top 32) or later than the MPOOL_K-th, which is then > x >= c32 (the tile is hot). A hot
    tile's MPOOL_K pooled keys are all >= c32, hence in the pool's top 32, so at most 32 / MPOOL_K
    tiles are hot (likewise when the pool holds fewer than 32 real keys). Typical of vocabularies whose
    likely tokens share an ID range (frequent tokens have low IDs in BPE vocabularies)."""
    HOT: tl.constexpr = K_C // MPOOL_K
    hot_tile = _set_lanes(hot, HOT)
    j = tl.arange(0, K_C)[None, :]
    live = (tl.arange(0, HOT)[:, None] < tl.sum(hot)) & (j >= MPOOL_K)
    tails = tl.load(cbase + hot_tile[:, None] * K_C + j, mask=live, other=KEY_PAD, cache_modifier=".cg")
    tail_top = _top32(tl.reshape(tails, [HOT * K_C]), BY_COUNT)
    return _top32(tl.reshape(tl.join(best, tail_top), [2 * K_C]), BY_COUNT)


@triton.jit
def _compact_chunk(k, theta, sbase, n_gt, n_eq, MCAP: tl.constexpr, CHUNK: tl.constexpr):
    """Append a chunk's candidates of value > theta (slots n_gt..) and = theta (slots MCAP + n_eq..)
    to the scratch row, in flat order; returns the updated counts."""
    v = (k >> 32).to(tl.int32)
    real = k != KEY_PAD
    gt = real & (v > theta)
    eq = real & (v == theta)
    c_gt, c_eq = _scan_pair(gt, eq, CHUNK)
    pg = n_gt + c_gt - 1
    pe = n_eq + c_eq - 1
    tl.store(sbase + pg, k, mask=gt & (pg < MCAP))
    tl.store(sbase + MCAP + pe, k, mask=eq & (pe < K_C))
    d_gt, d_eq = _count_pair(gt, eq, CHUNK)
    return n_gt + d_gt, n_eq + d_eq


@triton.jit
def top32(keys, USE_TL_TOPK: tl.constexpr):
    """The 32 largest keys (any power-of-two length >= 32), descending (clause 3.2); pads with KEY_PAD.

    Keys are unique within a row, so the result is a well-defined set in a fixed order. The default
    extracts the maximum 32 times, each time below the previous one (integer max reductions: exact and
    order-free, and fast under the interpreter, whose generic reductions run element by element);
    USE_TL_TOPK selects Triton's bitonic tl.topk instead (same result; a performance option).
    """
    if USE_TL_TOPK:
        out = tl.topk(keys, 32)
    else:
        lane = tl.arange(0, 32)
        prev = tl.max(keys)
        out = tl.where(lane == 0, prev, tl.full([32], KEY_PAD, tl.int64))
        for r in range(1, 32):
            prev = tl.max(tl.where(keys < prev, keys, KEY_PAD))
            out = tl.where(lane == r, prev, out)
    return out


@triton.jit
def _one_per_thread(x):
    """A [32] vector in the layout of tl.arange(0, 32): lane i in thread i of every warp.

    Triton gives a vector the layout of the operation that made it (the merge's bitonic top-k leaves
    4 lanes in each of 8 threads) and every later operation inherits it; in this layout the finish's
    per-lane binary64 work runs once per thread, and its reductions, scans, sort and exchanges
    (_lanes_xor) stay within a warp (shuffles, no shared memory or barrier)."""
    return tl.gather(x, tl.arange(0, 32), 0)


@triton.jit
def _lanes_xor(x, lane, m: tl.constexpr):
    """x at lane ^ m for every lane (a butterfly exchange)."""
    return tl.gather(x, lane ^ m, 0)


@triton.jit
def _tree_level(x, lane, m: tl.constexpr):
    """One level of the clause-6.2 tree as a butterfly: with slot s's node at lanes s m..s m + m - 1
    of x, level k's slot s = RN64(slot 2s + slot 2s+1) of the previous level lands at lanes
    s 2m..s 2m + 2m - 1 (each lane adds its partner's node; RN64 addition commutes, so both orders
    give the same bits)."""
    return x + _lanes_xor(x, lane, m)


@triton.jit
def _lane_value(x, lane, k):
    """x[k] as a scalar, by an integer sum with one nonzero term (exact)."""
    return tl.sum(tl.where(lane == k, x, 0))


@triton.jit
def key_bits32(key):
    """The binary32 pattern of a clause-3.1 key (inverse of order_key; -0 comes back as +0).

    For callers that hold keys but not the logits (the vocabulary-sharded merge): a -0 that became
    +0 changes no output bit (d = l - m and hence e are equal for l = -0 and l = +0), only the sign of
    a zero d in the trace.
    """
    sk = key >> 32
    s = tl.where(sk < 0, sk ^ 0x7FFFFFFF, sk)
    return tl.where(s < 0, s + (1 << 32), s)


@triton.jit
def finish_row(
    row,
    best,
    lb,
    any_nan,
    any_pinf,
    any_live,
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
    tau_bits,
    tab_n,
    TAB_ITERS: tl.constexpr,
    TRACE: tl.constexpr,
):
    """Everything after C is known (clauses 2.1, 3.3-9, 12.1): ``best`` holds the row's top 32 keys in
    clause-3.1 order (KEY_PAD past K), ``lb`` the candidates' binary32 patterns, the flags the OR over
    the row's tiles (or shards). Writes the row's outputs and, when TRACE, its trace."""
    best = _one_per_thread(best)
    lb = _one_per_thread(lb)
    tb = tl.load(temp_ptr + row).to(tl.int64) & 0xFFFFFFFF
    zero_u = (tb & 0).to(tl.uint64)
    finish_core(
        row, best, lb, any_nan, any_pinf, any_live, tb, zero_u, zero_u, zero_u, zero_u, zero_u, zero_u,
        seed_ptr, round_ptr, pos_ptr, tab_z_ptr, tab_e_ptr, status_ptr, token_ptr, ids_ptr, tickets_ptr,
        trace_ptr, tau_bits, tab_n, TAB_ITERS, TRACE, False, ORDER_BY_COUNT,
    )  # fmt: skip


@triton.jit
def early_draw(row, temp_ptr, seed_ptr, round_ptr, pos_ptr):
    """The temperature bits and, for a row whose T is not +-0, its clause-9 draw, computed before C is
    known (the inputs are ready at once, so the 20 Philox rounds overlap the selection's memory
    latency). Rows that turn out failed or greedy discard the words (finish_core zeroes them), so no
    output or trace bit depends on this having run (clauses 4.2, 10.3 concern outputs, not work)."""
    tb = tl.load(temp_ptr + row).to(tl.int64) & 0xFFFFFFFF
    seed = tl.load(seed_ptr + row)
    rnd = tl.load(round_ptr + row)
    pos = tl.load(pos_ptr + row)
    return draw_words(tb, seed, rnd, pos)


@triton.jit
def draw_words(tb, seed, rnd, pos):
    """early_draw from its loaded inputs (the tagged fused kernel loads them at its start, so that no
    load waits after the arrival)."""
    zero_u = (tb & 0).to(tl.uint64)
    k0 = zero_u
    k1 = zero_u
    x0 = zero_u
    x1 = zero_u
    x2 = zero_u
    x3 = zero_u
    if (tb & 0x7FFFFFFF) != 0:
        k0, k1, x0, x1, x2, x3 = draw_block(seed, rnd, pos)
    return tb, k0, k1, x0, x1, x2, x3


@triton.jit
def finish_core(
    row,
    best,
    lb,
    any_nan,
    any_pinf,
    any_live,
    tb,
    k0,
    k1,
    x0,
    x1,
    x2,
    x3,
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
    tau_bits,
    tab_n,
    TAB_ITERS: tl.constexpr,
    TRACE: tl.constexpr,
    HAVE_DRAW: tl.constexpr,
    BY_COUNT: tl.constexpr,
):
    """finish_row with the temperature bits ``tb`` given and, when HAVE_DRAW, the row's draw words
    (k0, k1, x0..x3 from early_draw); without HAVE_DRAW the draw is made here for sampled rows only."""
    lane = tl.arange(0, 32)
    lane64 = lane.to(tl.int64)
    lane0 = lane * 0
    valid = best != KEY_PAD
    ids = tl.where(valid, 0xFFFFFFFF - (best & 0xFFFFFFFF), -1)
    n_valid = tl.sum(valid.to(tl.int64))
    astar = tl.gather(ids, lane0, 0)  # clause 3.3, in every lane (one exchange, not a reduction)
    mb = tl.gather(lb, lane0, 0)  # m's pattern in every lane (one exchange, not a reduction)

    # ---- clause 6.1: slots in ascending token ID; padding sorts last and carries +0. The IDs are
    # distinct, so sorting ID * 32 + lane orders the slots and leaves each slot's lane in 5 low bits.
    # (Sorted before clause 5, which it does not depend on, so that the two overlap.)
    sid = tl.where(valid, ids, (1 << 31) + lane64)
    if BY_COUNT:  # the same order from exact integer ranks (Triton's interpreter runs tl.sort slowly)
        rank = _rank_desc(-sid, lane >= 0)  # ascending: the descending rank of -ID
        order = tl.sum(tl.where(rank[:, None] == lane[None, :], (sid * 32 + lane64)[:, None], 0), axis=0)
    else:
        order = tl.sort(sid * 32 + lane64)
    src = (order & 31).to(tl.int32)
    slot_id = order >> 5
    slot_valid = lane64 < n_valid

    # ---- clause 2.1 status, clause 4.1 greedy
    t_mag = tb & 0x7FFFFFFF
    status = _row_status(any_nan, any_pinf, any_live, tb)
    greedy = (status == 0) & (t_mag == 0)
    sampled = (status == 0) & (t_mag != 0)

    # ---- clause 5: binary64 arithmetic rounded to binary32. A sampled row whose lanes the hardware
    # path vouches for (clause5_hw_jit) keeps its results; any other row (failed, greedy with trace,
    # a subnormal e or an exp near a rounding midpoint) takes the integer routines. Same bits.
    tau = (tb & 0) + tau_bits  # (tau_bits may arrive as a constexpr)
    d_f, z_f, e_f, unsure = clause5_hw(lb, mb, tau)
    d32 = bits_of_f32(d_f)
    z32 = bits_of_f32(z_f)
    e32 = tl.where(valid, bits_of_f32(e_f), 0)
    ev = tl.where(valid, e_f.to(tl.float64), 0.0)
    flagged = valid & False
    found = flagged
    if (not sampled) or (tl.max((valid & unsure).to(tl.int32)) != 0):
        d32 = sub32(lb, mb)
        z32 = div32(d32, tau)
        e32, flagged, found = exp_binary32(z32, tab_z_ptr, tab_e_ptr, tab_n, TAB_ITERS)
        e32 = tl.where(valid, e32, 0)
        ev = widen32to64(e32)

    ev = tl.gather(ev, src, 0)  # in slot order (clause 6.1)

    # ---- clause 6.2: the 5-level binary64 pairwise tree (level k's slot s at lanes s 2^k..)
    lv1 = _tree_level(ev, lane, 1)
    lv2 = _tree_level(lv1, lane, 2)
    lv3 = _tree_level(lv2, lane, 4)
    lv4 = _tree_level(lv3, lane, 8)
    lv5 = _tree_level(lv4, lane, 16)  # S in every lane
    p64 = ev / lv5

    # ---- clause 7: p = RN64(e / S) (above), c = floor(p * 2^24), remainder to a*
    p_bits = p64.to(tl.int64, bitcast=True)
    counts = tl.where(slot_valid, floor_times_2_24(p64), 0)  # (int32: the sums stay <= 2^24)
    c_incl = tl.cumsum(counts, 0)
    rem = TICKETS - tl.gather(c_incl, lane0 + 31, 0)  # (every lane)
    tickets = counts + tl.where(slot_valid & (slot_id == astar), rem, 0)
    # clause 9.5's cumulative tickets: a*'s remainder counts from its slot on (slots ascend by ID)
    incl = c_incl + tl.where(slot_id >= astar, rem, 0)

    # ---- clause 8.1: support = slots with tickets > 0, ascending ID, padded with (-1, 0). Each slot
    # is stored straight to its output place: a support entry to its rank among the support, any
    # other slot to the padding places after it, in slot order (the places are a permutation of 0..31)
    sel = slot_valid & (tickets > 0)
    before = tl.cumsum(sel.to(tl.int32), 0)  # support entries in slots 0..k
    n_sup = tl.gather(before, lane0 + 31, 0)
    place = tl.where(sel, before - 1, n_sup + lane - before)

    # ---- clause 9: Philox only on sampled rows (clauses 2.3, 4.2, 10.3)
    if HAVE_DRAW:
        zero_u = k0 & 0
        k0 = tl.where(sampled, k0, zero_u)
        k1 = tl.where(sampled, k1, zero_u)
        x0 = tl.where(sampled, x0, zero_u)
        x1 = tl.where(sampled, x1, zero_u)
        x2 = tl.where(sampled, x2, zero_u)
        x3 = tl.where(sampled, x3, zero_u)
    elif sampled:
        k0, k1, x0, x1, x2, x3 = draw_block(
            tl.load(seed_ptr + row), tl.load(round_ptr + row), tl.load(pos_ptr + row)
        )
    u = (x0 >> 8).to(tl.int32)  # clause 9.4
    # clause 9.5: half-open cumulative intervals; they tile [0, 2^24), so exactly one slot holds u
    hit = ((incl - tickets) <= u) & (u < incl)

    # ---- outputs (clause 12.1); failed rows get the clause-2.3 values. A sampled row's token is
    # stored by its drawn slot's lane, any other row's by lane 0
    failed = status != 0
    token = tl.where(failed, -1, tl.where(greedy, astar, slot_id))
    sup_id = tl.where(sel, slot_id, -1)
    sup_t = tl.where(sel, tickets, 0)
    out_ids = tl.where(failed, -1, tl.where(greedy, tl.where(lane == 0, astar, -1), sup_id))
    out_t = tl.where(failed, 0, tl.where(greedy, tl.where(lane == 0, TICKETS, 0), sup_t))
    place = tl.where(sampled, place, lane)
    tl.store(status_ptr + row, status.to(tl.int32))
    tl.store(token_ptr + row + lane0, token.to(tl.int32), mask=tl.where(sampled, hit, lane == 0))
    tl.store(ids_ptr + row * 32 + place, out_ids.to(tl.int32))
    tl.store(tickets_ptr + row * 32 + place, out_t.to(tl.int32))

    if TRACE:
        tr = trace_ptr + row * TRACE_WORDS
        path = tl.where(failed, 0, tl.where(greedy, 1, 2))
        tl.store(tr + TR_K, n_valid)
        tl.store(tr + TR_ARGMAX, _lane_value(ids, lane, 0))
        tl.store(tr + TR_M, _lane_value(lb, lane, 0))
        tl.store(tr + TR_S, _lane_value(lv5.to(tl.int64, bitcast=True), lane, 0))
        tl.store(tr + TR_R + lane0, rem.to(tl.int64), mask=lane == 0)
        tl.store(tr + TR_KEY, k0.to(tl.int64))
        tl.store(tr + TR_KEY + 1, k1.to(tl.int64))
        tl.store(tr + TR_BLOCK, x0.to(tl.int64))
        tl.store(tr + TR_BLOCK + 1, x1.to(tl.int64))
        tl.store(tr + TR_BLOCK + 2, x2.to(tl.int64))
        tl.store(tr + TR_BLOCK + 3, x3.to(tl.int64))
        tl.store(tr + TR_U, u.to(tl.int64))
        tl.store(tr + TR_STATUS, status.to(tl.int64))
        tl.store(tr + TR_PATH, path.to(tl.int64))
        tl.store(tr + TR_FLAGGED, tl.sum((valid & flagged).to(tl.int64)))
        tl.store(tr + TR_MISSED, tl.sum((valid & flagged & (found == 0)).to(tl.int64)))
        tl.store(tr + TR_ORDER + lane, ids)
        tl.store(tr + TR_SLOT_IDS + lane, tl.where(slot_valid, slot_id, -1))
        tl.store(tr + TR_D + lane, tl.gather(d32, src, 0))
        tl.store(tr + TR_Z + lane, tl.gather(z32, src, 0))
        tl.store(tr + TR_E + lane, tl.gather(e32, src, 0))
        tl.store(tr + TR_P + lane, p_bits)
        tl.store(tr + TR_COUNTS + lane, counts.to(tl.int64))
        tl.store(tr + TR_TICKETS + lane, tickets.to(tl.int64))
        tl.store(tr + TR_TREE + (lane >> 1), lv1.to(tl.int64, bitcast=True), mask=(lane & 1) == 0)
        tl.store(tr + TR_TREE + 16 + (lane >> 2), lv2.to(tl.int64, bitcast=True), mask=(lane & 3) == 0)
        tl.store(tr + TR_TREE + 24 + (lane >> 3), lv3.to(tl.int64, bitcast=True), mask=(lane & 7) == 0)
        tl.store(tr + TR_TREE + 28 + (lane >> 4), lv4.to(tl.int64, bitcast=True), mask=(lane & 15) == 0)
        tl.store(tr + TR_TREE + 30 + (lane >> 5), lv5.to(tl.int64, bitcast=True), mask=lane == 0)

# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""The finish of one row once C is known: status, greedy or sampled outputs, draw and trace (clauses
2.1, 2.3, 3.3, 4.1, 5-9, 12.1, 12.3). Shared by the merge kernel and the sharded merge.

Exactness: every reduction is over integers (exact in any order) except the clause-6.2 tree, whose
levels are explicit pairwise additions (a two-operand IEEE addition is commutative, so lane order
cannot matter); NaN and infinities are found by integer tests on bit patterns; the only
floating-point operations are binary64 +, -, /, the binary64 exp, the exact product p * 2^24 and
conversions that are exact or correctly rounded (clause5_hw_jit; no product feeds an addition, so
fma contraction has nothing to fuse). Each output is written by exactly one program, so a row's
outputs depend only on that row (clause 2.4).
"""

from dyadic24.kernels.backend import interpreting, select_backend

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from dyadic24.kernels.clause5_hw_jit import bits_of_f32, clause5_hw  # noqa: E402
from dyadic24.kernels.exp_jit import exp_binary32  # noqa: E402
from dyadic24.kernels.ieee_jit import (  # noqa: E402
    F32_POS_INF,
    KEY_PAD,
    div32,
    floor_times_2_24,
    load_bits32,
    sub32,
    widen32to64,
)
from dyadic24.kernels.philox_jit import draw_block  # noqa: E402
from dyadic24.kernels.select_jit import K_C, rank_desc  # noqa: E402

TICKETS = tl.constexpr(1 << 24)  # clause 7.3
# the slot order by exact ranks where no plan chooses (finish_row, the sharded merge) when
# interpreted: the same permutation as tl.sort, which the interpreter runs slowly
ORDER_BY_COUNT = tl.constexpr(interpreting())

# Trace row layout (clause 12.3; int64 words): decoded by dyadic24.kernels.trace.
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


# Pointer and value groups travel between these functions as tuples (Triton inlines them: the same
# code as separate arguments), so each list is written once here and in the kernels that build them:
#   inputs  (temp_ptr, seed_ptr, round_ptr, pos_ptr): the row's temperature, seed, round, position
#   loaded  (tb, seed, rnd, pos): those values as loaded (tb the temperature's bits, int64)
#   draw    (tb, k0, k1, x0, x1, x2, x3): draw_words' result
#   table   (tab_z_ptr, tab_e_ptr, tab_n): the exp near-midpoint table (exp_jit)
#   outs    (status_ptr, token_ptr, ids_ptr, tickets_ptr): the clause-12.1 outputs
#   flags   (any_nan, any_pinf, any_live): the row's clause-2.1 flags
# A kernel's own argument list cannot take them: its launch and aot_check's signatures name every
# pointer (benchmarks/DESIGN.md "Code shared between the kernels").


@triton.jit
def early_draw(row, inputs):
    """The row's temperature bits and, for a row whose T is not +-0, its clause-9 draw, computed
    before C is known (the inputs are ready at once, so the 20 Philox rounds overlap the merge's
    memory latency). Rows that turn out failed or greedy discard the words (finish_core zeroes them),
    so no output or trace bit depends on this having run (clauses 4.2, 10.3 concern outputs, not
    work)."""
    return draw_words(load_inputs(row, inputs))


@triton.jit
def load_inputs(row, inputs):
    """The row's ``loaded`` values from its ``inputs`` (module comment)."""
    temp_ptr, seed_ptr, round_ptr, pos_ptr = inputs
    tb = tl.load(temp_ptr + row).to(tl.int64) & 0xFFFFFFFF
    return tb, tl.load(seed_ptr + row), tl.load(round_ptr + row), tl.load(pos_ptr + row)


@triton.jit
def draw_words(loaded):
    """early_draw from its ``loaded`` inputs: (tb, k0, k1, x0, x1, x2, x3), zeros when T is +-0
    (clauses 9.2, 9.3)."""
    tb, seed, rnd, pos = loaded
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
def row_status(any_nan, any_pinf, any_live, tb):
    """Clause 2.1: the status from the row's flags and its temperature bits (precedence in this order)."""
    t_mag = tb & 0x7FFFFFFF
    bad_t = (t_mag > F32_POS_INF) | (((tb >> 31) == 1) & (t_mag != 0)) | (tb == F32_POS_INF)
    return tl.where(
        any_nan != 0, 1, tl.where(any_pinf != 0, 2, tl.where(any_live == 0, 3, tl.where(bad_t, 4, 0)))
    )


@triton.jit
def greedy_outputs(row, top, fmax, tb, outs):
    """The outputs of a row whose temperature is +-0, without trace: status (2.1), then a* with all 2^24
    tickets (3.3, 4.1) or the failed row's values (2.3); ``top`` is the row's largest key, ``fmax``
    the row's flag word, ``tb`` the temperature's bits (int64)."""
    status_ptr, token_ptr, ids_ptr, tickets_ptr = outs
    lane = tl.arange(0, K_C)
    status = row_status((fmax >> 2) & 1, (fmax >> 1) & 1, fmax & 1, tb)
    astar = 0xFFFFFFFF - (top & 0xFFFFFFFF)
    ok = status == 0
    tl.store(status_ptr + row, status.to(tl.int32))
    tl.store(token_ptr + row, tl.where(ok, astar, -1).to(tl.int32))
    tl.store(ids_ptr + row * 32 + lane, tl.where(ok & (lane == 0), astar, -1).to(tl.int32))
    tl.store(tickets_ptr + row * 32 + lane, tl.where(ok & (lane == 0), TICKETS, 0).to(tl.int32))


@triton.jit
def finish_best(
    logits_ptr,
    best,
    fmax,
    row,
    V,
    draw,
    table,
    outs,
    trace_ptr,
    tau_bits,
    rtau,
    TAB_ITERS: tl.constexpr,
    TRACE: tl.constexpr,
    SRC: tl.constexpr,
    BY_COUNT: tl.constexpr,
    IDS26: tl.constexpr,
    SORTED_C: tl.constexpr,
):
    """finish_core from C (``best``; in clause-3.1 order when SORTED_C, else in any lane order) and the
    maximum flag word of the row's tiles."""
    best = one_per_thread(best)
    valid = best != KEY_PAD  # exactly the first K = min(32, V) lanes
    if TRACE:
        # the key canonicalised -0; the trace's d needs the original bits, so reload them
        ids = tl.where(valid, 0xFFFFFFFF - (best & 0xFFFFFFFF), -1)
        lb = load_bits32(logits_ptr + row * V, tl.where(valid, ids, 0), valid, SRC)
    else:
        lb = tl.where(valid, key_bits32(best), 0)  # -0 as +0: no output bit changes (key_bits32)
    flags = (fmax >> 2) & 1, (fmax >> 1) & 1, fmax & 1
    finish_core(
        row, best, lb, flags, draw, table, outs, trace_ptr, tau_bits, rtau, TAB_ITERS, TRACE, BY_COUNT, IDS26,
        SORTED_C,
    )  # fmt: skip


@triton.jit
def finish_row(row, best, lb, flags, inputs, table, outs, tau_bits, rtau, TAB_ITERS: tl.constexpr):
    """finish_core for a caller that holds C's keys (``best``, clause-3.1 order, KEY_PAD past K) and
    their binary32 patterns (``lb``) and the row's flags (the sharded merge, without a trace; its slot
    order sorts int64 words at any V)."""
    best = one_per_thread(best)
    lb = one_per_thread(lb)
    draw = early_draw(row, inputs)
    no_trace = outs[0]  # (never written: TRACE is off)
    finish_core(
        row, best, lb, flags, draw, table, outs, no_trace, tau_bits, rtau, TAB_ITERS, False, ORDER_BY_COUNT,
        False, True,
    )  # fmt: skip


@triton.jit
def finish_core(
    row,
    best,
    lb,
    flags,
    draw,
    table,
    outs,
    trace_ptr,
    tau_bits,
    rtau,
    TAB_ITERS: tl.constexpr,
    TRACE: tl.constexpr,
    BY_COUNT: tl.constexpr,
    IDS26: tl.constexpr,
    SORTED_C: tl.constexpr,
):
    """Everything after C is known (clauses 2.1, 3.3, 4.1, 5-9, 12.1, 12.3): ``best`` holds the row's
    top 32 keys (KEY_PAD past K), one lane per thread, in clause-3.1 order when SORTED_C (always with
    TRACE, whose order and m's pattern come from lane 0) and else in any order (only the slot
    order, clause 6.1, orders the finish's lanes: a* is then the largest key), ``lb`` their binary32
    patterns, ``flags`` the OR over the row's tiles (or shards) and ``draw`` the temperature's bits and
    the row's draw (early_draw; used by sampled rows only). IDS26: every token ID is below 2^26
    (V <= 2^26; the slot order's sort then runs on int32 words). Writes the row's outputs and, when
    TRACE, its trace."""
    any_nan, any_pinf, any_live = flags
    tb, k0, k1, x0, x1, x2, x3 = draw
    tab_z_ptr, tab_e_ptr, tab_n = table
    status_ptr, token_ptr, ids_ptr, tickets_ptr = outs
    lane = tl.arange(0, 32)
    lane0 = lane * 0
    valid = best != KEY_PAD
    ids = tl.where(valid, 0xFFFFFFFF - (best & 0xFFFFFFFF), -1)
    n_valid = tl.sum(valid.to(tl.int32))  # (int32: one shuffle per level, not two)
    if SORTED_C:  # a* and m's pattern in lane 0, given to every lane (one exchange, not a reduction)
        astar = tl.gather(ids, lane0, 0)  # clause 3.3
        mb = tl.gather(lb, lane0, 0)
    else:  # the largest key (the trace, which keeps a -0 in m's pattern, has C sorted)
        top = tl.max(best)
        astar = 0xFFFFFFFF - (top & 0xFFFFFFFF)  # clause 3.3
        mb = key_bits32(top)

    # ---- clause 6.1: slots in ascending token ID (sorted before clause 5, which it does not depend
    # on, so that the two overlap)
    src, slot_id = slot_order(ids, valid, lane, IDS26, BY_COUNT)
    slot_valid = lane < n_valid

    # ---- clause 2.1 status, clause 4.1 greedy
    t_mag = tb & 0x7FFFFFFF
    status = row_status(any_nan, any_pinf, any_live, tb)
    greedy = (status == 0) & (t_mag == 0)
    sampled = (status == 0) & (t_mag != 0)

    # ---- clause 5: binary64 arithmetic rounded to binary32. A sampled row whose lanes the hardware
    # path vouches for (clause5_hw_jit) keeps its results; any other row (failed, greedy with trace,
    # a subnormal e or an exp near a rounding midpoint) takes the integer routines. Same bits.
    tau = (tb & 0) + tau_bits  # (tau_bits may arrive as a constexpr)
    d_f, z_f, e_f, unsure = clause5_hw(lb, mb, rtau)
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
    # clause 8.1's support = the slots with tickets > 0 = the slots with c > 0: only a*'s tickets
    # differ from its c, and c_{a*} >= 2^19 - 32 > 0 (a sampled row's t_{a*} >= 2^19 and R <= 32,
    # clause 7.4). So both prefix sums, of the counts (< 2^25) and of the support entries (<= 32,
    # from bit 25 on), are one int32 scan, independent of R (one scan on the chain, not two)
    sel = slot_valid & (counts > 0)
    both = tl.cumsum(counts + (sel.to(tl.int32) << 25), 0)
    total = tl.gather(both, lane0 + 31, 0)  # (every lane)
    c_incl = both & ((1 << 25) - 1)
    rem = TICKETS - (total & ((1 << 25) - 1))
    tickets = counts + tl.where(slot_valid & (slot_id == astar), rem, 0)
    # clause 9.5's cumulative tickets: a*'s remainder counts from its slot on (slots ascend by ID)
    incl = c_incl + tl.where(slot_id >= astar, rem, 0)

    # ---- clause 8.1: support = slots with tickets > 0, ascending ID, padded with (-1, 0). Each slot
    # is stored straight to its output place: a support entry to its rank among the support, any
    # other slot to the padding places after it, in slot order (the places are a permutation of 0..31)
    before = both >> 25  # support entries in slots 0..k
    n_sup = total >> 25
    place = tl.where(sel, before - 1, n_sup + lane - before)

    # ---- clause 9: the draw of sampled rows only (clauses 2.3, 4.2, 10.3)
    zero_u = k0 & 0
    k0 = tl.where(sampled, k0, zero_u)
    k1 = tl.where(sampled, k1, zero_u)
    x0 = tl.where(sampled, x0, zero_u)
    x1 = tl.where(sampled, x1, zero_u)
    x2 = tl.where(sampled, x2, zero_u)
    x3 = tl.where(sampled, x3, zero_u)
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

    if TRACE:  # clause 12.3
        tr = trace_ptr + row * TRACE_WORDS
        path = tl.where(failed, 0, tl.where(greedy, 1, 2))
        tl.store(tr + TR_K, n_valid.to(tl.int64))
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


@triton.jit
def slot_order(ids, valid, lane, IDS26: tl.constexpr, BY_COUNT: tl.constexpr):
    """Clause 6.1: (src, slot_id), slot s holding lane src[s]'s token ID slot_id[s], ascending; the
    padding lanes (not ``valid``) last. The IDs are distinct, so sorting ID * 32 + lane orders the
    slots and leaves each slot's lane in its 5 low bits. IDS26 (every ID below 2^26): the words fit
    an int32, whose network exchanges one register per step, not two. Padding (only when V < 32)
    takes IDs above every real one: 2^26 - 32 + lane, or 2^31 + lane in int64."""
    lane64 = lane.to(tl.int64)
    if IDS26:
        sid = tl.where(valid, ids, (1 << 26) - 32 + lane64).to(tl.int32)
        word = sid * 32 + lane
    else:
        sid = tl.where(valid, ids, (1 << 31) + lane64)
        word = sid * 32 + lane64
    if BY_COUNT:  # the same order from exact integer ranks (Triton's interpreter runs tl.sort slowly)
        rank = rank_desc(-sid.to(tl.int64), lane >= 0)  # ascending: the descending rank of -ID
        order = tl.sum(tl.where(rank[:, None] == lane[None, :], word[:, None], 0), axis=0)
    else:
        order = tl.sort(word)
    return (order & 31).to(tl.int32), order >> 5


@triton.jit
def key_bits32(key):
    """The binary32 pattern of a clause-3.1 key (inverse of order_key; -0 comes back as +0).

    For callers that hold keys but not the logits (the merge without a trace, the vocabulary-sharded
    merge): a -0 that became +0 changes no output bit (d = l - m and hence e are equal for l = -0 and
    l = +0), only the sign of a zero d in the trace.
    """
    sk = key >> 32
    s = tl.where(sk < 0, sk ^ 0x7FFFFFFF, sk)
    return tl.where(s < 0, s + (1 << 32), s)


@triton.jit
def one_per_thread(x):
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

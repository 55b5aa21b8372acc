# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""The two kernels of one proposal position (clauses 2-9).

``tile_kernel``: one program per (row, vocabulary tile); writes the tile's 32 largest clause-3.1 keys
(padding with KEY_PAD) and three status flags. ``merge_kernel``: one program per row; merges the
candidates into C (clause 3.2), decides the status (2.1) and runs the greedy (4) or sampled (5-9) path.

Exactness rules followed here: every reduction is over integers (exact in any order) except the
clause-6.2 tree, whose levels are explicit pairwise additions (reshape to [n, 2], split, add: a
two-operand IEEE addition is commutative, so lane order cannot matter); NaN and infinities are found
by integer tests on bit patterns; the only floating-point operations are binary64 +, -, / and the
binary64 exp (no product feeds an addition, so fma contraction has nothing to fuse). Each output is
written by exactly one program, without atomics, so results are deterministic and a row's outputs
depend only on that row (clause 2.4).
"""

from dyadic24.kernels.backend import select_backend

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from dyadic24.kernels.exp_jit import exp_binary32  # noqa: E402
from dyadic24.kernels.ieee_jit import (  # noqa: E402
    F32_NEG_INF,
    F32_POS_INF,
    KEY_PAD,
    div32,
    floor_times_2_24,
    load_bits32,
    order_key,
    sub32,
    widen32to64,
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


# Integer arguments are not specialised (Triton would compile a variant per "== 1" / "% 16 == 0"
# pattern of V, n_tiles, tau_bits, tab_n); the constexprs alone select the compiled variant.
@triton.jit(do_not_specialize=["V", "n_tiles"])
def tile_kernel(
    logits_ptr,
    cand_ptr,
    flags_ptr,
    V,
    n_tiles,
    TILE: tl.constexpr,
    SRC: tl.constexpr,
    USE_TL_TOPK: tl.constexpr,
):
    """Per (row, tile): the tile's top 32 keys (clause 3.1) and flags NaN | +inf << 1 | live << 2 (2.1)."""
    pid = tl.program_id(0).to(tl.int64)
    row = pid // n_tiles
    tile = pid % n_tiles
    offs = tile * TILE + tl.arange(0, TILE).to(tl.int64)
    inb = offs < V
    b = load_bits32(logits_ptr + row * V, offs, inb, SRC)
    nan = inb & ((b & 0x7FFFFFFF) > F32_POS_INF)
    pinf = inb & (b == F32_POS_INF)
    live = inb & (b != F32_NEG_INF)  # finite or -0 or NaN/+inf: anything but -inf
    flags = tl.max(nan.to(tl.int32)) | (tl.max(pinf.to(tl.int32)) << 1) | (tl.max(live.to(tl.int32)) << 2)
    key = tl.where(inb, order_key(b, offs), KEY_PAD)
    top = top32(key, USE_TL_TOPK)
    tl.store(cand_ptr + pid * 32 + tl.arange(0, 32), top)
    tl.store(flags_ptr + pid, flags)


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
def _pair_level(x, N: tl.constexpr):
    """One level of the clause-6.2 tree: slot k = RN64(slot 2k + slot 2k+1)."""
    a, b = tl.split(tl.reshape(x, [N, 2]))
    return a + b


@triton.jit
def _lane_value(x, lane, k):
    """x[k] as a scalar, by an integer sum with one nonzero term (exact)."""
    return tl.sum(tl.where(lane == k, x, 0))


@triton.jit
def _permute(x, perm):
    """y[k] = x[i] where perm[i, k]; perm is a permutation matrix, the integer sums are exact."""
    return tl.sum(tl.where(perm, x[:, None], 0), axis=0)


@triton.jit(do_not_specialize=["V", "n_tiles", "tau_bits", "tab_n"])
def merge_kernel(
    logits_ptr,
    cand_ptr,
    flags_ptr,
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
    CHUNK: tl.constexpr,
    FCHUNK: tl.constexpr,
    TAB_ITERS: tl.constexpr,
    TRACE: tl.constexpr,
    SRC: tl.constexpr,
    USE_TL_TOPK: tl.constexpr,
):
    """One program per row: C, status, greedy or sampled path, outputs, optional trace (clauses 2-9)."""
    row = tl.program_id(0).to(tl.int64)
    lane = tl.arange(0, 32)
    lane64 = lane.to(tl.int64)

    # ---- clause 2.1 flags: OR over the tiles (integer reduction, order-free)
    # (while loops, not range(): the interpreter cannot take a runtime range bound under numpy >= 2.3)
    acc = tl.zeros([FCHUNK], tl.int32)
    fstart = row * 0
    while fstart < n_tiles:
        o = fstart + tl.arange(0, FCHUNK).to(tl.int64)
        acc = acc | tl.load(flags_ptr + row * n_tiles + o, mask=o < n_tiles, other=0)
        fstart += FCHUNK
    any_nan = tl.max(acc & 1)
    any_pinf = tl.max(acc & 2)
    any_live = tl.max(acc & 4)

    # ---- clause 3.2: C = the K largest keys of the row, merged chunk by chunk
    n_cand = n_tiles * 32
    o = tl.arange(0, CHUNK).to(tl.int64)
    best = top32(tl.load(cand_ptr + row * n_cand + o, mask=o < n_cand, other=KEY_PAD), USE_TL_TOPK)
    cstart = row * 0 + CHUNK
    while cstart < n_cand:
        o = cstart + tl.arange(0, CHUNK).to(tl.int64)
        top = top32(tl.load(cand_ptr + row * n_cand + o, mask=o < n_cand, other=KEY_PAD), USE_TL_TOPK)
        best = top32(tl.reshape(tl.join(best, top), [64]), USE_TL_TOPK)
        cstart += CHUNK
    valid = best != KEY_PAD  # exactly the first K = min(32, V) lanes
    ids = tl.where(valid, 0xFFFFFFFF - (best & 0xFFFFFFFF), -1)
    # The key canonicalised -0; the trace's d needs the original bits, so reload them.
    lb = load_bits32(logits_ptr + row * V, tl.where(valid, ids, 0), valid, SRC)
    finish_row(
        row, best, lb, any_nan, any_pinf, any_live, temp_ptr, seed_ptr, round_ptr, pos_ptr,
        tab_z_ptr, tab_e_ptr, status_ptr, token_ptr, ids_ptr, tickets_ptr, trace_ptr, tau_bits, tab_n,
        TAB_ITERS, TRACE,
    )  # fmt: skip


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
    lane = tl.arange(0, 32)
    lane64 = lane.to(tl.int64)
    valid = best != KEY_PAD
    ids = tl.where(valid, 0xFFFFFFFF - (best & 0xFFFFFFFF), -1)
    n_valid = tl.sum(valid.to(tl.int64))
    astar = _lane_value(ids, lane, 0)  # clause 3.3
    mb = _lane_value(lb, lane, 0)

    # ---- clause 2.1 status, clause 4.1 greedy
    tb = tl.load(temp_ptr + row).to(tl.int64) & 0xFFFFFFFF
    t_mag = tb & 0x7FFFFFFF
    bad_t = (t_mag > F32_POS_INF) | (((tb >> 31) == 1) & (t_mag != 0)) | (tb == F32_POS_INF)
    status = tl.where(
        any_nan != 0, 1, tl.where(any_pinf != 0, 2, tl.where(any_live == 0, 3, tl.where(bad_t, 4, 0)))
    )
    greedy = (status == 0) & (t_mag == 0)
    sampled = (status == 0) & (t_mag != 0)

    # ---- clause 5: binary64 arithmetic, rounded to binary32 by the integer routine
    d32 = sub32(lb, mb)
    z32 = div32(d32, (tb & 0) + tau_bits)  # (tau_bits may arrive as a constexpr)
    e32, flagged, found = exp_binary32(z32, tab_z_ptr, tab_e_ptr, tab_n, TAB_ITERS)
    e32 = tl.where(valid, e32, 0)

    # ---- clause 6.1: slots in ascending token ID; padding sorts last and carries +0
    sid = tl.where(valid, ids, (1 << 31) + lane64)
    rank = tl.sum((sid[None, :] < sid[:, None]).to(tl.int32), axis=1)
    perm = rank[:, None] == lane[None, :]
    slot_e = _permute(e32, perm)
    slot_id = _permute(sid, perm)
    slot_valid = lane64 < n_valid

    # ---- clause 6.2: the 5-level binary64 pairwise tree
    ev = widen32to64(slot_e)
    lv1 = _pair_level(ev, 16)
    lv2 = _pair_level(lv1, 8)
    lv3 = _pair_level(lv2, 4)
    lv4 = _pair_level(lv3, 2)
    lv5 = _pair_level(lv4, 1)
    s_bits = tl.sum(lv5.to(tl.int64, bitcast=True))  # one element: exact
    s64 = s_bits.to(tl.float64, bitcast=True)

    # ---- clause 7: p = RN64(e / S), c = floor(p * 2^24), remainder to a*
    p64 = ev / s64
    p_bits = p64.to(tl.int64, bitcast=True)
    counts = tl.where(slot_valid, floor_times_2_24(p_bits), 0)
    rem = TICKETS - tl.sum(counts)
    tickets = counts + tl.where(slot_valid & (slot_id == astar), rem, 0)

    # ---- clause 8.1: support = slots with tickets > 0, ascending ID, padded with (-1, 0)
    sel = slot_valid & (tickets > 0)
    pos = tl.cumsum(sel.to(tl.int32), 0) - 1
    place = sel[:, None] & (pos[:, None] == lane[None, :])
    n_sup = tl.sum(sel.to(tl.int32))
    sup_id = tl.where(lane < n_sup, _permute(slot_id, place), -1)
    sup_t = tl.where(lane < n_sup, _permute(tickets, place), 0)

    # ---- clause 9: Philox only on sampled rows (clauses 2.3, 4.2, 10.3)
    zero_u = (tb & 0).to(tl.uint64)
    k0 = zero_u
    k1 = zero_u
    x0 = zero_u
    x1 = zero_u
    x2 = zero_u
    x3 = zero_u
    if sampled:
        k0, k1, x0, x1, x2, x3 = draw_block(
            tl.load(seed_ptr + row), tl.load(round_ptr + row), tl.load(pos_ptr + row)
        )
    u = (x0 >> 8).to(tl.int64)  # clause 9.4
    incl = tl.cumsum(tickets, 0)
    hit = ((incl - tickets) <= u) & (u < incl)  # clause 9.5: half-open cumulative intervals
    drawn = tl.sum(tl.where(hit, slot_id, 0))

    # ---- outputs (clause 12.1); failed rows get the clause-2.3 values
    failed = status != 0
    token = tl.where(failed, -1, tl.where(greedy, astar, drawn))
    out_ids = tl.where(failed, -1, tl.where(greedy, tl.where(lane == 0, astar, -1), sup_id))
    out_t = tl.where(failed, 0, tl.where(greedy, tl.where(lane == 0, TICKETS, 0), sup_t))
    tl.store(status_ptr + row, status.to(tl.int32))
    tl.store(token_ptr + row, token.to(tl.int32))
    tl.store(ids_ptr + row * 32 + lane, out_ids.to(tl.int32))
    tl.store(tickets_ptr + row * 32 + lane, out_t.to(tl.int32))

    if TRACE:
        tr = trace_ptr + row * TRACE_WORDS
        path = tl.where(failed, 0, tl.where(greedy, 1, 2))
        tl.store(tr + TR_K, n_valid)
        tl.store(tr + TR_ARGMAX, astar)
        tl.store(tr + TR_M, mb)
        tl.store(tr + TR_S, s_bits)
        tl.store(tr + TR_R, rem)
        tl.store(tr + TR_KEY, k0.to(tl.int64))
        tl.store(tr + TR_KEY + 1, k1.to(tl.int64))
        tl.store(tr + TR_BLOCK, x0.to(tl.int64))
        tl.store(tr + TR_BLOCK + 1, x1.to(tl.int64))
        tl.store(tr + TR_BLOCK + 2, x2.to(tl.int64))
        tl.store(tr + TR_BLOCK + 3, x3.to(tl.int64))
        tl.store(tr + TR_U, u)
        tl.store(tr + TR_STATUS, status.to(tl.int64))
        tl.store(tr + TR_PATH, path.to(tl.int64))
        tl.store(tr + TR_FLAGGED, tl.sum((valid & flagged).to(tl.int64)))
        tl.store(tr + TR_MISSED, tl.sum((valid & flagged & (found == 0)).to(tl.int64)))
        tl.store(tr + TR_ORDER + lane, ids)
        tl.store(tr + TR_SLOT_IDS + lane, tl.where(slot_valid, slot_id, -1))
        tl.store(tr + TR_D + lane, _permute(d32, perm))
        tl.store(tr + TR_Z + lane, _permute(z32, perm))
        tl.store(tr + TR_E + lane, slot_e)
        tl.store(tr + TR_P + lane, p_bits)
        tl.store(tr + TR_COUNTS + lane, counts)
        tl.store(tr + TR_TICKETS + lane, tickets)
        tl.store(tr + TR_TREE + tl.arange(0, 16), lv1.to(tl.int64, bitcast=True))
        tl.store(tr + TR_TREE + 16 + tl.arange(0, 8), lv2.to(tl.int64, bitcast=True))
        tl.store(tr + TR_TREE + 24 + tl.arange(0, 4), lv3.to(tl.int64, bitcast=True))
        tl.store(tr + TR_TREE + 28 + tl.arange(0, 2), lv4.to(tl.int64, bitcast=True))
        tl.store(tr + TR_TREE + 30 + tl.arange(0, 1), lv5.to(tl.int64, bitcast=True))

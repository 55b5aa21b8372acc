# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""Kernels of the vocabulary-sharded proposal (clauses 2.1, 3.1, 3.2; the rest via finish_row).

Why sharding is exact: the clause-3.1 order is total (the key of a token is unique within a row), so
the row's top 32 is the top 32 of the union of every shard's top 32, whatever the shard boundaries
and whatever order the shards are gathered in; the clause-2.1 status flags are ORs, which are
order-free as well. A shard therefore only needs to export its 32 best keys (with GLOBAL token IDs
in their low words) and its three flags.

``shard_tile_kernel``: per (row, tile of the local shard): the tile's 32 largest keys (IDs offset by
the shard's first global ID) and flags NaN | +inf << 1 | live << 2, written with caller-given row
strides so that a one-tile shard writes straight into the exchange buffer. ``shard_reduce_kernel``:
per row, the shard's tiles down to one [32 keys, flags] record. ``shard_merge_kernel``: per row, the
gathered records of every rank down to C (clause 3.2) and the flags, then the shared ``finish_row``
(finish_jit: clauses 2.1, 3.3-9) with the candidates' binary32 patterns decoded from the keys.
Integer reductions only, no atomics; each output is written by exactly one program (clause 2.4).
"""

from dyadic24.kernels.backend import select_backend

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from dyadic24.kernels.clause5_hw_jit import tau_reciprocal  # noqa: E402
from dyadic24.kernels.finish_jit import finish_row, key_bits32  # noqa: E402
from dyadic24.kernels.ieee_jit import F32_NEG_INF, F32_POS_INF, KEY_PAD, load_bits32, order_key  # noqa: E402
from dyadic24.kernels.select_jit import top32_extract  # noqa: E402

RECORD = tl.constexpr(33)  # int64 words per row and rank in the exchange: 32 keys, then the flags


@triton.jit(
    do_not_specialize=["V_local", "vocab_offset", "n_tiles", "cand_stride", "flag_base", "flag_stride"]
)
def shard_tile_kernel(
    logits_ptr,
    cand_ptr,
    flags_ptr,
    V_local,
    vocab_offset,
    n_tiles,
    cand_stride,
    flag_base,
    flag_stride,
    TILE: tl.constexpr,
    SRC: tl.constexpr,
):
    """Per (row, tile): the tile's top 32 keys with global IDs (clauses 1.2, 3.1, 3.2; 32 successive
    maxima) at cand_ptr + row * cand_stride + tile * 32, and the clause-2.1 flags (int64) at
    flags_ptr + flag_base + row * flag_stride + tile."""
    pid = tl.program_id(0).to(tl.int64)
    row = pid // n_tiles
    tile = pid % n_tiles
    offs = tile * TILE + tl.arange(0, TILE).to(tl.int64)
    inb = offs < V_local
    b = load_bits32(logits_ptr + row * V_local, offs, inb, SRC)
    nan = inb & ((b & 0x7FFFFFFF) > F32_POS_INF)
    pinf = inb & (b == F32_POS_INF)
    live = inb & (b != F32_NEG_INF)  # anything but -inf
    flags = tl.max(nan.to(tl.int64)) | (tl.max(pinf.to(tl.int64)) << 1) | (tl.max(live.to(tl.int64)) << 2)
    key = tl.where(inb, order_key(b, offs + vocab_offset), KEY_PAD)
    top = top32_extract(key)
    tl.store(cand_ptr + row * cand_stride + tile * 32 + tl.arange(0, 32), top)
    tl.store(flags_ptr + flag_base + row * flag_stride + tile, flags)


@triton.jit(do_not_specialize=["n_tiles"])
def shard_reduce_kernel(
    cand_ptr,
    flags_ptr,
    send_ptr,
    n_tiles,
    CHUNK: tl.constexpr,
    FCHUNK: tl.constexpr,
):
    """Per row: the shard's top 32 over its tiles (clause 3.2) and the OR of their flags (clause 2.1),
    as one exchange record (send[row, 0:32] keys in clause-3.1 order, send[row, 32] flags)."""
    row = tl.program_id(0).to(tl.int64)
    # (while loops, not range(): the interpreter cannot take a runtime range bound under numpy >= 2.3)
    acc = tl.zeros([FCHUNK], tl.int64)
    fstart = row * 0
    while fstart < n_tiles:
        o = fstart + tl.arange(0, FCHUNK).to(tl.int64)
        acc = acc | tl.load(flags_ptr + row * n_tiles + o, mask=o < n_tiles, other=0)
        fstart += FCHUNK
    flags = tl.max(acc & 1) | tl.max(acc & 2) | tl.max(acc & 4)

    n_cand = n_tiles * 32
    o = tl.arange(0, CHUNK).to(tl.int64)
    best = top32_extract(tl.load(cand_ptr + row * n_cand + o, mask=o < n_cand, other=KEY_PAD))
    cstart = row * 0 + CHUNK
    while cstart < n_cand:
        o = cstart + tl.arange(0, CHUNK).to(tl.int64)
        top = top32_extract(tl.load(cand_ptr + row * n_cand + o, mask=o < n_cand, other=KEY_PAD))
        best = top32_extract(tl.reshape(tl.join(best, top), [64]))
        cstart += CHUNK
    tl.store(send_ptr + row * RECORD + tl.arange(0, 32), best)
    tl.store(send_ptr + row * RECORD + 32, flags)


@triton.jit(do_not_specialize=["batch", "world", "tau_bits", "tab_n"])
def shard_merge_kernel(
    gath_ptr,
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
    batch,
    world,
    tau_bits,
    tab_n,
    WBLOCK: tl.constexpr,
    TAB_ITERS: tl.constexpr,
):
    """Per row: C (clause 3.2) and the flags (clause 2.1) from the gathered records gath[world, batch,
    33], then finish_jit.finish_row (clauses 2.1, 3.3, 4.1, 5-9, 12.1; no trace).

    Every rank runs this on the same gathered bytes with the same per-row inputs, so every rank
    writes the same outputs (no broadcast of the result is needed).
    """
    row = tl.program_id(0).to(tl.int64)
    rtau = tau_reciprocal(tau_bits)  # (first: its division's slow path off the finish's chain)
    lane = tl.arange(0, 32).to(tl.int64)
    wl = tl.arange(0, WBLOCK).to(tl.int64)

    w = wl
    base = (w * batch + row) * RECORD
    wm = w < world
    keys = tl.load(gath_ptr + base[:, None] + lane[None, :], mask=wm[:, None], other=KEY_PAD)
    acc = tl.load(gath_ptr + base + 32, mask=wm, other=0)
    best = top32_extract(tl.reshape(keys, [WBLOCK * 32]))
    w0 = row * 0 + WBLOCK
    while w0 < world:
        w = w0 + wl
        base = (w * batch + row) * RECORD
        wm = w < world
        keys = tl.load(gath_ptr + base[:, None] + lane[None, :], mask=wm[:, None], other=KEY_PAD)
        acc = acc | tl.load(gath_ptr + base + 32, mask=wm, other=0)
        top = top32_extract(tl.reshape(keys, [WBLOCK * 32]))
        best = top32_extract(tl.reshape(tl.join(best, top), [64]))
        w0 += WBLOCK
    any_nan = tl.max(acc & 1)
    any_pinf = tl.max(acc & 2)
    any_live = tl.max(acc & 4)

    # The logits live on other ranks: decode the candidates' binary32 patterns from their keys. The
    # key canonicalised -0 to +0, so a -0 logit comes back as +0. No output bit can change: the
    # decoded value is IEEE-equal to the original, hence so is m; d = RN32(l - m) can only differ in
    # the sign of a zero (l = m = +-0), z = RN32(d / tau) then too, and exp(-0) = exp(+0) = 1, so every
    # e_i, S, p_i, count and ticket is the same (clauses 5-7). Only a trace would show the sign of
    # such a zero d or z (and of m), which is why the sharded path offers no trace.
    lb = key_bits32(best)
    flags = any_nan, any_pinf, any_live
    inputs = (temp_ptr, seed_ptr, round_ptr, pos_ptr)  # (the tuples of finish_jit's module comment)
    table = (tab_z_ptr, tab_e_ptr, tab_n)
    outs = (status_ptr, token_ptr, ids_ptr, tickets_ptr)
    finish_row(row, best, lb, flags, inputs, table, outs, tau_bits, rtau, TAB_ITERS)

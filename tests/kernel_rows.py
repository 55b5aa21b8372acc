"""Rows, calls and launch plans shared by the kernel's selection tests (test_kernel_select*.py).

Each row kind forces one path of the tile and merge stages (clauses 2.1, 3.1-3.3, 4.1); each plan
forces one selection path or launch form. Every plan must give the fast reference's bits.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from dyadic24.api import Proposal
from dyadic24.kernels import fuzz
from dyadic24.kernels.gpu_check import Inputs, row_diffs
from dyadic24.kernels.propose import Plan, kernel_device, propose

DEVICE = kernel_device()
DEEP = os.environ.get("DYADIC24_DEEP", "") not in ("", "0")
F32 = np.float32


def make_row(kind: str, vocab: int, rng: np.random.Generator) -> np.ndarray[Any, np.dtype[np.float32]]:
    idx = np.arange(vocab)
    if kind == "ramp":  # every tile's values above the previous tile's: merge bound is weak
        return (idx * 1e-3).astype(F32)
    if kind == "descending":
        return (-idx * 1e-3).astype(F32)
    if kind == "groups":  # most strided groups of a tile hold only tiny values: tile bound is weak
        row = rng.standard_normal(vocab).astype(F32)
        row[(idx % 128) < 97] = F32(-1e30)
        return row
    if kind == "uniform":  # clause 3.1: all tie, the lowest IDs win
        return np.full(vocab, F32(1.5))
    if kind == "zeros":  # -0 == +0 (clause 3.1)
        return np.where(rng.random(vocab) < 0.5, F32(-0.0), F32(0.0)).astype(F32)
    if kind == "two_values":
        return rng.choice(np.array([1.0, 2.0], dtype=F32), vocab)
    if kind == "sparse":  # C holds -inf tokens (clause 3.2)
        row = np.full(vocab, -np.inf, dtype=F32)
        row[rng.choice(vocab, min(vocab, 5), replace=False)] = rng.standard_normal(min(vocab, 5)).astype(F32)
        return row
    if kind == "one_live":
        row = np.full(vocab, -np.inf, dtype=F32)
        row[vocab - 1] = F32(-3.0)
        return row
    if kind == "top_heavy":  # the 40 largest values all in the first tile
        row = rng.standard_normal(vocab).astype(F32)
        row[: min(vocab, 40)] += F32(100)
        return row
    if kind == "tail_heavy":  # the 40 largest values all in the last tile
        row = rng.standard_normal(vocab).astype(F32)
        row[max(0, vocab - 40) :] += F32(100)
        return row
    if kind == "two_heavy":  # 20 large values in the first tile and 20 in the last: two hot tiles
        row = rng.standard_normal(vocab).astype(F32)
        row[: min(vocab, 20)] += F32(100)
        row[max(0, vocab - 20) :] += F32(100)
        return row
    if kind == "pair_hot":  # 5 large values in each of blocks 0 and 8 of 1024, 4 medium in blocks 1-7
        row = rng.standard_normal(vocab).astype(F32)
        for block, n, lift in [(0, 5, 100), (8, 5, 100)] + [(b, 4, 50) for b in range(1, 8)]:
            row[block * 1024 : min(vocab, block * 1024 + n)] += F32(lift)
        return row
    if kind == "quad_hot":  # 3 large values in each of blocks 0, 4 and 8 of 1024, 4 medium in the
        # others: with 9 tiles of 1024 the quad of tiles (0, 4, 8) keeps 8 of its 9 large values and no
        # pair is hot, so only the quads' check finds the one dropped (_fold_quads)
        row = rng.standard_normal(vocab).astype(F32)
        for block, n, lift in [(0, 3, 100), (4, 3, 100), (8, 3, 100)] + [
            (b, 4, 50) for b in (1, 2, 3, 5, 6, 7)
        ]:
            row[block * 1024 : min(vocab, block * 1024 + n)] += F32(lift)
        return row
    if kind == "warp_heavy":  # large values in warp 0's columns of a 4-warp column-group tile (and in
        # warps 0 and 4 of an 8-warp one): the per-warp bound admits > 1000, the exact bound <= 128
        row = rng.standard_normal(vocab).astype(F32)
        row[(idx % 4096) % 512 < 128] += F32(100)
        return row
    if kind == "column_block":  # 256 large values in 8 thread groups: the column-group tile overflows
        row = rng.standard_normal(vocab).astype(F32)
        row[(idx % 512) < 32] += F32(100)
        return row
    if kind == "tie_pairs":  # 2 ties per thread group (binary32 layout), none above: phi takes exactly 32
        row = np.full(vocab, F32(-1e30))
        row[((idx % 4096) >= 3072) & (idx % 4 == 3)] = F32(5.0)
        return row
    if kind == "half_ties":  # tie_pairs' ties in the second half of every 8192 elements only: a two-half
        # column-group tile (tile 8192) finds every column's lowest tie in its second-half mask
        row = np.full(vocab, F32(-1e30))
        row[((idx % 8192) >= 7168) & (idx % 4 == 3)] = F32(5.0)
        return row
    if kind == "neg_nan":  # the NaN with the smallest value key (clause 2.1)
        row = rng.standard_normal(vocab).astype(F32)
        row[vocab // 2] = np.uint32(0xFFFFFFFF).view(F32)
        return row
    if kind == "pos_inf_tail":
        row = rng.standard_normal(vocab).astype(F32)
        row[vocab - 1] = F32(np.inf)
        return row
    return (rng.standard_normal(vocab) * 4).astype(F32)


KINDS = ("normal", "ramp", "descending", "groups", "uniform", "zeros", "two_values", "sparse", "one_live",
         "top_heavy", "tail_heavy", "two_heavy", "pair_hot", "quad_hot", "warp_heavy", "column_block",
         "tie_pairs", "half_ties", "neg_nan", "pos_inf_tail")  # fmt: skip


# The kinds that also run as greedy rows (clause 4.1; greedy rows take the tiles' argmax only): in
# the deep profile every kind; by default those whose argmax is not a lone Gaussian maximum (ties
# across the row and within a column group, -0, the first and the last ID, -inf around it, the
# statuses), which keeps the kernel tests' default run within CI's budget (README).
GREEDY_KINDS = KINDS if DEEP else (
    "ramp", "descending", "uniform", "zeros", "two_values", "sparse", "one_live", "tie_pairs", "half_ties",
    "neg_nan", "pos_inf_tail",
)  # fmt: skip


def make_call(vocab: int, seed: int, dtype: str = "float32") -> fuzz.Call:
    """Every kind sampled, then GREEDY_KINDS greedy (the second of them with T = -0)."""
    rng = np.random.default_rng(seed)
    kinds = KINDS + GREEDY_KINDS
    rows = len(kinds)
    base = fuzz.make_call(rng, rows, vocab, dtype, [], families=("normal",) * rows)
    logits = np.stack([make_row(kind, vocab, rng) for kind in kinds])
    if dtype != "float32":
        logits = fuzz._round_to(logits, dtype)
    temperature = base.temperature.copy()
    temperature[len(KINDS) :] = F32(0.0)
    temperature[len(KINDS) + 1] = F32(-0.0)
    return replace(base, logits=logits, temperature=temperature, families=kinds)


PLANS: dict[str, dict[str, Any]] = {
    "default": {},
    "fused": {"fused": True},
    "split_finish": {"split_finish": True, "finish_warps": 1},
    "early_draw": {"early_draw": True, "fused": True},
    "small_tiles": {"tile": 64, "chunk": 64, "pool": 32},
    "tiny_tiles": {"tile": 32, "chunk": 32, "groups": 32},
    "group32": {"tile": 1024, "groups": 32, "cap": 64},
    "no_greedy_fast": {"greedy_fast": False, "tile": 1024},
    "extraction": {"threshold": False, "tile": 1024, "chunk": 1024},
    # the strided-group tile and the full threshold merge alone (the fallbacks of the defaults)
    "prev_tile": {"fast_tile": False, "merge_pool": 0},
    # 9 tiles, 4 pooled keys each: top_heavy's 40 largest lie in tile 0, tail_heavy's in tile 8 (the
    # last, partly past V) and two_heavy's in both, so the pool check fails (_pool_refine)
    "pool_small": {"tile": 1024, "merge_pool": 64},
    # 9 tiles, 8 pooled keys each, paired (t, t + 8): pair_hot's pair (0, 8) keeps 8 of its 10 large
    # values and no tile is hot, so only the pairs' check finds the 2 dropped (_merge_pool_pairs); the
    # same pool in quads (t, t + 4, t + 8, t + 12; pool_quads), where quad_hot's quad (0, 4, 8) keeps 8
    # of its 9 large values and only the quads' check finds the one dropped; and unpaired (_merge_pool)
    "pool_pair": {"tile": 1024, "merge_pool": 128},
    "pool_quads": {"tile": 1024, "merge_pool": 128, "pool_quads": True},
    "pool_unpaired": {"tile": 1024, "merge_pool": 64, "pair_pool": False},
    # the two-launch merge that waits for the tile grid (untagged; the default merge polls)
    "two_launch_waits": {"fused": False, "poll": False},
    # the GPU's ordering (Triton's bitonic top-k; the interpreter's default plan ranks by counts): the
    # default plan (its paired pool included), the fused form with pool_small's pool
    "bitonic": {"by_count": False},
    "bitonic_fused_pool": {"by_count": False, "fused": True, "tile": 1024, "merge_pool": 64},
    # the column-group tile's per-warp bound (GPU ordering), and a compaction too small for column_block
    "warp_bound": {"by_count": False, "warp_bound": True, "bound_retry": True},
    # 8-warp programs (GPU ordering; WIDE_WARPS, a plan option since session 6)
    "wide": {"by_count": False, "num_warps": 8, "fused": True},
    "fcap64": {"fcap": 64, "fused": True},
    # tiles of 8192 with 4 warps: the column-group tile in two halves of 4096 (64 elements per thread,
    # two selection masks each), the count ordering and the GPU's (bitonic, per-warp bound)
    "halves": {"tile": 8192},
    "halves_bitonic": {"tile": 8192, "by_count": False},
    "halves_fused": {"tile": 8192, "fused": True},  # (the fused form's last program merges big tiles)
    # the fused form's tagged arrival with pool_pair's pool (pair_hot reloads tagged lists); the same
    # with the merge's first look at the pool's keys and the hot lists stale, or at the flags (its
    # reload loops must run: taken as they are, the keys name other IDs and the flags a NaN); the
    # untagged arrival
    "tagged_pairs": {"tile": 1024, "merge_pool": 128, "fused": True},
    "tagged_stale_keys": {"tile": 1024, "merge_pool": 128, "fused": True, "stale_first": 5},
    "tagged_stale_flags": {"tile": 1024, "merge_pool": 128, "fused": True, "stale_first": 2},
    "untagged_fused": {"fused": True, "tagged": False},
    # the default two-launch form, whose merge polls the tile programs' tagged words (poll; on the GPU
    # a programmatic dependent launch; pool_pair's plan), with its first looks stale at the pool's
    # keys, the hot lists and the flags
    "poll_stale": {"tile": 1024, "merge_pool": 128, "poll": True, "stale_first": 7},
}


ALL_VOCABS = (1, 7, 33, 4097, 9000)
SMALL = {"small_tiles", "tiny_tiles"}  # many programs: slow under the interpreter
LARGE_ONLY = {
    "prev_tile", "pool_small", "pool_pair", "pool_quads", "pool_unpaired", "two_launch_waits", "bitonic",
    "bitonic_fused_pool", "warp_bound", "wide", "fcap64", "tagged_pairs", "tagged_stale_keys",
    "tagged_stale_flags", "untagged_fused", "poll_stale", "halves_bitonic", "halves_fused",
}  # (several tiles)  # fmt: skip
# Triton's bitonic top-k is slow under the interpreter: the GPU-ordering plans run V = 9000 by
# default (a partial last tile, every row kind) and V = 4097 as well in the deep profile; so do the
# tagged variants. The options no default plan takes on the GPU (the fused form with GPU ordering and
# pool_small's pool, 8-warp tile programs) run in the deep profile only. Every other plan but the
# default and halves runs V = 7 and 4097 in the deep profile only (its other V give it a single
# partial tile and several tiles with a partial last one; CI's budget, README).
DEEP_ONLY = {
    ("bitonic", 4097), ("bitonic_fused_pool", 4097), ("bitonic_fused_pool", 9000), ("pool_pair", 4097),
    ("wide", 4097), ("wide", 9000), ("warp_bound", 4097), ("pool_quads", 4097), ("tagged_pairs", 4097),
    ("tagged_stale_keys", 4097), ("tagged_stale_flags", 4097), ("untagged_fused", 4097), ("poll_stale", 4097),
    ("halves_bitonic", 4097),
} | {
    (p, v) for p in PLANS for v in (7, 4097) if p not in ("default", "halves") and p not in SMALL
}  # fmt: skip


def vocab_cases(names: list[str]) -> list[Any]:
    """(plan, V) parameters of the named plans: deep-only pairs marked and skipped by default."""
    return [
        pytest.param(
            p, v,
            marks=[pytest.mark.deep, pytest.mark.skipif(not DEEP, reason="deep profile (DYADIC24_DEEP=1)")]
            if (p, v) in DEEP_ONLY else [],
        )
        for p in names
        for v in ((1, 33, 1100) if p in SMALL else (4097, 9000) if p in LARGE_ONLY else ALL_VOCABS)
    ]  # fmt: skip


def check_plan(plan_name: str, vocab: int, dtype: str = "float32") -> None:
    """The plan's outputs on make_call's rows (logits of ``dtype``) equal the fast reference's, row by row."""
    call = make_call(vocab, vocab * 31 + len(plan_name), dtype)
    inp = Inputs(call, DEVICE)
    plan = Plan.for_shape(len(call.logits), vocab, **PLANS[plan_name])
    out = propose(inp.logits, inp.temperature, inp.seed, inp.round, inp.position, tau=call.tau, plan=plan)
    got = [t.cpu().numpy() for t in out]
    diffs = row_diffs(Proposal(status=got[0], token=got[1], ids=got[2], tickets=got[3]), inp.reference())
    assert not diffs, diffs[:3]

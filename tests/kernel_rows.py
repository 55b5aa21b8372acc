"""Rows, calls and launch plans shared by the kernel's selection tests (test_kernel_select*.py).

Each row kind forces one path of the tile and merge stages (clauses 2.1, 3.1-3.3, 4.1); each plan
forces selection paths by its tile size and the backend's choices. Every plan must give the fast
reference's bits.
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
    if kind == "masked":  # guided decoding: 1 token in 1,000 kept, the rest -inf, so each tile holds
        # fewer than 32 finite logits and ties at theta = -inf fill its first rows (phi bounds them)
        row = np.full(vocab, -np.inf, dtype=F32)
        keep = rng.random(vocab) < 1e-3
        row[keep] = rng.standard_normal(int(keep.sum())).astype(F32)
        return row
    if kind == "masked_head":  # masked, and one token kept in each block of 4,096 among its first 32
        # elements: no tile's first 32 elements all tie, so phi comes from the column groups' ties
        row = make_row("masked", vocab, rng)
        row[3::4096] = rng.standard_normal(row[3::4096].size).astype(F32)
        return row
    if kind == "plateau_dip":  # one value below a plateau in each block of 4,096, among its first 32
        # elements: theta is the plateau, 31 of a tile's first 32 elements tie and none lies above
        row = np.full(vocab, F32(1.5))
        row[3::4096] = F32(0.5)
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
    if kind == "pair_hot":  # 9 large values in each of blocks 0 and 16 of 64, 3 medium in blocks 1-7: at
        # tiles of 64 and V = 1,100 (18 tiles, 16 pooled keys each, tile t paired with t + 16) the pair
        # (0, 16) keeps 16 of its 18 large values while neither tile alone is hot, so only the pairs'
        # check finds the 2 dropped (merge_jit._merge_pool_pairs)
        row = rng.standard_normal(vocab).astype(F32)
        for block, n, lift in [(0, 9, 100), (16, 9, 100)] + [(b, 3, 50) for b in range(1, 8)]:
            row[block * 64 : min(vocab, block * 64 + n)] += F32(lift)
        return row
    if kind == "warp_heavy":  # large values in warp 0's columns of a column-group tile of 4,096: the
        # GPU's per-warp bound admits > 1000 (more than FCAP: the tile falls back to _parts_fallback)
        row = rng.standard_normal(vocab).astype(F32)
        row[(idx % 4096) % 512 < 128] += F32(100)
        return row
    if kind == "column_block":  # 256 large values in 8 thread groups: the column-group tile overflows
        row = rng.standard_normal(vocab).astype(F32)
        row[(idx % 512) < 32] += F32(100)
        return row
    if kind == "part_crowded":  # large values in strided groups 0-15 of every 1,024 elements: the
        # column-group tile overflows, and each part of its fallback has more than CAP above its bound
        # (32 successive maxima, tile_jit._part_ranked)
        row = rng.standard_normal(vocab).astype(F32)
        row[(idx % 128) < 16] += F32(100)
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
    if kind == "third_ties":  # the same ties in the third part of every 12,288 elements only: a three-part
        # tile (kp.TILE_3) finds every column's lowest tie in its third mask
        row = np.full(vocab, F32(-1e30))
        row[((idx % 12288) >= 11264) & (idx % 4 == 3)] = F32(5.0)
        return row
    if kind == "neg_nan":  # the NaN with the smallest value key (clause 2.1)
        row = rng.standard_normal(vocab).astype(F32)
        row[vocab // 2] = np.uint32(0xFFFFFFFF).view(F32)
        return row
    if kind == "f16_subnormal_top":  # the 32 largest of the 1,023 positive binary16 subnormals lead
        row = (-1 - np.abs(rng.standard_normal(vocab))).astype(F32)
        n = min(vocab, 1023)
        row[rng.choice(vocab, n, replace=False)] = np.arange(1024 - n, 1024, dtype=F32) * F32(2.0**-24)
        return row
    if kind == "f16_subnormal_neg":  # -0 and +0 tie on top, negative binary16 subnormals below them
        row = np.full(vocab, F32(-65504.0))
        at = rng.choice(vocab, min(vocab, 240), replace=False)
        row[at[:40]] = np.where(np.arange(min(40, at.size)) % 2 == 0, F32(-0.0), F32(0.0))
        row[at[40:]] = -np.arange(1, at.size - 39, dtype=F32) * F32(2.0**-24)
        return row
    if kind == "f16_subnormal_max":  # a subnormal argmax among -inf, one ulp above its nearest rival
        row = np.full(vocab, -np.inf, dtype=F32)
        n = min(vocab, 50)
        row[rng.choice(vocab, n, replace=False)] = np.arange(1, n + 1, dtype=F32) * F32(2.0**-24)
        return row
    if kind == "quarter_ties":  # tie_pairs' ties in the last part of every 16,384 only: the 16-bit tile
        # of 16,384 (four parts) finds every column's lowest tie in its fourth mask, and phi bounds them
        row = np.full(vocab, F32(-1e30))
        row[((idx % 16384) >= 15360) & (idx % 4 == 3)] = F32(5.0)
        return row
    if kind == "part_straddle":  # 20 values above the 32nd in the last 1,024 IDs of tiles of 16,384, 600
        # ties at it spread over every part: the lowest-ID ties, found across parts, complete C (phi)
        row = np.full(vocab, F32(-1e30))
        ties = rng.choice(vocab, min(vocab, 600), replace=False)
        row[ties] = F32(5.0)
        top = (idx % 16384) >= 15360
        row[rng.choice(np.flatnonzero(top), min(20, int(top.sum())), replace=False)] = F32(10.0)
        return row
    if kind == "bf16_subnormal_max":  # a bfloat16-subnormal argmax among -inf, one ulp above its rival
        row = np.full(vocab, -np.inf, dtype=F32)
        n = min(vocab, 50)
        row[rng.choice(vocab, n, replace=False)] = np.arange(1, n + 1, dtype=F32) * F32(2.0**-133)
        return row
    if kind == "bf16_subnormal_mix":  # bfloat16 subnormals of both signs around -0 and +0, which tie
        row = np.full(vocab, F32(-1.0))
        at = rng.choice(vocab, min(vocab, 300), replace=False)
        vals = np.arange(-127, 128, dtype=F32) * F32(2.0**-133)  # (k = 0 gives +0)
        row[at] = np.resize(np.concatenate([vals, np.array([-0.0] * 45, dtype=F32)]), at.size)
        return row
    if kind == "pos_inf_tail":
        row = rng.standard_normal(vocab).astype(F32)
        row[vocab - 1] = F32(np.inf)
        return row
    return (rng.standard_normal(vocab) * 4).astype(F32)


KINDS = ("normal", "ramp", "descending", "groups", "uniform", "zeros", "two_values", "sparse", "masked",
         "masked_head", "plateau_dip", "one_live", "top_heavy", "tail_heavy", "two_heavy", "pair_hot",
         "warp_heavy", "column_block", "part_crowded", "tie_pairs", "half_ties", "neg_nan",
         "pos_inf_tail")  # fmt: skip
# The 16-bit tile's own edges (tile16_jit: ties in and across its four parts, bfloat16 subnormals;
# binary16 subnormals: the f16_* kinds, which bfloat16 holds as normal values)
EDGES16 = ("quarter_ties", "part_straddle", "bf16_subnormal_max", "bf16_subnormal_mix")
F16_EDGES = ("f16_subnormal_top", "f16_subnormal_neg", "f16_subnormal_max")


def kinds16(dtype: str) -> tuple[str, ...]:
    """Every row kind of a 16-bit format: KINDS, EDGES16 and, for binary16, F16_EDGES."""
    return KINDS + EDGES16 + (F16_EDGES if dtype == "float16" else ())


# The kinds that also run as greedy rows (clause 4.1; greedy rows take the tiles' argmax only): in
# the deep profile every kind; by default those whose argmax is not a lone Gaussian maximum (ties
# across the row and within a column group, -0, the first and the last ID, -inf around it, the
# statuses), which keeps the kernel tests' default run within CI's budget (README).
GREEDY_KINDS = KINDS if DEEP else (
    "ramp", "descending", "uniform", "zeros", "two_values", "sparse", "one_live", "tie_pairs", "half_ties",
    "neg_nan", "pos_inf_tail",
)  # fmt: skip


def make_call(
    vocab: int, seed: int, dtype: str = "float32", kinds: tuple[str, ...] = KINDS,
    greedy: tuple[str, ...] = GREEDY_KINDS,
) -> fuzz.Call:  # fmt: skip
    """Rows of ``kinds`` sampled, then rows of ``greedy`` greedy (the second of them with T = -0)."""
    rng = np.random.default_rng(seed)
    rows = len(kinds) + len(greedy)
    base = fuzz.make_call(rng, rows, vocab, dtype, [], families=("normal",) * rows)
    logits = np.stack([make_row(kind, vocab, rng) for kind in kinds + greedy])
    if dtype != "float32":
        logits = fuzz._round_to(logits, dtype)
    temperature = base.temperature.copy()
    temperature[len(kinds) :] = F32(0.0)
    if len(greedy) > 1:
        temperature[len(kinds) + 1] = F32(-0.0)
    return replace(base, logits=logits, temperature=temperature, families=kinds + greedy)


# Each plan forces paths of the two stages under the interpreter: a tile size (Plan.for_shape) and
# the backend's choices replaced (the GPU's ordering, by_count=False; the GPU's polling merge,
# poll=True). Tiles of 1,024 to 8,192 and of 12,288 take the column-group selection
# (tile_jit._tile_fast; 8,192, the default tile, in two parts; 12,288, kp.TILE_3, in three parts;
# 4,096 and less in one), smaller ones the strided-group one
# (_tile_part; tiles of 32 its 32-group bound). The merge's pool follows the number of tiles: one
# tile (its list is C), then a paired pool of 32 keys per tile up to 16 tiles, of 16 and 8 keys up
# to 32 and 64 tiles: small_tiles and tiny_tiles at V = 1,100 take 18 and 35 tiles, where pair_hot,
# top_heavy, tail_heavy and two_heavy make hot pairs.
# Past 128 tiles the threshold merge: test_kernel_select.py's test_threshold_merge_and_its_fallback.
PLANS: dict[str, dict[str, Any]] = {
    "one_part": {"tile": 4096},
    # the GPU's merge: it polls the tile programs' tagged words (2 and 3 tiles: pools of 2 and 4)
    "poll": {"tile": 4096, "poll": True},
    "two_parts": {"tile": 8192},  # (the default tile)
    "three_parts": {"tile": 12288},  # (three parts: kp.TILE_3)
    # 16-bit logits take the 16-bit tile (tile16_jit) in power-of-two tiles of 1,024 to 16,384: of
    # 16,384 in four parts, with the GPU's ordering and its polling merge too (in the others, TILE_3
    # and tiles below 1,024, the binary32 tile on their widening)
    "four_parts": {"tile": 16384},
    "four_parts_bitonic": {"tile": 16384, "by_count": False},
    "four_parts_poll": {"tile": 16384, "poll": True},  # (the polling merge's words)
    "small_tiles": {"tile": 64},
    # the hot pairs' lists reloaded tagged (merge_jit._tagged_lists)
    "small_tiles_poll": {"tile": 64, "poll": True},
    "tiny_tiles": {"tile": 32},
    # the GPU's ordering (Triton's bitonic top-k and sort; the column-group tile's per-warp bound, whose
    # fallback warp_heavy and column_block reach) in one, two and three parts and in the pairs
    "bitonic": {"tile": 4096, "by_count": False},
    "two_parts_bitonic": {"tile": 8192, "by_count": False},
    "three_parts_bitonic": {"tile": 12288, "by_count": False},
    # (each pair's run of 16 sorted by one merge and C left unsorted, as on the GPU)
    "bitonic_pairs": {"tile": 64, "by_count": False, "poll": True},
}

VOCABS: dict[str, tuple[int, ...]] = {
    "one_part": (1, 7, 33, 4097, 9000),
    "two_parts": (1, 7, 33, 4097, 9000),
    "three_parts": (33, 9000, 30000),
    "four_parts": (33, 9001, 40000),
    "four_parts_bitonic": (9001,),
    "four_parts_poll": (40000,),
    "poll": (4097, 9000),
    "small_tiles": (1, 33, 1100),
    "small_tiles_poll": (1100,),
    "tiny_tiles": (1, 33, 1100),
    "bitonic": (4097, 9000),
    "two_parts_bitonic": (9000,),
    "three_parts_bitonic": (9000,),
    "bitonic_pairs": (1100,),
}
# Triton's bitonic networks are slow under the interpreter: these run in the deep profile only (every
# path is still reached by default; CI's budget, README).
DEEP_ONLY = {("one_part", 7), ("two_parts", 7), ("poll", 4097), ("bitonic", 4097)}


def plan_for(name: str, batch: int, vocab: int) -> Plan:
    """The named plan for [batch, vocab]."""
    opts = dict(PLANS[name])
    tile = opts.pop("tile", None)
    return replace(Plan.for_shape(batch, vocab, tile), **opts)


def vocab_cases(names: list[str]) -> list[Any]:
    """(plan, V) parameters of the named plans: deep-only pairs marked and skipped by default."""
    return [
        pytest.param(
            p, v,
            marks=[pytest.mark.deep, pytest.mark.skipif(not DEEP, reason="deep profile (DYADIC24_DEEP=1)")]
            if (p, v) in DEEP_ONLY else [],
        )
        for p in names
        for v in VOCABS[p]
    ]  # fmt: skip


def check_plan(plan_name: str, vocab: int, dtype: str = "float32", **rows: tuple[str, ...]) -> None:
    """The plan's outputs on make_call's rows (logits of ``dtype``; ``rows``: make_call's kinds and
    greedy) equal the fast reference's, row by row."""
    call = make_call(vocab, vocab * 31 + len(plan_name), dtype, **rows)
    inp = Inputs(call, DEVICE)
    plan = plan_for(plan_name, len(call.logits), vocab)
    out = propose(inp.logits, inp.temperature, inp.seed, inp.round, inp.position, tau=call.tau, plan=plan)
    got = [t.cpu().numpy() for t in out]
    diffs = row_diffs(Proposal(status=got[0], token=got[1], ids=got[2], tickets=got[3]), inp.reference())
    assert not diffs, diffs[:3]

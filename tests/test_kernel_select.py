"""The kernel's selection paths give the reference's bits (clauses 2.1, 3.1-3.3, 4.1).

The tile and merge stages bound the 32nd value by a threshold and compact what lies above it; ties
at the threshold, more candidates than the compaction slots (the extraction path), the one-launch
(last program merges) and two-launch forms and the greedy argmax-only branch are each forced here
by constructed rows and launch plans. Every plan must give the same bits as the fast reference.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from dyadic24.kernels.backend import select_backend  # noqa: E402

select_backend()

from dyadic24.kernels import fuzz  # noqa: E402
from dyadic24.kernels.exp_table import TABLE_PATH  # noqa: E402
from dyadic24.kernels.gpu_check import Inputs, row_diffs  # noqa: E402
from dyadic24.kernels.propose import TRACE_WORDS, Plan, kernel_device, make_workspace, propose  # noqa: E402
from dyadic24.kernels.trace import decode  # noqa: E402

DEVICE = kernel_device()
pytestmark = pytest.mark.skipif(not TABLE_PATH.is_file(), reason="exp_near_midpoints.json not generated yet")

F32 = np.float32


def _row(kind: str, vocab: int, rng: np.random.Generator) -> np.ndarray[Any, np.dtype[np.float32]]:
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
         "tie_pairs", "neg_nan", "pos_inf_tail")  # fmt: skip


def _call(vocab: int, seed: int, dtype: str = "float32") -> fuzz.Call:
    rng = np.random.default_rng(seed)
    rows = len(KINDS) * 2
    base = fuzz.make_call(rng, rows, vocab, dtype, [], families=("normal",) * rows)
    logits = np.stack([_row(KINDS[r % len(KINDS)], vocab, rng) for r in range(rows)])
    if dtype != "float32":
        logits = fuzz._round_to(logits, dtype)
    temperature = base.temperature.copy()
    temperature[len(KINDS) :] = F32(0.0)  # the second copy of every kind is greedy (clause 4.1)
    temperature[len(KINDS) + 1] = F32(-0.0)
    return replace(base, logits=logits, temperature=temperature, families=KINDS * 2)


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
    "pool_pair": {"tile": 1024, "merge_pool": 128, "by_count": False},
    "pool_quads": {"tile": 1024, "merge_pool": 128, "pool_quads": True},
    "pool_unpaired": {"tile": 1024, "merge_pool": 64, "pair_pool": False},
    # the two-launch merge that waits for the tile grid (untagged; the default merge polls)
    "two_launch_waits": {"fused": False, "poll": False},
    # the GPU's ordering (Triton's bitonic top-k); the interpreter's default plan ranks by counts
    "bitonic": {"by_count": False},
    "bitonic_fused_pool": {"by_count": False, "fused": True, "tile": 1024, "merge_pool": 64},
    # the column-group tile's per-warp bound (GPU ordering), and a compaction too small for column_block
    "warp_bound": {"by_count": False, "warp_bound": True, "bound_retry": True},
    # 8-warp programs (GPU ordering; WIDE_WARPS, a plan option since session 6)
    "wide": {"by_count": False, "num_warps": 8, "fused": True},
    "fcap64": {"fcap": 64, "fused": True},
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


SMALL = {"small_tiles", "tiny_tiles"}  # many programs: slow under the interpreter
LARGE_ONLY = {
    "prev_tile",
    "pool_small",
    "pool_pair",
    "pool_quads",
    "pool_unpaired",
    "two_launch_waits",
    "bitonic",
    "bitonic_fused_pool",
    "warp_bound",
    "wide",
    "fcap64",
    "tagged_pairs",
    "tagged_stale_keys",
    "tagged_stale_flags",
    "untagged_fused",
    "poll_stale",
}  # (several tiles)
DEEP = os.environ.get("DYADIC24_DEEP", "") not in ("", "0")
# Triton's bitonic top-k is slow under the interpreter: the GPU-ordering plans run V = 9000 by
# default (a partial last tile, every row kind) and V = 4097 as well in the deep profile; so do the
# tagged-arrival variants (the default fused plan is tagged at every V)
DEEP_ONLY = {("bitonic", 4097), ("bitonic_fused_pool", 4097), ("pool_pair", 4097), ("wide", 4097),
             ("warp_bound", 4097), ("pool_quads", 4097), ("tagged_pairs", 4097), ("tagged_stale_keys", 4097),
             ("tagged_stale_flags", 4097), ("untagged_fused", 4097), ("poll_stale", 4097)}  # fmt: skip
CASES = [
    pytest.param(
        p, v,
        marks=[pytest.mark.deep, pytest.mark.skipif(not DEEP, reason="deep profile (DYADIC24_DEEP=1)")]
        if (p, v) in DEEP_ONLY else [],
    )
    for p in PLANS
    for v in ((1, 33, 1100) if p in SMALL else (4097, 9000) if p in LARGE_ONLY else (1, 7, 33, 4097, 9000))
]  # fmt: skip


@pytest.mark.parametrize(("plan_name", "vocab"), CASES)
def test_plans_give_the_reference_bits(plan_name: str, vocab: int) -> None:
    """clauses 3.2 / 4.1: every selection path and launch form agrees with the reference."""
    call = _call(vocab, vocab * 31 + len(plan_name))
    inp = Inputs(call, DEVICE)
    plan = Plan.for_shape(len(call.logits), vocab, **PLANS[plan_name])
    out = propose(inp.logits, inp.temperature, inp.seed, inp.round, inp.position, tau=call.tau, plan=plan)
    got = [t.cpu().numpy() for t in out]
    want = inp.reference()
    from dyadic24.api import Proposal

    diffs = row_diffs(Proposal(status=got[0], token=got[1], ids=got[2], tickets=got[3]), want)
    assert not diffs, diffs[:3]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_logits(dtype: str) -> None:
    """clause 1.2: the int32 widening of the tile stage equals the reference's exact widening."""
    call = _call(5000, 77, dtype)
    inp = Inputs(call, DEVICE)
    got = inp.run()
    assert not row_diffs(got, inp.reference())


@pytest.mark.parametrize("plan_name", ["default", "fused", "split_finish"])
def test_trace_matches_and_workspace_replays(plan_name: str) -> None:
    """clause 12.3 through the two- (polling merge), one- and three-launch forms; the tagged forms'
    counters are left at a count of 0 and the next epoch for the next launch."""
    call = _call(9000, 5)
    inp = Inputs(call, DEVICE)
    rows = len(call.logits)
    ws = make_workspace(rows, 9000, DEVICE)
    plan = Plan.for_shape(rows, 9000, **PLANS[plan_name])
    for launch in range(2):
        buf = torch.zeros((rows, TRACE_WORDS), dtype=torch.int64, device=DEVICE)
        out = propose(inp.logits, inp.temperature, inp.seed, inp.round, inp.position, tau=call.tau,
                      trace=buf, workspace=ws, plan=plan)  # fmt: skip
        counter = ws.counter.cpu().numpy()
        assert not (counter & 0xFFFFFF).any()
        assert ((counter >> 24) == (launch + 1 if plan.fused or plan.tags else 0)).all()
        _, token, ids, tickets = (t.cpu().numpy() for t in out)
        traces = decode(buf.cpu().numpy(), token, ids, tickets)
        want = inp.reference(trace=True)
        assert want.trace is not None
        for r, (a, b) in enumerate(zip(traces, want.trace, strict=True)):
            assert a.as_json() == b.as_json(), (r, KINDS[r % len(KINDS)])


def test_one_workspace_across_plans_and_epochs() -> None:
    """clause 2.4 across launches: tagged and untagged fused plans, the two-launch form and its polling
    merge share one workspace (each leaves its candidates in a form the others' tag checks reject)
    while the arrival counters wrap from their last epoch to 0; every launch gives the reference's
    bits."""
    vocab = 4097
    call = _call(vocab, 11)
    inp = Inputs(call, DEVICE)
    rows = len(call.logits)
    want = inp.reference()
    ws = make_workspace(rows, vocab, DEVICE, 1024)
    ws.counter.fill_(126 << 24)  # the last epoch: the next fused launch wraps to 0
    names = ["tagged_pairs", "two_launch_waits", "untagged_fused", "pool_pair", "tagged_stale_keys"]
    epoch = 126
    for name in names:
        opts = {**PLANS[name], "tile": 1024, "merge_pool": 128, "by_count": None}  # (the interpreter's order)
        plan = Plan.for_shape(rows, vocab, **opts)
        out = propose(inp.logits, inp.temperature, inp.seed, inp.round, inp.position, tau=call.tau,
                      workspace=ws, plan=plan)  # fmt: skip
        got = [t.cpu().numpy() for t in out]
        from dyadic24.api import Proposal

        diffs = row_diffs(Proposal(status=got[0], token=got[1], ids=got[2], tickets=got[3]), want)
        assert not diffs, (name, diffs[:3])
        if plan.fused or plan.tags:
            epoch = (epoch + 1) % 127
        assert (ws.counter.cpu().numpy() == epoch << 24).all(), name

"""Launch-plan variants of the dyadic24 kernel, timed and bit-checked in one GPU process (issue "perf").

For every batch size B (V = 163,840 unless --vocab): CUDA-graph replays of depth 5 (as in
bench_propose.py) for each named plan, with sampled (T = 1) and greedy (T = 0) rows, plus the torch
sampler / argmax / launch floor; before timing, every plan's outputs on the same inputs are compared
bit for bit with the extraction plan (the first H200-validated algorithm). --parts also times the tile
stage alone and the merge stage alone of the two-launch form. --fuzz N checks each plan without trace
against the fast reference on N fuzz rows (all families, several V).

--clustered raises the first 512 token IDs of every row so that the row's top 32 share a tile (the
merge pool's check then fails, as for vocabularies whose frequent tokens have low IDs).

Usage on the GPU: python benchmarks/variants.py --out DIR [--batches 1,4,64,256] [--fuzz 600] [--parts]
[--clustered]
Writes DIR/variants.json and DIR/variants.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_propose
from bench_propose import DEPTH, TAU, Case, versions

from dyadic24.kernels import propose as kp

DEVICE = "cuda"
_2L = {"fused": False, "split_finish": False, "maxnreg": None}
_T8L = {"tile": 8192, "maxnreg": 128, "stagger_wave": 4}  # (session 13)
PLANS: dict[str, dict[str, Any]] = {
    # call 1 (2026-11-30): the extraction design and the first threshold geometries
    "extract-2L-t4096-w4": {"threshold": False, "fused": False, "maxnreg": None},
    "thr-2L-t2048-w4-m1": {"fused": False, "tile": 2048, "merge_warps": 1, "maxnreg": None},
    "thr-F-t4096-w4": {"fused": True},
    "thr-F-t4096-w8": {"fused": True, "num_warps": 8},
    "thr-F-t2048-w4": {"fused": True, "tile": 2048},
    "thr-F-t8192-w8": {"fused": True, "tile": 8192, "num_warps": 8},
    "thr-F-t1024-w2": {"fused": True, "tile": 1024, "chunk": 4096, "num_warps": 2},
    "thr-F-t4096-w4-late": {"fused": True, "early_draw": False},
    "thr-F-t4096-w4-nogf": {"fused": True, "greedy_fast": False},
    # call 2: two- and three-launch forms, tile geometry
    "thr-2L-t4096-w4": {**_2L, "tile": 4096, "num_warps": 4},
    "thr-3L-t4096-w4-f1": {**_2L, "split_finish": True, "finish_warps": 1, "tile": 4096, "num_warps": 4},
    "thr-2L-t2048-w2-m4": {**_2L, "tile": 2048, "num_warps": 2, "merge_warps": 4},
    "thr-2L-t8192-w8-m4": {**_2L, "tile": 8192, "num_warps": 8, "merge_warps": 4},
    "thr-2L-t4096-w8-m4": {**_2L, "num_warps": 8, "merge_warps": 4},
    "thr-2L-t1024-w1-m4": {**_2L, "tile": 1024, "num_warps": 1, "merge_warps": 4},
    # call 3 (session 2): column-group tile with bit-mask compaction, pooled merge
    "prev-default": {**_2L, "fast_tile": False, "merge_pool": 0},
    "fast-tile-only": {**_2L, "merge_pool": 0},
    "fast": {**_2L},
    "fast-m8": {**_2L, "merge_warps": 8},
    "fast-w8": {**_2L, "num_warps": 8},
    "fast-t8192-w8": {**_2L, "tile": 8192, "num_warps": 8},
    "fast-t2048-w4": {**_2L, "tile": 2048},
    "fast-fused": {"fused": True},
    "fast-r96": {**_2L, "maxnreg": 96},
    "fast-r64": {**_2L, "maxnreg": 64},
    "default": {},
    # session 3: per-warp tile bound, narrower compaction, early draw (the larger-tile plans of call 2
    # are gone: more than 32 elements per thread, now refused by Plan.for_shape; NOTES.md item 24)
    "F-warp": {"fused": True, "warp_bound": True},
    "F-fcap64": {"fused": True, "fcap": 64},
    "F-early": {"fused": True, "early_draw": True},
    "2L-warp": {**_2L, "maxnreg": 0, "warp_bound": True},
    "2L-fcap64": {**_2L, "maxnreg": 0, "fcap": 64},
    # the merge without the pool (threshold merge): what the pool check's failures cost before
    # _pool_refine; compare on --clustered logits
    "F-nopool": {"fused": True, "merge_pool": 0},
    # session 4: the merge pool halved by pairing tiles (now the default) against the whole pool
    "F-unpaired": {"fused": True, "pair_pool": False},
    "2L-unpaired": {**_2L, "maxnreg": 0, "pair_pool": False},
    # warps per program of the fused kernel (the default was 8 up to B = 2 until session 6, now 4)
    "F-w4": {"fused": True, "num_warps": 4},
    "F-w16": {"fused": True, "num_warps": 16},
    "F-t2048-w8": {"fused": True, "tile": 2048, "num_warps": 8},
    # the two-launch tile kernel without the exact-bound retry (to separate its cost at B = 64 / 256)
    "2L-noretry": {**_2L, "maxnreg": 0, "bound_retry": False},
    "2L-retry": {**_2L, "maxnreg": 0, "bound_retry": True},
    "2L-nopool": {**_2L, "maxnreg": 0, "merge_pool": 0},
    # session 5: the fused form's arrival with a release and an acquire (before the tagged arrival)
    "F-untagged": {"fused": True, "tagged": False},
    # 8-warp fused programs capped at 128 registers (171 uncapped): two fit an SM, so B = 4's 160 do
    "F-w8-r128": {"fused": True, "num_warps": 8, "maxnreg": 128},
    # the merge pool paired only (before the quads)
    "F-pairs": {"fused": True, "pool_quads": False},
    "2L-pairs": {**_2L, "maxnreg": 0, "pool_quads": False},
    "F-quads": {"fused": True, "pool_quads": True},
    # 8-warp programs of 8192 elements (B = 4: 80 programs, each SM one)
    "F-t8192-w8": {"fused": True, "tile": 8192, "num_warps": 8},
    "F-w8": {"fused": True, "num_warps": 8},
    "2L-quads": {**_2L, "maxnreg": 0, "pool_quads": True},
    # session 8: B = 8 and 16 (320 and 640 programs): the fused form with register caps (231 registers
    # uncapped: two 4-warp programs per SM; 128: four; 96: five) against the two-launch form's caps
    "F-r128": {"fused": True, "maxnreg": 128},
    "F-r96": {"fused": True, "maxnreg": 96},
    "F-r80": {"fused": True, "maxnreg": 80},
    "2L-r128": {**_2L, "maxnreg": 128},
    "2L-r96": {**_2L, "maxnreg": 96},
    "2L-r80": {**_2L, "maxnreg": 80},
    "2L-r112": {**_2L, "maxnreg": 112},
    "F-r168": {"fused": True, "maxnreg": 168},
    "2L": {**_2L, "maxnreg": 0},
    "2L-m1": {**_2L, "maxnreg": 0, "merge_warps": 1},
    "2L-m2": {**_2L, "maxnreg": 0, "merge_warps": 2},
    "2L-pdl": {**_2L, "maxnreg": 0, "pdl": True},
    "2L-pdl-m1": {**_2L, "maxnreg": 0, "pdl": True, "merge_warps": 1},
    "2L-pdl-m2": {**_2L, "maxnreg": 0, "pdl": True, "merge_warps": 2},
    "2L-poll": {**_2L, "maxnreg": 0, "pdl": True, "poll": True},
    "2L-pdl-r0": {**_2L, "maxnreg": None, "pdl": True},
    "2L-poll-r0": {**_2L, "maxnreg": None, "pdl": True, "poll": True},
    "2L-pdl-r80": {**_2L, "maxnreg": 80, "pdl": True},
    "2L-poll-r80": {**_2L, "maxnreg": 80, "pdl": True, "poll": True},
    "2L-pdl-m8": {**_2L, "maxnreg": 0, "pdl": True, "merge_warps": 8},
    "2L-poll-noretry": {**_2L, "maxnreg": 0, "bound_retry": False},
    "F-prev": {"fused": True},
    # session 10: the polling two-launch form's geometry at B = 16
    "2L-poll-w8": {**_2L, "maxnreg": 0, "pdl": True, "poll": True, "num_warps": 8},
    "2L-poll-m8": {**_2L, "maxnreg": 0, "pdl": True, "poll": True, "merge_warps": 8},
    "2L-poll-t2048": {**_2L, "maxnreg": 0, "pdl": True, "poll": True, "tile": 2048},
    # session 12: the tile programs' stagger (ns per SM slot; 2L-default had none in calls 1-4, since
    # 541f5d6 it has the default stagger)
    "2L-default": {},
    "2L-nostagger": {"stagger": 0},
    "2L-st400": {"stagger": 400},
    "2L-st700": {"stagger": 700},
    "2L-st1000": {"stagger": 1000},
    "2L-st1400": {"stagger": 1400},
    "2L-st200": {"stagger": 200},
    "2L-st300": {"stagger": 300},
    "2L-st500": {"stagger": 500},
    "2L-st400-w5": {"stagger": 400, "stagger_wave": 5},
    "2L-st150": {"stagger": 150},
    "2L-st250": {"stagger": 250},
    "2L-st450": {"stagger": 450},
    "2L-st600": {"stagger": 600},
    # session 13: tiles of 8192 with 4 warps (the column-group tile in two halves: 64 elements per
    # thread), register caps for 4 / 5 / 6 programs per SM, the stagger over that many slots
    "2L-t8192": {"tile": 8192},
    "2L-t8192-r128": {"tile": 8192, "maxnreg": 128, "stagger_wave": 4},
    "2L-t8192-r96": {"tile": 8192, "maxnreg": 96, "stagger_wave": 5},
    "2L-t8192-r80": {"tile": 8192, "maxnreg": 80, "stagger_wave": 6},
    "2L-t8192-r128-st0": {"tile": 8192, "maxnreg": 128, "stagger": 0},
    "2L-t8192-r128-st450": {"tile": 8192, "maxnreg": 128, "stagger": 450, "stagger_wave": 4},
    # (call 2 also timed an L2 prefetch of the logits of tile program pid + 660 / 1320 / 1056 / 2112,
    # the option `ahead`, removed again: NOTES.md item 67)
    "2L-t8192-r96-mp256": {"tile": 8192, "maxnreg": 96, "stagger_wave": 5, "merge_pool": 256},
    # the ties' masks only when fewer than 32 elements lie above the tile's bound
    # (calls 3-4 ran the option `lazy_ties`, True in the -lazy plans, False elsewhere; since the commit
    # after 19ea9bd the tie masks are always formed lazily and the option is gone: the -lazy plans are
    # their base plans, and every plan above runs lazily now; NOTES.md item 66)
    "2L-lazy": {},
    "2L-t8192-r96-lazy": {"tile": 8192, "maxnreg": 96, "stagger_wave": 5},
    "2L-t8192-r128-lazy": {**_T8L},
    "2L-t8192-lazy": {"tile": 8192, "maxnreg": None, "stagger_wave": 4},
    "2L-t8192-r128-lazy-st0": {**_T8L, "stagger": 0},
    "2L-t8192-r128-lazy-st450": {**_T8L, "stagger": 450},
    "2L-t8192-r128-lazy-st1400": {**_T8L, "stagger": 1400},
    # session 14: B = 1-2 geometry once more (tiles of 2,048: 80 programs per row; 8-warp tiles)
    "2L-t2048": {"tile": 2048},
    "2L-w8": {"num_warps": 8},
}
CALL3 = ("prev-default", "fast-tile-only", "fast", "fast-m8", "fast-w8", "fast-t8192-w8", "fast-t2048-w4",
         "fast-fused")  # fmt: skip
CALL2 = (
    "thr-2L-t4096-w4", "thr-3L-t4096-w4-f1", "thr-2L-t2048-w2-m4", "thr-2L-t8192-w8-m4", "thr-2L-t4096-w8-m4",
    "thr-2L-t1024-w1-m4",
)  # fmt: skip
GREEDY_PLANS = (
    "extract-2L-t4096-w4", "thr-2L-t4096-w4", "thr-F-t4096-w4", "thr-F-t4096-w4-nogf", "thr-F-t2048-w4",
    "thr-3L-t4096-w4-f1", "thr-2L-t8192-w8-m4", "thr-2L-t4096-w8-m4", *CALL3, "fast-r96", "fast-r64",
    "default", "F-warp", "2L-warp", "F-untagged", "F-w4", "F-r128", "F-r96", "F-r80", "2L-r128", "2L-r96",
    "2L-r80", "2L-r112", "F-r168", "2L", "2L-m1", "2L-m2", "2L-pdl", "2L-pdl-m1", "2L-pdl-m2",
    "2L-poll", "2L-pdl-r0", "2L-poll-r0", "2L-pdl-r80", "2L-poll-r80", "2L-pdl-m8",
    "2L-poll-noretry", "F-prev", "2L-default", "2L-st300", "2L-st400", "2L-st450", "2L-st250",
    "2L-nostagger", "2L-t8192", "2L-t8192-r128", "2L-t8192-r96", "2L-t8192-r80", "2L-t8192-r128-st0",
    "2L-t8192-r128-st450", "2L-t8192-r96-mp256", "2L-lazy", "2L-t8192-r96-lazy", "2L-t8192-r128-lazy",
    "2L-t8192-lazy", "2L-t8192-r128-lazy-st0", "2L-t8192-r128-lazy-st450", "2L-t8192-r128-lazy-st1400",
    "2L-t2048", "2L-w8",
)  # fmt: skip
PARTS_PLANS = ("thr-2L-t4096-w4", "extract-2L-t4096-w4", "thr-2L-t2048-w2-m4", "thr-2L-t8192-w8-m4",
               "thr-2L-t4096-w8-m4", "thr-2L-t1024-w1-m4", "prev-default", "fast")  # fmt: skip
FUZZ_PLANS = ("thr-2L-t4096-w4", "thr-3L-t4096-w4-f1", "fast", "fast-fused", "fast-r64")


def plan_for(name: str, batch: int, vocab: int) -> kp.Plan:
    return kp.Plan.for_shape(batch, vocab, **PLANS[name])


def launcher(case: Case, plan: kp.Plan, temp: torch.Tensor) -> Callable[[list[torch.Tensor]], None]:
    ws = kp.make_workspace(case.batch, case.vocab, DEVICE, plan.tile, cap=plan.scratch_width, mcap=plan.mcap)

    def run(bufs: list[torch.Tensor]) -> None:
        for p in range(DEPTH):
            kp.propose(bufs[p], temp, case.seed, case.round, case.positions[p], tau=TAU,
                       out=case.outs[p], workspace=ws, plan=plan)  # fmt: skip

    return run


def stage_launchers(
    case: Case, plan: kp.Plan, temp: torch.Tensor
) -> tuple[Callable[[list[torch.Tensor]], None], Callable[[list[torch.Tensor]], None]]:
    """The two-launch form's tile stage alone and merge stage alone (the merge reads what the tile
    stage left in the workspace)."""
    ws = kp.make_workspace(case.batch, case.vocab, DEVICE, plan.tile, cap=plan.scratch_width, mcap=plan.mcap)
    tab = kp.prepare(DEVICE)

    src = 0 if case.dtype == torch.float32 else 1
    tau_bits = int(np.float32(TAU).view(np.uint32))

    def common(p: int) -> tuple[Any, ...]:
        o = case.outs[p]
        return (temp.view(torch.int32), case.seed, case.round, case.positions[p], tab.z, tab.e,
                o[0], o[1], o[2], o[3], ws.flags)  # fmt: skip

    def bits(x: torch.Tensor) -> torch.Tensor:
        return x.view(torch.int32 if x.dtype == torch.float32 else torch.int16)

    def tiles(bufs: list[torch.Tensor]) -> None:
        for p in range(DEPTH):
            kp.launch(
                plan, bits(bufs[p]), ws, common(p), tau_bits, tab, trace=False, src=src, stages=("tile",)
            )

    def merges(bufs: list[torch.Tensor]) -> None:
        for p in range(DEPTH):
            kp.launch(plan, bits(bufs[p]), ws, common(p), tau_bits, tab, trace=False, src=src,
                      stages=("merge", "finish"))  # fmt: skip

    return tiles, merges


def _sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def snapshot(case: Case) -> list[torch.Tensor]:
    return [t.clone() for o in case.outs for t in o]


def fuzz_check(
    rows: int, plans: list[str], vocabs: tuple[int, ...] = (1, 31, 33, 4097, 50000, 163840)
) -> dict[str, Any]:
    """Each plan (no trace) against the fast reference on fuzz calls mixing every family."""
    from dyadic24.kernels import fuzz, gpu_check
    from dyadic24.kernels.exp_table import load_table

    table_z = [int(v) for v in load_table(torch.device(DEVICE)).z.cpu().tolist()]
    rng = np.random.default_rng(2024)
    bad: dict[str, int] = {p: 0 for p in plans}
    done = 0
    while done < rows:
        vocab = int(rng.choice(vocabs))
        batch = int(max(1, min(64, (1 << 22) // vocab, rows - done)))
        dtype = "float32"  # (the other dtypes: gpu_check's fuzz, through the trace variant)
        call = fuzz.make_call(rng, batch, vocab, dtype, table_z)
        inp = gpu_check.Inputs(call, torch.device(DEVICE))
        want = inp.reference()
        for name in plans:
            plan = kp.Plan.for_shape(batch, vocab, **PLANS[name])
            out = kp.propose(inp.logits, inp.temperature, inp.seed, inp.round, inp.position, tau=call.tau,
                             plan=plan)  # fmt: skip
            _sync()
            if not gpu_check.outputs_match(out, want):
                bad[name] += 1
        done += batch
    return {"rows": done, "batches_with_mismatch": bad}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--batches", default="1,4,64,256")
    ap.add_argument("--vocab", type=int, default=163_840)
    ap.add_argument("--plans", default=",".join(CALL2))
    ap.add_argument("--baselines", action="store_true", help="also time the torch sampler, argmax and floors")
    ap.add_argument("--replays", type=int, default=100)
    ap.add_argument("--parts", action="store_true")
    ap.add_argument("--fuzz", type=int, default=0)
    ap.add_argument("--fuzz-plans", default=",".join(FUZZ_PLANS), help="the plans --fuzz checks")
    ap.add_argument("--bf16", action="store_true", help="also time the default plan on bf16 logits")
    ap.add_argument("--bf16-named", action="store_true", help="with --bf16: time the named plans on bf16 too")
    ap.add_argument(
        "--clustered",
        action="store_true",
        help="raise the first 512 token IDs of every row by 8 (as frequent tokens have low IDs in BPE "
        "vocabularies): the row's top 32 then lie in tile 0 and the merge pool's check always fails",
    )
    ap.add_argument("--dry", action="store_true", help="CPU interpreter smoke run of this script (no timing)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    global DEVICE  # noqa: PLW0603 (the dry run's CPU device, for the helpers above)
    time_graphs = bench_propose.time_graphs
    if args.dry:
        DEVICE = "cpu"

        def time_graphs(case: Case, body: Callable[[list[torch.Tensor]], None], replays: int, warmup: int
                        ) -> dict[str, float]:  # fmt: skip
            body(case.sets[0])
            return {"median_us": 0.0, "p10_us": 0.0, "p90_us": 0.0}

        info: dict[str, Any] = {"device": "cpu", "torch": torch.__version__, "triton": "-", "date": "-",
                                "l2_bytes": 1 << 16}  # fmt: skip
    else:
        info = versions()
    l2 = int(info["l2_bytes"]) or 60 * 2**20
    kp.prepare(DEVICE)
    names = [n for n in args.plans.split(",") if n]
    results: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    began = time.perf_counter()

    def record(impl: str, batch: int, dtype: str, r: dict[str, float]) -> None:
        row = {"impl": impl, "B": batch, "V": args.vocab, "dtype": dtype, **r}
        results.append(row)
        print(f"{dtype} B={batch:>3} {impl:<36} {r['median_us']:9.1f} us / depth 5 "
              f"(p10 {r['p10_us']:.1f}, p90 {r['p90_us']:.1f})", flush=True)  # fmt: skip

    dtypes = [("fp32", torch.float32)] + ([("bf16", torch.bfloat16)] if args.bf16 else [])
    for dname, dtype in dtypes:
        for batch in (int(b) for b in args.batches.split(",")):
            case = Case(dtype, args.vocab, batch, l2, DEVICE)
            if args.clustered:
                for bufs in case.sets:
                    for buf in bufs:
                        buf[:, :512] += 8
            plans = names if dname == "fp32" or args.bf16_named else ["thr-F-t4096-w4", "extract-2L-t4096-w4"]
            for temp_name, temp in (("sampled", case.t_sampled), ("greedy", case.t_greedy)):
                ref: list[torch.Tensor] | None = None
                for name in plans:
                    if temp_name == "greedy" and name not in GREEDY_PLANS:
                        continue
                    plan = plan_for(name, batch, args.vocab)
                    body = launcher(case, plan, temp)
                    body(case.sets[0])
                    _sync()
                    got = snapshot(case)
                    if ref is None:
                        ref = got
                    same = all(torch.equal(a, b) for a, b in zip(ref, got, strict=True))
                    checks.append(
                        {"plan": name, "B": batch, "dtype": dname, "temp": temp_name, "same_bits": same}
                    )
                    if not same:
                        print(
                            f"!! {name} B={batch} {temp_name}: bits differ from the extraction plan",
                            flush=True,
                        )
                    record(f"{name}/{temp_name}", batch, dname, time_graphs(case, body, args.replays, 20))
                    if args.parts and temp_name == "sampled" and dname == "fp32" and name in PARTS_PLANS:
                        tiles, merges = stage_launchers(case, plan, temp)
                        tiles(case.sets[0])
                        record(f"{name}/tile-stage", batch, dname, time_graphs(case, tiles, args.replays, 20))
                        record(
                            f"{name}/merge-stage", batch, dname, time_graphs(case, merges, args.replays, 20)
                        )
            if dname == "fp32" and args.baselines:
                record("torch-topk-softmax-multinomial", batch, dname,
                       time_graphs(case, case.torch_sampler, args.replays, 20))  # fmt: skip
                record("torch-argmax", batch, dname, time_graphs(case, case.torch_argmax, args.replays, 20))
                record("byte-floor", batch, dname, time_graphs(case, case.byte_floor, args.replays, 20))
                for n in (1, 2):

                    def floor(bufs: list[torch.Tensor], n: int = n, dummy: torch.Tensor = case.dummy) -> None:
                        for _ in range(DEPTH * n):
                            bench_propose._empty_kernel[(1,)](dummy)

                    record(f"launch-floor-{n}", batch, dname, time_graphs(case, floor, args.replays, 20))
            del case
            if DEVICE == "cuda":
                torch.cuda.empty_cache()
    small = (1, 31, 33, 300)
    fuzz_plans = [n for n in args.fuzz_plans.split(",") if n]
    fuzz = (
        (fuzz_check(args.fuzz, fuzz_plans, small) if args.dry else fuzz_check(args.fuzz, fuzz_plans))
        if args.fuzz
        else None
    )
    report = {"info": info, "depth": DEPTH, "results": results, "bit_checks": checks, "fuzz": fuzz,
              "plans": PLANS, "seconds": round(time.perf_counter() - began, 1)}  # fmt: skip
    (args.out / "variants.json").write_text(json.dumps(report, indent=1) + "\n")
    lines = [
        f"# variants ({info['device']}, torch {info['torch']}, triton {info['triton']}, {info['date']})",
        "",
    ]
    lines.append("| dtype | B | impl | median us / depth 5 | p10 | p90 |")
    lines.append("|---|---:|---|---:|---:|---:|")
    for r in results:
        lines.append(f"| {r['dtype']} | {r['B']} | {r['impl']} | {r['median_us']:.1f} | {r['p10_us']:.1f} | "
                     f"{r['p90_us']:.1f} |")  # fmt: skip
    lines.append("")
    lines.append(f"bit checks: {sum(c['same_bits'] for c in checks)}/{len(checks)} identical; fuzz: {fuzz}")
    (args.out / "variants.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return (
        0
        if all(c["same_bits"] for c in checks) and not (fuzz and any(fuzz["batches_with_mismatch"].values()))
        else 1
    )


if __name__ == "__main__":
    sys.exit(main())

"""Launch-plan variants of the dyadic24 kernel, timed and bit-checked in one GPU process (issue "perf").

For every logits format (--dtypes) and batch size B (V = 163,840 unless --vocab): CUDA-graph replays of
depth 5 (as in bench_propose.py) for each named plan (PLANS: the tile, its register cap, the stagger),
with sampled (T = 1) and greedy (T = 0) rows, plus --floors (the read-only skeleton, a copy, the torch
sampler, argmax, the launch floor) in the same process; before timing, every plan's outputs on the same
inputs are compared bit for bit with the first plan's. --parts also times the tile stage alone and the
merge stage alone (the merge that waits: a polling merge alone would wait for tile words of its next
epoch). --fuzz N checks each of --fuzz-plans without trace against the fast reference on N fuzz rows
(all families, several V, every format of --dtypes). --warm runs every case once without timing: the
Triton cache then holds every kernel, so that several --warm processes compile in parallel before one
timed run (h200.sh variants).

--clustered raises the first 512 token IDs of every row so that the row's top 32 share a tile (the
merge pool's check then finds a hot pair, as for vocabularies whose frequent tokens have low IDs).

Usage on the GPU: python benchmarks/variants.py --out DIR [--dtypes fp32,bf16,fp16] [--batches 1,4,64,256]
[--plans default,t4096] [--plans16 ...] [--floors read-skeleton] [--fuzz 600] [--parts] [--clustered]
Writes DIR/variants.json and DIR/variants.md (every result, then one line per format and B: each plan's
sampled and greedy medians and their ratios to the skeleton).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_propose
from bench_propose import DEPTH, DTYPES, TAU, Case, versions

from dyadic24.kernels import propose as kp

DEVICE = "cuda"
# Geometry sweeps of the kept design (benchmarks/DESIGN.md "Tile size, warps and registers",
# "Stagger"): the tile, the tile kernel's register cap with the stagger's wave to match (the programs
# an SM holds at the cap) and the stagger's wait per SM slot. Every plan gives the default's bits.
PLANS: dict[str, dict[str, Any]] = {
    "default": {},
    "t2048": {"tile": 2048},
    "t4096": {"tile": 4096},
    "t8192": {"tile": 8192},
    "t4096-r64": {"tile": 4096, "maxnreg": 64},
    "t4096-uncapped": {"tile": 4096, "maxnreg": None},
    "t8192-uncapped": {"tile": 8192, "maxnreg": None, "stagger_wave": 4},
    "t8192-r96": {"tile": 8192, "maxnreg": 96, "stagger_wave": 5},
    "t8192-r80": {"tile": 8192, "maxnreg": 80, "stagger_wave": 6},
    "nostagger": {"stagger": 0},
    "st300": {"stagger": 300},
    "st450": {"stagger": 450},
    "st700": {"stagger": 700},
    "st1100": {"stagger": 1100},
    "st1300": {"stagger": 1300},
    "st1400": {"stagger": 1400},
    "st1600": {"stagger": 1600},
    "st450-w5": {"stagger": 450, "stagger_wave": 5},
    "t8192-r72": {"tile": 8192, "maxnreg": 72, "stagger_wave": 7},
    "wave2": {"stagger_wave": 2},
    "wave3": {"stagger_wave": 3},
    "t12288": {"tile": 12288},
    "t12288-nost": {"tile": 12288, "stagger": 0},
    "t12288-uncapped": {"tile": 12288, "maxnreg": None, "stagger_wave": 2},
    "t12288-st900": {"tile": 12288, "stagger": 901},
    "t12288-w2": {"tile": 12288, "stagger_wave": 2},
    # TILE_3 at BIG_TILE's cap (four programs per SM) for large B, where fewer tiles per row means less
    # per-tile selection (DESIGN.md "Tile size, warps and registers")
    "t12288-r128": {"tile": 12288, "maxnreg": 128},
    "t12288-r128-st902": {"tile": 12288, "maxnreg": 128, "stagger": 902},
    # 16-bit logits' tile of 16,384 (DESIGN.md "The 16-bit tile"): at BIG_TILE's cap and at 96 (five
    # programs per SM)
    "t16384": {"tile": 16384},
    "t16384-r96": {"tile": 16384, "maxnreg": 96, "stagger_wave": 5},
}
FUZZ_PLANS = ("default", "t2048", "t4096", "t8192")
FLOORS = ("torch-topk-softmax-multinomial", "torch-argmax", "read-skeleton", "copy", "launch-floor")


def plan_for(name: str, batch: int, vocab: int, itemsize: int = 4) -> kp.Plan:
    return kp.Plan.for_shape(batch, vocab, **{"itemsize": itemsize, **PLANS[name]})


def launcher(case: Case, plan: kp.Plan, temp: torch.Tensor) -> Callable[[list[torch.Tensor]], None]:
    ws = kp.make_workspace(case.batch, case.vocab, DEVICE, plan.tile)

    def run(bufs: list[torch.Tensor]) -> None:
        for p in range(DEPTH):
            kp.propose(bufs[p], temp, case.seed, case.round, case.positions[p], tau=TAU,
                       out=case.outs[p], workspace=ws, plan=plan)  # fmt: skip

    return run


def stage_launchers(
    case: Case, plan: kp.Plan, temp: torch.Tensor
) -> tuple[Callable[[list[torch.Tensor]], None], Callable[[list[torch.Tensor]], None]]:
    """The tile stage alone and the merge stage alone (the merge reads what the tile stage left in the
    workspace; both untagged, since a polling merge's next launch expects words of its next epoch)."""
    plan = replace(plan, poll=False)
    ws = kp.make_workspace(case.batch, case.vocab, DEVICE, plan.tile)
    tab = kp.prepare(DEVICE)

    src = kp._SRC_KIND[case.dtype]
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
                      stages=("merge",))  # fmt: skip

    return tiles, merges


def _sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def snapshot(case: Case) -> list[torch.Tensor]:
    return [t.clone() for o in case.outs for t in o]


def fuzz_check(
    rows: int,
    plans: list[str],
    vocabs: tuple[int, ...] = (1, 31, 33, 4097, 50000, 163840),
    dtypes: tuple[str, ...] = ("float32",),
    max_batch: int = 64,
) -> dict[str, Any]:
    """Each plan (no trace) against the fast reference on fuzz calls mixing every family, in turn in
    each logits format of ``dtypes`` (numpy names), of at most ``max_batch`` rows and 2^24 logits."""
    from dyadic24.kernels import fuzz, gpu_check
    from dyadic24.kernels.exp_table import load_table

    table_z = [int(v) for v in load_table(torch.device(DEVICE)).z.cpu().tolist()]
    rng = np.random.default_rng(2024)
    bad: dict[str, int] = {p: 0 for p in plans}
    done = calls = 0
    while done < rows:
        vocab = int(rng.choice(vocabs))
        batch = int(max(1, min(max_batch, (1 << 24) // vocab, rows - done)))
        dtype = dtypes[calls % len(dtypes)]
        calls += 1
        call = fuzz.make_call(rng, batch, vocab, dtype, table_z)
        inp = gpu_check.Inputs(call, torch.device(DEVICE))
        want = inp.reference()
        for name in plans:
            plan = plan_for(name, batch, vocab, inp.logits.element_size())
            out = kp.propose(inp.logits, inp.temperature, inp.seed, inp.round, inp.position, tau=call.tau,
                             plan=plan)  # fmt: skip
            _sync()
            if not gpu_check.outputs_match(out, want):
                bad[name] += 1
        done += batch
    return {"rows": done, "dtypes": list(dtypes), "batches_with_mismatch": bad}


def rows_check(
    plans: list[str], dtypes: tuple[str, ...], vocabs: tuple[int, ...] = (9001, 40000)
) -> dict[str, Any]:
    """Each plan against the fast reference on the selection tests' rows (tests/kernel_rows.py: ties
    within and across a tile's parts, -0 and +0, -inf, NaN, subnormal maxima, the exact fallbacks),
    sampled and greedy, in each logits format of ``dtypes`` (numpy names): the GPU's code of paths
    that Gaussian rows never take."""
    import importlib

    from dyadic24.kernels import gpu_check

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    kernel_rows: Any = importlib.import_module("kernel_rows")  # (test support, not a package module)

    bad: dict[str, list[str]] = {p: [] for p in plans}
    for dtype in dtypes:
        kinds = kernel_rows.kinds16(dtype) if dtype != "float32" else kernel_rows.KINDS
        greedy = kernel_rows.GREEDY_KINDS + (kernel_rows.EDGES16 if dtype != "float32" else ())
        for vocab in vocabs:
            call = kernel_rows.make_call(vocab, vocab * 7 + len(dtype), dtype, kinds=kinds, greedy=greedy)
            inp = gpu_check.Inputs(call, torch.device(DEVICE))
            want = inp.reference()
            for name in plans:
                plan = plan_for(name, len(call.logits), vocab, inp.logits.element_size())
                out = kp.propose(inp.logits, inp.temperature, inp.seed, inp.round, inp.position, tau=call.tau,
                                 plan=plan)  # fmt: skip
                _sync()
                if not gpu_check.outputs_match(out, want):
                    bad[name].append(f"{dtype} V={vocab}")
    return {"dtypes": list(dtypes), "vocabs": list(vocabs), "mismatches": bad}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--dtypes", default="fp32", help="logits formats, of fp32, bf16, fp16")
    ap.add_argument("--batches", default="1,4,64,256")
    ap.add_argument("--fp32-batches", help="the batches of binary32 logits (default --batches)")
    ap.add_argument("--vocab", type=int, default=163_840)
    ap.add_argument("--plans", default="default,t4096,t8192,nostagger")
    ap.add_argument("--plans16", help="the plans of 16-bit logits (default --plans)")
    ap.add_argument(
        "--floors", default="", help=f"floors and peers timed in every case, of {','.join(FLOORS)}"
    )
    ap.add_argument("--baselines", action="store_true", help="--floors all of them")
    ap.add_argument("--replays", type=int, default=100)
    ap.add_argument("--parts", action="store_true")
    ap.add_argument("--fuzz", type=int, default=0)
    ap.add_argument("--fuzz-plans", default=",".join(FUZZ_PLANS), help="the plans --fuzz and --rows check")
    ap.add_argument(
        "--fuzz-vocabs", default="1,31,33,4097,50000,163840", help="the vocabularies --fuzz draws"
    )
    ap.add_argument("--fuzz-batch", type=int, default=64, help="at most this many rows in a --fuzz call")
    ap.add_argument("--rows", action="store_true", help="check --fuzz-plans on the selection tests' rows")
    ap.add_argument("--warm", action="store_true", help="run every case once, untimed (compile only)")
    ap.add_argument(
        "--clustered",
        action="store_true",
        help="raise the first 512 token IDs of every row by 8 (as frequent tokens have low IDs in BPE "
        "vocabularies): the row's top 32 then lie in tile 0 and the merge pool's check always fails",
    )
    ap.add_argument("--dry", action="store_true", help="CPU interpreter smoke run of this script (no timing)")
    ap.add_argument("--commit", help="the commit whose tree is measured (default: git rev-parse HEAD)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    global DEVICE  # noqa: PLW0603 (the dry run's CPU device, for the helpers above)
    time_graphs = bench_propose.time_graphs
    if args.dry or args.warm:

        def time_graphs(case: Case, body: Callable[[list[torch.Tensor]], None], replays: int, warmup: int,
                        stream: torch.cuda.Stream | None = None) -> dict[str, float]:  # fmt: skip
            body(case.sets[0])
            return {"median_us": 0.0, "p10_us": 0.0, "p90_us": 0.0}

    if args.dry:
        DEVICE = "cpu"
        info: dict[str, Any] = {"device": "cpu", "torch": torch.__version__, "triton": "-", "date": "-",
                                "l2_bytes": 1 << 16}  # fmt: skip
    else:
        info = versions()
    if args.commit:
        info["commit"] = args.commit
    l2 = int(info["l2_bytes"]) or 60 * 2**20
    kp.prepare(DEVICE)
    names = [n for n in args.plans.split(",") if n]
    names16 = [n for n in (args.plans16 or args.plans).split(",") if n]
    floors = list(FLOORS) if args.baselines else [f for f in args.floors.split(",") if f]
    results: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    began = time.perf_counter()

    def record(impl: str, batch: int, dtype: str, r: dict[str, float]) -> None:
        row = {"impl": impl, "B": batch, "V": args.vocab, "dtype": dtype, **r}
        results.append(row)
        print(f"{dtype} B={batch:>3} {impl:<36} {r['median_us']:9.1f} us / depth 5 "
              f"(p10 {r['p10_us']:.1f}, p90 {r['p90_us']:.1f})", flush=True)  # fmt: skip

    for dname in args.dtypes.split(","):
        batches = args.fp32_batches if dname == "fp32" and args.fp32_batches else args.batches
        for batch in (int(b) for b in batches.split(",") if b):
            case = Case(DTYPES[dname], args.vocab, batch, l2, DEVICE)
            if args.clustered:
                for bufs in case.sets:
                    for buf in bufs:
                        buf[:, :512] += 8
            plans = names if dname == "fp32" else names16
            for temp_name, temp in (("sampled", case.t_sampled), ("greedy", case.t_greedy)):
                ref: list[torch.Tensor] | None = None
                for i, name in enumerate(plans):
                    plan = plan_for(name, batch, args.vocab, case.itemsize)
                    # (a plan named again is timed again under its own label: the spread within a run)
                    label = name if name not in plans[:i] else f"{name}-{plans[:i].count(name) + 1}"
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
                            f"!! {name} B={batch} {temp_name}: bits differ from plan {plans[0]}",
                            flush=True,
                        )
                    record(f"{label}/{temp_name}", batch, dname, time_graphs(case, body, args.replays, 20))
                    if args.parts and temp_name == "sampled":
                        tiles, merges = stage_launchers(case, plan, temp)
                        tiles(case.sets[0])
                        record(
                            f"{label}/tile-stage", batch, dname, time_graphs(case, tiles, args.replays, 20)
                        )
                        record(
                            f"{label}/merge-stage", batch, dname, time_graphs(case, merges, args.replays, 20)
                        )
            for base in floors if not args.dry else []:
                if base == "launch-floor":
                    for n in (1, 2):
                        floor = case.peers.bodies(n)["launch-floor"]
                        record(f"launch-floor-{n}", batch, dname, time_graphs(case, floor, args.replays, 20))
                else:
                    peer = case.peers.bodies(kp.LAUNCHES)[base]
                    record(base, batch, dname, time_graphs(case, peer, args.replays, 20))
            del case
            if DEVICE == "cuda":
                torch.cuda.empty_cache()
    numpy_names = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
    fuzz_dtypes = tuple(numpy_names[d] for d in args.dtypes.split(","))
    fuzz_plans = [n for n in args.fuzz_plans.split(",") if n]
    vocabs = (1, 31, 33, 300) if args.dry else tuple(int(v) for v in args.fuzz_vocabs.split(","))
    fuzz = None
    if args.fuzz and not args.warm:
        fuzz = fuzz_check(args.fuzz, fuzz_plans, vocabs, fuzz_dtypes, args.fuzz_batch)
    if fuzz is not None:
        print(f"fuzz: {fuzz}", flush=True)
    rows = (
        rows_check(fuzz_plans, fuzz_dtypes, (33, 300) if args.dry else (9001, 40000)) if args.rows else None
    )
    if rows is not None:
        print(f"rows: {rows}", flush=True)
    report = {"info": info, "depth": DEPTH, "results": results, "bit_checks": checks, "fuzz": fuzz,
              "rows": rows, "plans": PLANS, "seconds": round(time.perf_counter() - began, 1)}  # fmt: skip
    (args.out / "variants.json").write_text(json.dumps(report, indent=1) + "\n")
    lines = [
        f"# variants ({info['device']}, torch {info['torch']}, triton {info['triton']}, {info['date']},"
        f" commit {info.get('commit', '-')}, kernel sources {info.get('kernels', '-')})",
        "",
    ]
    lines.append("| dtype | B | impl | median us / depth 5 | p10 | p90 |")
    lines.append("|---|---:|---|---:|---:|---:|")
    for r in results:
        lines.append(f"| {r['dtype']} | {r['B']} | {r['impl']} | {r['median_us']:.1f} | {r['p10_us']:.1f} | "
                     f"{r['p90_us']:.1f} |")  # fmt: skip
    lines += ["", *summary(results), ""]
    lines.append(f"bit checks: {sum(c['same_bits'] for c in checks)}/{len(checks)} identical; fuzz: {fuzz}")
    lines.append(f"rows: {rows}")
    (args.out / "variants.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    failed = (fuzz and any(fuzz["batches_with_mismatch"].values())) or (
        rows and any(rows["mismatches"].values())
    )
    return 0 if all(c["same_bits"] for c in checks) and not failed else 1


def summary(results: list[dict[str, Any]]) -> list[str]:
    """One line per (dtype, B): the skeleton, then each plan's sampled and greedy medians with their
    ratios to the skeleton (where it was timed)."""
    cells: dict[tuple[str, int], dict[str, float]] = {}
    for r in results:
        cells.setdefault((r["dtype"], int(r["B"])), {})[r["impl"]] = float(r["median_us"])
    plans = list(dict.fromkeys(r["impl"].split("/")[0] for r in results if "/" in r["impl"]))
    head = ["dtype", "B", "skeleton"] + [f"{p} {t}" for p in plans for t in ("sampled", "greedy")]
    out = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for (dtype, batch), cell in cells.items():
        skel = cell.get("read-skeleton")
        row = [dtype, str(batch), f"{skel:.1f}" if skel else "-"]
        for p in plans:
            for t in ("sampled", "greedy"):
                v = cell.get(f"{p}/{t}")
                row.append("-" if v is None else f"{v:.1f}" + (f" ({v / skel:.2f})" if skel else ""))
        out.append("| " + " | ".join(row) + " |")
    return out


if __name__ == "__main__":
    sys.exit(main())

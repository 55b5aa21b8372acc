"""Probes of the two timing modes (results/variants.md "Two timing modes: where the kernels first launch").

The same graph of the default plan, V = 163,840, depth 5, timed ~74 or ~78 us (bfloat16, B = 64) on
an H100 by what the process did before: the stream of the kernels' first launch decides it. One
process per probe, with bench_propose's method (CUDA-graph replays, median of 200, logits rotated
beyond twice the L2); bfloat16 B = 64 unless said:

- ``workspaces``: eight workspaces, each timed three times round-robin through
  bench_propose.time_graphs (a new pool stream per call for the eager warm-up), with the
  workspaces' addresses: is the mode a workspace's?
- ``idle``: timings through time_graphs separated by 10 s idle gaps and run back to back (run
  ``nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv -lms 100`` beside it): is it the clock?
- ``graphs``: one warm-up stream for the whole process; a graph captured first and kept is timed after
  each of 14 new captures: is it per captured graph, or does capturing flip it?
- ``order``: bench_propose's order (sampled, greedy, read skeleton, the compiled torch race) three
  times with a pool stream per call, then with one stream passed to time_graphs, then pool streams
  again: which bodies the mode touches, and whether one warm-up stream keeps the fast one.
- ``pdl``: the default plan and one without the programmatic dependent launch (the merge after the
  tile grid's end, untagged), bfloat16 sampled and greedy, on one stream in a fresh process, then
  again after eight timings warmed on pool streams: is the slow mode the merge's lost overlap?
- ``life``: one stream; a case timed three times, a second case (the first alive: new addresses), a
  third whose first graph is kept and replayed between new captures, then deleted: is the mode a
  case's buffers', or a live graph's?
- ``destroy``: one stream, one case; graphs captured and kept, timed before and after another graph
  is deleted: does deleting a graph turn the process slow?
- ``first-capture`` / ``first-eager``: six timings through time_graphs on one stream, the kernels
  first launched there (in the warm-up of the first timing) / first launched on the default stream
  (--dtype, --batch).
- ``harness``: six timings through time_graphs as bench_propose calls it.

Usage on the GPU: python benchmarks/timing_modes.py --out DIR --probe PROBE (one of the above)
Writes DIR/timing_modes_<probe>.json; prints one line per timing.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_propose as bp
from bench_propose import DTYPES, Case

from dyadic24.kernels import propose as kp

VOCAB, BATCH = 163_840, 64
ARGS = argparse.Namespace()
WORDS = ("cand", "flags", "scratch", "mscratch", "counter")  # a workspace's tensors


def new_case(dname: str, batch: int = BATCH) -> Case:
    return Case(DTYPES[dname], VOCAB, batch, torch.cuda.get_device_properties(0).L2_cache_size, "cuda")


def pool() -> torch.cuda.Stream:
    """A new stream from torch's pool: a side stream to keep, or a fresh one per timing (as
    bench_propose.time_graphs warmed until 80cc746)."""
    return torch.cuda.Stream()  # type: ignore[no-untyped-call]


def probe_workspaces(res: list[dict[str, Any]]) -> None:
    for dname in ("bf16", "fp16"):
        case = new_case(dname)
        wss = [kp.make_workspace(BATCH, VOCAB, "cuda") for _ in range(8)]
        for rep in range(3):
            for i, ws in enumerate(wss):
                temps = [("sampled", case.t_sampled)] + ([("greedy", case.t_greedy)] if rep == 0 else [])
                for tn, temp in temps:
                    r = bp.time_graphs(case, case.kernel(temp, ws), 200, 20, pool())
                    ptrs = {k: getattr(ws, k).data_ptr() for k in WORDS}
                    res.append({"dtype": dname, "rep": rep, "ws": i, "temp": tn, **r,
                                **{k: hex(v) for k, v in ptrs.items()}})  # fmt: skip
                    at = " ".join(f"{k}={v % (1 << 21):#x}" for k, v in ptrs.items())  # (within 2 MiB)
                    print(f"{dname} rep{rep} ws{i} {tn:8s} {r['median_us']:7.1f} {at}", flush=True)
        del case, wss
        torch.cuda.empty_cache()


def probe_idle(res: list[dict[str, Any]]) -> None:
    case = new_case("bf16")
    t0 = time.time()

    def timed(label: str, temp: torch.Tensor, replays: int = 200) -> None:
        r = bp.time_graphs(case, case.kernel(temp), replays, 20, pool())
        res.append({"t": time.time() - t0, "label": label, **r})
        print(f"{time.time() - t0:7.2f}s {label:32s} {r['median_us']:7.1f}", flush=True)

    case.kernel(case.t_sampled)(case.sets[0])
    case.kernel(case.t_greedy)(case.sets[0])
    torch.cuda.synchronize()
    time.sleep(8)
    timed("greedy first", case.t_greedy)
    timed("sampled after greedy", case.t_sampled)
    timed("sampled again", case.t_sampled)
    time.sleep(10)
    timed("sampled after 10 s idle", case.t_sampled)
    timed("sampled again", case.t_sampled)
    for i in range(6):
        timed(f"sampled back-to-back {i}", case.t_sampled)
    time.sleep(10)
    timed("sampled after 10 s idle", case.t_sampled)
    time.sleep(10)
    timed("sampled 2000 replays after idle", case.t_sampled, 2000)
    timed("greedy", case.t_greedy)


def probe_graphs(res: list[dict[str, Any]]) -> None:
    case = new_case("bf16")
    body = case.kernel(case.t_sampled)
    side = pool()

    def capture() -> list[torch.cuda.CUDAGraph]:
        return bp.capture(case, body, side)

    def timed(graphs: list[torch.cuda.CUDAGraph]) -> float:
        return bp.replay_times(graphs, 200, 20)["median_us"]

    body(case.sets[0])
    torch.cuda.synchronize()
    first = capture()
    print(f"first capture {timed(first):.1f}", flush=True)
    for i in range(14):
        g = capture()
        new, kept = timed(g), timed(first)
        res.append({"round": i, "new": new, "first": kept})
        print(f"round {i:2d}: new capture {new:6.1f}   first capture {kept:6.1f}", flush=True)
        del g
    alive = [capture() for _ in range(3)]
    print("three kept alive:", [f"{timed(g):.1f}" for g in alive], f"first {timed(first):.1f}", flush=True)


def probe_order(res: list[dict[str, Any]]) -> None:
    names = ["dyadic24-sampled", "dyadic24-greedy", "read-skeleton", "torch-race-compiled"]
    fixed = pool()
    for phase in ("pool", "fixed", "pool"):
        case = new_case("bf16")
        bodies = case.bodies(False)
        for rnd in range(3):
            for n in names:
                warm = fixed if phase == "fixed" else pool()
                r = bp.time_graphs(case, bodies[n], 200, 30, warm)
                res.append({"phase": phase, "round": rnd, "impl": n, "stream": hex(warm.cuda_stream), **r})
                print(f"{phase} round {rnd} {n:24s} {r['median_us']:7.1f} {warm.cuda_stream:#x}", flush=True)
        del case, bodies
        torch.cuda.empty_cache()


def probe_pdl(res: list[dict[str, Any]]) -> None:
    case = new_case("bf16")  # (bfloat16 only: once slow, a process stays slow)
    plan = kp.Plan.for_shape(BATCH, VOCAB, itemsize=case.itemsize)
    plans = {"default": plan, "no-pdl": replace(plan, pdl=False, poll=False)}
    spaces = {k: kp.make_workspace(BATCH, VOCAB, "cuda") for k in plans}
    temps = {"sampled": case.t_sampled, "greedy": case.t_greedy}
    fixed = pool()
    for phase in ("one stream", "after 8 pool streams"):
        if phase != "one stream":
            for i in range(8):
                r = bp.time_graphs(case, case.kernel(case.t_sampled, spaces["default"]), 200, 30, pool())
                print(f"pool stream {i}: default sampled {r['median_us']:7.1f}", flush=True)
        for rep in range(2):
            for (name, p), (tn, temp) in itertools.product(plans.items(), temps.items()):
                r = bp.time_graphs(case, case.kernel(temp, spaces[name], p), 200, 30, fixed)
                res.append({"phase": phase, "rep": rep, "plan": name, "temp": tn, **r})
                print(f"{phase:22s} {rep} {name:8s} {tn:8s} {r['median_us']:7.1f}", flush=True)


def probe_life(res: list[dict[str, Any]]) -> None:
    fixed = pool()

    def record(label: str, r: dict[str, float], case: Case) -> None:
        res.append({"label": label, "logits": hex(case.sets[0][0].data_ptr()), **r})
        print(f"{label:44s} {r['median_us']:7.1f} {case.sets[0][0].data_ptr():#x}", flush=True)

    def timed(label: str, case: Case) -> None:
        record(label, bp.time_graphs(case, case.kernel(case.t_sampled), 200, 30, fixed), case)

    a = new_case("bf16")
    for i in range(3):
        timed(f"A: time_graphs {i}", a)
    b = new_case("bf16")  # (A alive: new addresses)
    for i in range(2):
        timed(f"B (new case, A alive): time_graphs {i}", b)
    c = new_case("bf16")
    kept = bp.capture(c, c.kernel(c.t_sampled), fixed)
    for i in range(3):
        record(f"C: one graph kept, replayed {i}", bp.replay_times(kept, 200, 30), c)
    for i in range(2):
        timed(f"C: time_graphs {i}, the kept graph alive", c)
        record("C: the kept graph again", bp.replay_times(kept, 200, 30), c)
    del kept
    timed("C: time_graphs, the kept graph deleted", c)
    timed("A again", a)


def probe_destroy(res: list[dict[str, Any]]) -> None:
    fixed = pool()
    case = new_case("bf16")
    body = case.kernel(case.t_sampled)
    body(case.sets[0])
    torch.cuda.synchronize()
    graphs: dict[str, list[torch.cuda.CUDAGraph]] = {}

    def timed(name: str, label: str) -> None:
        r = bp.replay_times(graphs[name], 200, 30)
        res.append({"label": f"{name}: {label}", **r})
        print(f"{name}: {label:40s} {r['median_us']:7.1f}", flush=True)

    graphs["G1"] = bp.capture(case, body, fixed)
    timed("G1", "first capture")
    timed("G1", "again")
    graphs["G2"] = bp.capture(case, body, fixed)
    timed("G2", "second capture, G1 alive")
    timed("G1", "after G2's capture")
    del graphs["G2"]
    timed("G1", "G2 deleted")
    graphs["G3"] = bp.capture(case, body, fixed)
    timed("G3", "third capture")
    del graphs["G1"]
    timed("G3", "G1 deleted")
    graphs["G4"] = bp.capture(case, body, fixed)
    timed("G4", "fourth capture")
    timed("G3", "again")


def first_launch(res: list[dict[str, Any]], eager_first: bool) -> None:
    fixed = pool()
    case = new_case(ARGS.dtype, ARGS.batch)
    if eager_first:  # the kernels' first launch on the default stream, outside time_graphs
        case.kernel(case.t_sampled)(case.sets[0])
        torch.cuda.synchronize()
    for i in range(6):
        r = bp.time_graphs(case, case.kernel(case.t_sampled), 200, 30, fixed)
        res.append({"eager_first": eager_first, "timing": i, **r})
        print(f"{ARGS.dtype} B={ARGS.batch} eager first {eager_first}: {i} {r['median_us']:7.1f}", flush=True)


def harness(res: list[dict[str, Any]]) -> None:
    case = new_case("bf16")
    for i in range(6):
        r = bp.time_graphs(case, case.kernel(case.t_sampled), 200, 30)
        res.append({"timing": i, **r})
        print(f"harness default: time_graphs {i} {r['median_us']:7.1f}", flush=True)


PROBES: dict[str, Callable[[list[dict[str, Any]]], None]] = {
    "workspaces": probe_workspaces,
    "idle": probe_idle,
    "graphs": probe_graphs,
    "order": probe_order,
    "pdl": probe_pdl,
    "life": probe_life,
    "destroy": probe_destroy,
    "first-capture": lambda res: first_launch(res, False),
    "first-eager": lambda res: first_launch(res, True),
    "harness": harness,
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--probe", choices=sorted(PROBES), required=True)
    ap.add_argument("--dtype", default="bf16", help="first-capture / first-eager: the logits format")
    ap.add_argument("--batch", type=int, default=BATCH, help="first-capture / first-eager: B")
    args = ap.parse_args(namespace=ARGS)
    args.out.mkdir(parents=True, exist_ok=True)
    kp.prepare("cuda")
    res: list[dict[str, Any]] = []
    PROBES[args.probe](res)
    info = bp.versions()
    report = {"info": info, "results": res}
    (args.out / f"timing_modes_{args.probe}.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

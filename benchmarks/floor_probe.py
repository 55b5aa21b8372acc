# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""How far below the current B = 1-4 times any design of this rule could go on this GPU (DESIGN.md
"Floors", "Where the time goes").

The 25 us goal at depth 5 leaves (25 - launch floor) / 5 us of GPU time per position. This script
measures, in one process and with bench_propose's method (CUDA-graph replays of depth 5, median, the
logits rotated beyond twice the L2), what of that budget the unavoidable parts take:

- launch-floor-N: N empty kernels per position;
- skeleton-read: one launch per position whose programs (tiles of 4,096, four warps; -tN: tiles of
  N) read the logits and store one maximum per tile: the read alone, no cross-program step;
- skeleton-2L: the same plus a one-program launch that reduces the tiles' maxima (greedy's shape);
- skeleton-1L-last: one launch; the program that arrives last (acq_rel counter) reduces them;
- dyadic24-sampled / -greedy: the default plans;
- dyadic24-tile-stage: the default plan's tile kernel alone (five launches);
- dyadic24-merge-stage: the default plan's merge kernel alone (the merge and the finish, clauses 2.1,
  3.2-9; five launches, B programs), from the candidates a tile launch left, without polling (a
  polling merge alone would wait for words of its next epoch);
- exchange chains: one warp doing N dependent lane exchanges (tl.gather at lane ^ m, the finish's
  butterflies) of int32 / binary64 words with an add; four or eight warps doing N dependent
  program-wide maxima; eight warps doing N dependent tl.topk(32) of 256 int64 keys (the merge's
  network) each followed by a program-wide maximum; one warp doing N dependent tl.sort of 32 int64
  keys (the finish's clause-6.1 order): the latency of one dependent step, from N = 0 and 1,024.

Usage on the GPU: python benchmarks/floor_probe.py --out DIR [--batches 1,2,4] [--dtype bf16]
(--dtype: the logits' format, fp32, bf16 or fp16; the skeletons read that format).
Writes DIR/floor_probe.json and DIR/floor_probe.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_propose import DEPTH, DTYPES, Case, time_graphs, versions
from peers import _empty_kernel

from dyadic24.kernels import propose as kp

SKEL_TILE = 4096
CHAIN_STEPS = 1024


@triton.jit
def _tile_max(x_ptr, part_ptr, V, n_tiles, TILE: tl.constexpr):
    pid = tl.program_id(0)
    row = pid // n_tiles
    offs = (pid - row * n_tiles) * TILE + tl.arange(0, TILE)
    x = tl.load(x_ptr + row.to(tl.int64) * V + offs, mask=offs < V, other=float("-inf"))
    tl.store(part_ptr + pid, tl.max(x))


@triton.jit
def _row_max(part_ptr, out_ptr, n_tiles, NT: tl.constexpr):
    row = tl.program_id(0)
    o = tl.arange(0, NT)
    p = tl.load(part_ptr + row * n_tiles + o, mask=o < n_tiles, other=float("-inf"), cache_modifier=".cg")
    tl.store(out_ptr + row, tl.max(p))


@triton.jit
def _tile_max_last(x_ptr, part_ptr, count_ptr, out_ptr, V, n_tiles, TILE: tl.constexpr, NT: tl.constexpr):
    pid = tl.program_id(0)
    row = pid // n_tiles
    offs = (pid - row * n_tiles) * TILE + tl.arange(0, TILE)
    x = tl.load(x_ptr + row.to(tl.int64) * V + offs, mask=offs < V, other=float("-inf"))
    tl.store(part_ptr + pid, tl.max(x))
    tl.debug_barrier()
    arrived = tl.atomic_add(count_ptr + row, 1, sem="acq_rel") + 1  # (never reset: counts launches too)
    if arrived % n_tiles == 0:
        o = tl.arange(0, NT)
        p = tl.load(part_ptr + row * n_tiles + o, mask=o < n_tiles, other=float("-inf"), volatile=True)
        tl.store(out_ptr + row, tl.max(p))


@triton.jit
def _lane_chain(x_ptr, out_ptr, n, F64: tl.constexpr):
    lane = tl.arange(0, 32)
    x = tl.load(x_ptr + lane)
    if F64:
        x = x.to(tl.float64)
    i = n * 0
    while i < n:
        x = x + tl.gather(x, lane ^ ((i % 31) + 1), 0)
        i += 1
    tl.store(out_ptr + lane, x.to(tl.float32))


@triton.jit
def _cta_chain(x_ptr, out_ptr, n, N: tl.constexpr):
    k = tl.arange(0, N)
    x = tl.load(x_ptr + (k & 31)).to(tl.int32, bitcast=True)
    i = n * 0
    while i < n:
        x = x + (tl.max(x) & 1)
        i += 1
    tl.store(out_ptr + (k & 31), x.to(tl.float32), mask=k < 32)


@triton.jit
def _topk_chain(x_ptr, out_ptr, n):
    k = tl.arange(0, 256)
    x = tl.load(x_ptr + k).to(tl.int64)
    i = n * 0
    while i < n:
        x = x + (tl.max(tl.topk(x, 32)) & 1)
        i += 1
    tl.store(out_ptr + k, x.to(tl.float32))


@triton.jit
def _sort_chain(x_ptr, out_ptr, n):
    lane = tl.arange(0, 32)
    x = tl.load(x_ptr + lane).to(tl.int64)
    i = n * 0
    while i < n:
        x = tl.sort(x ^ 21)
        i += 1
    tl.store(out_ptr + lane, x.to(tl.float32))


def skeletons(case: Case, tile: int) -> dict[str, Callable[[list[torch.Tensor]], None]]:
    b, v = case.batch, case.vocab
    n_tiles = triton.cdiv(v, tile)
    nt = triton.next_power_of_2(n_tiles)
    part = torch.empty(b * n_tiles, dtype=torch.float32, device="cuda")
    count = torch.zeros(b, dtype=torch.int32, device="cuda")
    out = torch.empty(b, dtype=torch.float32, device="cuda")

    def read(bufs: list[torch.Tensor]) -> None:
        for p in range(DEPTH):
            _tile_max[(b * n_tiles,)](bufs[p], part, v, n_tiles, TILE=tile, num_warps=4)

    def two(bufs: list[torch.Tensor]) -> None:
        for p in range(DEPTH):
            _tile_max[(b * n_tiles,)](bufs[p], part, v, n_tiles, TILE=tile, num_warps=4)
            _row_max[(b,)](part, out, n_tiles, NT=nt, num_warps=1)

    def last(bufs: list[torch.Tensor]) -> None:
        for p in range(DEPTH):
            _tile_max_last[(b * n_tiles,)](bufs[p], part, count, out, v, n_tiles, TILE=tile, NT=nt,
                                           num_warps=4)  # fmt: skip

    tag = "" if tile == SKEL_TILE else f"-t{tile}"
    return {f"skeleton-read{tag}": read, f"skeleton-2L{tag}": two, f"skeleton-1L-last{tag}": last}


def chains(replays: int) -> list[dict[str, Any]]:
    """ns per dependent step: (time at CHAIN_STEPS - time at 0) / (DEPTH * CHAIN_STEPS), in graphs of
    DEPTH launches of one program."""
    x = torch.arange(1024, dtype=torch.float32, device="cuda") * 1e-3
    out = torch.empty(1024, dtype=torch.float32, device="cuda")
    xi = torch.randperm(1024, device="cuda").to(torch.int32)  # (distinct keys for the sorts)
    tiny = Case(torch.float32, 32, 1, 0, "cuda")  # (time_graphs wants a case; the chains ignore its buffers)
    rows: list[dict[str, Any]] = []
    kinds: list[tuple[str, Callable[[int], None]]] = [
        ("lane-exchange-int32 (1 warp)",
         lambda n: _lane_chain[(1,)](x.view(torch.int32), out, n, F64=False, num_warps=1)),
        ("lane-exchange-f64 (1 warp)", lambda n: _lane_chain[(1,)](x, out, n, F64=True, num_warps=1)),
        ("program-max-128 (4 warps)", lambda n: _cta_chain[(1,)](x, out, n, N=128, num_warps=4)),
        ("program-max-256 (8 warps)", lambda n: _cta_chain[(1,)](x, out, n, N=256, num_warps=8)),
        ("tl.topk 32 of 256 int64 + program-max (8 warps)",
         lambda n: _topk_chain[(1,)](xi, out, n, num_warps=8)),
        ("tl.sort of 32 int64 (1 warp)", lambda n: _sort_chain[(1,)](xi, out, n, num_warps=1)),
    ]  # fmt: skip
    for name, fn in kinds:
        t = {}
        for n in (0, CHAIN_STEPS):

            def body(bufs: list[torch.Tensor], n: int = n, fn: Callable[[int], None] = fn) -> None:
                for _ in range(DEPTH):
                    fn(n)

            t[n] = time_graphs(tiny, body, replays, 20)["median_us"]
        step = (t[CHAIN_STEPS] - t[0]) * 1000.0 / (DEPTH * CHAIN_STEPS)
        rows.append(
            {"chain": name, "us_at_0": t[0], f"us_at_{CHAIN_STEPS}": t[CHAIN_STEPS], "ns_per_step": step}
        )
        print(f"{name:<32} {step:6.2f} ns per dependent step", flush=True)
    return rows


def warm(seconds: float) -> None:
    """Matrix products until ``seconds`` have passed: the first timings of a process otherwise catch
    the GPU coming out of idle (a first run's launch floor of 16.8 us at B = 1, 10.3 after; DESIGN.md
    "Measurement method")."""
    a = torch.randn(4096, 4096, device="cuda")
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(10):
            a = torch.tanh(a @ a)
        torch.cuda.synchronize()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--batches", default="1,2,4")
    ap.add_argument("--vocab", type=int, default=163_840)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    ap.add_argument("--replays", type=int, default=200)
    ap.add_argument("--skel-tiles", default="2048,8192", help="the skeletons also with these tiles")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warm-s", type=float, default=3.0, help="keep the GPU busy this long before timing")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    info = versions()
    l2 = int(info["l2_bytes"]) or 60 * 2**20
    kp.prepare("cuda")
    warm(args.warm_s)
    began = time.perf_counter()
    results: list[dict[str, Any]] = []
    for batch in (int(b) for b in args.batches.split(",") if b):
        case = Case(DTYPES[args.dtype], args.vocab, batch, l2, "cuda")
        bodies: dict[str, Callable[[list[torch.Tensor]], None]] = {}
        for n in (1, 2):

            def floor(bufs: list[torch.Tensor], n: int = n, dummy: torch.Tensor = case.dummy) -> None:
                for _ in range(DEPTH * n):
                    _empty_kernel[(1,)](dummy)

            bodies[f"launch-floor-{n}"] = floor
        for tile in (SKEL_TILE, *(int(t) for t in args.skel_tiles.split(",") if t)):
            bodies.update(skeletons(case, tile))
        bodies["dyadic24-sampled"] = case.kernel(case.t_sampled)
        bodies["dyadic24-greedy"] = case.kernel(case.t_greedy)
        bodies.update(case.stages())
        # rounds, each with its own launch floor: the floor drifts by several us within a process
        # (DESIGN.md "Measurement method"), so each time is also taken against the floor timed just
        # before it
        for rnd in range(args.rounds):
            floor_us = 0.0
            for name, body in bodies.items():
                r = time_graphs(case, body, args.replays, 20)
                if name == "launch-floor-1":
                    floor_us = r["median_us"]
                above = r["median_us"] - floor_us
                results.append(
                    {
                        "impl": name,
                        "dtype": args.dtype,
                        "B": batch,
                        "V": args.vocab,
                        "round": rnd,
                        "above_floor_us": above,
                        **r,
                    }
                )
                print(
                    f"B={batch} round {rnd} {name:<26} {r['median_us']:8.1f} us / depth 5 ({above:+.1f})",
                    flush=True,
                )
        del case
        torch.cuda.empty_cache()
    chain_rows = chains(args.replays)
    report = {"info": info, "depth": DEPTH, "results": results, "chains": chain_rows,
              "seconds": round(time.perf_counter() - began, 1)}  # fmt: skip
    (args.out / "floor_probe.json").write_text(json.dumps(report, indent=1) + "\n")
    lines = [
        f"# floor probe, {args.dtype} ({info['device']}, torch {info['torch']}, triton {info['triton']},"
        f" {info['date']})",
        "",
    ]
    batches = sorted({r["B"] for r in results})
    lines.append("| impl | " + " | ".join(f"B = {b}" for b in batches) + " |")
    lines.append("|---|" + "---:|" * len(batches))
    for name in dict.fromkeys(r["impl"] for r in results):
        cells = []
        for b in batches:
            mine = [r for r in results if r["impl"] == name and r["B"] == b]
            total = statistics.median(r["median_us"] for r in mine)
            above = statistics.median(r["above_floor_us"] for r in mine)
            cells.append(f"{total:.1f} ({above:+.1f})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "us per depth 5 (five positions): the median over the rounds of each round's median of",
              "the replays; in brackets the median over the rounds of the time less that round's",
              "launch-floor-1.", "",
              "| dependent chain | ns per step |", "|---|---:|"]  # fmt: skip
    lines += [f"| {c['chain']} | {c['ns_per_step']:.2f} |" for c in chain_rows]
    (args.out / "floor_probe.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Depth-5 latency of the dyadic24 Triton proposal against its peers and floors (H200, issue 5).

One run measures, for every (logit dtype, V, B): CUDA events around CUDA-graph replays, median of
>= 200 replays after warm-up, inputs rotated among enough buffer sets that together exceed twice
the L2 cache (so the cache is not what is measured). A depth-5 graph holds five positions, each
reading its own fresh logits buffer. Implementations and floors, all in the same process:

- dyadic24-sampled / dyadic24-greedy: this kernel with every row sampled (T = 1) / greedy (T = 0);
- torch-topk-softmax-multinomial: torch.topk(32) + softmax(v / tau) + torch.multinomial;
- torch-argmax: torch.argmax (the greedy floor);
- launch-floor: an empty Triton kernel launched as many times as the kernel launches;
- byte-floor: a device-to-device copy of the logits (reads and writes every byte once).

Usage on the GPU: python benchmarks/bench_propose.py --out DIR [--quick]
Writes DIR/bench.json, DIR/bench.md and DIR/bench_latency.png.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dyadic24.kernels import propose as kp

DEPTH = 5
TAU = 0.7


@triton.jit
def _empty_kernel(x_ptr):  # type: ignore[no-untyped-def]
    pass


class Case:
    """Buffers and graphs for one (dtype, V, B) configuration."""

    def __init__(
        self, dtype: torch.dtype, vocab: int, batch: int, l2_bytes: int, device: str = "cuda"
    ) -> None:
        self.dtype, self.vocab, self.batch = dtype, vocab, batch
        elt = torch.tensor([], dtype=dtype).element_size()
        set_bytes = DEPTH * batch * vocab * elt
        self.n_sets = max(2, min(64, math.ceil(2 * l2_bytes / set_bytes)))
        gen = torch.Generator(device=device).manual_seed(batch * 1_000_003 + vocab)
        self.sets = [
            [(torch.randn(batch, vocab, device=device, generator=gen) * 4).to(dtype) for _ in range(DEPTH)]
            for _ in range(self.n_sets)
        ]
        self.copy_dst = torch.empty(batch, vocab, dtype=dtype, device=device)
        rows = torch.arange(batch, device=device, dtype=torch.int64)
        self.seed = rows * 7919 + (1 << 40)
        self.round = torch.full((batch,), 3, dtype=torch.int64, device=device)
        self.positions = [
            torch.full((batch,), 100 + p, dtype=torch.int64, device=device) for p in range(DEPTH)
        ]
        self.t_sampled = torch.ones(batch, dtype=torch.float32, device=device)
        self.t_greedy = torch.zeros(batch, dtype=torch.float32, device=device)
        self.outs = [kp.make_outputs(batch, device) for _ in range(DEPTH)]
        self.ws = kp.make_workspace(batch, vocab, device)
        self.sink = torch.empty(batch, 1, dtype=torch.int64, device=device)
        self.dummy = torch.empty(1, device=device)
        self.launches = kp.Plan.for_shape(batch, vocab).launches  # of the default plan

    # One position of each implementation -------------------------------------------------
    def kernel(self, temp: torch.Tensor) -> Callable[[list[torch.Tensor]], None]:
        def run(bufs: list[torch.Tensor]) -> None:
            for p in range(DEPTH):
                kp.propose(bufs[p], temp, self.seed, self.round, self.positions[p], tau=TAU,
                           out=self.outs[p], workspace=self.ws)  # fmt: skip

        return run

    def torch_sampler(self, bufs: list[torch.Tensor]) -> None:
        for p in range(DEPTH):
            vals, idx = torch.topk(bufs[p], 32, dim=-1)
            probs = torch.softmax(vals.float() / TAU, dim=-1)
            choice = torch.multinomial(probs, 1)
            self.sink.copy_(torch.gather(idx, 1, choice))

    def torch_argmax(self, bufs: list[torch.Tensor]) -> None:
        for p in range(DEPTH):
            self.sink[:, 0].copy_(torch.argmax(bufs[p], dim=-1))

    def launch_floor(self, bufs: list[torch.Tensor]) -> None:
        for _ in range(DEPTH * self.launches):
            _empty_kernel[(1,)](self.dummy)

    def byte_floor(self, bufs: list[torch.Tensor]) -> None:
        for p in range(DEPTH):
            self.copy_dst.copy_(bufs[p])


def time_graphs(
    case: Case, body: Callable[[list[torch.Tensor]], None], replays: int, warmup: int
) -> dict[str, float]:
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for s in case.sets[:2]:
            body(s)  # compile / warm outside capture
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graphs = []
    for s in case.sets:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            body(s)
        graphs.append(g)
    for i in range(warmup):
        graphs[i % len(graphs)].replay()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
    for i in range(replays):
        starts[i].record()
        graphs[i % len(graphs)].replay()
        ends[i].record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends, strict=True))
    del graphs
    return {
        "median_us": statistics.median(times),
        "p10_us": times[len(times) // 10],
        "p90_us": times[(9 * len(times)) // 10],
        "replays": replays,
        "graphs_rotated": case.n_sets,
    }


def versions() -> dict[str, Any]:
    props = torch.cuda.get_device_properties(0)
    try:
        driver = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, check=False,
        ).stdout.strip()  # fmt: skip
    except OSError:
        driver = "unknown"
    return {
        "device": torch.cuda.get_device_name(0),
        "sm_count": props.multi_processor_count,
        "l2_bytes": getattr(props, "L2_cache_size", 0),
        "driver": driver,
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--quick", action="store_true", help="few configurations, for a smoke run")
    ap.add_argument("--replays", type=int, default=200)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    info = versions()
    l2 = int(info["l2_bytes"]) or 60 * 2**20
    kp.prepare("cuda")
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    vocabs = [163_840] if args.quick else [163_840, 81_920, 262_144]
    batches = [1, 4, 64] if args.quick else [1, 2, 4, 8, 16, 64, 256]
    # the headline shape first; the report is rewritten after every case, so a run stopped early
    # still leaves every finished case behind
    order = [(d, v) for v in vocabs for d in dtypes]
    results: list[dict[str, Any]] = []
    report = {"info": info, "depth": DEPTH, "tau": TAU, "results": results}
    for dname, vocab in order:
        dtype = dtypes[dname]
        for batch in batches:
            case = Case(dtype, vocab, batch, l2)
            impls = {
                "dyadic24-sampled": case.kernel(case.t_sampled),
                "dyadic24-greedy": case.kernel(case.t_greedy),
                "torch-topk-softmax-multinomial": case.torch_sampler,
                "torch-argmax": case.torch_argmax,
                "launch-floor": case.launch_floor,
                "byte-floor": case.byte_floor,
            }
            for name, body in impls.items():
                r = time_graphs(case, body, args.replays, warmup=30)
                row = {"impl": name, "dtype": dname, "V": vocab, "B": batch, "launches": case.launches, **r,
                       "per_position_us": r["median_us"] / DEPTH}  # fmt: skip
                results.append(row)
                print(f"{dname} V={vocab:>6} B={batch:>3} {name:<32} {r['median_us']:9.1f} us / depth 5",
                      flush=True)  # fmt: skip
            del case
            torch.cuda.empty_cache()
            (args.out / "bench.json").write_text(json.dumps(report, indent=1) + "\n")
            (args.out / "bench.md").write_text(markdown(report))
        if (dname, vocab) == order[0]:
            plot(report, args.out / "bench_latency.png")
    plot(report, args.out / "bench_latency.png")
    print(markdown(report))
    return 0


def markdown(report: dict[str, Any]) -> str:
    info = report["info"]
    lines = [
        f"# dyadic24 depth-{report['depth']} latency ({info['device']}, driver {info['driver']}, "
        f"CUDA {info['cuda']}, torch {info['torch']}, triton {info['triton']}, {info['date']})",
        "",
        "Median of CUDA-event-timed CUDA-graph replays (us for the whole depth-5 graph; per position = /5).",
        "",
    ]
    res = report["results"]
    impls = list(dict.fromkeys(r["impl"] for r in res))
    for dname in dict.fromkeys(r["dtype"] for r in res):
        for vocab in dict.fromkeys(r["V"] for r in res):
            if not any(r["dtype"] == dname and r["V"] == vocab for r in res):
                continue
            lines.append(f"## {dname}, V = {vocab:,}")
            lines.append("")
            lines.append("| B | " + " | ".join(impls) + " | speed-up vs torch sampler | greedy / argmax |")
            lines.append("|---:|" + "---:|" * (len(impls) + 2))
            for batch in dict.fromkeys(r["B"] for r in res):
                cell = {r["impl"]: r["median_us"] for r in res
                        if r["dtype"] == dname and r["V"] == vocab and r["B"] == batch}  # fmt: skip
                if not cell:
                    continue
                if len(cell) < len(impls):
                    continue
                speed = cell["torch-topk-softmax-multinomial"] / cell["dyadic24-sampled"]
                greedy = cell["dyadic24-greedy"] / cell["torch-argmax"]
                cells = " | ".join(f"{cell[i]:.1f}" for i in impls)
                lines.append(f"| {batch} | {cells} | {speed:.1f}x | {greedy:.2f} |")
            lines.append("")
    return "\n".join(lines) + "\n"


def plot(report: dict[str, Any], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    res = [r for r in report["results"] if r["dtype"] == "fp32" and r["V"] == 163_840]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for impl in dict.fromkeys(r["impl"] for r in res):
        pts = sorted((r["B"], r["per_position_us"]) for r in res if r["impl"] == impl)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=impl)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch B (rows)")
    ax.set_ylabel("latency per position (us, median)")
    info = report["info"]
    ax.set_title(f"V=163,840 fp32, depth 5, {info['device']}, torch {info['torch']}, triton {info['triton']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())

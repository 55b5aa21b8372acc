"""Depth-5 latency of the dyadic24 Triton proposal against the samplers an engineer would pick instead and
against the floors, all measured in one run (benchmarks/DESIGN.md "Measurement method").

For every (logit dtype, V, B): CUDA events around CUDA-graph replays, median of --replays replays
after warm-up, inputs rotated among enough buffer sets that together exceed twice the L2 cache. A
depth-5 graph holds five positions, each reading its own fresh logits buffer. The implementations:

- dyadic24-sampled / dyadic24-greedy: this kernel with every row sampled (T = 1) / greedy (T = 0);
- the peers and floors of benchmarks/peers.py: torch topk + softmax + multinomial, the exponential
  race eager and compiled, vLLM's native top-k sampler, FlashInfer's top-k and sampling kernels,
  torch.argmax; the read-only skeleton (the memory floor), a copy (twice its bytes), the launch floor.

Usage on the GPU: python benchmarks/bench_propose.py --out DIR [--quick] [--impls a,b] [--batches 1,4]
Writes DIR/bench.json, DIR/bench.md and DIR/bench_latency.png (the report is rewritten after every
case, so a run stopped early leaves every finished case behind).
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
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers import Peers, flashinfer_version

from dyadic24.kernels import propose as kp

DEPTH = 5
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}  # (the --dtypes names)
TAU = 0.7
OURS = ("dyadic24-sampled", "dyadic24-greedy", "dyadic24-tile-stage", "dyadic24-merge-stage")
SAMPLERS = (
    "torch-topk-softmax-multinomial",
    "torch-race",
    "torch-race-compiled",
    "vllm-native",
    "flashinfer",
)
FLOORS = ("read-skeleton", "copy", "launch-floor")


class Case:
    """Buffers and graphs for one (dtype, V, B) configuration."""

    def __init__(
        self, dtype: torch.dtype, vocab: int, batch: int, l2_bytes: int, device: str = "cuda"
    ) -> None:
        self.dtype, self.vocab, self.batch = dtype, vocab, batch
        self.itemsize = torch.tensor([], dtype=dtype).element_size()
        set_bytes = DEPTH * batch * vocab * self.itemsize
        self.n_sets = max(2, min(64, math.ceil(2 * l2_bytes / set_bytes)))
        gen = torch.Generator(device=device).manual_seed(batch * 1_000_003 + vocab)
        self.sets = [
            [(torch.randn(batch, vocab, device=device, generator=gen) * 4).to(dtype) for _ in range(DEPTH)]
            for _ in range(self.n_sets)
        ]
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
        self.peers = Peers(batch, vocab, dtype, TAU, DEPTH, device)
        self.dummy = self.peers.dummy

    def kernel(
        self, temp: torch.Tensor, workspace: kp.Workspace | None = None, plan: kp.Plan | None = None
    ) -> Callable[[list[torch.Tensor]], None]:
        """``plan`` (default: the default plan) on each position's logits; ``workspace`` (default: the
        case's own)."""
        ws = self.ws if workspace is None else workspace

        def run(bufs: list[torch.Tensor]) -> None:
            for p in range(DEPTH):
                kp.propose(
                    bufs[p],
                    temp,
                    self.seed,
                    self.round,
                    self.positions[p],
                    tau=TAU,
                    out=self.outs[p],
                    workspace=ws,
                    plan=plan,
                )

        return run

    def stages(self) -> dict[str, Callable[[list[torch.Tensor]], None]]:
        """The default plan's tile kernel alone, and its merge kernel alone (untagged: it waits for the
        candidates a full run of the untagged plan left in its workspace), sampled rows."""
        b, v = self.batch, self.vocab
        tab = kp.prepare("cuda")
        tau_bits = int(np.float32(TAU).view(np.uint32))
        src = kp._SRC_KIND[self.dtype]
        plan = kp.Plan.for_shape(b, v, itemsize=self.itemsize)
        plans = {"tile": plan, "merge": replace(plan, poll=False)}
        spaces = {k: kp.make_workspace(b, v, "cuda", p.tile) for k, p in plans.items()}
        kp.propose(self.sets[0][0], self.t_sampled, self.seed, self.round, self.positions[0], tau=TAU,
                   out=self.outs[0], workspace=spaces["merge"], plan=plans["merge"])  # fmt: skip

        def stage(name: str) -> Callable[[list[torch.Tensor]], None]:
            plan, ws = plans[name], spaces[name]

            def run(bufs: list[torch.Tensor]) -> None:
                for p in range(DEPTH):
                    o = self.outs[p]
                    temp = self.t_sampled.view(torch.int32)
                    common = (temp, self.seed, self.round, self.positions[p], tab.z, tab.e, *o, ws.flags)
                    bits = bufs[p].view(torch.int32 if src == 0 else torch.int16)
                    kp.launch(plan, bits, ws, common, tau_bits, tab, trace=False, src=src, stages=(name,))

            return run

        return {"dyadic24-tile-stage": stage("tile"), "dyadic24-merge-stage": stage("merge")}

    def bodies(self, stages: bool = False) -> dict[str, Callable[[list[torch.Tensor]], None]]:
        out = {"dyadic24-sampled": self.kernel(self.t_sampled), "dyadic24-greedy": self.kernel(self.t_greedy)}
        if stages:
            out.update(self.stages())
        # a baseline tree older than c41b66e (h200.sh ab) names no LAUNCHES; it launched two as well
        return {**out, **self.peers.bodies(getattr(kp, "LAUNCHES", 2))}


def time_graphs(
    case: Case,
    body: Callable[[list[torch.Tensor]], None],
    replays: int,
    warmup: int,
    stream: torch.cuda.Stream | None = None,
) -> dict[str, float]:
    """Time ``body`` as replays of one graph per logits set, warmed on ``stream`` (see capture)."""
    graphs = capture(case, body, stream)
    result = replay_times(graphs, replays, warmup)
    del graphs
    return result


def capture(
    case: Case, body: Callable[[list[torch.Tensor]], None], stream: torch.cuda.Stream | None = None
) -> list[torch.cuda.CUDAGraph]:
    """One graph of ``body`` per logits set, after running it eagerly (compile and warm outside
    capture) on ``stream``, default the current one: kernels first launched on another stream run
    slower for the rest of the process (DESIGN.md "Measurement method", "First launch")."""
    current = torch.cuda.current_stream()
    warm = current if stream is None else stream
    warm.wait_stream(current)
    with torch.cuda.stream(warm):
        for s in case.sets[:2]:
            body(s)
    current.wait_stream(warm)
    torch.cuda.synchronize()
    graphs = []
    for s in case.sets:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            body(s)
        graphs.append(g)
    return graphs


def replay_times(graphs: list[torch.cuda.CUDAGraph], replays: int, warmup: int) -> dict[str, float]:
    """Median and deciles (us) of ``replays`` CUDA-event-timed replays, rotating over ``graphs``."""
    for i in range(warmup):
        graphs[i % len(graphs)].replay()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]  # type: ignore[no-untyped-call]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]  # type: ignore[no-untyped-call]
    for i in range(replays):
        starts[i].record()
        graphs[i % len(graphs)].replay()
        ends[i].record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends, strict=True))
    return {
        "median_us": statistics.median(times),
        "p10_us": times[len(times) // 10],
        "p90_us": times[(9 * len(times)) // 10],
        "replays": replays,
        "graphs_rotated": len(graphs),
    }


def versions() -> dict[str, Any]:
    props = torch.cuda.get_device_properties(0)
    try:
        driver = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        driver = "unknown"
    repo = Path(__file__).resolve().parents[1]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True, check=False
    ).stdout.strip()
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
        "commit": commit or "unknown",
        "kernels": kernel_sources(),
        "flashinfer": flashinfer_version(),
    }


def kernel_sources() -> str:
    """The first 12 hex digits of the sha256 over the kernel modules that ran (the imported
    dyadic24.kernels' *.py, by name), so that two trees timed in one call can be told apart: a run
    that imported another tree's kernels than the one it stamps shows the other tree's digest."""
    import hashlib

    folder = Path(kp.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--quick", action="store_true", help="V = 163,840 and B = 1, 4, 64 only")
    ap.add_argument("--replays", type=int, default=200)
    ap.add_argument("--impls", help="comma-separated subset of the implementations (default: all)")
    ap.add_argument("--batches", help="comma-separated batch sizes (default 1,2,4,8,16,64,256)")
    ap.add_argument("--vocabs", help="comma-separated vocabulary sizes (default 163840,81920,262144)")
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--commit", help="the commit whose tree is measured (default: git rev-parse HEAD)")
    ap.add_argument("--stages", action="store_true", help="also the tile kernel alone and the merge alone")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    info = versions()
    if args.commit:
        info["commit"] = args.commit
    l2 = int(info["l2_bytes"]) or 60 * 2**20
    kp.prepare("cuda")
    vocabs = [int(v) for v in (args.vocabs or "163840,81920,262144").split(",")]
    batches = [int(b) for b in (args.batches or "1,2,4,8,16,64,256").split(",")]
    if args.quick:
        vocabs, batches = [163_840], [1, 4, 64]
    wanted = args.impls.split(",") if args.impls else None
    results: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    report = {"info": info, "depth": DEPTH, "tau": TAU, "results": results, "skipped": skipped}
    for vocab in vocabs:
        for dname in args.dtypes.split(","):
            for batch in batches:
                case = Case(DTYPES[dname], vocab, batch, l2)
                for name, body in case.bodies(args.stages).items():
                    if wanted is not None and name not in wanted:
                        continue
                    try:
                        r = time_graphs(case, body, args.replays, warmup=30)
                    except Exception as exc:  # a peer that cannot run here is reported, not fatal
                        skipped[f"{name} {dname}"] = f"{type(exc).__name__}: {exc}"[:300]
                        torch.cuda.synchronize()
                        continue
                    results.append(
                        {
                            "impl": name,
                            "dtype": dname,
                            "V": vocab,
                            "B": batch,
                            **r,
                            "per_position_us": r["median_us"] / DEPTH,
                        }
                    )
                    print(
                        f"{dname} V={vocab:>6} B={batch:>3} {name:<31} {r['median_us']:9.1f} us", flush=True
                    )
                del case
                torch.cuda.empty_cache()
                (args.out / "bench.json").write_text(json.dumps(report, indent=1) + "\n")
                (args.out / "bench.md").write_text(markdown(report))
    plot(report, args.out / "bench_latency.png")
    print(markdown(report))
    return 0


def derived(cell: dict[str, float]) -> dict[str, Any]:
    """Ratios of one (dtype, V, B) row: to the read-only skeleton, to the fastest peer sampler."""
    out: dict[str, Any] = {}
    if "dyadic24-sampled" in cell and "read-skeleton" in cell:
        out["sampled/skeleton"] = cell["dyadic24-sampled"] / cell["read-skeleton"]
    if "dyadic24-greedy" in cell and "read-skeleton" in cell:
        out["greedy/skeleton"] = cell["dyadic24-greedy"] / cell["read-skeleton"]
    peers = {k: v for k, v in cell.items() if k in SAMPLERS}
    if peers and "dyadic24-sampled" in cell:
        best = min(peers, key=lambda k: peers[k])
        out["fastest peer"] = best
        out["speed-up"] = peers[best] / cell["dyadic24-sampled"]
    return out


def markdown(report: dict[str, Any]) -> str:
    info = report["info"]
    lines = [
        f"# dyadic24 depth-{report['depth']} latency: {info['device']}, {info['date']},"
        f" commit {info['commit']} (kernel sources {info.get('kernels', 'not recorded')})",
        "",
        f"Driver {info['driver']}, CUDA {info['cuda']}, torch {info['torch']}, triton {info['triton']},"
        f" Python {info['python']}, FlashInfer {info.get('flashinfer', 'not recorded')}. Median of"
        " CUDA-event-timed CUDA-graph replays, us for the whole depth-5 graph (per position: / 5); tau = 0.7."
        " *skeleton* is the read-only skeleton (the bytes the rule must read, at the rate this GPU reads"
        " them); *copy* reads and writes them (twice the bytes); the speed-up is against the fastest peer"
        " sampler measured in the same run, named.",
        "",
    ]
    if report.get("skipped"):
        lines += ["Not measured: " + "; ".join(f"{k} ({v})" for k, v in report["skipped"].items()), ""]
    res = report["results"]
    impls = [i for i in (*OURS, *SAMPLERS, "torch-argmax", *FLOORS) if any(r["impl"] == i for r in res)]
    for dname in dict.fromkeys(r["dtype"] for r in res):
        for vocab in dict.fromkeys(r["V"] for r in res):
            rows = [r for r in res if r["dtype"] == dname and r["V"] == vocab]
            if not rows:
                continue
            lines += [f"## {dname}, V = {vocab:,}", ""]
            head = ["B", *impls, "sampled / skeleton", "greedy / skeleton", "fastest peer", "speed-up"]
            lines += ["| " + " | ".join(head) + " |", "|" + "---:|" * (len(head) - 2) + "---|---:|"]
            for batch in dict.fromkeys(r["B"] for r in rows):
                cell = {r["impl"]: r["median_us"] for r in rows if r["B"] == batch}
                d = derived(cell)
                vals = [f"{cell[i]:.1f}" if i in cell else "-" for i in impls]
                ratio = [f"{d[k]:.2f}" if k in d else "-" for k in ("sampled/skeleton", "greedy/skeleton")]
                peer = [d.get("fastest peer", "-"), f"{d['speed-up']:.1f}x" if "speed-up" in d else "-"]
                lines.append(f"| {batch} | " + " | ".join(vals + ratio + peer) + " |")
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
    if not res:
        return
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for impl in dict.fromkeys(r["impl"] for r in res):
        pts = sorted((r["B"], r["per_position_us"]) for r in res if r["impl"] == impl)
        style = "-" if impl.startswith("dyadic24") else (":" if impl in FLOORS else "--")
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", label=impl)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch B (rows)")
    ax.set_ylabel("latency per position (us, median of graph replays)")
    info = report["info"]
    ax.set_title(
        f"V = 163,840 fp32, depth 5, {info['device']}, torch {info['torch']}, triton {info['triton']}",
        fontsize=9,
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())

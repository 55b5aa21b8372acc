# mypy: disable-error-code="untyped-decorator"
"""The proposal inside a drafter, as a serving stack runs it (issue 44): depth 5 captured as ONE CUDA
graph, forward -> logits -> proposal -> the drawn token's embedding feeds the next position.

The drafter has the shape of a real one, with seeded random bf16 weights (only time is measured):

- ``h4096``: hidden 4,096, 32 query / 8 KV heads of 128, MLP 12,288, V = 151,936 (a Qwen3-8B-shaped
  EAGLE-3 layer);
- ``h7168``: hidden 7,168, 56 query / 8 KV heads of 128, MLP 18,432, V = 163,840 (a DeepSeek-V3 /
  Kimi K2-shaped MTP layer, with grouped-query attention standing in for MLA and a dense MLP for the
  experts).

Each position: the token's embedding and the previous hidden state (the target's at position 0) are
RMS-normed, concatenated and projected 2H -> H (as EAGLE and MTP layers do); ``--layers`` decoder
layers (default 1: RMSNorm, QKV, rotary embedding, attention over a KV cache of 2,048 context tokens
plus the drafted ones, written in place, output projection, RMSNorm, SwiGLU MLP); a final RMSNorm and
the LM head, tied to the embedding, give bf16 logits [B, V]. *bf16* feeds them to the sampler as they
are, *fp32* casts them first (as vLLM's sampler does). Rows are mixed as in serving: row b is greedy
(T = 0) when b % 4 == 3, sampled (T = 1, tau = 0.7) otherwise.

Series, every one in the same run, B = 1, 4, 16, 64, 256:

- ``forward``: the forward pass alone (the next token is the first one again): the floor;
- ``greedy``: torch.argmax of the logits: the drafter's greedy baseline, every row greedy;
- ``dyadic24``: the Triton kernel (``kernels.propose.propose`` with preallocated outputs and one
  workspace) on the mixed rows;
- ``dyadic24+q``: the same plus the dense q each verifier takes ([B, depth, V] float32 by
  ``kernels.handoff.q_dense`` after each position, inside the graph);
- ``torch-race``: the fastest torch form of benchmarks/peers.py (topk(32), softmax(v / tau),
  exponential race under torch.compile), greedy rows taking the top-1 index;
- ``flashinfer``: FlashInfer's top-k kernel, softmax, its SamplingFromProb (benchmarks/peers/README.md;
  skipped, with the reason, when .peers/libfi_topk.so is not built), greedy rows the top-1 index;
- ``dyadic24-compiled``: torch.compile (inductor, fullgraph) of the whole depth-5 loop with the custom
  op ``torch.ops.dyadic24.propose`` inside, then captured as one CUDA graph (the functional op allocates
  its outputs and a zeroed workspace per position, inside the graph). One compile at B = 1 and one with
  the batch dynamic for the others, per model and logits dtype.

Timing: CUDA events around replays of the captured graph, median of ``--replays`` after ``--warmup``
(the weights are gigabytes, so no input rotation is needed; the logits the sampler reads were just
written by the LM head, as in serving). Bits in context: after timing, the graph is replayed once more
and every position's proposal (status, token, ids, tickets) is compared with the fast reference
(``propose_fast``, in worker processes) on the logits that replay produced, for dyadic24, dyadic24+q
and dyadic24-compiled at every B and logits dtype; dyadic24+q's dense q is checked on the device
against its own tickets (q at the support's IDs = tickets * 2^-24, no other nonzero).

Memory, h7168 at B = 256 (the largest case): weights 3.6 GB (tied embedding and head 2.35 GB, one
layer 1.0 GB, the 2H x H projection 0.2 GB), KV cache 1.08 GB per layer (256 x 8 heads x 2,053 x 128
x 2 x 2 bytes), the graph's five bf16 and five fp32 logits 1.26 GB, the dense q 0.84 GB, h4096's
weights 1.7 GB resident beside them: under 10 GB of an H100's 78 GiB.

Usage on the GPU (about 5 minutes on an H100: the graphs of every series first, then the compiled
loop, whose cases start only within --budget-s, default 240 s, of the start; a case left out is listed
as not measured, and a second call with --series dyadic24-compiled runs only those):
    python benchmarks/bench_drafter.py --out DIR [--commit C] [--models h4096,h7168] [--batches 1,4]
and on a CPU, eagerly, with tiny shapes and the kernel in Triton's interpreter (tests/):
    python benchmarks/bench_drafter.py --smoke --out DIR
Writes DIR/bench_drafter.json and DIR/bench_drafter.md (rewritten after every case).
"""

from __future__ import annotations

import os
import sys

if "--smoke" in sys.argv:
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is first imported

import argparse
import concurrent.futures as cf
import contextlib
import ctypes
import json
import multiprocessing
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_propose import kernel_sources
from drafter_model import BF16, DEPTH, MODELS, SMOKE_MODEL, TAU, Drafter, draft_loop
from peers import FLASHINFER_DTYPES, FLASHINFER_LIB, K, flashinfer_version

from dyadic24.kernels import handoff
from dyadic24.kernels import propose as kp
from dyadic24.reference.fast import propose_fast

ROUND = 3
SEED_BASE = 1 << 40
GREEDY_EVERY = 4  # row b is greedy (T = 0) when b % 4 == 3: B = 1 is one sampled row
FIELDS = ("status", "token", "ids", "tickets")
SERIES = ("forward", "greedy", "dyadic24", "dyadic24+q", "torch-race", "flashinfer", "dyadic24-compiled")
CHECKED = ("dyadic24", "dyadic24+q", "dyadic24-compiled")  # the series whose proposals are compared


def race_mixed(logits: torch.Tensor, noise: torch.Tensor, greedy: torch.Tensor) -> torch.Tensor:
    """peers.race_topk for mixed rows: topk(32), softmax(v / tau), exponential race; greedy rows the
    top-1 index (a cheaper greedy path than vLLM's separate argmax)."""
    vals, idx = torch.topk(logits, K, dim=-1)
    probs = torch.softmax(vals.float() / TAU, dim=-1)
    pick = torch.gather(idx, 1, (probs / noise).argmax(dim=-1, keepdim=True)).squeeze(1)
    return torch.where(greedy, idx[:, 0], pick)


class FlashInfer:
    """FlashInfer's top-k kernel, softmax over the 32, its SamplingFromProb (peers.Peers.flashinfer, one
    position at a time); greedy rows take the top-1 index."""

    def __init__(self, batch: int, dtype: torch.dtype, device: torch.device) -> None:
        if device.type != "cuda":
            raise RuntimeError("FlashInfer's kernels need a CUDA device")
        if not FLASHINFER_LIB.is_file():
            raise RuntimeError(f"{FLASHINFER_LIB} is not built (benchmarks/peers/README.md)")
        self.lib = ctypes.CDLL(str(FLASHINFER_LIB))
        self.lib.fi_topk.restype = self.lib.fi_sample.restype = ctypes.c_int
        self.batch, self.code = batch, FLASHINFER_DTYPES[dtype]
        self.states = torch.zeros(1 << 20, dtype=torch.uint8, device=device)
        self.idx = torch.empty(batch, K, dtype=torch.int32, device=device)
        self.vals = torch.empty(batch, K, dtype=dtype, device=device)
        self.out = torch.empty(batch, dtype=torch.int32, device=device)
        self.valid = torch.empty(batch, dtype=torch.bool, device=device)
        self.seed = torch.full((1,), 42, dtype=torch.int64, device=device)
        self.offset = torch.zeros(1, dtype=torch.int64, device=device)

    def __call__(self, logits: torch.Tensor, greedy: torch.Tensor) -> torch.Tensor:
        def ptr(t: torch.Tensor) -> ctypes.c_void_p:
            return ctypes.c_void_p(t.data_ptr())

        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        v = logits.shape[1]
        st = self.lib.fi_topk(ptr(logits), self.code, ptr(self.idx), ptr(self.vals), self.batch, K, v,
                              ptr(self.states), stream)  # fmt: skip
        if st:
            raise RuntimeError(f"FlashInfer TopKDispatch failed: cudaError {st}")
        probs = torch.softmax(self.vals.float() / TAU, dim=-1).contiguous()
        st = self.lib.fi_sample(ptr(probs), ptr(self.out), ptr(self.valid), self.batch, K, ptr(self.seed),
                                ptr(self.offset), stream)  # fmt: skip
        if st:
            raise RuntimeError(f"FlashInfer SamplingFromProb failed: cudaError {st}")
        pick = torch.gather(self.idx, 1, self.out.long().unsqueeze(1)).squeeze(1)
        return torch.where(greedy, self.idx[:, 0], pick).long()


# ---------------------------------------------------------------- one (model, logits dtype, B)


class Case:
    """The inputs, caches and buffers of one (model, logits dtype, B), and each series' loop body."""

    def __init__(self, model: Drafter, batch: int, fp32: bool, device: torch.device) -> None:
        self.model, self.batch, self.fp32, self.device = model, batch, fp32, device
        s = model.shape
        gen = torch.Generator(device=device).manual_seed(batch * 1_000_003 + s.vocab)
        self.cache = model.make_cache(batch, gen)
        self.tok0 = torch.randint(0, s.vocab, (batch,), generator=gen, device=device)
        self.hid0 = torch.empty(batch, s.hidden, dtype=BF16, device=device).normal_(0.0, 1.0, generator=gen)
        rows = torch.arange(batch, device=device)
        self.greedy = rows % GREEDY_EVERY == GREEDY_EVERY - 1
        self.temperature = torch.where(self.greedy, 0.0, 1.0).to(torch.float32)
        self.seed = rows * 7919 + SEED_BASE
        self.round = torch.full((batch,), ROUND, dtype=torch.int64, device=device)
        self.positions = (
            (s.context + torch.arange(DEPTH, device=device))[:, None].expand(DEPTH, batch).contiguous()
        )
        self.outs = [kp.make_outputs(batch, device) for _ in range(DEPTH)]
        self.ws = kp.make_workspace(batch, s.vocab, device)
        self.noise = torch.empty(batch, K, dtype=torch.float32, device=device)
        self.qbuf: torch.Tensor | None = None
        self.fi: FlashInfer | None = None
        self.seen: list[torch.Tensor] = []  # the logits of the last run (held: a graph's, after a replay)
        self.compiled_outs: list[tuple[torch.Tensor, ...]] = []

    def loop(self, sample: Callable[[int, torch.Tensor], torch.Tensor]) -> None:
        tok, h = self.tok0, self.hid0
        seen = []
        for p in range(DEPTH):
            logits, h = self.model.step(tok, h, p, self.cache)
            if self.fp32:
                logits = logits.float()
            seen.append(logits)
            tok = sample(p, logits)
        self.seen = seen

    def body(
        self, series: str, race: Callable[..., torch.Tensor], compiled: Callable[..., Any]
    ) -> Callable[[], None]:
        """The depth-5 loop of ``series`` (a callable the timing runs and captures)."""

        def propose(p: int, logits: torch.Tensor) -> torch.Tensor:
            out = self.outs[p]
            kp.propose(logits, self.temperature, self.seed, self.round, self.positions[p], tau=TAU, out=out,
                       workspace=self.ws)  # fmt: skip
            return out[1].long().clamp_min(0)  # (a failed row's token is -1, clause 2.3)

        def propose_q(p: int, logits: torch.Tensor) -> torch.Tensor:
            tok = propose(p, logits)
            assert self.qbuf is not None
            handoff.q_dense(self.outs[p][2], self.outs[p][3], out=self.qbuf[:, p])
            return tok

        if series == "forward":
            return lambda: self.loop(lambda p, logits: self.tok0)
        if series == "greedy":
            return lambda: self.loop(lambda p, logits: logits.argmax(dim=-1))
        if series == "dyadic24":
            return lambda: self.loop(propose)
        if series == "dyadic24+q":
            if self.qbuf is None:
                self.qbuf = torch.empty(self.batch, DEPTH, self.model.shape.vocab, device=self.device)
            return lambda: self.loop(propose_q)
        if series == "torch-race":
            return lambda: self.loop(lambda p, logits: race(logits, self.noise.exponential_(), self.greedy))
        if series == "flashinfer":
            if self.fi is None:
                self.fi = FlashInfer(self.batch, torch.float32 if self.fp32 else BF16, self.device)
            fi = self.fi
            return lambda: self.loop(lambda p, logits: fi(logits, self.greedy))
        if series == "dyadic24-compiled":

            def run() -> None:
                self.seen, self.compiled_outs = compiled(
                    self.model, self.tok0, self.hid0, self.cache, self.temperature, self.seed, self.round,
                    self.positions, self.fp32,
                )  # fmt: skip

            return run
        raise ValueError(f"unknown series {series}")

    def proposals(self, series: str) -> list[tuple[torch.Tensor, ...]]:
        return self.compiled_outs if series == "dyadic24-compiled" else [tuple(o) for o in self.outs]

    def dense_q_ok(self) -> dict[str, Any]:
        """dyadic24+q's dense q against its own tickets, on the device: q at every support ID is tickets *
        2^-24 and nothing else is nonzero (so the row is exactly the hand-off of those tickets)."""
        assert self.qbuf is not None
        ids = torch.stack([o[2] for o in self.outs], dim=1)
        tickets = torch.stack([o[3] for o in self.outs], dim=1)
        valid = ids >= 0
        at = self.qbuf.gather(-1, ids.clamp(min=0).long())
        values_ok = torch.where(valid, at == tickets.float() * handoff.TICKET_SCALE, True).all()
        count_ok = (torch.count_nonzero(self.qbuf, dim=-1) == valid.sum(dim=-1)).all()
        return {"dense_q_values": bool(values_ok), "dense_q_nonzeros": bool(count_ok)}


# ---------------------------------------------------------------- timing


def time_graph(
    body: Callable[[], None], replays: int, warmup: int, device: torch.device
) -> tuple[dict[str, float], torch.cuda.CUDAGraph | None]:
    """Median of CUDA-event-timed replays of one graph of ``body`` (run twice eagerly first on the
    replays' stream, where torch.compile and Triton compile: DESIGN.md "Measurement method", "First
    launch"), then one more replay for the bit check. On the CPU (smoke): wall time of eager runs, the
    last one left for the bit check."""
    if device.type != "cuda":
        times = []
        for _ in range(max(1, replays)):
            t0 = time.perf_counter()
            body()
            times.append((time.perf_counter() - t0) * 1e6)
        stats = {"median_us": statistics.median(times), "p10_us": min(times), "p90_us": max(times)}
        return {**stats, "replays": len(times)}, None
    body()
    body()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    for _ in range(warmup):
        graph.replay()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]  # type: ignore[no-untyped-call]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]  # type: ignore[no-untyped-call]
    for i in range(replays):
        starts[i].record()
        graph.replay()
        ends[i].record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends, strict=True))
    graph.replay()  # the replay whose logits and proposals the bit check reads
    torch.cuda.synchronize()
    stats = {"median_us": statistics.median(times), "p10_us": times[len(times) // 10],
             "p90_us": times[(9 * len(times)) // 10]}  # fmt: skip
    return {**stats, "replays": replays}, graph


# ---------------------------------------------------------------- bits in context


def reference_outputs(path: str, temperature: Any, seed: Any, rnd: Any, position: Any) -> dict[str, Any]:
    """The fast reference on the logits saved at ``path`` (a worker process; the file is removed)."""
    logits = np.load(path)
    os.unlink(path)
    want = propose_fast(logits, temperature, seed, rnd, position, tau=TAU)
    return {f: getattr(want, f) for f in FIELDS}


class Checker:
    """Compares in-graph proposals with the fast reference on the logits the graph produced, in worker
    processes (forked before CUDA is used) while the GPU goes on; ``results()`` waits for them."""

    def __init__(self, workers: int) -> None:
        self.pool: cf.ProcessPoolExecutor | None = None
        self.tmp = Path(
            tempfile.mkdtemp(
                prefix="dyadic24_drafter_", dir="/dev/shm" if Path("/dev/shm").is_dir() else None
            )
        )
        if workers > 0:
            self.pool = cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
            self.pool.submit(int, 0).result()  # fork every worker now, before CUDA is initialised
        self.pending: list[tuple[dict[str, Any], list[Any], list[dict[str, npt.NDArray[Any]]]]] = []
        self.done: list[dict[str, Any]] = []
        self.count = 0

    def submit(self, key: dict[str, Any], case: Case, proposals: list[tuple[torch.Tensor, ...]]) -> None:
        inputs = [t.cpu().numpy() for t in (case.temperature, case.seed.view(torch.int64), case.round)]
        temperature, seed, rnd = inputs[0], inputs[1].astype(np.uint64), inputs[2].astype(np.uint64)
        futures: list[Any] = []
        got: list[dict[str, npt.NDArray[Any]]] = []
        for p in range(DEPTH):
            logits = case.seen[p].float().cpu().numpy()  # bf16 widens exactly (clause 1.2)
            path = str(self.tmp / f"l{self.count}.npy")
            self.count += 1
            np.save(path, logits)
            position = case.positions[p].cpu().numpy().astype(np.uint64)
            args = (path, temperature, seed, rnd, position)
            futures.append(
                self.pool.submit(reference_outputs, *args) if self.pool else reference_outputs(*args)
            )
            got.append({f: t.cpu().numpy().copy() for f, t in zip(FIELDS, proposals[p], strict=True)})
        self.pending.append((key, futures, got))

    def results(self, block: bool = True) -> list[dict[str, Any]]:
        """The finished checks (all of them, waiting, when ``block``)."""
        waiting = []
        for entry in self.pending:
            if not block and not all(f.done() for f in entry[1] if isinstance(f, cf.Future)):
                waiting.append(entry)
                continue
            key, futures, got = entry
            rows = mismatched = 0
            first: dict[str, Any] | None = None
            for p, (fut, have) in enumerate(zip(futures, got, strict=True)):
                want = fut.result() if isinstance(fut, cf.Future) else fut
                differ = np.zeros(len(want["status"]), dtype=bool)
                for f in FIELDS:
                    d = have[f] != want[f]
                    differ |= d.reshape(len(differ), -1).any(axis=1)
                rows += len(differ)
                mismatched += int(differ.sum())
                if first is None and differ.any():
                    r = int(np.flatnonzero(differ)[0])
                    first = {
                        "position": p,
                        "row": r,
                        **{f: [have[f][r].tolist(), want[f][r].tolist()] for f in FIELDS},
                    }
            self.done.append({**key, "rows": rows, "mismatched": mismatched, "first_mismatch": first,
                              "passed": mismatched == 0 and key.get("dense_q_values", True)
                              and key.get("dense_q_nonzeros", True)})  # fmt: skip
        self.pending = waiting
        return self.done

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
        shutil.rmtree(self.tmp, ignore_errors=True)


# ---------------------------------------------------------------- the run


def versions(device: torch.device, commit: str | None) -> dict[str, Any]:
    repo = Path(__file__).resolve().parents[1]
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True,
                          check=False).stdout.strip()  # fmt: skip
    info: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": commit or head or "unknown",
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "kernels": kernel_sources(),
        "flashinfer": flashinfer_version(),
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        try:
            query = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
            driver = subprocess.run(query, capture_output=True, text=True, check=False).stdout.strip()
        except OSError:
            driver = "unknown"
        info.update(device=torch.cuda.get_device_name(device), sm_count=props.multi_processor_count)
        info.update(memory_gib=round(props.total_memory / 2**30, 1), driver=driver, cuda=torch.version.cuda)
    else:
        info.update(device="cpu (smoke: eager, Triton interpreter)", driver="-", cuda="-")
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--smoke", action="store_true", help="CPU: tiny drafter, eager, the kernel interpreted")
    ap.add_argument("--models", default="h4096,h7168")
    ap.add_argument("--batches", help="default 1,4,16,64,256 (smoke: 1,3)")
    ap.add_argument("--dtypes", default="bf16,fp32", help="logits fed to the samplers")
    ap.add_argument("--series", help=f"comma-separated subset of {','.join(SERIES)}")
    ap.add_argument("--layers", type=int, help="decoder layers per drafter (default 1)")
    ap.add_argument("--replays", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=5)
    budget = "no compiled-loop case starts after this many seconds (each is reported as skipped)"
    ap.add_argument("--budget-s", type=float, default=240.0, help=budget)
    ap.add_argument(
        "--compile-backend", help="torch.compile backend of the loop (default inductor; smoke aot_eager)"
    )
    ap.add_argument(
        "--check-workers",
        type=int,
        help="reference processes (default min(8, cores - 4): cores left for inductor; smoke 0)",
    )
    ap.add_argument("--commit", help="the commit whose tree is measured (default: git rev-parse HEAD)")
    args = ap.parse_args(argv)
    t_start = time.monotonic()
    workers = args.check_workers
    if workers is None:
        workers = 0 if args.smoke else max(1, min(8, (os.cpu_count() or 6) - 4))
    checker = Checker(workers)  # (forks first)
    try:
        return run(args, checker, t_start)
    finally:
        checker.close()


def run(args: argparse.Namespace, checker: Checker, t_start: float) -> int:
    device = torch.device("cpu") if args.smoke else torch.device("cuda")
    shapes = {"smoke": SMOKE_MODEL} if args.smoke else {m: MODELS[m] for m in args.models.split(",")}
    if args.layers:
        shapes = {k: replace(v, layers=args.layers) for k, v in shapes.items()}
    batches = [int(b) for b in (args.batches or ("1,3" if args.smoke else "1,4,16,64,256")).split(",")]
    series = args.series.split(",") if args.series else list(SERIES)
    if device.type != "cuda" and "flashinfer" in series:
        series.remove("flashinfer")
        report_skipped = {"flashinfer": "its kernels need a CUDA device"}
    else:
        report_skipped = {}
    replays, warmup = (1, 0) if args.smoke else (args.replays, args.warmup)
    backend = args.compile_backend or ("aot_eager" if args.smoke else "inductor")
    # one code object compiled a few times per model and dtype: past the default limit (8) dynamo would
    # fall back to eager silently
    for name, limit in (
        ("recompile_limit", 64),
        ("cache_size_limit", 64),
        ("accumulated_recompile_limit", 1024),
    ):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, limit)
    race: Callable[..., torch.Tensor] = race_mixed
    if not args.smoke:
        race = torch.compile(race_mixed, dynamic=True, fullgraph=True)
    compiled = torch.compile(draft_loop, fullgraph=True, backend=backend)
    kp.prepare(device)  # the exp table on the device, before any capture
    info = versions(device, args.commit)
    report: dict[str, Any] = {
        "info": info,
        "config": {
            "depth": DEPTH,
            "tau": TAU,
            "greedy_rows": f"b % {GREEDY_EVERY} == {GREEDY_EVERY - 1}",
            "replays": replays,
            "warmup": warmup,
            "compile_backend": backend,
            "smoke": args.smoke,
            "models": {k: asdict(v) for k, v in shapes.items()},
        },
        "results": [],
        "checks": [],
        "skipped": report_skipped,
        "phases_s": {},
        "cases_s": [],
    }
    models: dict[str, Drafter] = {}
    for i, (name, shape) in enumerate(shapes.items()):
        models[name] = Drafter(shape, device, seed=44 + i)
        models[name].requires_grad_(False)

    def write() -> None:
        report["checks"] = checker.results(block=False)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench_drafter.json").write_text(json.dumps(report, indent=1) + "\n")
        (args.out / "bench_drafter.md").write_text(markdown(report))

    def measure(name: str, dname: str, batch: int, case: Case, s: str) -> None:
        key = {"model": name, "dtype": dname, "B": batch, "series": s}
        try:
            r, graph = time_graph(case.body(s, race, compiled), replays, warmup, device)
        except Exception as exc:  # a series that cannot run here is reported, not fatal
            report["skipped"][f"{s} {name} {dname} B={batch}"] = f"{type(exc).__name__}: {exc}"[:400]
            print(traceback.format_exc(limit=3), file=sys.stderr, flush=True)
            if device.type == "cuda":
                with contextlib.suppress(Exception):  # (a failed capture may leave an error behind)
                    torch.cuda.synchronize()
            return
        if device.type == "cuda":
            r["peak_gib"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
        report["results"].append({**key, **r})
        print(f"{name} {dname} B={batch:>3} {s:<18} {r['median_us']:10.1f} us", flush=True)
        if s in CHECKED:
            extra = case.dense_q_ok() if s == "dyadic24+q" else {}
            checker.submit({**key, **extra}, case, case.proposals(s))
        del graph

    dtypes = args.dtypes.split(",")
    eager = [s for s in series if s != "dyadic24-compiled"]
    compiled_series = [s for s in series if s == "dyadic24-compiled"]
    for phase, wanted in (("graphs", eager), ("compiled loop", compiled_series)):
        if not wanted:
            continue
        t_phase = time.monotonic()
        # the compiled phase takes every model at one logits dtype before the next dtype, so that a
        # budget that runs out leaves both models measured
        combos = [(n, d) for n in models for d in dtypes]
        if phase == "compiled loop":
            combos = [(n, d) for d in dtypes for n in models]
        for name, dname in combos:
            for batch in batches:
                if phase == "compiled loop" and time.monotonic() - t_start > args.budget_s:
                    report["skipped"][f"dyadic24-compiled {name} {dname} B={batch}"] = (
                        f"time budget: {args.budget_s:.0f} s spent before it started (--budget-s)"
                    )
                    continue
                t_case = time.monotonic()
                if device.type == "cuda":
                    torch.cuda.reset_peak_memory_stats(device)
                case = Case(models[name], batch, dname == "fp32", device)
                for s in wanted:
                    measure(name, dname, batch, case, s)
                del case
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                seconds = round(time.monotonic() - t_case, 1)
                report["cases_s"].append(
                    {"phase": phase, "model": name, "dtype": dname, "B": batch, "s": seconds}
                )
                write()
        report["phases_s"][phase] = round(time.monotonic() - t_phase, 1)
    report["checks"] = checker.results()
    report["phases_s"]["total"] = round(time.monotonic() - t_start, 1)
    write()
    print(markdown(report))
    failed = [c for c in report["checks"] if not c["passed"]]
    return 1 if failed else 0


# ---------------------------------------------------------------- the report


def derived(cell: dict[str, float]) -> dict[str, str]:
    """One (model, dtype, B) row's ratios: the proposal's share of the draft step (over the forward
    alone) and sampled drafting's extra cost over greedy drafting."""
    out: dict[str, str] = {}
    fwd, greedy = cell.get("forward"), cell.get("greedy")
    for s in ("dyadic24", "torch-race", "flashinfer"):
        t = cell.get(s)
        if t is None:
            continue
        if fwd is not None:
            out[f"{s} share"] = f"{100 * (t - fwd) / t:.1f} %"
        if greedy is not None:
            out[f"{s} - greedy"] = f"{t - greedy:+.1f} ({100 * (t - greedy) / greedy:+.1f} %)"
    if "dyadic24" in cell:
        for s, label in (("dyadic24+q", "dense q"), ("dyadic24-compiled", "compiled - graph")):
            if s in cell:
                out[label] = f"{cell[s] - cell['dyadic24']:+.1f}"
    return out


def markdown(report: dict[str, Any]) -> str:
    info, cfg = report["info"], report["config"]
    lines = [
        f"# dyadic24 inside a drafter: depth-{cfg['depth']} draft step, {info['device']}, {info['date']},"
        f" commit {info['commit']} (kernel sources {info['kernels']})",
        "",
        f"Driver {info['driver']}, CUDA {info['cuda']}, torch {info['torch']}, triton {info['triton']},"
        f" Python {info['python']}, FlashInfer {info['flashinfer']}. Microseconds per depth-5 draft step"
        " (forward -> logits -> proposal -> the token's embedding, five times), "
        + (
            "wall time of one eager run (smoke: tiny shapes, the kernel interpreted; not a measurement)"
            if cfg["smoke"]
            else f"one CUDA graph, median of {cfg['replays']} CUDA-event-timed replays"
        )
        + f"; tau = {cfg['tau']}; rows mixed (greedy where"
        f" {cfg['greedy_rows']}). *share*: (series - forward) / series, the proposal's part of the draft"
        " step; *- greedy*: sampled drafting's extra cost over the greedy argmax drafter, us (and %)."
        " dyadic24+q adds the dense q [B, 5, V] float32 a verifier takes; dyadic24-compiled is torch.compile"
        f" ({cfg['compile_backend']}) of the whole loop with the custom op, captured as one graph.",
        "",
    ]
    if report.get("skipped"):
        lines += ["Not measured: " + "; ".join(f"{k} ({v})" for k, v in report["skipped"].items()), ""]
    res = report["results"]
    for model, shape in cfg["models"].items():
        for dname in dict.fromkeys(r["dtype"] for r in res if r["model"] == model):
            rows = [r for r in res if r["model"] == model and r["dtype"] == dname]
            lines += [f"## {shape['title']}, {shape['layers']} layer(s), {dname} logits", ""]
            impls = [s for s in SERIES if any(r["series"] == s for r in rows)]
            extra = [
                "dyadic24 share",
                "dyadic24 - greedy",
                "torch-race - greedy",
                "flashinfer - greedy",
                "dense q",
            ]
            extra += ["compiled - graph"]
            head = ["B", *impls, *extra, "peak GiB"]
            lines += ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
            for batch in dict.fromkeys(r["B"] for r in rows):
                cell = {r["series"]: r["median_us"] for r in rows if r["B"] == batch}
                d = derived(cell)
                peaks = [r["peak_gib"] for r in rows if r["B"] == batch and "peak_gib" in r]
                vals = [f"{cell[s]:.1f}" if s in cell else "-" for s in impls]
                vals += [d.get(k, "-") for k in extra] + [f"{max(peaks):.1f}" if peaks else "-"]
                lines.append(f"| {batch} | " + " | ".join(vals) + " |")
            lines.append("")
    checks = report.get("checks", [])
    if checks:
        ok = sum(c["passed"] for c in checks)
        lines += [
            f"## Bits in context: {ok} / {len(checks)} checks passed",
            "",
            "Every position's proposal (status, token, ids, tickets) of the graph's last replay against the"
            " fast reference on the logits that replay produced; dyadic24+q's dense q against its tickets.",
            "",
            "| series | model | logits | B | rows | mismatched | dense q | passed |",
            "|---|---|---|---:|---:|---:|---|---|",
        ]
        for c in checks:
            dq = (
                "-"
                if "dense_q_values" not in c
                else ("ok" if c["dense_q_values"] and c["dense_q_nonzeros"] else "WRONG")
            )
            cells = [c["series"], c["model"], c["dtype"], c["B"], c["rows"], c["mismatched"], dq]
            lines.append("| " + " | ".join(map(str, cells)) + f" | {'yes' if c['passed'] else 'NO'} |")
        lines.append("")
    if report.get("phases_s"):
        lines += ["Wall time (s): " + ", ".join(f"{k} {v}" for k, v in report["phases_s"].items()), ""]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())

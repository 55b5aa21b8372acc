"""The sharded check's sections on the call itself (dyadic24.kernels.sharded_check): argument errors
raised alike on every rank, workspace and outputs reused, the bytes exchanged, CUDA graphs of a
sharded call and its latency."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from dyadic24.api import ArgumentError
from dyadic24.kernels.backend import interpreting, select_backend

select_backend()

from dyadic24.kernels import fuzz, sharded  # noqa: E402
from dyadic24.kernels import propose as unsharded  # noqa: E402
from dyadic24.kernels.sharded_check_rows import (  # noqa: E402
    Ctx,
    Rows,
    Tally,
    any_rank,
    barrier,
    check_rows,
    make_split,
    pack,
    row_details,
    row_tensors,
    shard_tensor,
)


def _expect_error(ctx: Ctx, fn: Callable[[], object]) -> str:
    try:
        fn()
    except ArgumentError as exc:
        return exc.argument
    return "none"


def check_validation(ctx: Ctx) -> dict[str, Any]:
    """clause 1.5: a bad argument on one rank raises an ArgumentError naming it on EVERY rank."""
    rank, world, dev = ctx.rank, ctx.world, ctx.device
    rng = np.random.default_rng(5)
    rows = Rows.of(fuzz.make_call(rng, 3, 40, "float32", [], families=("normal",)))
    offsets, sizes = make_split(rng, 40, world, "even")
    off, size = offsets[rank], sizes[rank]
    last = world - 1
    local = shard_tensor(rows, off, size, dev)
    per_row = row_tensors(rows, dev)

    def call(lg: Any = local, o: Any = off, total: Any = 40, tau: Any = rows.tau, **kw: Any) -> object:
        return sharded.propose_sharded(lg, o, total, *kw.pop("per_row", per_row), tau=tau, **kw)

    def shifted(delta: int) -> object:
        return call(o=off + delta if rank == last and size > 1 else off)

    cases: dict[str, tuple[Callable[[], object], str]] = {
        "valid call": (call, "none"),
        "overlapping shards (last rank starts one token early)": (lambda: shifted(-1), "vocab_offset"),
        "vocab_total differs on the last rank": (
            lambda: call(total=41 if rank == last else 40),
            "vocab_total",
        ),
        "shards cover less than vocab_total": (lambda: call(total=41), "vocab_total"),
        "shard beyond vocab_total on rank 0": (
            lambda: call(total=40 if rank else size - 1 + off),
            "vocab_offset",
        ),
        "int32 logits on the last rank": (
            lambda: call(lg=local.view(torch.int32) if rank == last else local),
            "local_logits",
        ),
        "tau differs on rank 0": (lambda: call(tau=np.float32(0.5) if rank == 0 else rows.tau), "tau"),
        "tau not finite everywhere": (lambda: call(tau=float("inf")), "tau"),
        "B differs on the last rank": (
            lambda: call(
                lg=local[:2] if rank == last else local,
                per_row=[t[:2] for t in per_row] if rank == last else per_row,
            ),
            "local_logits",
        ),
        "temperature float64 on rank 0": (
            lambda: call(per_row=[per_row[0].double(), *per_row[1:]] if rank == 0 else per_row),
            "temperature",
        ),
        "seed of the wrong length on the last rank": (
            lambda: call(per_row=[per_row[0], per_row[1][:1], *per_row[2:]] if rank == last else per_row),
            "seed",
        ),
        "vocab_offset not an integer on rank 0": (
            lambda: call(o=float(off) if rank == 0 else off),
            "vocab_offset",
        ),
        "workspace with a partition gap": (
            lambda: sharded.make_sharded_workspace(3, size, off + (1 if rank == last and size else 0), 40),
            "vocab_offset",
        ),
        "workspace for another B (every rank)": (
            lambda: _ws_mismatch(local, off, per_row, rows.tau),
            "workspace",
        ),
        "check_replicated with another seed on the last rank": (
            lambda: sharded.check_replicated(
                per_row[0], per_row[1] + (1 if rank == last else 0), per_row[2], per_row[3], tau=rows.tau
            ),
            "seed",
        ),
    }
    results: dict[str, dict[str, Any]] = {}
    for name, (fn, want) in cases.items():
        got = _expect_error(ctx, fn)
        barrier(ctx)  # every rank left the case (a hang here would be a failed consistency)
        every: list[Any] = [None] * world
        dist.all_gather_object(every, got)
        results[name] = {"expected": want, "ranks": every, "passed": all(g == want for g in every)}
    return {"passed": all(r["passed"] for r in results.values()), "cases": results}


def _ws_mismatch(local: torch.Tensor, off: int, per_row: Sequence[torch.Tensor], tau: Any) -> object:
    """A workspace made for B = 2 used with B = 3 rows: raises locally, before any collective."""
    ws = sharded.make_sharded_workspace(2, int(local.shape[1]), off, 40)
    return sharded.propose_sharded(local, off, 40, *per_row, tau=tau, workspace=ws)


def check_reuse(ctx: Ctx) -> dict[str, Any]:
    """Workspace and out reused across calls (the capturable form), check_replicated."""
    rng = np.random.default_rng(9)
    tally = Tally()
    vocab = 20000 if not interpreting() else 300
    offsets, sizes = make_split(rng, vocab, ctx.world, "uneven")
    off, size = offsets[ctx.rank], sizes[ctx.rank]
    batch = 4
    ws = sharded.make_sharded_workspace(batch, size, off, vocab, tile=64 if interpreting() else 1024)
    outs = sharded.make_outputs(batch, ctx.device)
    for k in range(2):
        call = fuzz.make_call(rng, batch, vocab, "float32", ctx.table_z)
        rows = Rows.of(call)
        call_tau = np.float32(0.7) if k == 0 else call.tau
        rows = Rows(rows.logits, rows.temperature, rows.seed, rows.round, rows.position, call_tau)
        per_row = row_tensors(rows, ctx.device)
        sharded.check_replicated(*per_row, tau=rows.tau)
        res = sharded.propose_sharded(
            shard_tensor(rows, off, size, ctx.device),
            off,
            vocab,
            *per_row,
            tau=rows.tau,
            out=outs,
            workspace=ws,
        )
        same_out = all(a is b for a, b in zip(res, outs, strict=True))
        check_rows(
            ctx,
            tally,
            rows,
            offsets,
            sizes,
            pack(outs),
            unsharded_too=ctx.cuda,
            extra=row_details(call=[k] * batch, returned_out=[same_out] * batch),
        )
        if not same_out:
            tally.failing["returned_tensors_are_not_out"] += 1
    return {
        "passed": tally.passed,
        "rows": tally.rows,
        "tile": ws.tile,
        "n_tiles": ws.n_tiles,
        "failing_rows": dict(tally.failing),
        "failures": tally.examples,
    }


def check_exchange(ctx: Ctx) -> dict[str, Any]:
    """Bytes per row, counted from the exchanged tensors, against gathering the logit shards."""
    vocab, batch = 163840, 4
    offsets, sizes = make_split(np.random.default_rng(0), vocab, ctx.world, "even")
    ws = sharded.make_sharded_workspace(batch, sizes[ctx.rank], offsets[ctx.rank], vocab)
    sent = ws.send.numel() * ws.send.element_size() // batch
    received = ws.gathered.numel() * ws.gathered.element_size() // batch
    assert sent == ws.bytes_sent_per_row and received == ws.bytes_received_per_row
    shard_f32 = max(sizes) * 4
    return {
        "passed": True,
        "world": ctx.world,
        "vocab": vocab,
        "record": "32 int64 keys + 1 int64 flags word",
        "bytes_sent_per_row_per_rank": sent,
        "bytes_received_per_row_per_rank": received,
        "collectives_per_call": 1,
        "descriptor_bytes_per_call_without_workspace": sharded.DESCRIPTOR_WORDS * 8,
        "logit_shard_gather_bytes_sent_per_row_per_rank": {"float32": shard_f32, "bf16/fp16": shard_f32 // 2},
        "logit_shard_gather_bytes_received_per_row_per_rank": {"float32": vocab * 4, "bf16/fp16": vocab * 2},
        "ratio_float32": round(vocab * 4 / received, 1),
    }


def _capture(fn: Callable[[], object]) -> tuple[torch.cuda.CUDAGraph | None, str | None]:
    try:
        side = torch.cuda.Stream()  # type: ignore[no-untyped-call]
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        time.sleep(0.2)  # let the NCCL watchdog retire the warm-up's work before capture starts
        graph = torch.cuda.CUDAGraph()
        # thread_local: the NCCL watchdog thread queries CUDA events while this thread captures
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            fn()
        torch.cuda.synchronize()
        return graph, None
    except Exception as exc:  # reported; the caller falls back to eager
        torch.cuda.synchronize()
        return None, repr(exc)[:2000]


def check_graph(ctx: Ctx) -> dict[str, Any]:
    """A captured sharded call: identical bits on every replay, fresh inputs through the static buffers."""
    if not ctx.cuda:
        return {"passed": True, "skipped": "CUDA graphs need CUDA devices"}
    rng = np.random.default_rng(21)
    batch, vocab = 8, 50000
    offsets, sizes = make_split(rng, vocab, ctx.world, "uneven")
    off, size = offsets[ctx.rank], sizes[ctx.rank]
    tau = np.float32(0.7)
    first = Rows.of(fuzz.make_call(rng, batch, vocab, "float32", ctx.table_z))
    first = Rows(first.logits, first.temperature, first.seed, first.round, first.position, tau)
    unsharded.prepare(ctx.device)
    ws = sharded.make_sharded_workspace(batch, size, off, vocab)
    outs = sharded.make_outputs(batch, ctx.device)
    static = [shard_tensor(first, off, size, ctx.device), *row_tensors(first, ctx.device)]

    def fn() -> object:
        return sharded.propose_sharded(static[0], off, vocab, *static[1:], tau=tau, out=outs, workspace=ws)

    graph, error = _capture(fn)
    captured = not any_rank(ctx, graph is None)
    if not captured:
        return {"passed": False, "captured": False, "capture_error": error}
    tally = Tally()
    assert graph is not None
    graph.replay()
    base = pack(outs).clone()
    check_rows(ctx, tally, first, offsets, sizes, base, fast_select="all")
    differing = 0
    for _ in range(ctx.args.replays):
        for t in outs:
            t.fill_(-7)
        graph.replay()
        differing += int(not torch.equal(pack(outs), base))
    for _ in range(5):
        fresh = Rows.of(fuzz.make_call(rng, batch, vocab, "float32", ctx.table_z))
        fresh = Rows(fresh.logits, fresh.temperature, fresh.seed, fresh.round, fresh.position, tau)
        for dst, src in zip(
            static, [shard_tensor(fresh, off, size, ctx.device), *row_tensors(fresh, ctx.device)], strict=True
        ):
            dst.copy_(src)
        graph.replay()
        check_rows(ctx, tally, fresh, offsets, sizes, pack(outs), fast_select="all")
    return {
        "passed": tally.passed and differing == 0,
        "captured": True,
        "shape": [batch, vocab],
        "sizes": sizes,
        "replays": ctx.args.replays,
        "replays_with_different_bits": differing,
        "rows_checked": tally.rows,
        "failing_rows": dict(tally.failing),
        "failures": tally.examples,
    }


def _timed(ctx: Ctx, fn: Callable[[], object], replays: int, graphs: bool) -> dict[str, Any]:
    graph, error = _capture(fn) if graphs else (None, "not requested")
    use_graph = not any_rank(ctx, graph is None)
    run: Callable[[], object] = graph.replay if use_graph and graph is not None else fn
    for _ in range(10):
        run()
    samples: list[float] = []
    start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    stop = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    for _ in range(replays):
        barrier(ctx)
        start.record()
        run()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop))
    barrier(ctx)
    burst = 100
    start.record()
    for _ in range(burst):
        run()
    stop.record()
    stop.synchronize()
    result: dict[str, Any] = {
        "mode": "cuda_graph" if use_graph else "eager",
        "median_ms": round(float(np.median(samples)), 4),
        "p10_ms": round(float(np.percentile(samples, 10)), 4),
        "p90_ms": round(float(np.percentile(samples, 90)), 4),
        "back_to_back_ms": round(start.elapsed_time(stop) / burst, 4),
        "samples": replays,
    }
    if graphs and not use_graph:
        result["capture_error"] = error or "another rank failed to capture"
    return result


def _perf_batch(ctx: Ctx, rows: Rows, off: int, size: int) -> dict[str, Any]:
    """Timings of one batch size: the sharded call, the logit-gather alternative, one GPU alone."""
    batch, vocab, world = rows.batch, rows.vocab, ctx.world
    local = shard_tensor(rows, off, size, ctx.device)
    per_row = row_tensors(rows, ctx.device)
    ws = sharded.make_sharded_workspace(batch, size, off, vocab)
    souts = sharded.make_outputs(batch, ctx.device)
    uws = unsharded.make_workspace(batch, vocab, ctx.device)
    uouts = unsharded.make_outputs(batch, ctx.device)
    gathered = torch.empty((world * batch, size), dtype=torch.float32, device=ctx.device)
    full = torch.empty((batch, vocab), dtype=torch.float32, device=ctx.device)
    whole = torch.from_numpy(rows.logits.copy()).to(ctx.device)
    full_in = gathered.view(1, vocab) if batch == 1 else full  # rank-major is ID order for one row

    def run_sharded_() -> object:
        return sharded.propose_sharded(local, off, vocab, *per_row, tau=rows.tau, out=souts, workspace=ws)

    def run_gather() -> object:
        sharded.all_gather_tensor(gathered, local, group=None)
        if batch > 1:
            full.view(batch, world, size).copy_(gathered.view(world, batch, size).transpose(0, 1))
        return unsharded.propose(full_in, *per_row, tau=rows.tau, out=uouts, workspace=uws)

    def run_single() -> object:
        return unsharded.propose(whole, *per_row, tau=rows.tau, out=uouts, workspace=uws)

    entry: dict[str, Any] = {
        "sharded": _timed(ctx, run_sharded_, ctx.args.replays, True),
        "gather_logits_then_unsharded": _timed(ctx, run_gather, ctx.args.replays, True),
        "one_gpu_unsharded_full_row": _timed(ctx, run_single, ctx.args.replays, True),
    }
    entry["sharded_equals_gather_path"] = bool(torch.equal(pack(souts), pack(uouts)))
    return entry


def check_perf(ctx: Ctx) -> dict[str, Any]:
    """Latency of one position (information): sharded, vs gather the shards + unsharded, vs one GPU."""
    if not ctx.cuda:
        return {"passed": True, "skipped": "timing needs CUDA devices"}
    vocab = 163840
    world, rank = ctx.world, ctx.rank
    rng = np.random.default_rng(31)
    unsharded.prepare(ctx.device)
    offsets, sizes = make_split(rng, vocab, world, "even")
    off, size = offsets[rank], sizes[rank]
    out: dict[str, Any] = {"vocab": vocab, "sizes": sizes, "replays": ctx.args.replays, "by_batch": {}}
    for batch in (1, 2, 4):
        rows = Rows.of(fuzz.make_call(rng, batch, vocab, "float32", [], families=("normal",)))
        rows = Rows(rows.logits, rows.temperature, rows.seed, rows.round, rows.position, np.float32(0.7))
        entry = _perf_batch(ctx, rows, off, size)
        every: list[Any] = [None] * world
        dist.all_gather_object(every, entry)
        out["by_batch"][str(batch)] = {f"rank{r}": e for r, e in enumerate(every)}
    out["passed"] = all(e["sharded_equals_gather_path"] for b in out["by_batch"].values() for e in b.values())
    return out

"""The vocabulary-sharded proposal across ranks: bit-exactness, bytes exchanged and latency, with reports.

    torchrun --nproc_per_node 2 -m dyadic24.kernels.sharded_check --out DIR
    python -m dyadic24.kernels.sharded_check --out DIR [--world 2]       (starts the ranks itself)
    TRITON_INTERPRET=0 python -m dyadic24.kernels.sharded_check --aot    (compile for sm_90, no GPU)

NCCL on GPUs (one GPU per rank), gloo on CPUs with the Triton interpreter (the tests use small sizes).
NVLink multicast stays off: NCCL_NVLS_ENABLE=0 and TORCH_SYMM_MEM_DISABLE_MULTICAST=1 are set before
the process group is created. Sections (DIR/sharded_check.json, DIR/sharded_check.md, written by rank 0;
exit status 0 iff all pass):
  environment  torch, triton, CUDA, NCCL, driver versions; every rank's device; backend
  golden       every golden vector split across the ranks (the split pattern rotates: even, uneven,
               reversed rank order, one rank holding everything, shuffled), every rank's outputs
               against the expected outputs, the fast reference and (GPU) the unsharded kernel
  statuses     targeted rows: NaN / +inf / -inf in one rank's shard only, signed-zero and value ties
               across shard boundaries, bad temperatures, vocab_total < world (empty ranks)
  fuzz         N fuzzed rows (dyadic24.kernels.fuzz: every status and hard case; V up to 262,144; even,
               uneven, reversed, empty-rank, shuffled and tile-boundary splits; float32 / bfloat16 /
               float16) -- every rank's outputs against the unsharded kernel on rank 0 over the full
               rows and, on a sample, the fast reference
  validation   argument errors raise the same ArgumentError on every rank (clause 1.5)
  reuse        workspace and out reused across calls, check_replicated
  exchange     bytes per row of the exchange (from the tensor sizes) against gathering the logit shards
  graph        CUDA graph of a sharded call: replays, fresh inputs (CUDA only)
  perf         latency of one position at B = 1, 2, 4, V = 163,840 split evenly: sharded, against
               all_gather of the logit shards + the unsharded kernel, and one GPU alone (CUDA only)
Every rank's outputs are gathered to rank 0 (an extra all_gather of the checker, not of the method)
and compared there; the result is the same on every rank or the row counts as a mismatch. This module
is the driver; the sections are in sharded_check_bits (golden, statuses, fuzz) and sharded_check_call
(validation, reuse, exchange, graph, perf), what they share in sharded_check_rows, and --aot is
aot_check.check_sharded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from dyadic24.kernels.backend import interpreting, select_backend

select_backend()

from dyadic24.kernels.gpu_check import report_tail, section_table, versions  # noqa: E402
from dyadic24.kernels.sharded_check_bits import check_fuzz, check_golden, check_statuses  # noqa: E402
from dyadic24.kernels.sharded_check_call import (  # noqa: E402
    check_exchange,
    check_graph,
    check_perf,
    check_reuse,
    check_validation,
)
from dyadic24.kernels.sharded_check_rows import Ctx  # noqa: E402

NCCL_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}  # never NVLink multicast


# ---------------------------------------------------------------- environment, reports, driver


def _driver_version() -> str:
    try:
        proc = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        return (
            proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else "unknown"
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def environment(ctx: Ctx) -> dict[str, Any]:
    env: dict[str, Any] = {
        **versions(),
        "backend": str(dist.get_backend()),
        "world": ctx.world,
        "nccl_env": {k: os.environ.get(k) for k in NCCL_ENV},
    }
    mine = str(ctx.device)
    if ctx.cuda:
        mine = f"{ctx.device}: {torch.cuda.get_device_name(ctx.device)}"
        env["cuda_runtime"] = torch.version.cuda
        env["driver"] = _driver_version()
        try:
            env["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())  # type: ignore[no-untyped-call]
        except Exception as exc:  # pragma: no cover - depends on the build
            env["nccl"] = f"unknown ({exc!r})"
        env["capability"] = list(torch.cuda.get_device_capability(ctx.device))
    every: list[Any] = [None] * ctx.world
    dist.all_gather_object(every, mine)
    env["devices"] = every
    return env


def _markdown(report: dict[str, Any]) -> str:
    skip = ("passed", "failures", "cases", "by_batch", "error")
    lines = section_table("# dyadic24 sharded proposal check", report, skip)
    perf = report["sections"].get("perf", {})
    if perf.get("by_batch"):
        lines += [
            "",
            f"## latency of one position, V = {perf['vocab']} split {perf['sizes']} (median ms per "
            "rank; mode; back-to-back ms)",
            "",
            "| B | sharded | all_gather logits + unsharded | one GPU, unsharded |",
            "|---|---|---|---|",
        ]
        for batch, ranks in perf["by_batch"].items():
            cells = []
            for what in ("sharded", "gather_logits_then_unsharded", "one_gpu_unsharded_full_row"):
                per = [ranks[r][what] for r in sorted(ranks)]
                cells.append(
                    " / ".join(f"{p['median_ms']}" for p in per) + f" ({per[0]['mode']}; "
                    f"{per[0]['back_to_back_ms']})"
                )
            lines.append(f"| {batch} | " + " | ".join(cells) + " |")
    exch = report["sections"].get("exchange", {})
    if "bytes_sent_per_row_per_rank" in exch:
        lines += [
            "",
            "## bytes per row",
            "",
            f"- sharded: {exch['bytes_sent_per_row_per_rank']} B sent, "
            f"{exch['bytes_received_per_row_per_rank']} B received per rank ({exch['record']})",
            f"- gathering the float32 logit shards instead: "
            f"{exch['logit_shard_gather_bytes_sent_per_row_per_rank']['float32']} B sent, "
            f"{exch['logit_shard_gather_bytes_received_per_row_per_rank']['float32']} B received per rank",
        ]
    val = report["sections"].get("validation", {})
    if val.get("cases"):
        lines += ["", "## validation", "", "| case | expected | every rank |", "|---|---|---|"]
        for name, c in val["cases"].items():
            lines.append(f"| {name} | {c['expected']} | {', '.join(c['ranks'])} |")
    lines += report_tail(report, ("failures", "error"))
    return "\n".join(lines) + "\n"


SECTIONS: dict[str, Callable[[Ctx], dict[str, Any]]] = {
    "golden": check_golden,
    "statuses": check_statuses,
    "validation": check_validation,
    "reuse": check_reuse,
    "exchange": check_exchange,
    "fuzz": check_fuzz,
    "graph": check_graph,
    "perf": check_perf,
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default=None, help="directory for sharded_check.json / sharded_check.md")
    parser.add_argument("--world", type=int, default=2, help="ranks to start when not under torchrun")
    parser.add_argument("--backend", choices=("auto", "nccl", "gloo"), default="auto")
    parser.add_argument("--rows", type=int, default=100000, help="fuzzed rows (default 100000)")
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--max-vocab", type=int, default=262144)
    parser.add_argument("--max-batch", type=int, default=256)
    parser.add_argument(
        "--reference-rows",
        type=int,
        default=20000,
        help="about this many fuzzed rows are also compared with the fast reference",
    )
    parser.add_argument(
        "--unsharded-every",
        type=int,
        default=0,
        help="without CUDA: compare every k-th fuzz batch with the unsharded kernel (0: never)",
    )
    parser.add_argument(
        "--fuzz-seconds", type=float, default=210.0, help="stop the fuzz after this long (0: never)"
    )
    parser.add_argument("--golden-splits", choices=("rotate", "all"), default="rotate")
    parser.add_argument(
        "--golden-rows-per-group",
        type=int,
        default=0,
        help="golden: per (V, tau, format) group, only the vectors up to this many rows (0: every vector)",
    )
    parser.add_argument("--replays", type=int, default=300)
    parser.add_argument("--only", default="", help="comma-separated sections to run")
    parser.add_argument("--timeout", type=float, default=300.0, help="collective timeout in seconds")
    parser.add_argument("--aot", action="store_true", help="compile the sharded kernels for --arch and audit")
    parser.add_argument("--arch", type=int, default=90)
    parser.add_argument("--json", default=None, help="with --aot: write the report here")
    return parser.parse_args(argv)


def run_rank(rank: int, world: int, init_method: str, backend: str, args: argparse.Namespace) -> bool:
    """One rank of the check: create the process group, run the sections, rank 0 writes the reports."""
    os.environ.update(NCCL_ENV)
    use_nccl = backend == "nccl" or (backend == "auto" and torch.cuda.is_available() and not interpreting())
    wait = timedelta(seconds=args.timeout)
    group: dict[str, Any] = {"init_method": init_method, "rank": rank, "world_size": world, "timeout": wait}
    if use_nccl:
        local = int(os.environ.get("LOCAL_RANK", rank % max(1, torch.cuda.device_count())))
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
        try:
            dist.init_process_group("nccl", **group, device_id=device)
        except TypeError:  # torch without device_id
            dist.init_process_group("nccl", **group)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", **group)
    try:
        return _run_sections(rank, world, device, args)
    finally:
        dist.destroy_process_group()


def _run_sections(rank: int, world: int, device: torch.device, args: argparse.Namespace) -> bool:
    from dyadic24.kernels.exp_table import load_table

    table = load_table(device)
    ctx = Ctx(rank, world, device, args, [int(v) for v in table.z.cpu().tolist()] if table.size else [])
    out_dir = Path(args.out) if args.out else None
    if out_dir is not None and ctx.lead:
        out_dir.mkdir(parents=True, exist_ok=True)
    try:
        env = environment(ctx)
    except Exception:
        env = {"error": traceback.format_exc()}
    report: dict[str, Any] = {"environment": env, "sections": {}}
    wanted = [s for s in args.only.split(",") if s] or list(SECTIONS)
    for name in wanted:
        began = time.perf_counter()
        if ctx.lead:
            print(f"[sharded_check] {name} ...", file=sys.stderr, flush=True)
        try:
            result = SECTIONS[name](ctx)
        except Exception:
            result = {"passed": False, "error": traceback.format_exc()}
        # every rank's verdict (a section can fail on a rank other than 0)
        verdicts: list[Any] = [None] * world
        dist.all_gather_object(verdicts, bool(result.get("passed")))
        if not all(verdicts):
            result["passed"] = False
            result["rank_verdicts"] = verdicts
        result["section_seconds"] = round(time.perf_counter() - began, 2)
        report["sections"][name] = result
        if ctx.lead:
            print(
                f"[sharded_check] {name}: {'PASS' if result.get('passed') else 'FAIL'} "
                f"({result['section_seconds']} s)",
                file=sys.stderr,
                flush=True,
            )
            if out_dir is not None:
                partial = {**report, "passed": False, "complete": False}
                (out_dir / "sharded_check.json").write_text(json.dumps(partial, indent=1, default=str) + "\n")
    report["passed"] = all(sec.get("passed") for sec in report["sections"].values())
    report["complete"] = True
    if ctx.lead:
        text = _markdown(report)
        if out_dir is not None:
            (out_dir / "sharded_check.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
            (out_dir / "sharded_check.md").write_text(text)
        print(text, flush=True)
    return bool(report["passed"])


def _spawned(rank: int, world: int, init_method: str, backend: str, argv: list[str]) -> None:
    ok = run_rank(rank, world, init_method, backend, parse_args(argv))
    if not ok and rank == 0:
        raise SystemExit(1)


def spawn(world: int, argv: Sequence[str], backend: str = "auto") -> int:
    """Start ``world`` ranks on this machine (start method spawn, FileStore rendezvous); 0 iff all pass."""
    from torch.multiprocessing.spawn import ProcessExitedException, start_processes

    with tempfile.TemporaryDirectory(prefix="dyadic24-sharded-") as tmp:
        init = f"file://{Path(tmp) / 'store'}"
        try:
            start_processes(  # type: ignore[no-untyped-call]
                _spawned,
                args=(world, init, backend, list(argv)),
                nprocs=world,
                start_method="spawn",
                join=True,
            )
        except ProcessExitedException:
            return 1
    return 0


def _under_torchrun() -> bool:
    return all(k in os.environ for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.aot:
        from dyadic24.kernels.aot_check import check_sharded

        report = check_sharded(args.arch)
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
        print(json.dumps(report, indent=1))
        return 0 if report["passed"] else 1
    os.environ.update(NCCL_ENV)
    if _under_torchrun():
        ok = run_rank(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), "env://", args.backend, args)
        return 0 if ok else 1
    return spawn(args.world, list(argv) if argv is not None else sys.argv[1:], args.backend)


if __name__ == "__main__":
    raise SystemExit(main())

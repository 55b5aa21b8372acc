"""Throughput of `dyadic24 conform --bulk N` on this machine: rows/s of the reference side alone, of a
subject through the generic --impl path and through a --cmd JSON-lines program, each through the real
command.

    python benchmarks/bench_conform.py --out benchmarks/results [--rows-impl 100000] [--rows-cmd 1000000]
    python benchmarks/bench_conform.py --gpu --out OUT --shapes 'V=151936,163840 formats=bf16,fp32 B=1..256'

Without --gpu the subjects are the fast reference (--impl) and benchmarks/subjects/c/dyadic24_subject.c
(--cmd, built here with the system C compiler). With --gpu they are the bundled Triton kernel, through
`--impl dyadic24.kernels.adapter:propose` and through `--cmd "python -m dyadic24.kernels.jsonl_server"`
(binary frames): the two ways a serving stack's GPU implementation is checked. --shapes is the
deployment profile of the bulk stream (conformance/bulk.py). Each run may be cut at --time-limit
seconds (SIGTERM: the run's partial report still counts its rows). Writes OUT/conform_bulk.json and
OUT/conform_bulk.md (date, commit, CPU, device, versions, rows/s, which side limits).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SUBJECT = REPO / "benchmarks" / "subjects" / "c" / "dyadic24_subject.c"
CFLAGS = ["-O2", "-std=c11", "-ffp-contract=off", "-fno-fast-math"]


def oracle_only(rows: int, workers: int, shapes: str | None = None) -> dict[str, Any]:
    """The reference side alone: the generator and the fast reference in worker processes, the calls'
    segments attached and released by this process as the runner does."""
    sys.path.insert(0, str(REPO))
    from dyadic24.conformance import bulk

    profile = bulk.Profile.parse(shapes) if shapes else bulk.ALL
    stream = bulk._Stream(0, bulk.sizes(0, rows, profile), workers, profile)
    start = time.monotonic()
    done = 0
    try:
        for bc, _ in stream:
            done += bc.call.inputs.batch
            bulk._release(bc)
    finally:
        stream.close()
    seconds = time.monotonic() - start
    return {
        "what": f"reference side alone ({workers} workers)",
        "rows": done,
        "seconds": round(seconds, 1),
        "rows_per_s": round(done / seconds, 1),
    }


def conform(
    label: str,
    subject: list[str],
    rows: int,
    workers: int,
    out: Path,
    shapes: str | None = None,
    time_limit: float | None = None,
) -> dict[str, Any]:
    """One `dyadic24 conform ... --bulk rows` run (bulk only), timed end to end, SIGTERM after
    ``time_limit`` seconds (its partial report still counts the rows it compared)."""
    report = out / f"bulk_{abs(hash(label))}.json"  # the label names the subject; not a safe file name
    cmd = [
        sys.executable,
        "-m",
        "dyadic24",
        "conform",
        *subject,
        "--no-vectors",
        "--no-invalid",
        "--no-fuzz",
        "--accumulated",
        "0",
        "--bulk",
        str(rows),
        "--workers",
        str(workers),
        "--no-progress",
        "--json",
        str(report),
        *(["--shapes", shapes] if shapes else []),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out_text, err_text = proc.communicate(timeout=time_limit)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # as an outer `timeout` does: the run reports what it compared
        out_text, err_text = proc.communicate(timeout=60)
    wall = time.monotonic() - start
    (out / f"{label.split(':', maxsplit=1)[0].replace(' ', '_')}.log").write_text(
        out_text[-20000:] + err_text[-20000:]
    )
    if not report.exists():
        raise SystemExit(f"{label}: exit {proc.returncode}, no report; stderr ends: {err_text[-600:]}")
    data = json.loads(report.read_text())["implementations"][0]["bulk"]
    report.unlink()
    print(f"{label}: {data['rows']:,} rows, {data['rows_per_s']:,.0f} rows/s", flush=True)
    return {
        "what": label,
        "command": " ".join(["dyadic24", *cmd[3:-2]]),
        "exit": proc.returncode,
        "rows": data["rows"],
        "differing_rows": data["differing_rows"],
        "seconds": data["seconds"],
        "wall_seconds": round(wall, 1),
        "rows_per_s": data["rows_per_s"],
        "vocab_bands": data["vocab_bands"],
        "formats": data["formats"],
        "workers": data.get("workers"),
        "profile": data.get("profile", ""),
        "stopped": proc.returncode in (130, 143),
    }


def device() -> dict[str, str]:
    try:
        import torch
        import triton
    except ImportError:
        return {}
    if not torch.cuda.is_available():
        return {}
    return {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": str(torch.version.cuda),
    }


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numpy

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit,
        "cpu": cpu,
        "cpus": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        **device(),
    }


def markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    gpu = f", {m['gpu']} (torch {m['torch']}, triton {m['triton']}, CUDA {m['cuda']})" if "gpu" in m else ""
    lines = [
        f"# `dyadic24 conform --bulk` throughput ({m['date']}, commit {m['commit']})",
        "",
        f"{m['cpus']} CPUs ({m['cpu']}){gpu}, Python {m['python']}, numpy {m['numpy']};"
        f" `python benchmarks/bench_conform.py {report.get('args', '')}`. Rows/s over the whole bulk check"
        " (the generator and the fast reference in worker processes, the subject, the comparison); the"
        " wall time includes process start-up."
        + (f" Deployment profile: `--shapes '{report['shapes']}'`." if report.get("shapes") else ""),
        "",
        "| what | rows | differing | seconds | rows/s | wall s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in report["runs"]:
        stopped = " (stopped at the time limit)" if r.get("stopped") else ""
        lines.append(
            f"| {r['what']}{stopped} | {r['rows']:,} | {r.get('differing_rows', '-')} | {r['seconds']} |"
            f" {r['rows_per_s']:,.0f} | {r.get('wall_seconds', '-')} |"
        )
    if report.get("limit"):
        lines += ["", report["limit"]]
    bands = report["runs"][-1].get("vocab_bands", {})
    if bands:
        lines += [
            "",
            "Rows by V in the last run: " + ", ".join(f"{k}: {v:,}" for k, v in bands.items()) + ".",
        ]
    return "\n".join(lines) + "\n"


def limiting_side(runs: list[dict[str, Any]]) -> str:
    """Which side limits the end-to-end rate: a full run that reaches most of the reference side's
    rate alone is held by the reference side (the subject keeps up); one far below it, by the subject.
    (The subject alone is not timed: outside a run its calls would travel another way, by pipe, not
    by shared memory.)"""
    ref = next((r for r in runs if r["what"].startswith("reference side alone")), None)
    full = [r for r in runs if "exit" in r]
    if ref is None or not full:
        return ""
    parts = []
    for r in full:
        share = r["rows_per_s"] / ref["rows_per_s"]
        side = "the reference side" if share >= 0.75 else "the subject side"
        parts.append(f"{r['what'].split(':')[0]}: {share:.0%} of it, so {side} limits")
    return (
        f"Which side limits: the reference side alone makes {ref['rows_per_s']:,.0f} rows/s; "
        + "; ".join(parts)
        + "."
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--gpu", action="store_true", help="the bundled Triton kernel as the subject")
    ap.add_argument("--shapes", help="the bulk stream's deployment profile (conform --shapes)")
    ap.add_argument("--rows-oracle", type=int, default=100_000)
    ap.add_argument("--rows-impl", type=int, default=100_000)
    ap.add_argument("--rows-cmd", type=int, default=1_000_000)
    ap.add_argument("--runs", default="oracle,impl,cmd", help="which runs, comma-separated")
    ap.add_argument("--commit", help="the commit of this tree (a device's copy may hold a stale .git)")
    ap.add_argument("--time-limit", type=float, help="seconds before a conform run is stopped (SIGTERM)")
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    runs_asked = set(args.runs.split(","))
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.gpu:
            impl = (
                "generic --impl path: dyadic24.kernels.adapter:propose",
                ["--impl", "dyadic24.kernels.adapter:propose"],
            )
            cmd = (
                "JSON-lines --cmd: python -m dyadic24.kernels.jsonl_server (binary frames)",
                ["--cmd", f"{sys.executable} -m dyadic24.kernels.jsonl_server"],
            )
        else:
            exe = Path(tmp) / "dyadic24_subject"
            subprocess.run(["cc", *CFLAGS, "-o", str(exe), str(SUBJECT), "-lm"], check=True)
            impl = (
                "Python subject: --impl dyadic24.reference.fast:propose_fast",
                ["--impl", "dyadic24.reference.fast:propose_fast"],
            )
            cmd = (
                "compiled subject: --cmd benchmarks/subjects/c (JSON-lines 1.1, binary frames)",
                ["--cmd", str(exe)],
            )
        if "oracle" in runs_asked:
            runs.append(oracle_only(args.rows_oracle, args.workers, args.shapes))
        if "impl" in runs_asked:
            runs.append(conform(*impl, args.rows_impl, args.workers, args.out, args.shapes, args.time_limit))
        if "cmd" in runs_asked:
            runs.append(conform(*cmd, args.rows_cmd, args.workers, args.out, args.shapes, args.time_limit))
    report = {
        "machine": {**machine(), **({"commit": args.commit} if args.commit else {})},
        "args": " ".join(sys.argv[1:]),
        "shapes": args.shapes or "",
        "runs": runs,
        "limit": limiting_side(runs),
    }
    (args.out / "conform_bulk.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "conform_bulk.md").write_text(markdown(report))
    print(markdown(report))
    full = [r for r in runs if "exit" in r]
    return 0 if all(r["exit"] in (3, 143) and not r["differing_rows"] for r in full) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Throughput of `dyadic24 conform --bulk N` on this machine: rows/s of the reference side alone, of a Python
(--impl) subject and of a compiled JSON-lines (--cmd) subject, each through the real command.

    python benchmarks/bench_conform.py --out benchmarks/results [--rows-impl 100000] [--rows-cmd 1000000]

The compiled subject is benchmarks/subjects/c/dyadic24_subject.c, built here with the system C compiler.
Writes OUT/conform_bulk.json and OUT/conform_bulk.md (date, commit, CPU, versions, rows/s, wall time).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SUBJECT = REPO / "benchmarks" / "subjects" / "c" / "dyadic24_subject.c"
CFLAGS = ["-O2", "-std=c11", "-ffp-contract=off", "-fno-fast-math"]


def oracle_only(rows: int, workers: int) -> dict[str, Any]:
    """The reference side alone: the generator and the fast reference in worker processes."""
    sys.path.insert(0, str(REPO))
    from dyadic24.conformance import bulk

    counts = bulk.sizes(0, rows)
    start = time.monotonic()
    done = sum(c.call.inputs.batch for c, _ in bulk._stream(0, counts, workers))
    seconds = time.monotonic() - start
    return {
        "what": f"reference side alone ({workers} workers)",
        "rows": done,
        "seconds": round(seconds, 1),
        "rows_per_s": round(done / seconds, 1),
    }


def conform(label: str, subject: list[str], rows: int, workers: int, out: Path) -> dict[str, Any]:
    """One `dyadic24 conform ... --bulk rows` run (bulk only), timed end to end."""
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
        "--json",
        str(report),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    if not report.exists():
        raise SystemExit(f"{label}: exit {proc.returncode}, no report; stderr ends: {proc.stderr[-600:]}")
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
    }


def markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        f"# `dyadic24 conform --bulk` throughput ({m['date']}, commit {m['commit']})",
        "",
        f"{m['cpus']} CPUs ({m['cpu']}), Python {m['python']}, numpy {m['numpy']};"
        " `python benchmarks/bench_conform.py`. Rows/s over the whole bulk check (the generator, the fast"
        " reference in worker processes, the subject, the"
        " comparison); the wall time includes process start-up.",
        "",
        "| what | rows | differing | seconds | rows/s | wall s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in report["runs"]:
        lines.append(
            f"| {r['what']} | {r['rows']:,} | {r.get('differing_rows', '-')} | {r['seconds']} |"
            f" {r['rows_per_s']:,.0f} | {r.get('wall_seconds', '-')} |"
        )
    bands = report["runs"][-1].get("vocab_bands", {})
    if bands:
        lines += [
            "",
            "Rows by V in the last run: " + ", ".join(f"{k}: {v:,}" for k, v in bands.items()) + ".",
        ]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rows-oracle", type=int, default=100_000)
    ap.add_argument("--rows-impl", type=int, default=100_000)
    ap.add_argument("--rows-cmd", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "dyadic24_subject"
        subprocess.run(["cc", *CFLAGS, "-o", str(exe), str(SUBJECT), "-lm"], check=True)
        runs = [
            oracle_only(args.rows_oracle, args.workers),
            conform(
                "Python subject: --impl dyadic24.reference.fast:propose_fast",
                ["--impl", "dyadic24.reference.fast:propose_fast"],
                args.rows_impl,
                args.workers,
                args.out,
            ),
            conform(
                "compiled subject: --cmd benchmarks/subjects/c (JSON-lines 1.1, binary frames)",
                ["--cmd", str(exe)],
                args.rows_cmd,
                args.workers,
                args.out,
            ),
        ]
    report = {"machine": machine(), "runs": runs}
    (args.out / "conform_bulk.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "conform_bulk.md").write_text(markdown(report))
    print(markdown(report))
    return 0 if all(r.get("exit", 0) == 3 and not r.get("differing_rows") for r in runs[1:]) else 1


if __name__ == "__main__":
    sys.exit(main())

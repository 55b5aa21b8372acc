"""A million-row fuzz of the Triton kernel against the fast reference, spread over worker processes.

    python -m dyadic24.kernels.bulk_fuzz --rows 1000000 --workers 16 --out DIR

Each worker owns a CUDA context (the device is shared), draws its calls from its own seeded stream
(dyadic24.kernels.fuzz: every status, ties, signed zeros, -inf masks, extreme magnitudes, the exp
near-midpoint table, fp32 / bf16 / fp16 logits), runs the kernel, computes the fast reference on the
CPU and compares the four outputs of clause 12.1 bit for bit. Only counts and the first failures
travel back. Most calls have small or moderate V (the reference is CPU-bound); a fixed share has
V up to 262,144. Writes DIR/bulk_fuzz.json and DIR/bulk_fuzz.md; exit status 0 iff no row differs.
Under TRITON_INTERPRET=1 it runs on the CPU (used by the tests at tiny sizes).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

SMALL_VOCABS = (1, 2, 7, 31, 32, 33, 64, 100, 257, 1000, 4095, 4096, 4097)
LARGE_VOCABS = (10_000, 50_000, 131_073, 163_840, 262_144)
# rows per large call: 8, or 64, whose tile programs at V >= 131,073 (576 and more: 9 tiles of 16,384
# per row) outnumber the programs 132 SMs hold at once (528), so that merges poll while tiles still run
LARGE_BATCHES = (8, 64)
LARGE_SHARE = 0.02  # share of the rows drawn with a large V
MAX_FAILURES = 20


def _worker(task: tuple[int, int, int]) -> dict[str, Any]:
    """Run calls of one seeded stream until ``rows`` rows are checked; return counts."""
    seed, rows, max_batch = task
    from dyadic24.kernels.backend import select_backend

    select_backend()
    from dyadic24.kernels import fuzz
    from dyadic24.kernels.gpu_check import FIELDS, TORCH_DTYPES, Inputs, row_diffs
    from dyadic24.kernels.propose import kernel_device, prepare

    device = kernel_device()
    prepare(device)
    from dyadic24.kernels.exp_table import load_table

    table_z = load_table(device).z.cpu().tolist()
    rng = np.random.default_rng(seed)
    done = calls = failing = 0
    statuses = np.zeros(5, dtype=np.int64)
    vocab_rows: dict[int, int] = {}
    failures: list[dict[str, Any]] = []
    while done < rows:
        if rng.random() < LARGE_SHARE:
            vocab = int(rng.choice(LARGE_VOCABS))
            batch = int(rng.choice(LARGE_BATCHES))
        else:
            vocab = int(rng.choice(SMALL_VOCABS))
            batch = int(rng.integers(1, max_batch + 1))
        batch = max(1, min(batch, rows - done))
        dtype = str(rng.choice(list(TORCH_DTYPES), p=[0.6, 0.2, 0.2]))
        inp = Inputs(fuzz.make_call(rng, batch, vocab, dtype, table_z), device)
        got = inp.run()
        want = inp.reference()
        for d in row_diffs(got, want):
            failing += 1
            if len(failures) < MAX_FAILURES:
                r = d["row"]
                failures.append({"seed": seed, "call": calls, "vocab": vocab, "dtype": dtype, **d,
                                 "got": {f: getattr(got, f)[r].tolist() for f in FIELDS},
                                 "want": {f: getattr(want, f)[r].tolist() for f in FIELDS}})  # fmt: skip
        statuses += np.bincount(want.status, minlength=5)[:5]
        vocab_rows[vocab] = vocab_rows.get(vocab, 0) + batch
        done += batch
        calls += 1
    return {"rows": done, "calls": calls, "failing": failing, "statuses": statuses.tolist(),
            "vocab_rows": vocab_rows, "failures": failures}  # fmt: skip


def run(rows: int, workers: int, seed: int, max_batch: int) -> dict[str, Any]:
    per = [rows // workers + (1 if i < rows % workers else 0) for i in range(workers)]
    tasks = [(seed * 1000 + i, n, max_batch) for i, n in enumerate(per) if n]
    began = time.perf_counter()
    ctx = mp.get_context("spawn")  # CUDA cannot be forked
    with ctx.Pool(len(tasks)) as pool:
        parts = pool.map(_worker, tasks)
    seconds = time.perf_counter() - began
    statuses = np.sum([p["statuses"] for p in parts], axis=0)
    vocab_rows: dict[str, int] = {}
    for p in parts:
        for v, n in p["vocab_rows"].items():
            vocab_rows[str(v)] = vocab_rows.get(str(v), 0) + n
    failing = sum(p["failing"] for p in parts)
    return {
        "passed": failing == 0,
        "rows": sum(p["rows"] for p in parts),
        "calls": sum(p["calls"] for p in parts),
        "failing_rows": failing,
        "workers": len(tasks),
        "seed": seed,
        "max_batch": max_batch,
        "status_counts": dict(
            zip(
                ["OK", "NAN_LOGIT", "POS_INF_LOGIT", "ZERO_MASS", "BAD_TEMPERATURE"],
                (int(s) for s in statuses),
                strict=True,
            )
        ),
        "rows_per_vocab": dict(sorted(vocab_rows.items(), key=lambda kv: int(kv[0]))),
        "seconds": round(seconds, 2),
        "rows_per_second": round(sum(p["rows"] for p in parts) / seconds, 1),
        "failures": [f for p in parts for f in p["failures"]][:MAX_FAILURES],
    }


def environment() -> dict[str, Any]:
    import torch
    import triton

    from dyadic24.kernels.backend import interpreting

    env: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                           "triton": triton.__version__, "numpy": np.__version__,
                           "interpreter": interpreting()}  # fmt: skip
    if torch.cuda.is_available() and not interpreting():
        env["gpu"] = torch.cuda.get_device_name(0)
    return env


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--seed", type=int, default=424242)
    ap.add_argument("--max-batch", type=int, default=256)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    from dyadic24.kernels.backend import select_backend

    select_backend()
    result = run(args.rows, args.workers, args.seed, args.max_batch)
    report = {"environment": environment(), "bulk_fuzz": result}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bulk_fuzz.json").write_text(json.dumps(report, indent=1) + "\n")
    r = result
    md = [
        "# dyadic24 kernel: bulk fuzz against the fast reference",
        "",
        f"result: **{'PASS' if r['passed'] else 'FAIL'}**: {r['rows']:,} rows in {r['calls']:,} calls, "
        f"{r['failing_rows']} differing rows, {r['seconds']} s ({r['rows_per_second']:,} rows/s, "
        f"{r['workers']} workers)",
        "",
        f"environment: `{json.dumps(report['environment'])}`",
        "",
        f"statuses: `{json.dumps(r['status_counts'])}`",
        "",
        f"rows per V: `{json.dumps(r['rows_per_vocab'])}`",
        "",
    ]
    (args.out / "bulk_fuzz.md").write_text("\n".join(md))
    print("\n".join(md))
    return 0 if r["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())

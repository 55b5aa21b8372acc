"""Speed of the fast reference on one CPU core: B = 64 rows, V = 163,840, all rows sampled.

Run from the repository root: ``python benchmarks/fast_reference_speed.py [--runs N]``. The process pins
itself to one core and caps the BLAS/OpenMP thread pools at one thread before numpy is imported, so
the figure is a one-core figure. Prints the median wall time of ``propose_fast`` and the machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

BATCH = 64
VOCAB = 163_840


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    # One core, one thread: set before numpy (and its BLAS) is first imported.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
        os.environ[var] = "1"
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import numpy as np

    from dyadic24.reference.fast import propose_fast

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((BATCH, VOCAB), dtype=np.float32)
    temperature = np.ones(BATCH, dtype=np.float32)
    seed = rng.integers(0, 2**63, BATCH, dtype=np.uint64)
    round_ = np.arange(BATCH, dtype=np.uint64)
    position = np.arange(BATCH, dtype=np.uint64) + np.uint64(1000)
    result = propose_fast(logits, temperature, seed, round_, position)  # warm-up (page faults, imports)
    assert (result.status == 0).all()
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        propose_fast(logits, temperature, seed, round_, position)
        times.append(time.perf_counter() - start)
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "n/a"
    print(f"fast reference, B={BATCH} V={VOCAB} (standard normal logits, all rows sampled)")
    print(f"median {statistics.median(times):.3f} s over {args.runs} runs (min {min(times):.3f} s)")
    print(f"cpu: {cpu_model()}, {os.cpu_count()} logical cores, pinned to {affinity}")
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.platform()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

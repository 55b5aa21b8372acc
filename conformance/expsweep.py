"""``conform --exp-sweep``: an implementation's exp (clause 5.3) on every binary32 z the rule can produce.

z = RN32(d / tau) with d <= 0 (clause 5.1), so the domain is +0 and every pattern from -0 (0x80000000)
down to -inf (0xFF800000): 2,139,095,042 values. The expected e = RN32(exp(z)) is the fast reference's
correctly rounded exp (reference/fast_exp.py: binary64 exp rounded once, every lane near a rounding
midpoint settled by the exact reference), computed in worker processes; below -104 (0xC2D00000) every
e is +0 (clause 5.3 note). The subject is asked in chunks: a Python routine gets the uint32 z patterns,
a JSON-lines subject an ``exp`` request for a range (PROTOCOL.md).
"""

from __future__ import annotations

import time

import numpy as np
import numpy.typing as npt

from dyadic24.conformance.impls import Implementation
from dyadic24.conformance.process import clip
from dyadic24.conformance.report import ExpSweepResult
from dyadic24.conformance.runner import Progress
from dyadic24.conformance.workers import ordered_map

NEG_ZERO, NEG_104, NEG_INF = 0x80000000, 0xC2D00000, 0xFF800000
CHUNK = 1 << 22  # z values per request
TOTAL = 1 + (NEG_INF - NEG_ZERO + 1)  # +0, then -0 .. -inf


def chunks() -> list[tuple[int, int]]:
    """(start, count) of every request, +0 first, then -0 .. -inf in order."""
    out = [(0, 1)]
    start = NEG_ZERO
    while start <= NEG_INF:
        count = min(CHUNK, NEG_INF - start + 1)
        out.append((start, count))
        start += count
    return out


def expected(task: tuple[int, int]) -> npt.NDArray[np.uint32]:
    """RN32(exp(z)) for z = start .. start + count - 1 (the fast reference's correctly rounded exp)."""
    from dyadic24.reference.fast_exp import exp32_np

    start, count = task
    z = np.arange(start, start + count, dtype=np.uint64).astype(np.uint32)
    out = np.zeros(count, dtype=np.uint32)  # z below -104: +0
    live = z <= NEG_104 if start >= NEG_ZERO else np.ones(count, dtype=bool)
    if live.any():
        out[live] = exp32_np(z[live].view(np.float32)).view(np.uint32)
    return out


def run_exp_sweep(
    impl: Implementation,
    *,
    workers: int = 1,
    progress: bool = True,
    max_examples: int = 20,
    result: ExpSweepResult | None = None,
) -> ExpSweepResult:
    tasks = chunks()
    result = ExpSweepResult() if result is None else result
    result.expected_total = TOTAL
    bar = Progress(f"[{impl.name}] exp sweep", TOTAL, "z", enabled=progress)
    began = time.monotonic()
    stream = ordered_map(expected, tasks, workers)
    try:
        for (start, count), want in zip(tasks, stream, strict=True):
            got = impl.exp(start, count)
            if got.shape != (count,):
                raise RuntimeError(f"asked for {count} values from z = {start:08x}, got {got.shape[0]}")
            bad = np.flatnonzero(got != want)
            result.mismatches += int(bad.size)
            for i in bad[: max(0, max_examples - len(result.examples))].tolist():
                result.examples.append((f"{start + i:08x}", f"{int(got[i]):08x}", f"{int(want[i]):08x}"))
            result.total += count
            bar.update(result.total, f"{result.mismatches} mismatches")
    except Exception as exc:  # a subject that fails mid-sweep is reported, not a runner crash
        result.error = clip(f"{type(exc).__name__}: {exc}")
    finally:
        stream.close()
        result.seconds = time.monotonic() - began
    bar.finish(f"{result.mismatches} mismatches")
    return result

"""Worker processes of the runner: the accumulated check of a Python subject spread over processes.

A Python subject is rebuilt in each worker from its origin ("target:module:callable" or
"mutant:NAME"), so workers need no pickled code. Workers are spawned (not forked): the parent may
hold torch, CUDA or Triton state that must not be copied into a child.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from typing import Any

_STATE: dict[str, Callable[..., Any]] = {}  # the worker's subject, set by _init


def load_origin(origin: str) -> Callable[..., Any]:
    kind, _, rest = origin.partition(":")
    if kind == "mutant":
        from dyadic24.conformance.mutants import MUTANTS

        return MUTANTS[rest][0]
    from dyadic24.conformance.impls import load_target

    return load_target(rest)


def _init(origin: str, cwd: str) -> None:
    os.chdir(cwd)
    _STATE["func"] = load_origin(origin)


def _segment(task: tuple[int, int]) -> bytes:
    from dyadic24.vectors import accumulated

    g, n_rows = task
    return accumulated.segment_bytes(_STATE["func"], g, n_rows)


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def accumulated_segments(origin: str, n_rows: int, workers: int) -> Iterator[bytes]:
    """The hashed bytes of the accumulated stream's segments, in order, computed by ``workers`` processes."""
    from dyadic24.vectors import accumulated

    ctx = multiprocessing.get_context("spawn")
    tasks = [(g, n_rows) for g in range(accumulated.segments(n_rows))]
    with ctx.Pool(workers, initializer=_init, initargs=(origin, os.getcwd())) as pool:
        yield from pool.imap(_segment, tasks, chunksize=1)

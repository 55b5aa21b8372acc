"""Worker processes of the runner: ``ordered_map`` (the bulk check's and the exp sweep's reference
side) and the accumulated check of a Python subject spread over processes.

A Python subject is rebuilt in each worker from its origin ("target:module:callable" or
"mutant:NAME"), so workers need no pickled code. Workers are spawned (not forked): the parent may
hold torch, CUDA or Triton state that must not be copied into a child.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from multiprocessing.pool import AsyncResult
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

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


def _run_chunk(func: Callable[[T], R], chunk: Sequence[T]) -> list[R]:
    return [func(t) for t in chunk]


def ordered_map(
    func: Callable[[T], R],
    tasks: Sequence[T],
    workers: int,
    *,
    initializer: Callable[..., object] | None = None,
    initargs: tuple[Any, ...] = (),
    chunk: int = 1,
) -> Generator[R]:
    """func over tasks in ``workers`` spawned processes, results in task order, ``chunk`` tasks to a
    message (small tasks: the per-message cost shows), at most 4 x workers messages in flight. A
    consumer that stops early (the kill matrix stops at the first differing row) closes the pool
    gracefully: the tasks in flight finish and the workers exit. (A ``with Pool`` block left inside
    the suspended generator terminates the pool from wherever the generator is collected; a
    kill-matrix run sat idle for 20 minutes after such an early stop, one worker defunct, on
    2026-12-02.)"""
    if workers <= 1:
        if initializer is not None:
            initializer(*initargs)
        yield from (func(t) for t in tasks)
        return
    ctx = multiprocessing.get_context("spawn")
    pool = ctx.Pool(workers, initializer=initializer, initargs=initargs)
    pending: deque[AsyncResult[list[R]]] = deque()
    chunks = [tasks[i : i + chunk] for i in range(0, len(tasks), chunk)]
    submitted = 0
    try:
        while pending or submitted < len(chunks):
            while submitted < len(chunks) and len(pending) < 4 * workers:
                pending.append(pool.apply_async(_run_chunk, (func, chunks[submitted])))
                submitted += 1
            yield from pending.popleft().get()
    finally:
        pool.close()
        pool.join()


def accumulated_segments(origin: str, n_rows: int, workers: int) -> Iterator[bytes]:
    """The hashed bytes of the accumulated stream's segments, in order, computed by ``workers`` processes."""
    from dyadic24.vectors import accumulated

    tasks = [(g, n_rows) for g in range(accumulated.segments(n_rows))]
    yield from ordered_map(_segment, tasks, workers, initializer=_init, initargs=(origin, os.getcwd()))

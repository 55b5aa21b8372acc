"""Worker processes of the runner's reference side: ``ordered_map`` computes the bulk check's expected
outputs and the exp sweep's expected values. Workers run only the runner's own code (a subject runs
in its host, conformance/host.py).

Workers are spawned (not forked: the parent may hold state that must not be copied into a child) and
import ``dyadic24`` from the runner's own package: the package root is put first on the path they
inherit, so a folder ``./dyadic24`` beside the user is never what computes the expected values.
They leave SIGINT to the runner, which ends them (``terminate``) when the run is stopped.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections import deque
from collections.abc import Callable, Generator, Iterable, Sequence
from itertools import islice
from multiprocessing.pool import AsyncResult
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def usable_workers(asked: int | None) -> int:
    """``--workers``, capped by the CPUs available (more processes than CPUs only queue)."""
    return max(1, min(asked or default_workers(), default_workers()))


def _package_first() -> None:
    """The runner's package root first on sys.path, which spawned workers inherit."""
    import dyadic24

    root = str(Path(next(iter(dyadic24.__path__))).parent)
    if not sys.path or sys.path[0] != root:
        sys.path.insert(0, root)


def _start(initializer: Callable[..., object] | None, initargs: tuple[Any, ...]) -> None:
    from dyadic24.conformance.stop import ignore_in_worker

    ignore_in_worker()
    if initializer is not None:
        initializer(*initargs)


def _run_chunk(func: Callable[[T], R], chunk: Sequence[T]) -> list[R]:
    return [func(t) for t in chunk]


def ordered_map(
    func: Callable[[T], R],
    tasks: Iterable[T],
    workers: int,
    *,
    initializer: Callable[..., object] | None = None,
    initargs: tuple[Any, ...] = (),
    chunk: int = 1,
) -> Generator[R]:
    """func over tasks (any iterable, taken lazily) in ``workers`` spawned processes, results in task
    order, ``chunk`` tasks to a message, at most 4 x workers messages in flight. A consumer that stops
    early (the kill matrix stops at the first differing row) closes the pool gracefully: the tasks in
    flight finish and the workers exit; a run stopped by a signal or an error terminates them at once.
    (A ``with Pool`` block left inside a suspended generator terminates the pool from wherever the
    generator is collected; a kill-matrix run sat idle for 20 minutes after such an early stop, one
    worker defunct, on 2026-12-02.)"""
    it = iter(tasks)
    if workers <= 1:
        if initializer is not None:
            initializer(*initargs)
        yield from (func(t) for t in it)
        return
    _package_first()
    ctx = multiprocessing.get_context("spawn")
    pool = ctx.Pool(workers, initializer=_start, initargs=(initializer, initargs))
    pending: deque[AsyncResult[list[R]]] = deque()
    graceful = False
    try:
        while True:
            while len(pending) < 4 * workers:
                part = list(islice(it, chunk))
                if not part:
                    break
                pending.append(pool.apply_async(_run_chunk, (func, part)))
            if not pending:
                break
            yield from pending.popleft().get()
        graceful = True
    except GeneratorExit:
        graceful = True
        raise
    finally:
        from dyadic24.conformance.stop import requested

        if graceful and not requested():
            pool.close()
        else:
            pool.terminate()
        pool.join()

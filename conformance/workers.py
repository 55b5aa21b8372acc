"""Worker processes of the runner's reference side: ``ordered_map`` computes the bulk check's expected
outputs and the exp sweep's expected values. Workers run only the runner's own code (a subject runs
in its host, conformance/host.py).

Each worker is a spawned process (not forked: the parent may hold state that must not be copied into
a child) with a pipe of its own: chunk k goes to worker k mod N, and each worker answers its chunks in
order, so results come back in task order without any lock shared between processes. That is why
this is not multiprocessing.Pool: Pool.terminate() takes its task queue's lock, which an idle worker
holds while it waits for a task, and a run stopped by SIGTERM hung there on an H100 (2026-12-06). Here
stopping is killing the processes. Workers import ``dyadic24`` from the runner's own package (its
root is put first on the path they inherit), so a folder ``./dyadic24`` beside the user is never what
computes the expected values; they leave SIGINT to the runner.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import traceback
from collections import deque
from collections.abc import Callable, Generator, Iterable
from itertools import islice
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")
IN_FLIGHT = 4  # chunks queued per worker by default (enough to hide the pipe's latency)


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


def _serve(conn: Connection, initializer: Callable[..., object] | None, initargs: tuple[Any, ...]) -> None:
    from dyadic24.conformance.stop import ignore_in_worker

    ignore_in_worker()
    if initializer is not None:
        initializer(*initargs)
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        func, chunk = job
        try:
            conn.send(("ok", [func(t) for t in chunk]))
        except BaseException:
            conn.send(("error", traceback.format_exc(limit=8)))


class WorkerError(RuntimeError):
    """A reference worker failed or died (a bug of the runner, not a finding about the subject)."""


def ordered_map(
    func: Callable[[T], R],
    tasks: Iterable[T],
    workers: int,
    *,
    initializer: Callable[..., object] | None = None,
    initargs: tuple[Any, ...] = (),
    chunk: int = 1,
    depth: int = IN_FLIGHT,
) -> Generator[R]:
    """func over tasks (any iterable, taken lazily) in ``workers`` spawned processes, results in task
    order, ``chunk`` tasks to a message. Closing the generator early (the kill matrix stops at the
    first differing row), a signal or an error ends every worker at once."""
    it = iter(tasks)
    if workers <= 1:
        if initializer is not None:
            initializer(*initargs)
        yield from (func(t) for t in it)
        return
    _package_first()
    ctx = multiprocessing.get_context("spawn")
    procs: list[Any] = []
    conns: list[Connection] = []
    try:
        for _ in range(workers):
            here, there = ctx.Pipe()
            p = ctx.Process(target=_serve, args=(there, initializer, initargs), daemon=True)
            p.start()
            there.close()
            procs.append(p)
            conns.append(here)
        outstanding: list[deque[int]] = [deque() for _ in range(workers)]
        sent = received = 0
        done = False
        while True:
            while not done and sent - received < depth * workers:
                part = list(islice(it, chunk))
                if not part:
                    done = True
                    break
                conns[sent % workers].send((func, part))
                outstanding[sent % workers].append(sent)
                sent += 1
            if received == sent:
                break
            w = received % workers
            try:
                kind, payload = conns[w].recv()
            except (EOFError, OSError) as exc:
                raise WorkerError(f"reference worker {w} died ({procs[w].exitcode})") from exc
            outstanding[w].popleft()
            received += 1
            if kind != "ok":
                raise WorkerError(f"reference worker {w} failed:\n{payload}")
            yield from payload
        for c in conns:
            c.send(None)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        for p in procs:
            p.join(timeout=5)
        for c in conns:
            c.close()

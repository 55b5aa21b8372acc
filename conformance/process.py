"""A subject's process, treated as hostile: it may exit, hang, stop reading, fork, flood its standard
error or announce a gigantic response. The runner stays in charge of time and memory:

- the process starts in a session of its own, so a terminal's Ctrl-C reaches the runner first and
  ``killpg`` ends the process with every child it forked (a child holding the pipes open included);
- every write goes through a writer thread and every read through a reader thread, each waited for
  at most ``timeout`` seconds; the reader refuses a unit larger than its cap before allocating it;
- standard error is relayed line by line, each line cut to ``STDERR_LINE`` characters, the relay
  stops after ``STDERR_RELAY`` bytes, and the last ``STDERR_TAIL`` lines are kept for messages.

Any failure raises ``SubjectGoneError`` with one line saying why; the process is then dead for the runner.

``kill`` (which ``close`` ends with) waits for the three threads to end: a daemon thread that wakes
while the interpreter finalizes can crash CPython up to 3.13 (python/cpython#124878, #110052), and
a run stopped by SIGINT, its subject's threads waking on end of output as it exited, ended with
SIGSEGV instead of status 130 on CI's Python 3.12.1 (2026-12-07). A thread held by a process that left
the subject's session (``setsid`` in a fork) is given up on after ``JOIN_GRACE`` seconds.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import IO, Any

STDERR_LINE = 500  # characters of one standard-error line kept or relayed
STDERR_TAIL = 20  # lines kept for crash messages
STDERR_RELAY = 1 << 20  # bytes of standard error relayed before the relay falls silent
EXIT_GRACE = 1.0  # seconds of output still read after the process exited (then its group is killed)
CLOSE_GRACE = 5.0  # seconds a process has to exit after its input is closed
JOIN_GRACE = 2.0  # seconds kill() waits for the three threads to end once the session is dead
POLL = 0.1  # seconds between checks that the process is alive


class SubjectGoneError(Exception):
    """The subject's process can no longer be used; ``str()`` is one line saying why."""


class OversizeError(Exception):
    """A unit the reader refused (too long, or announcing too many bytes)."""


def clip(text: str, limit: int = 1000) -> str:
    """One line of at most ``limit`` characters, for messages about what a subject sent."""
    text = text.replace("\n", " | ").replace("\r", " ")
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


_EOF = object()


class SubjectProcess:
    """One subject process: ``send`` bytes, ``receive`` the next unit ``read_unit`` parses from its
    output, ``close`` it. Units are whatever ``read_unit(stream)`` returns (None at end of output)."""

    def __init__(
        self,
        argv: Sequence[str],
        read_unit: Callable[[IO[bytes]], Any],
        *,
        timeout: float,
        name: str,
        env: dict[str, str] | None = None,
    ) -> None:
        self.name = name
        self.timeout = timeout
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=env,
        )
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self._units: queue.Queue[Any] = queue.Queue()
        self._writes: queue.Queue[
            tuple[tuple[bytes | memoryview, ...], threading.Event, list[BaseException]] | None
        ] = queue.Queue()
        self._read_unit = read_unit
        self._writing = threading.Event()
        self.dead: str | None = None
        self._threads = [
            threading.Thread(target=target, daemon=True, name=f"{name} {target.__name__[1:]}")
            for target in (self._reader, self._writer, self._relay)
        ]
        for thread in self._threads:
            thread.start()

    # ---- threads

    def _reader(self) -> None:
        out = self.proc.stdout
        assert out is not None
        try:
            while True:
                unit = self._read_unit(out)
                if unit is None:
                    break
                self._units.put(unit)
        except OversizeError as exc:
            self._units.put(exc)
        except Exception as exc:
            self._units.put(OversizeError(f"unreadable output ({type(exc).__name__}: {exc})"))
        self._units.put(_EOF)

    def _writer(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        while True:
            job = self._writes.get()
            if job is None:
                return
            parts, done, errors = job
            self._writing.set()
            try:
                for part in parts:
                    stdin.write(part)
                stdin.flush()
            except (OSError, ValueError) as exc:
                errors.append(exc)
            self._writing.clear()
            job = parts = None  # type: ignore[assignment]  # the written buffers are the caller's again
            done.set()

    def _relay(self) -> None:
        err = self.proc.stderr
        assert err is not None
        fd = err.fileno()
        line = bytearray()
        total = 0
        relaying = True

        def finish_line() -> None:
            text = bytes(line).decode("utf-8", "replace")
            cut = text if len(text) <= STDERR_LINE else f"{text[:STDERR_LINE]}... (line cut)"
            self.stderr_tail.append(cut)
            if relaying:
                with contextlib.suppress(OSError, ValueError):
                    sys.stderr.write(cut + "\n")
                    sys.stderr.flush()
            line.clear()

        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            total += len(chunk)
            parts = chunk.split(b"\n")
            for i, part in enumerate(parts):
                room = STDERR_LINE * 4 - len(line)  # bytes of a line kept (UTF-8: up to 4 a character)
                if room > 0:
                    line.extend(part[:room])
                if i < len(parts) - 1:
                    finish_line()
            if relaying and total > STDERR_RELAY:
                relaying = False
                with contextlib.suppress(OSError, ValueError):
                    sys.stderr.write(f"[{self.name}: further standard error not shown]\n")
                    sys.stderr.flush()
        if line:
            finish_line()

    # ---- the runner's side

    def _fail(self, reason: str) -> SubjectGoneError:
        self.dead = reason
        self.kill()
        return SubjectGoneError(reason)

    def last_stderr(self, lines: int = 3) -> str:
        tail = [s for s in list(self.stderr_tail)[-lines:] if s.strip()]
        return f"; its last standard error: {clip(' | '.join(tail), 600)}" if tail else ""

    def send(self, *parts: bytes | memoryview) -> None:
        """Write ``parts`` to the process's input, in order, within the timeout."""
        if self.dead is not None:
            raise SubjectGoneError(self.dead)
        done, errors = threading.Event(), []  # type: ignore[var-annotated]
        self._writes.put((parts, done, errors))
        if not done.wait(self.timeout):
            size = sum(memoryview(p).nbytes for p in parts)
            raise self._fail(
                f"{self.name} stopped reading its input: {size:,} bytes not taken within {self.timeout:g} s"
            )
        if errors:
            raise self._fail(f"{self.name} closed its input ({errors[0]}); {self._exit_text()}")

    def receive(self) -> Any:
        """The next unit of output within the timeout."""
        if self.dead is not None:
            raise SubjectGoneError(self.dead)
        deadline = time.monotonic() + self.timeout
        exited_at: float | None = None
        while True:
            now = time.monotonic()
            try:
                unit = self._units.get(timeout=max(0.0, min(POLL, deadline - now)))
            except queue.Empty:
                unit = None
            if unit is _EOF:
                self._units.put(_EOF)
                raise self._fail(f"{self.name} closed its output; {self._exit_text()}")
            if isinstance(unit, OversizeError):
                raise self._fail(f"{self.name}: {unit}")
            if unit is not None:
                return unit
            now = time.monotonic()
            if exited_at is None and self.proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > EXIT_GRACE:
                # exited, yet its output stays open: a child it forked holds the pipe
                raise self._fail(
                    f"{self.name} exited ({describe_exit(self.proc.returncode)}){self.last_stderr()}"
                )
            if now >= deadline:
                raise self._fail(f"{self.name}: no response within {self.timeout:g} s (--timeout)")

    def _exit_text(self) -> str:
        try:
            code: int | None = self.proc.wait(timeout=EXIT_GRACE)
        except subprocess.TimeoutExpired:
            code = None
        text = f"it exited ({describe_exit(code)})" if code is not None else "it is still running"
        return text + self.last_stderr()

    def kill(self) -> None:
        """End the process and every process of its session (its forked children), then its threads
        (its output reaches end of file, the writer is told to stop)."""
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self._writes.put(None)
        deadline = time.monotonic() + JOIN_GRACE
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))

    def threads_alive(self) -> list[str]:
        """The names of this process's threads still running (none once ``kill`` has returned, unless
        a process outside the session holds a pipe)."""
        return [t.name for t in self._threads if t.is_alive()]

    def close(self, grace: float = CLOSE_GRACE) -> None:
        """Close the input (the subject should then exit), wait up to ``grace`` seconds, then kill the
        session: nothing the subject started outlives the run."""
        if self._writing.is_set():  # a write blocked on a full pipe holds the stream's lock: kill first
            self.kill()
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                self.proc.stdin.close()
        try:
            if grace > 0 and self.dead is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=grace)
        finally:  # (a signal during the grace still ends the session)
            self.kill()
        # (its output streams are left to the reader threads: closing one a thread reads would wait
        # on that thread's lock until end of output)

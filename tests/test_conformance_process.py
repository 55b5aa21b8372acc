"""A subject's process leaves no thread of the runner running once it is killed (conformance/process.py):
a daemon thread that wakes while the interpreter finalizes can crash CPython up to 3.13, and a run
stopped by SIGINT exited with SIGSEGV on CI's Python 3.12.1 (2026-12-07)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import IO

from dyadic24.conformance.process import JOIN_GRACE, SubjectProcess

ECHO = "import sys\nfor line in sys.stdin.buffer:\n    sys.stdout.buffer.write(line); sys.stdout.flush()\n"


def slow_at_eof(stream: IO[bytes]) -> bytes | None:
    """One line; at end of output the reader thread lingers, as a thread the OS schedules late does."""
    line = stream.readline()
    if not line:
        time.sleep(0.5)
        return None
    return line


def echo(argv_tail: str = "") -> SubjectProcess:
    return SubjectProcess([sys.executable, "-c", ECHO + argv_tail], slow_at_eof, timeout=10, name="echo")


def test_close_returns_with_every_thread_ended() -> None:
    p = echo()
    p.send(b"one\n")
    assert p.receive() == b"one\n"
    assert len(p.threads_alive()) == 3
    p.close()
    assert p.threads_alive() == []


def test_kill_of_a_subject_mid_call_ends_every_thread() -> None:
    p = echo("\nimport time; time.sleep(60)")
    p.send(b"one\n")
    p.kill()
    assert p.threads_alive() == []


def test_a_pipe_held_outside_the_session_bounds_the_wait(tmp_path: Path) -> None:
    """A child that left the subject's session (setsid) keeps its output open: kill gives its reader
    up after JOIN_GRACE seconds instead of waiting for it."""
    pid_file = tmp_path / "escaped.pid"
    escape = (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n"
        f"    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n    time.sleep(60)\n"
    )
    p = SubjectProcess([sys.executable, "-c", escape + ECHO], slow_at_eof, timeout=10, name="escapes")
    try:
        p.send(b"one\n")
        assert p.receive() == b"one\n"
        deadline = time.monotonic() + 10
        while (not pid_file.exists() or not pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pid_file.exists() and pid_file.read_text(), "the child did not start"
        start = time.monotonic()
        p.kill()
        took = time.monotonic() - start
        assert JOIN_GRACE - 0.1 <= took <= JOIN_GRACE + 5
        assert any(name.endswith("reader") for name in p.threads_alive())
    finally:
        if pid_file.exists() and pid_file.read_text():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    deadline = time.monotonic() + 10
    while p.threads_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert p.threads_alive() == []  # the escaped child gone, its pipes reach end of file


def test_kill_twice_is_harmless() -> None:
    p = echo()
    p.kill()
    p.kill()
    assert p.threads_alive() == []

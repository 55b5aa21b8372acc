"""Stopping a run on SIGINT or SIGTERM: one signal ends it within seconds, with its partial report.

The runner's handlers raise ``Interrupted`` (not KeyboardInterrupt), so a KeyboardInterrupt or
SystemExit raised by a subject's own code is told apart from the user's Ctrl-C: the former is the
subject's failure, the latter ends the run with exit status 128 + the signal number (130, 143).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """The run was asked to stop by a signal; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


_requested: list[int] = []  # the signal that stopped the run, once one has


def requested() -> bool:
    """Whether the run is stopping: cleanup then ends workers at once rather than letting them finish."""
    return bool(_requested)


def _raise(signum: int, frame: FrameType | None) -> None:
    # Later signals are ignored while the partial report is written (one signal ends the run).
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    _requested.append(signum)
    raise Interrupted(signum)


@contextmanager
def handlers() -> Iterator[None]:
    """SIGINT and SIGTERM raise Interrupted in the main thread while the block runs."""
    before = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        signal.signal(s, _raise)
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h)


def ignore_in_worker() -> None:
    """A worker process of the reference side leaves the signals to the runner, which ends it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

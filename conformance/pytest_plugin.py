"""A pytest plugin: the conformance suite as test items in a serving stack's own CI.

    pytest --dyadic24-impl mypkg.sampler:propose        # a Python callable (clause 12.2)
    pytest --dyadic24-cmd "./my-sampler --jsonl"         # a JSON-lines program (clause 12.4)

adds one item per golden vector (and per 16-bit form), per invalid call, one for the accumulated
check, one for the fuzzing, and with ``--dyadic24-bulk N`` / ``--dyadic24-exp-sweep`` one each for the
deeper checks, named ``dyadic24::<file>::tcId <n>`` and so on. A failure reads as the runner's: the
first diverging value and its clause. Without either option the plugin adds nothing (it is loaded in
every pytest session of an environment where dyadic24 is installed, through the ``pytest11`` entry
point, and imports nothing heavy until asked).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

_STATE: dict[str, Any] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dyadic24", "conformance to dyadic24-floor-first-v1")
    group.addoption("--dyadic24-impl", metavar="MODULE:CALLABLE", help="check this Python callable")
    group.addoption("--dyadic24-cmd", metavar="COMMAND", help="check this JSON-lines program")
    group.addoption("--dyadic24-examples", type=int, default=200, metavar="N", help="fuzz examples (200)")
    group.addoption(
        "--dyadic24-accumulated",
        type=int,
        default=10_000,
        metavar="ROWS",
        help="accumulated check rows (10000; 0 skips)",
    )
    group.addoption("--dyadic24-bulk", type=int, default=0, metavar="ROWS", help="bulk rows (0: none)")
    group.addoption("--dyadic24-exp-sweep", action="store_true", help="sweep the exp routine (clause 5.3)")
    group.addoption("--dyadic24-exp", metavar="MODULE:CALLABLE", help="the Python exp routine to sweep")
    group.addoption("--dyadic24-no-trace", action="store_true", help="compare outputs only")
    group.addoption("--dyadic24-timeout", type=float, default=600.0, help="seconds per JSON-lines response")


def _asked(config: pytest.Config) -> bool:
    return bool(config.getoption("dyadic24_impl") or config.getoption("dyadic24_cmd"))


def subject(config: pytest.Config) -> Any:
    """The implementation under test, started once per session."""
    if "impl" not in _STATE:
        from dyadic24.conformance.impls import CommandImplementation, PythonImplementation, load_target

        target = config.getoption("dyadic24_impl")
        if target:
            exp_target = config.getoption("dyadic24_exp")
            exp = load_target(exp_target) if exp_target else None
            _STATE["impl"] = PythonImplementation(
                load_target(target), target, "Python callable", exp, f"target:{target}"
            )
        else:
            _STATE["impl"] = CommandImplementation(
                config.getoption("dyadic24_cmd"), config.getoption("dyadic24_timeout")
            )
    return _STATE["impl"]


def pytest_sessionfinish(session: pytest.Session) -> None:
    impl = _STATE.pop("impl", None)
    if impl is not None:
        impl.close()


class ConformanceError(Exception):
    """A check that failed, with the runner's one-line messages."""


class CheckItem(pytest.Item):
    """One conformance check; ``check(impl)`` returns the failure messages (empty: passed)."""

    def __init__(self, *, check: Callable[[Any], list[str]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check = check

    def runtest(self) -> None:
        problems = self.check(subject(self.config))
        if problems:
            raise ConformanceError("\n".join(problems))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ConformanceError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return "dyadic24", None, self.name


class Conformance(pytest.Collector):
    """The collector of the dyadic24 items (no file behind it)."""

    def collect(self) -> Iterator[pytest.Item]:
        yield from _items(self)


def _vector_check(vector: Any, fmt: str, trace: bool) -> Callable[[Any], list[str]]:
    def check(impl: Any) -> list[str]:
        from dyadic24.conformance.runner import compare_call, vector_calls

        for call in vector_calls(vector, impl.formats):
            if call.fmt != fmt:
                continue
            got = impl.call(call, trace)
            return [
                d.message()
                for d in compare_call(
                    f"tcId {vector.tc_id}",
                    impl,
                    call,
                    got,
                    expected=vector.expected,
                    expected_trace=vector.expected_trace,
                    trace=trace,
                )
            ]
        return []

    return check


def _items(parent: pytest.Collector) -> Iterator[pytest.Item]:
    from dyadic24.conformance import runner
    from dyadic24.conformance.invalid import cases_for
    from dyadic24.vectors import store

    config = parent.config
    trace = not config.getoption("dyadic24_no_trace")
    python = bool(config.getoption("dyadic24_impl"))
    store.verify_release()
    for vector in store.iter_vectors():
        for fmt in ("binary32", vector.narrow_format):
            if fmt is None:
                continue
            name = f"{vector.file}::tcId {vector.tc_id}" + ("" if fmt == "binary32" else f" {fmt}")
            yield CheckItem.from_parent(parent, name=name, check=_vector_check(vector, fmt, trace))
    for case in cases_for(python):

        def invalid(impl: Any, case: Any = case) -> list[str]:
            if not impl.invalid_calls:
                pytest.skip("the subject speaks JSON-lines minor version 0: no invalid calls")
            got = impl.invalid(case)
            if got.proposal is None and got.argument == case.argument:
                return []
            what = "accepted it" if got.proposal is not None else (got.error or "no error")
            return [
                f"invalid call {case.name} ({case.rule}): {what}; expected an error naming {case.argument!r}"
            ]

        yield CheckItem.from_parent(parent, name=f"invalid::{case.name}", check=invalid)
    rows = config.getoption("dyadic24_accumulated")
    if rows:

        def accumulated(impl: Any) -> list[str]:
            r = runner.run_accumulated(impl, rows, progress=False)
            return (
                []
                if r.ok
                else [f"accumulated check of {rows} rows: got {r.got or r.error}, expected {r.expected}"]
            )

        yield CheckItem.from_parent(parent, name=f"accumulated::{rows} rows", check=accumulated)
    examples = config.getoption("dyadic24_examples")
    if examples:

        def fuzz(impl: Any) -> list[str]:
            from dyadic24.conformance.cli import oracle

            r = runner.run_fuzz(impl, oracle("fast"), examples=examples, trace=trace, progress=False)
            if r.failure is None:
                return []
            return [r.failure.message(), f"reproduce (JSON-lines request): {r.reproducer}"]

        yield CheckItem.from_parent(parent, name=f"fuzz::{examples} examples", check=fuzz)
    bulk_rows = config.getoption("dyadic24_bulk")
    if bulk_rows:

        def bulk(impl: Any) -> list[str]:
            from dyadic24.conformance.bulk import run_bulk
            from dyadic24.conformance.workers import default_workers

            r = run_bulk(impl, bulk_rows, workers=default_workers(), progress=False)
            return (
                []
                if r.ok
                else [f.divergence.message() + f" (reproduce: {f.reproducer[:500]})" for f in r.failures]
                + r.call_errors
            )

        yield CheckItem.from_parent(parent, name=f"bulk::{bulk_rows} rows", check=bulk)
    if config.getoption("dyadic24_exp_sweep"):

        def sweep(impl: Any) -> list[str]:
            from dyadic24.conformance.expsweep import run_exp_sweep
            from dyadic24.conformance.workers import default_workers

            if not impl.has_exp:
                pytest.skip("the subject exposes no exp routine")
            r = run_exp_sweep(impl, workers=default_workers(), progress=False)
            return (
                []
                if r.ok
                else [r.error or f"{r.mismatches} mismatches"]
                + [f"z {z}: got {g}, expected {w}" for z, g, w in r.examples]
            )

        yield CheckItem.from_parent(parent, name="exp sweep", check=sweep)


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if _asked(config):
        collector = Conformance.from_parent(session, name="dyadic24")
        items.extend(collector.collect())

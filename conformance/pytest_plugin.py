"""A pytest plugin: the conformance suite as test items in a serving stack's own CI, ending with the
runner's verdict and citation line.

    pytest --dyadic24-impl mypkg.sampler:propose        # a Python callable (clause 12.2)
    pytest --dyadic24-cmd "./my-sampler --jsonl"         # a JSON-lines program (clause 12.4)

adds one item per golden vector and 16-bit form, per invalid call, one for the accumulated check, one
for the fuzzing, and with ``--dyadic24-bulk N`` / ``--dyadic24-exp-sweep`` one each for the deeper
checks. Node IDs are ``dyadic24::<file>::tcId <n>[ <format>]``, ``dyadic24::invalid::<case>``,
``dyadic24::accumulated::<rows> rows``, ``dyadic24::fuzz::<n> examples``: select them with ``-k`` or
give node IDs (or the prefix ``dyadic24``) as arguments. A failure reads as the runner's: the first
diverging value, its clause, and the note of the vector's flags.

The subject is started once per pytest process, before any item runs: a subject that cannot load or
handshake, a vector set that is not this release's, or a bad option is one ``ERROR:`` line and exit
status 4 (pytest's usage error). The run ends with the verdict line of ``dyadic24 conform`` in the
terminal summary. A REDUCED run (an item deselected or skipped, fewer than 200 fuzz examples, fewer
than 10,000 accumulated rows) makes the session fail unless ``--dyadic24-allow-reduced`` is given.

Without ``--dyadic24-impl`` or ``--dyadic24-cmd`` the plugin adds nothing (it is loaded in every
pytest session of an environment where dyadic24 is installed, through the ``pytest11`` entry point,
and imports nothing heavy until asked).
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest

PREFIX = "dyadic24"
NOT_TAKEN = "nothing to check"  # a 16-bit form the subject does not take: skipped, not a check left out
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
    group.addoption(
        "--dyadic24-timeout",
        type=float,
        default=600.0,
        help="seconds the subject has for each response (600)",
    )
    group.addoption("--dyadic24-label", metavar="TEXT", help="your name for the build, in the verdict line")
    group.addoption(
        "--dyadic24-allow-reduced",
        action="store_true",
        help="let a REDUCED run (a check left out) pass the session",
    )


def _asked(config: pytest.Config) -> bool:
    return bool(config.getoption("dyadic24_impl") or config.getoption("dyadic24_cmd"))


def _usage(message: str) -> pytest.UsageError:
    return pytest.UsageError(f"dyadic24: {message}")


def pytest_configure(config: pytest.Config) -> None:
    if not _asked(config):
        return
    if config.getoption("dyadic24_impl") and config.getoption("dyadic24_cmd"):
        raise _usage("--dyadic24-impl and --dyadic24-cmd: give one")
    if config.getoption("dyadic24_examples") < 0 or config.getoption("dyadic24_accumulated") < 0:
        raise _usage("--dyadic24-examples and --dyadic24-accumulated: must be >= 0")
    timeout = config.getoption("dyadic24_timeout")
    if not (math.isfinite(timeout) and 0 < timeout <= 10**6):
        raise _usage(f"--dyadic24-timeout: must be a finite number of seconds in (0, 10^6], got {timeout}")
    # Node IDs of this plugin's items are no paths: take them out of the arguments pytest collects,
    # and collect nothing else where they were all the arguments.
    selectors = [a for a in config.args if a == PREFIX or a.startswith(PREFIX + "::")]
    if selectors:
        rest = [a for a in config.args if a not in selectors]
        if not rest:
            empty = tempfile.mkdtemp(prefix="dyadic24-")
            _STATE["empty"] = empty
            rest = [empty]
        config.args[:] = rest
    _STATE["selectors"] = selectors
    from dyadic24.vectors import accumulated, store

    try:
        spec, vectors = store.verify_release()
        _STATE["citation"] = (spec, vectors)
        known = sorted(accumulated.expected())
    except store.VectorDataError as exc:
        raise _usage(str(exc)) from exc
    rows = config.getoption("dyadic24_accumulated")
    if rows and rows not in known:
        raise _usage(f"--dyadic24-accumulated: must be 0 or one of {', '.join(map(str, known))}, got {rows}")


def pytest_unconfigure(config: pytest.Config) -> None:
    empty = _STATE.pop("empty", None)
    if empty:
        shutil.rmtree(empty, ignore_errors=True)


def pytest_sessionstart(session: pytest.Session) -> None:
    """The subject, started before any item: one that cannot start is a usage error (one line)."""
    config = session.config
    if not _asked(config):
        return
    from dyadic24.conformance.impls import CommandImplementation, HostedImplementation, SubjectError

    target, timeout = config.getoption("dyadic24_impl"), config.getoption("dyadic24_timeout")
    try:
        if target:
            impl: Any = HostedImplementation(
                f"target:{target}", target, exp=config.getoption("dyadic24_exp"), timeout=timeout
            )
        else:
            impl = CommandImplementation(config.getoption("dyadic24_cmd"), timeout)
    except SubjectError as exc:
        option = "--dyadic24-impl" if target else "--dyadic24-cmd"
        raise _usage(f"{option}: cannot load the implementation: {exc}") from exc
    _STATE["impl"] = impl
    if config.getoption("dyadic24_exp_sweep") and not impl.has_exp:
        impl.close()
        raise _usage(f"--dyadic24-exp-sweep: {impl.name} exposes no exp routine")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    impl = _STATE.pop("impl", None)
    if impl is not None:
        impl.close()
    if not _asked(session.config) or hasattr(session.config, "workerinput"):
        return
    report = _run_report(session.config)
    _STATE["summary"] = report
    from dyadic24.conformance.report import REDUCED

    if (
        report is not None
        and report.verdict == REDUCED
        and session.exitstatus == 0
        and not session.config.getoption("dyadic24_allow_reduced")
    ):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    report = _STATE.get("summary")
    if report is None:
        return
    from dyadic24.conformance.report import REDUCED, implementation_line, summary_line

    terminalreporter.section("dyadic24 conformance")
    for impl in report.implementations:
        terminalreporter.line(implementation_line(impl))
    if report.verdict == REDUCED and not config.getoption("dyadic24_allow_reduced"):
        terminalreporter.line("a REDUCED run fails the session (--dyadic24-allow-reduced lets it pass)")
    terminalreporter.line(summary_line(report))


# ---- items


class ConformanceError(Exception):
    """A check that failed, with the runner's one-line messages."""


class CheckItem(pytest.Item):
    """One conformance check; ``check(impl)`` returns (failure messages, the result to record)."""

    def __init__(self, *, check: Callable[[Any], tuple[list[str], dict[str, Any]]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check = check

    def runtest(self) -> None:
        impl = _STATE.get("impl")
        if impl is None:
            raise ConformanceError("the subject was not started")
        problems, record = self.check(impl)
        self.user_properties.append((PREFIX, json.dumps(record)))
        if problems:
            raise ConformanceError("\n".join(problems))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ConformanceError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return PREFIX, None, self.name


class Conformance(pytest.Collector):
    """The collector of the dyadic24 items (no file behind it)."""

    def collect(self) -> Iterator[pytest.Item]:
        yield from _items(self)


def _vector_check(vector: Any, fmt: str, trace: bool) -> Callable[[Any], tuple[list[str], dict[str, Any]]]:
    def check(impl: Any) -> tuple[list[str], dict[str, Any]]:
        from dyadic24.conformance.runner import check_vector, vector_calls
        from dyadic24.vectors import store

        if fmt not in impl.formats:
            pytest.skip(f"{NOT_TAKEN}: the subject does not take {fmt} logits")
        call = next(c for c in vector_calls(vector, impl.formats) if c.fmt == fmt)
        result = check_vector(impl, vector, call, trace=trace)
        problems = [d.message() for d in result.divergences]
        if result.divergences:
            notes = store.flag_notes()
            first = result.divergences[0].clause
            problems += [
                f"[{flag}] {notes[flag]['text']}"
                for flag in vector.flags
                if flag in notes and first in notes[flag]["clauses"]
            ]
        record = {
            "kind": "vector",
            "file": vector.file,
            "tcId": vector.tc_id,
            "format": fmt,
            "rows": vector.batch,
            "passed": result.passed,
            "traced": result.traced,
            "traceKeys": list(result.trace_keys),
        }
        return problems, record

    return check


def _items(parent: pytest.Collector) -> Iterator[pytest.Item]:
    from dyadic24.conformance import runner
    from dyadic24.conformance.invalid import cases_for
    from dyadic24.vectors import store

    config = parent.config
    trace = not config.getoption("dyadic24_no_trace")
    python = bool(config.getoption("dyadic24_impl"))
    for vector in store.iter_vectors():
        for fmt in ("binary32", vector.narrow_format):
            if fmt is None:
                continue
            name = f"{vector.file}::tcId {vector.tc_id}" + ("" if fmt == "binary32" else f" {fmt}")
            yield CheckItem.from_parent(parent, name=name, check=_vector_check(vector, fmt, trace))
    for case in cases_for(python):

        def invalid(impl: Any, case: Any = case) -> tuple[list[str], dict[str, Any]]:
            if not impl.invalid_calls:
                pytest.skip("the subject speaks JSON-lines minor version 0: no invalid calls")
            got = impl.invalid(case)
            passed = got.proposal is None and got.argument == case.argument
            record = {"kind": "invalid", "name": case.name, "passed": passed}
            if passed:
                return [], record
            what = "accepted it" if got.proposal is not None else (got.error or "no error")
            return [
                f"invalid call {case.name} ({case.rule}): {what}; expected an error naming {case.argument!r}"
            ], record

        yield CheckItem.from_parent(parent, name=f"invalid::{case.name}", check=invalid)
    rows = config.getoption("dyadic24_accumulated")
    if rows:

        def accumulated(impl: Any) -> tuple[list[str], dict[str, Any]]:
            r = runner.run_accumulated(impl, rows, progress=False)
            record = {"kind": "accumulated", **r.as_json()}
            return (
                []
                if r.ok
                else [f"accumulated check of {rows} rows: got {r.got or r.error}, expected {r.expected}"]
            ), record

        yield CheckItem.from_parent(parent, name=f"accumulated::{rows} rows", check=accumulated)
    examples = config.getoption("dyadic24_examples")
    if examples:

        def fuzz(impl: Any) -> tuple[list[str], dict[str, Any]]:
            from dyadic24.conformance.cli import oracle

            r = runner.run_fuzz(impl, oracle("fast"), examples=examples, trace=trace, progress=False)
            record = {"kind": "fuzz", **r.as_json()}
            if r.failure is None:
                return [], record
            return [r.failure.message(), f"reproduce (JSON-lines request): {r.reproducer}"], record

        yield CheckItem.from_parent(parent, name=f"fuzz::{examples} examples", check=fuzz)
    bulk_rows = config.getoption("dyadic24_bulk")
    if bulk_rows:

        def bulk(impl: Any) -> tuple[list[str], dict[str, Any]]:
            from dyadic24.conformance.bulk import run_bulk
            from dyadic24.conformance.workers import default_workers

            r = run_bulk(impl, bulk_rows, workers=default_workers(), progress=False)
            record = {"kind": "bulk", "rows": r.rows, "differing_rows": r.differing_rows, "seed": r.seed}
            problems = [f.divergence.message() + f" (reproduce: {f.reproducer[:500]})" for f in r.failures]
            return ([] if r.ok else problems + r.call_errors), record

        yield CheckItem.from_parent(parent, name=f"bulk::{bulk_rows} rows", check=bulk)
    if config.getoption("dyadic24_exp_sweep"):

        def sweep(impl: Any) -> tuple[list[str], dict[str, Any]]:
            from dyadic24.conformance.expsweep import run_exp_sweep
            from dyadic24.conformance.workers import default_workers

            r = run_exp_sweep(impl, workers=default_workers(), progress=False)
            record = {"kind": "exp", **r.as_json()}
            problems = [r.error or f"{r.mismatches} mismatches"] + [
                f"z {z}: got {g}, expected {w}" for z, g, w in r.examples
            ]
            return ([] if r.ok and r.complete else problems), record

        yield CheckItem.from_parent(parent, name="exp sweep", check=sweep)


def _selected(nodeid: str, selectors: list[str]) -> bool:
    return any(nodeid == s or nodeid.startswith(s + "::") for s in selectors)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """The items join the collection before -k, -m and --deselect filter it, and are counted."""
    if not _asked(config):
        return
    from _pytest.reports import CollectReport

    collector = Conformance.from_parent(session, name=PREFIX, nodeid=PREFIX)
    ours = list(collector.collect())
    nodes: list[pytest.Item | pytest.Collector] = list(ours)
    config.hook.pytest_collectreport(report=CollectReport(collector.nodeid, "passed", None, nodes))
    selectors: list[str] = _STATE.get("selectors", [])
    if selectors:
        dropped = [i for i in ours if not _selected(i.nodeid, selectors)]
        ours = [i for i in ours if _selected(i.nodeid, selectors)]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
    _STATE["expected"] = {"vectors": sum(1 for i in ours if ".json" in i.nodeid)}
    items.extend(ours)


# ---- the verdict, from the items' reports (in the xdist controller too)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not report.nodeid.startswith(PREFIX + "::"):
        return
    results: dict[str, dict[str, Any]] = _STATE.setdefault("results", {})
    for key, value in report.user_properties:
        if key == PREFIX and isinstance(value, str):
            results[report.nodeid] = json.loads(value)
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        kind = "not_taken" if NOT_TAKEN in str(reason) else "skipped"
        results.setdefault(report.nodeid, {"kind": kind, "passed": False})
    elif report.failed and report.nodeid not in results:  # an item that broke before it could record
        results.setdefault(report.nodeid, {"kind": "error", "passed": False})


def _run_report(config: pytest.Config) -> Any:
    from dyadic24.conformance.compare import Divergence
    from dyadic24.conformance.report import (
        AccumulatedResult,
        BulkResult,
        ExpSweepResult,
        FuzzResult,
        ImplementationReport,
        InvalidOutcome,
        InvalidResult,
        RunReport,
        VectorResult,
    )
    from dyadic24.vectors import store

    spec, vectors_sha = _STATE.get("citation") or store.verify_release()
    subject = config.getoption("dyadic24_impl") or config.getoption("dyadic24_cmd")
    entry = ImplementationReport(name=str(subject), mode="pytest plugin")
    entry.traced = not config.getoption("dyadic24_no_trace")
    entry.vectors_total = sum(1 for _ in store.iter_vectors())
    entry.exp_asked = bool(config.getoption("dyadic24_exp_sweep"))
    results: dict[str, dict[str, Any]] = _STATE.get("results", {})
    failed = Divergence("pytest", -1, "item", "failed", "passed", "13")
    left_out = 0
    for _, r in sorted(results.items()):
        kind = r.get("kind")
        if kind == "vector":
            entry.vectors.append(
                VectorResult(
                    file=r["file"], tc_id=r["tcId"], comment="", flags=(), clauses=(), rows=r["rows"],
                    divergences=[] if r["passed"] else [failed], traced=r["traced"], fmt=r["format"],
                    trace_keys=(int(r["traceKeys"][0]), int(r["traceKeys"][1])),
                )
            )  # fmt: skip
        elif kind == "invalid":
            entry.invalid = entry.invalid or InvalidResult()
            entry.invalid.outcomes.append(InvalidOutcome(r["name"], "", "", "", r["passed"]))
        elif kind == "accumulated":
            entry.accumulated = AccumulatedResult(
                r["rows"], r["expected"], r["got"], r["seconds"], r["error"]
            )
        elif kind == "fuzz":
            entry.fuzz = FuzzResult(
                r["oracle"], r["seed"], r["profile"], r["budget"], r["examples"], r["passed"], r["rows"]
            )
            entry.fuzz.failure = failed if r["failure"] else None
        elif kind == "bulk":
            entry.bulk = BulkResult(seed=r["seed"], rows=r["rows"], differing_rows=r["differing_rows"])
        elif kind == "exp":
            entry.exp_sweep = ExpSweepResult(
                r["total"], r["expected_total"], r["mismatches"], error=r["error"]
            )
        elif kind == "error":
            entry.vectors.append(VectorResult("?", 0, "", (), (), 0, [failed]))
        elif kind == "skipped":
            left_out += 1
    if left_out or entry.vectors_total > len(entry.base_vectors()):
        entry.vectors_note = f"{left_out} item(s) skipped" if left_out else "items deselected"
    if not results:
        return None
    return RunReport(
        spec, vectors_sha, [entry], subject=str(subject), label=config.getoption("dyadic24_label")
    )

"""The conformance runner's checks: golden vectors (clause 13.1), invalid calls (1.5), the accumulated
check (13.2) and hypothesis fuzzing against an oracle. ``bulk`` and ``expsweep`` hold the deeper checks.

A row that diverges inside a batch of several rows is run again alone; if it then matches, the
divergence is a row-isolation failure (clause 2.4) and is reported as such. An implementation that
offers traces must return one whenever it is asked (clause 12.3).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

import numpy as np
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from dyadic24.api import CallInputs, Proposal
from dyadic24.conformance import jsonl
from dyadic24.conformance.compare import Divergence, RowOutput, compare_row
from dyadic24.conformance.impls import CallResult, Implementation
from dyadic24.conformance.jsonl import Call
from dyadic24.conformance.process import clip
from dyadic24.conformance.report import (
    AccumulatedResult,
    FuzzResult,
    InvalidOutcome,
    InvalidResult,
    VectorResult,
)
from dyadic24.conformance.stop import Interrupted
from dyadic24.conformance.strategies import CI, Profile, batches

PROGRESS_AFTER = 5.0  # seconds a step runs before it reports progress
PROGRESS_EVERY = 5.0  # seconds between progress lines


class Progress:
    """Progress of one step on stderr, only once it has run PROGRESS_AFTER seconds: done / total,
    rate and ETA every PROGRESS_EVERY seconds, and a closing line if anything was printed."""

    def __init__(
        self, label: str, total: int, unit: str, stream: TextIO | None = None, enabled: bool = True
    ) -> None:
        self.label, self.total, self.unit = label, total, unit
        self.stream = stream
        self.enabled = enabled
        self.start = time.monotonic()
        self.last = self.start
        self.shown = False
        self.done = 0

    def _emit(self, text: str) -> None:
        print(text, file=self.stream or sys.stderr, flush=True)

    def update(self, done: int, extra: str = "") -> None:
        self.done = done
        now = time.monotonic()
        if not self.enabled or now - self.start < PROGRESS_AFTER or now - self.last < PROGRESS_EVERY:
            return
        self.last = now
        self.shown = True
        rate = done / max(now - self.start, 1e-9)
        eta = (self.total - done) / rate if rate > 0 and self.total else 0.0
        width = 24
        filled = int(width * done / self.total) if self.total else 0
        bar = "#" * filled + "." * (width - filled)
        self._emit(
            f"{self.label} [{bar}] {done:,}/{self.total:,} {self.unit}, {rate:,.1f} {self.unit}/s, "
            f"ETA {_duration(eta)}" + (f", {extra}" if extra else "")
        )

    def finish(self, extra: str = "") -> None:
        if self.enabled and self.shown:
            took = time.monotonic() - self.start
            self._emit(
                f"{self.label} done: {self.done:,} {self.unit} in {_duration(took)}"
                + (f", {extra}" if extra else "")
            )


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def row_output(p: Proposal, r: int) -> RowOutput:
    return RowOutput(
        status=int(p.status[r]),
        token=int(p.token[r]),
        ids=tuple(int(v) for v in p.ids[r]),
        tickets=tuple(int(v) for v in p.tickets[r]),
    )


def single_row(call: Call, r: int) -> Call:
    """Row r of a call as a call of its own (same tau and format)."""
    sl = slice(r, r + 1)
    inputs = call.inputs
    one = CallInputs(
        logits=np.ascontiguousarray(inputs.logits[sl]),
        temperature=inputs.temperature[sl].copy(),
        seed=inputs.seed[sl].copy(),
        round=inputs.round[sl].copy(),
        position=inputs.position[sl].copy(),
        tau_bits=inputs.tau_bits,
    )
    narrow = None if call.narrow is None else np.ascontiguousarray(call.narrow[sl])
    return Call(one, call.fmt, narrow)


def reproducer(impl: Implementation, call: Call) -> str:
    """A JSON-lines request (PROTOCOL.md) that reproduces a call: id 1, a trace only from a subject that
    announced traces, the logits in hex (a reproducer is read by people)."""
    fmt = call.fmt if call.fmt in impl.formats else "binary32"
    line, _ = jsonl.encode_request(
        1, Call(call.inputs, fmt, call.narrow) if fmt != "binary32" else Call(call.inputs), impl.traces
    )
    return line


def trace_keys(
    got: Sequence[dict[str, Any]] | None, expected: Sequence[dict[str, Any]] | None
) -> tuple[int, int]:
    """(trace values the subject returned that the reference's trace also holds, values the
    reference's trace holds): what "trace keys" counts, so that a partial trace is not reported as a
    whole one (clause 12.3)."""
    if expected is None:
        return 0, 0
    total = sum(len(row) for row in expected)
    if got is None:
        return 0, total
    compared = sum(
        sum(1 for k, v in g.items() if v is not None and k in e) for g, e in zip(got, expected, strict=False)
    )
    return compared, total


def compare_call(
    case: str,
    impl: Implementation,
    call: Call,
    got: CallResult,
    *,
    expected: Proposal,
    expected_trace: Sequence[dict[str, Any]] | None,
    trace: bool = True,
    isolate: bool = True,
) -> list[Divergence]:
    """The first divergence of every diverging row (or one for the whole call if it failed)."""
    inputs = call.inputs
    if got.proposal is None:
        return [Divergence(case, -1, "call", got.error or "no outputs", "outputs", got.clause)]
    if got.error is not None:  # outputs, but a broken trace (clause 12.3)
        return [Divergence(case, -1, "trace", got.error, "one clause-12.3 trace per row", got.clause)]
    if trace and impl.traces and got.trace is None:
        return [
            Divergence(
                case,
                -1,
                "trace",
                "none",
                "one clause-12.3 trace per row",
                "12.3",
                "the implementation offers traces (a trace parameter, or trace: true in its handshake)"
                " but returned none",
            )
        ]
    if got.trace is not None:
        problem = jsonl.trace_problem(got.trace, inputs.batch)
        if problem is not None:
            return [Divergence(case, -1, "trace", problem, "B row objects of clause 12.3", "12.3")]
    found: list[Divergence] = []
    for r in range(inputs.batch):
        want_trace = expected_trace[r] if expected_trace is not None else None
        got_trace = got.trace[r] if got.trace is not None else None
        div = compare_row(
            case,
            r,
            row_output(got.proposal, r),
            row_output(expected, r),
            got_trace=got_trace,
            expected_trace=want_trace,
        )
        if div is None:
            continue
        if isolate and inputs.batch > 1:
            alone = impl.call(single_row(call, r), got.trace is not None)
            if alone.proposal is not None:
                solo = compare_row(
                    case,
                    0,
                    row_output(alone.proposal, 0),
                    row_output(expected, r),
                    got_trace=alone.trace[0] if alone.trace is not None else None,
                    expected_trace=want_trace,
                )
                if solo is None:
                    div = Divergence(
                        div.case,
                        div.row,
                        div.field,
                        div.got,
                        div.expected,
                        "2.4",
                        f"the row alone gives the expected outputs: it depends on the other"
                        f" {inputs.batch - 1} row(s)"
                        f" of the batch (first divergence would name clause {div.clause})",
                    )
        found.append(div)
    return found


def widening(div: Divergence) -> Divergence:
    """A 16-bit form's divergence where the same vector's binary32 form passed: the logits are the
    same values, so the widening of the 16-bit input differs (clause 1.2); the trace has no widened
    logits, so the first difference it shows is downstream, in the clause it names."""
    if div.row < 0:
        return div
    note = f"its binary32 form passes: the 16-bit logits are widened otherwise (seen at clause {div.clause})"
    return dataclasses.replace(div, clause="1.2", note=note)


def vector_calls(vector: Any, formats: Sequence[str]) -> list[Call]:
    """The calls one golden vector makes: its binary32 form, and its 16-bit form where it has one and
    the implementation takes that format (clause 1.2)."""
    inputs = CallInputs(
        logits=np.ascontiguousarray(vector.logits),
        temperature=vector.temperature,
        seed=vector.seed,
        round=vector.round,
        position=vector.position,
        tau_bits=int(vector.tau_bits),
    )
    calls = [Call(inputs)]
    if vector.narrow_format is not None and vector.narrow_format in formats:
        calls.append(Call(inputs, vector.narrow_format, vector.narrow_logits))
    return calls


def check_vector(
    impl: Implementation,
    vector: Any,
    call: Call,
    *,
    trace: bool = True,
    isolate: bool = True,
    base_passed: bool | None = None,
) -> VectorResult:
    """One form of a golden vector (``call``: its binary32 form or a 16-bit one) through the
    implementation. A 16-bit form that diverges where the binary32 form passes names clause 1.2
    (``widening``); ``base_passed`` says whether it did, and where not given the binary32 form is run
    to find out."""
    got = impl.call(call, trace)
    kw: dict[str, Any] = {
        "expected": vector.expected,
        "expected_trace": vector.expected_trace,
        "trace": trace,
    }
    label = f"tcId {vector.tc_id}" + ("" if call.fmt == "binary32" else f" ({call.fmt})")
    divs = compare_call(label, impl, call, got, isolate=isolate, **kw)
    if divs and call.fmt != "binary32":
        if base_passed is None:
            base = vector_calls(vector, ("binary32",))[0]
            base_passed = not compare_call(label, impl, base, impl.call(base, trace), isolate=isolate, **kw)
        if base_passed:
            divs = [widening(d) for d in divs]
    return VectorResult(
        file=vector.file,
        tc_id=vector.tc_id,
        comment=vector.comment,
        flags=tuple(vector.flags),
        clauses=tuple(vector.clauses) + (("1.2",) if call.fmt != "binary32" else ()),
        rows=call.inputs.batch,
        divergences=divs,
        traced=got.trace is not None,
        fmt=call.fmt,
        trace_keys=trace_keys(got.trace, vector.expected_trace if impl.traces and trace else None),
    )


def run_vectors(
    impl: Implementation,
    vectors: Iterable[Any],
    *,
    trace: bool = True,
    isolate: bool = True,
    progress: bool = True,
    results: list[VectorResult] | None = None,
) -> list[VectorResult]:
    """Every golden vector (dyadic24.vectors.store.GoldenVector) through the implementation (clause 13.1),
    in binary32 and in each 16-bit format the implementation takes. Results are appended to
    ``results`` as they come (a stopped run keeps those it has)."""
    items = list(vectors)
    bar = Progress(f"[{impl.name}] vectors", len(items), "vectors", enabled=progress)
    results = [] if results is None else results
    failing = 0
    for n, vector in enumerate(items, 1):
        base_passed: bool | None = None  # the binary32 form's, which vector_calls gives first
        for call in vector_calls(vector, impl.formats):
            result = check_vector(impl, vector, call, trace=trace, isolate=isolate, base_passed=base_passed)
            if call.fmt == "binary32":
                base_passed = result.passed
            results.append(result)
            failing += not result.passed
        bar.update(n, f"{failing} failing")
    bar.finish(f"{failing} failing")
    return results


def run_invalid(
    impl: Implementation, progress: bool = True, result: InvalidResult | None = None
) -> InvalidResult:
    """Clause 1.5: every invalid call of dyadic24.conformance.invalid must be rejected with an error
    naming its argument (a Python callable: dyadic24.api.ArgumentError with that ``argument``)."""
    from dyadic24.conformance.invalid import cases_for

    start = time.monotonic()
    result = InvalidResult() if result is None else result
    for case in cases_for(impl.python_calls):
        got = impl.invalid(case)
        passed = got.proposal is None and got.argument == case.argument
        text = f"an error naming {got.argument!r}" if got.argument is not None else (got.error or "no error")
        result.outcomes.append(InvalidOutcome(case.name, case.argument, case.rule, text, passed))
    result.seconds = time.monotonic() - start
    return result


class _FoundError(Exception):
    def __init__(self, divergence: Divergence, call: Call) -> None:
        super().__init__(divergence.message())
        self.divergence = divergence
        self.call = call


def _find(exc: BaseException) -> _FoundError | None:
    if isinstance(exc, _FoundError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            hit = _find(inner)
            if hit is not None:
                return hit
    cause = exc.__cause__ or exc.__context__
    return _find(cause) if cause is not None and cause is not exc else None


@contextmanager
def _no_local_constants() -> Iterator[None]:
    """Hypothesis mixes the literals of every loaded module outside site-packages (the subject's own,
    an editable install of this package) into its draws, so ``--seed`` alone would not name the
    examples. The runner's draws use hypothesis's global constants only; other hypothesis tests in the
    same process get theirs back afterwards. (Hypothesis internals: where they moved, nothing is
    changed and the test of this reproducibility fails.)"""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:
        yield
        return
    original = getattr(providers, "_get_local_constants", None)
    cache = getattr(getattr(providers, "CONSTANTS_CACHE", None), "cache", None)
    if original is None or cache is None:
        yield
        return
    empty = Constants()
    providers._get_local_constants = lambda: empty
    cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = original
        cache.clear()


def run_fuzz(
    impl: Implementation,
    oracle: Implementation,
    *,
    oracle_name: str = "fast",
    profile: Profile = CI,
    examples: int | None = None,
    seed: int = 0,
    shrink: bool = True,
    trace: bool = True,
    progress: bool = True,
    strategy: st.SearchStrategy[CallInputs] | None = None,
    result: FuzzResult | None = None,
) -> FuzzResult:
    """Hypothesis fuzzing: each example is one call of several rows, compared row by row with the oracle.

    Stops at the first diverging example; with ``shrink`` hypothesis then minimises it. Counts and
    throughput cover the examples up to the first failure; shrinking is not counted.
    """
    budget = profile.examples if examples is None else examples
    if result is None:
        result = FuzzResult(oracle=oracle_name, seed=seed, profile=profile.name, budget=budget)
    failed = False
    start = time.perf_counter()
    bar = Progress(f"[{impl.name}] fuzz", budget, "examples", enabled=progress)

    def check(inputs: CallInputs) -> None:
        nonlocal failed
        counting = not failed
        call = Call(inputs)
        want = oracle.call(call, trace)
        if want.proposal is None:
            raise RuntimeError(f"the oracle {oracle.name} failed: {want.error}")
        got = impl.call(call, trace)
        divs = compare_call(
            "fuzz", impl, call, got, expected=want.proposal, expected_trace=want.trace, trace=trace
        )
        if counting:
            result.examples += 1
            result.rows += inputs.batch
        if divs:
            if counting:
                result.seconds = time.perf_counter() - start
            failed = True
            raise _FoundError(divs[0], call)
        if counting:
            result.passed += 1
            bar.update(result.examples, f"{result.rows} rows")

    phases = (Phase.generate, Phase.shrink) if shrink else (Phase.generate,)
    test = hypothesis_seed(seed)(
        settings(
            max_examples=budget,
            deadline=None,
            database=None,
            phases=phases,
            verbosity=Verbosity.quiet,
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
        )(given(strategy if strategy is not None else batches(profile))(check))
    )
    try:
        with _no_local_constants():
            test()
    except Exception as exc:
        found = _find(exc)
        if found is None:
            raise
        result.failure = found.divergence
        result.reproducer = reproducer(impl, found.call)
    if not failed:
        result.seconds = time.perf_counter() - start
    bar.finish()
    return result


def accumulated_call(impl: Implementation) -> Callable[..., Proposal]:
    """The implementation as the clause-12.2 callable the accumulated stream drives (binary32 calls)."""
    from dyadic24.api import validate_call

    def call(logits: Any, temperature: Any, seed: Any, rnd: Any, position: Any, *, tau: Any) -> Proposal:
        result = impl.call(Call(validate_call(logits, temperature, seed, rnd, position, tau)), False)
        if result.proposal is None:
            raise RuntimeError(result.error or "no outputs")
        return result.proposal

    return call


def run_accumulated(impl: Implementation, rows: int, progress: bool = True) -> AccumulatedResult:
    """Clause 13.2: hash the outputs of the first ``rows`` rows of the accumulated stream and compare
    with the digest the exact reference produced (vectors/data/accumulated.json). The stream's calls go
    to the subject one segment at a time; the hashing is the runner's."""
    from dyadic24.vectors import accumulated

    expected = accumulated.expected()[rows]
    began = time.monotonic()
    bar = Progress(f"[{impl.name}] accumulated", rows, "rows", enabled=progress)
    got: str | None = None
    error = None
    try:
        got = accumulated.accumulate(accumulated_call(impl), rows, report=bar.update)
    except Interrupted:
        raise
    except Exception as exc:  # a subject's failed call is a finding
        got, error = None, clip(f"{type(exc).__name__}: {exc}")
    bar.finish()
    return AccumulatedResult(rows, expected, got, time.monotonic() - began, error)

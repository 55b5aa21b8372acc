"""The conformance runner: golden vectors first (clause 13.1), then hypothesis fuzzing against an oracle.

A row that diverges inside a batch of several rows is run again alone; if it then matches, the
divergence is a row-isolation failure (clause 2.4) and is reported as such.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TextIO

import numpy as np
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from dyadic24.api import CallInputs, Proposal
from dyadic24.conformance import jsonl
from dyadic24.conformance.compare import Divergence, RowOutput, compare_row
from dyadic24.conformance.impls import CallResult, Implementation
from dyadic24.conformance.report import AccumulatedResult, FuzzResult, VectorResult
from dyadic24.conformance.strategies import CI, Profile, batches

Progress = Callable[[str], None]


def stderr_progress(stream: TextIO | None = None) -> Progress:
    def emit(text: str) -> None:
        print(text, file=stream or sys.stderr, flush=True)

    return emit


def row_output(p: Proposal, r: int) -> RowOutput:
    return RowOutput(
        status=int(p.status[r]),
        token=int(p.token[r]),
        ids=tuple(int(v) for v in p.ids[r]),
        tickets=tuple(int(v) for v in p.tickets[r]),
    )


def single_row(inputs: CallInputs, r: int) -> CallInputs:
    """Row r of a call as a call of its own (same tau)."""
    sl = slice(r, r + 1)
    return CallInputs(
        logits=np.ascontiguousarray(inputs.logits[sl]), temperature=inputs.temperature[sl].copy(),
        seed=inputs.seed[sl].copy(), round=inputs.round[sl].copy(), position=inputs.position[sl].copy(),
        tau_bits=inputs.tau_bits,
    )  # fmt: skip


def compare_call(
    case: str,
    impl: Implementation,
    inputs: CallInputs,
    got: CallResult,
    *,
    expected: Proposal,
    expected_trace: Sequence[dict[str, Any]] | None,
    isolate: bool = True,
) -> list[Divergence]:
    """The first divergence of every diverging row (or one for the whole call if it failed)."""
    if got.proposal is None:
        return [Divergence(case, -1, "call", got.error or "no outputs", "outputs", got.clause)]
    found: list[Divergence] = []
    for r in range(inputs.batch):
        want_trace = expected_trace[r] if expected_trace is not None else None
        got_trace = got.trace[r] if got.trace is not None else None
        div = compare_row(
            case, r, row_output(got.proposal, r), row_output(expected, r), got_trace=got_trace,
            expected_trace=want_trace,
        )  # fmt: skip
        if div is None:
            continue
        if isolate and inputs.batch > 1:
            alone = impl.call(single_row(inputs, r), got.trace is not None)
            if alone.proposal is not None:
                solo = compare_row(
                    case, 0, row_output(alone.proposal, 0), row_output(expected, r),
                    got_trace=alone.trace[0] if alone.trace is not None else None, expected_trace=want_trace,
                )  # fmt: skip
                if solo is None:
                    div = Divergence(
                        div.case, div.row, div.field, div.got, div.expected, "2.4",
                        f"the row alone gives the expected outputs: it depends on the other "
                        f"{inputs.batch - 1} row(s) of the batch"
                        f" (first divergence would name clause {div.clause})",
                    )  # fmt: skip
        found.append(div)
    return found


def vector_inputs(vector: Any) -> CallInputs:
    return CallInputs(
        logits=np.ascontiguousarray(vector.logits), temperature=vector.temperature, seed=vector.seed,
        round=vector.round, position=vector.position, tau_bits=int(vector.tau_bits),
    )  # fmt: skip


def run_vectors(
    impl: Implementation,
    vectors: Iterable[Any],
    *,
    trace: bool = True,
    isolate: bool = True,
    progress: Progress | None = None,
    every: int = 100,
) -> list[VectorResult]:
    """Every golden vector (dyadic24.vectors.store.GoldenVector) through the implementation (clause 13.1)."""
    items = list(vectors)
    results: list[VectorResult] = []
    failing = 0
    for n, vector in enumerate(items, 1):
        inputs = vector_inputs(vector)
        got = impl.call(inputs, trace)
        case = f"tcId {vector.tc_id}"
        divs = compare_call(
            case,
            impl,
            inputs,
            got,
            expected=vector.expected,
            expected_trace=vector.expected_trace,
            isolate=isolate,
        )
        results.append(
            VectorResult(
                file=vector.file, tc_id=vector.tc_id, comment=vector.comment, flags=tuple(vector.flags),
                clauses=tuple(vector.clauses), rows=inputs.batch, divergences=divs,
                traced=got.trace is not None,
            )
        )  # fmt: skip
        failing += bool(divs)
        if progress is not None and (n % every == 0 or n == len(items)) and len(items) >= every:
            progress(f"[{impl.name}] vectors {n}/{len(items)} ({failing} failing)")
    return results


class _FoundError(Exception):
    def __init__(self, divergence: Divergence, inputs: CallInputs) -> None:
        super().__init__(divergence.message())
        self.divergence = divergence
        self.inputs = inputs


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
    progress: Progress | None = None,
    every: int = 100,
    strategy: st.SearchStrategy[CallInputs] | None = None,
) -> FuzzResult:
    """Hypothesis fuzzing: each example is one call of several rows, compared row by row with the oracle.

    Stops at the first diverging example; with ``shrink`` hypothesis then minimises it. Counts and
    throughput cover the examples up to the first failure; shrinking is not counted.
    """
    budget = profile.examples if examples is None else examples
    result = FuzzResult(oracle=oracle_name, seed=seed, profile=profile.name, budget=budget)
    failed = False
    start = time.perf_counter()

    def check(inputs: CallInputs) -> None:
        nonlocal failed
        counting = not failed
        want = oracle.call(inputs, trace)
        if want.proposal is None:
            raise RuntimeError(f"the oracle {oracle.name} failed: {want.error}")
        got = impl.call(inputs, trace)
        divs = compare_call("fuzz", impl, inputs, got, expected=want.proposal, expected_trace=want.trace)
        if counting:
            result.examples += 1
            result.rows += inputs.batch
        if divs:
            if counting:
                result.seconds = time.perf_counter() - start
            failed = True
            raise _FoundError(divs[0], inputs)
        if counting:
            result.passed += 1
            if progress is not None and result.examples % every == 0:
                rate = result.examples / max(time.perf_counter() - start, 1e-9)
                progress(
                    f"[{impl.name}] fuzz {result.examples}/{budget} examples, {result.rows} rows,"
                    f" {rate:.1f} examples/s"
                )

    phases = (Phase.generate, Phase.shrink) if shrink else (Phase.generate,)
    test = hypothesis_seed(seed)(
        settings(
            max_examples=budget, deadline=None, database=None, phases=phases, verbosity=Verbosity.quiet,
            suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
        )(given(strategy if strategy is not None else batches(profile))(check))
    )  # fmt: skip
    try:
        test()
    except Exception as exc:
        found = _find(exc)
        if found is None:
            raise
        result.failure = found.divergence
        result.reproducer = jsonl.encode_request(0, found.inputs, trace=True)
    if not failed:
        result.seconds = time.perf_counter() - start
    return result


def run_accumulated(impl: Implementation, rows: int) -> AccumulatedResult:
    """Clause 13.2: hash the outputs of the first ``rows`` rows of the accumulated stream and compare
    with the digest the exact reference produced (vectors/data/accumulated.json)."""
    from dyadic24.api import validate_call
    from dyadic24.vectors import accumulated

    digests = accumulated.expected()
    if rows not in digests:
        raise ValueError(f"--accumulated: no expected digest for {rows} rows; known: {sorted(digests)}")
    expected = digests[rows]
    began = time.perf_counter()

    def call(logits: Any, temperature: Any, seed: Any, rnd: Any, position: Any, *, tau: Any) -> Proposal:
        result = impl.call(validate_call(logits, temperature, seed, rnd, position, tau), False)
        if result.proposal is None:
            raise RuntimeError(result.error or "no outputs")
        return result.proposal

    try:
        got: str | None = accumulated.accumulate(call, rows)
        error = None
    except RuntimeError as exc:
        got, error = None, str(exc)
    return AccumulatedResult(rows, expected, got, time.perf_counter() - began, error)

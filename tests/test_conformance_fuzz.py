"""The public hypothesis strategies and the fuzzing half of the runner: the strategies reach the edges
they claim (ties, -inf masks, ticket boundaries of clause 9.5, near-midpoint z of clause 5.3) and
fuzzing catches and shrinks mutants."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from dyadic24.api import TICKETS, CallInputs, validate_call
from dyadic24.conformance import jsonl, strategies
from dyadic24.conformance.impls import PythonImplementation, tau_scalar
from dyadic24.conformance.mutants import MUTANTS
from dyadic24.conformance.runner import run_fuzz
from dyadic24.conformance.strategies import CI, DEEP
from dyadic24.reference.exact import propose_exact
from dyadic24.reference.fast import propose_fast

DEEP_RUN = os.environ.get("DYADIC24_DEEP", "") not in ("", "0")
QUICK = settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def fast() -> PythonImplementation:
    return PythonImplementation(propose_fast, "fast")


def call(inputs: CallInputs) -> tuple[Any, Any, Any, Any, Any]:
    return (inputs.logits, inputs.temperature, inputs.seed, inputs.round, inputs.position)


@QUICK
@given(strategies.batches(CI))
def test_batches_are_valid_calls(inputs: CallInputs) -> None:
    """Every drawn call passes the clause-1 argument checks; rows share V and tau."""
    checked = validate_call(*call(inputs), tau_scalar(inputs.tau_bits))
    assert checked.tau_bits == inputs.tau_bits
    assert 1 <= inputs.batch <= CI.max_rows
    assert 1 <= inputs.vocab <= CI.max_vocab or inputs.vocab in strategies.TILED_VOCABS
    assert inputs.temperature.shape == inputs.seed.shape == (inputs.batch,)


@QUICK
@given(strategies.boundary_batches())
def test_boundary_rows_put_u_on_a_ticket_boundary(inputs: CallInputs) -> None:
    """Clause 9.5: most rows have u equal to (or next to) the end of the first support entry."""
    result = propose_fast(*call(inputs), tau=tau_scalar(inputs.tau_bits), trace=True)
    assert result.trace is not None
    for row in result.trace:
        assert row.path == "sampled" and row.u is not None
        first = row.support_tickets[0]
        assert abs(first - row.u) <= 1 or row.u == 0 or len(row.support_ids) == 1 or first == TICKETS // 2


def _find(condition: Any) -> CallInputs:
    """A call of the default fuzz strategy (dyadic24 conform's) meeting ``condition``, found by hypothesis."""
    from hypothesis import find

    return find(
        strategies.batches(CI),
        condition,
        # (no shrinking: the tests need a call that meets the condition, not the smallest one)
        settings=settings(
            max_examples=2000, database=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate]
        ),
    )


def test_default_fuzz_reaches_tiled_vocabularies() -> None:
    """Every GPU implementation tiles the vocabulary: the default fuzz draws V > 4,096 too."""
    assert _find(lambda c: c.vocab > 4096).vocab in strategies.TILED_VOCABS


def test_default_fuzz_draws_the_default_tau() -> None:
    assert _find(lambda c: c.tau_bits == 0x3F333333).tau_bits == 0x3F333333


def test_default_fuzz_draws_greedy_rows_with_tied_maxima() -> None:
    """Clause 4.1: a greedy row whose maximum is shared must take the lowest ID."""

    def tied_greedy(c: CallInputs) -> bool:
        out = propose_fast(*call(c), tau=tau_scalar(c.tau_bits))
        for r in range(c.batch):
            row = c.logits[r]
            if out.status[r] == 0 and c.temperature[r] == 0 and np.count_nonzero(row == row.max()) > 1:
                return True
        return False

    assert tied_greedy(_find(tied_greedy))


def test_z_for_count_hits_the_target() -> None:
    for target in (1, 2, 1000, 123456, 4194321, 8388607, 8388608):
        z = strategies.z_for_count(target)
        assert z is not None and strategies._two_token_count(z) == target


def test_near_midpoint_pool() -> None:
    """The near-midpoint z of vectors/data/exp_near_midpoints.json are all in [-104, 0] (clause 5.3)."""
    pool = strategies.near_midpoint_z()
    if strategies.midpoints_path().is_file():
        assert pool
    values = strategies.bits_to_f32(list(pool))
    assert np.all((values <= 0) & (values >= -104))


@settings(max_examples=10, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_midpoint_batches_have_z_equal_to_the_logits(data: st.DataObject) -> None:
    """tau = 1 and m = 0: d = z = l exactly (clauses 5.1-5.2)."""
    if not strategies.near_midpoint_z():
        return
    inputs = data.draw(strategies.midpoint_batches())
    result = propose_fast(*call(inputs), tau=tau_scalar(inputs.tau_bits), trace=True)
    assert result.trace is not None
    for r, row in enumerate(result.trace):
        bits = inputs.logits[r].view(np.uint32)
        for token, z in zip(row.slot_ids, row.z_bits, strict=True):
            assert z == int(bits[token]) or (z == 0 and int(bits[token]) == 0x80000000)


def test_fast_reference_fuzzes_clean_against_the_exact_one() -> None:
    exact = PythonImplementation(propose_exact, "exact")
    result = run_fuzz(fast(), exact, oracle_name="exact", examples=60, seed=7)
    assert result.ok, result.failure and result.failure.message()
    assert result.examples == result.passed == 60 and result.rows >= 60
    assert result.rows_per_s > 0


def test_fuzzing_shrinks_a_failure_and_gives_a_reproducer() -> None:
    """The reproducer is a JSON-lines request (PROTOCOL.md) on which the mutant still diverges."""
    mutant = PythonImplementation(MUTANTS["u_low_bits"][0], "u_low_bits")
    result = run_fuzz(mutant, fast(), examples=50, seed=1)
    assert result.failure is not None and result.failure.clause == "9.4"
    assert result.reproducer is not None
    request = jsonl.decode_request(result.reproducer)
    assert request.id == 1 and request.trace  # PROTOCOL.md: a positive id; the mutant offers traces
    assert request.call is not None and request.call.inputs.batch == 1  # shrunk to one row
    got = mutant.call(request.call, True)
    want = fast().call(request.call, True)
    assert got.trace is not None and want.trace is not None and got.trace[0]["u"] != want.trace[0]["u"]


def test_fuzzing_finds_the_row_isolation_mutant() -> None:
    mutant = PythonImplementation(MUTANTS["batch_failure"][0], "batch_failure")
    result = run_fuzz(mutant, fast(), examples=200, seed=0, shrink=False)
    assert result.failure is not None and result.failure.clause == "2.4"


def test_profiles() -> None:
    assert DEEP.examples > CI.examples and DEEP.max_vocab > CI.max_vocab and DEEP.max_rows > CI.max_rows


@pytest.mark.deep
@pytest.mark.skipif(not DEEP_RUN, reason="deep profile: set DYADIC24_DEEP=1")
def test_deep_profile_fast_against_exact() -> None:
    """The deep profile (16-row calls, V up to 4096): the fast reference against the exact one."""
    exact = PythonImplementation(propose_exact, "exact")
    result = run_fuzz(fast(), exact, oracle_name="exact", profile=DEEP, seed=11)
    assert result.ok, result.failure and result.failure.message()
    assert result.examples == DEEP.examples

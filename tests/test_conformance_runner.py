"""The conformance runner on hand-made vectors: first-divergence search in clause order (clause 12.3),
row isolation (clause 2.4), the JSON-lines codec (clause 12.4) and the report formats."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dyadic24.api import TAU_DEFAULT_BITS, ArgumentError, CallInputs, Proposal, Status
from dyadic24.conformance import jsonl
from dyadic24.conformance.compare import RowOutput, compare_outputs, compare_trace
from dyadic24.conformance.impls import CallResult, Implementation, PythonImplementation, tau_scalar
from dyadic24.conformance.invalid import InvalidCall, cases_for
from dyadic24.conformance.mutants import MUTANTS
from dyadic24.conformance.report import (
    ImplementationReport,
    RunReport,
    clause_table,
    render_text,
    summary_line,
    write_json,
    write_junit,
)
from dyadic24.conformance.runner import run_vectors
from dyadic24.reference.exact import propose_exact
from dyadic24.reference.fast import propose_fast
from dyadic24.vectors.store import GoldenVector

F32 = np.float32


def make_vector(
    logits: list[list[float]],
    temperature: list[float] | None = None,
    *,
    tau_bits: int = TAU_DEFAULT_BITS,
    tc_id: int = 1,
    flags: tuple[str, ...] = ("test",),
    clauses: tuple[str, ...] = ("5.3",),
) -> GoldenVector:
    """A golden vector made here from the exact reference (the same as the generator does)."""
    x = np.array(logits, dtype=F32)
    b = x.shape[0]
    t = np.array(temperature if temperature is not None else [1.0] * b, dtype=F32)
    seed = np.arange(1, b + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    rnd = np.full(b, 3, dtype=np.uint64)
    pos = np.arange(b, dtype=np.uint64) + np.uint64(1 << 40)
    want = propose_exact(x, t, seed, rnd, pos, tau=tau_scalar(tau_bits), trace=True)
    assert want.trace is not None
    plain = Proposal(want.status, want.token, want.ids, want.tickets)
    return GoldenVector(
        file="golden_test.json",
        tc_id=tc_id,
        comment="hand-made",
        flags=flags,
        clauses=clauses,
        logits=x,
        temperature=t,
        seed=seed,
        round=rnd,
        position=pos,
        tau_bits=tau_bits,
        expected=plain,
        expected_trace=[r.as_json() for r in want.trace],
    )


# e over many binades: the binary64 sums round, so the summation order shows in S (clause 6.2).
SPREAD_ROW = [
    0.0 if i == 5 else float(v) for i, v in enumerate(-np.random.default_rng(0).uniform(20, 45, 32))
]

VECTORS = [
    make_vector([[1.0, 2.0, 3.0, -1.0, 0.5]], tc_id=1, flags=("plain",), clauses=("5.1", "5.3", "7.3")),
    make_vector(
        [[0.0, -0.0, -1.0], [np.nan, 1.0, 2.0]],
        [1.0, 1.0],
        tc_id=2,
        flags=("nan", "batch"),
        clauses=("2.1", "2.4"),
    ),
    make_vector(
        [[-0.0, 0.0, -3.0, 0.0]], [0.0], tc_id=3, flags=("greedy", "signed_zero"), clauses=("3.1", "4.1")
    ),
    make_vector([SPREAD_ROW], tau_bits=0x3F800000, tc_id=4, flags=("spread",), clauses=("6.2",)),
]


def fast_impl() -> PythonImplementation:
    return PythonImplementation(propose_fast, "fast")


def test_fast_reference_passes_hand_made_vectors() -> None:
    results = run_vectors(fast_impl(), VECTORS)
    assert all(r.passed for r in results), [d.message() for r in results for d in r.divergences]
    assert all(r.traced for r in results)


def test_exp_mutant_names_clause_5_3_and_the_token() -> None:
    """The message names the step, the token, both bit patterns and the clause (clause 5.3)."""
    impl = PythonImplementation(MUTANTS["exp_fp32"][0], "exp_fp32")
    results = run_vectors(impl, VECTORS[:1])
    div = results[0].divergences[0]
    assert div.clause == "5.3"
    assert div.field.startswith("e of token ")
    assert div.message().startswith("tcId 1 row 0: e of token ")
    assert " got 0x" in div.message() and ", expected 0x" in div.message()


def test_outputs_only_comparison_names_an_output_field() -> None:
    impl = PythonImplementation(MUTANTS["support_by_logit"][0], "support_by_logit")
    results = run_vectors(impl, VECTORS[:1], trace=False)
    div = results[0].divergences[0]
    assert (div.field, div.clause) == ("ids[0]", "8.1")
    assert not results[0].traced


def test_batch_mistake_is_attributed_to_row_isolation() -> None:
    """Row 0 is fine alone but fails next to a NaN row: clause 2.4, not 2.1."""
    impl = PythonImplementation(MUTANTS["batch_failure"][0], "batch_failure")
    results = run_vectors(impl, VECTORS[1:2])
    (div,) = results[0].divergences
    assert (div.row, div.field, div.clause) == (0, "status", "2.4")
    assert "alone" in div.note


def test_signed_zero_order_mistake_is_clause_3_1() -> None:
    impl = PythonImplementation(MUTANTS["negzero_below_poszero"][0], "negzero_below_poszero")
    (div,) = run_vectors(impl, VECTORS[2:3])[0].divergences
    assert div.clause == "3.1" and div.field.startswith("order[")


def test_summation_mistake_is_clause_6_2() -> None:
    impl = PythonImplementation(MUTANTS["sum_sequential"][0], "sum_sequential")
    (div,) = run_vectors(impl, VECTORS[3:4])[0].divergences
    assert (div.field, div.clause) == ("S", "6.2")


class Raising(Implementation):
    name = "raising"

    def call(self, call: jsonl.Call, trace: bool) -> CallResult:
        return CallResult(None, error="raised RuntimeError: boom")


def test_a_crashing_call_fails_every_vector() -> None:
    results = run_vectors(Raising(), VECTORS)
    assert all(not r.passed for r in results)
    assert (
        results[0].divergences[0].message()
        == "tcId 1: call: got raised RuntimeError: boom, expected outputs (clause 12.2)"
    )


def wrong_dtype(*args: Any, tau: Any, trace: bool = False) -> Proposal:
    p = propose_fast(*args, tau=tau, trace=trace)
    return Proposal(p.status.astype(np.int64), p.token, p.ids, p.tickets)


def test_outputs_must_be_int32_of_the_clause_12_1_shapes() -> None:
    results = run_vectors(PythonImplementation(wrong_dtype, "int64"), VECTORS[:1])
    div = results[0].divergences[0]
    assert div.clause == "12.1" and "int64" in div.got


# --- compare: trace walk order -----------------------------------------------------------------


def _trace() -> dict[str, Any]:
    want = VECTORS[0].expected_trace[0]
    return json.loads(json.dumps(want))  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("key", "index", "clause", "field"),
    [
        ("d", 0, "5.1", "d of token 0"),
        ("z", 1, "5.2", "z of token 1"),
        ("e", 2, "5.3", "e of token 2"),
        ("p", 3, "7.1", "p of token 3"),
        ("counts", 4, "7.2", "c of token 4"),
        ("tickets", 0, "7.3", "t of token 0"),
        ("key", 1, "9.2", "key word 1"),
        ("block", 2, "9.3", "block word 2"),
    ],
)
def test_each_trace_field_names_its_clause(key: str, index: int, clause: str, field: str) -> None:
    got = _trace()
    value = got[key][index]
    got[key][index] = value + 1 if isinstance(value, int) else f"{int(value, 16) ^ 1:0{len(value)}x}"
    div = compare_trace("tcId 1", 0, got, _trace())
    assert div is not None and (div.field, div.clause) == (field, clause)


def test_the_earliest_clause_wins() -> None:
    """z and p both wrong: z (clause 5.2) comes first in clause order."""
    got = _trace()
    got["p"][0] = "0" * 16
    got["z"][4] = "00000000"
    div = compare_trace("c", 0, got, _trace())
    assert div is not None and div.clause == "5.2"


def test_slot_order_mistake_is_clause_6_1_not_5() -> None:
    """The same per-token values in another slot order: d/z/e compare equal per token, slots differ."""
    got = _trace()
    perm = [4, 3, 2, 1, 0]
    for key in ("slot_ids", "d", "z", "e"):
        got[key] = [got[key][i] for i in perm]
    div = compare_trace("c", 0, got, _trace())
    assert div is not None and div.clause == "6.1" and div.field == "slot[0]"


def test_partial_trace_is_compared_where_present() -> None:
    got = {"status": 0, "path": "sampled", "token": _trace()["token"], "u": _trace()["u"] + 1}
    div = compare_trace("c", 0, got, _trace())
    assert div is not None and (div.field, div.clause) == ("u", "9.4")


def test_outputs_of_failed_rows_are_clause_2_3() -> None:
    want = RowOutput(int(Status.NAN_LOGIT), -1, (-1,) * 32, (0,) * 32)
    got = RowOutput(int(Status.NAN_LOGIT), 0, (-1,) * 32, (0,) * 32)
    div = compare_outputs("c", 0, got, want)
    assert div is not None and (div.field, div.clause) == ("token", "2.3")


# --- JSON-lines codec --------------------------------------------------------------------------


def test_request_round_trip_keeps_every_bit() -> None:
    v = VECTORS[1]
    logits = v.logits.copy()
    logits.view(np.uint32)[0, 0] = 0x7F800001  # a signalling NaN keeps its payload
    inputs = CallInputs(logits, v.temperature, v.seed, v.round, v.position, 0x00000001)
    for frame in (False, True):
        line, payload = jsonl.encode_request(9, inputs, trace=True, frame=frame)
        assert bool(payload) == frame and jsonl.frame_length(line) == len(payload)
        req = jsonl.decode_request(line, payload or None)
        assert req.id == 9 and req.trace and req.call is not None
        got = req.call.inputs
        assert np.array_equal(got.logits.view(np.uint32), logits.view(np.uint32))
        assert np.array_equal(got.seed, v.seed) and got.tau_bits == 1


def test_16_bit_requests_widen_exactly() -> None:
    """Clause 1.2: binary16 and bfloat16 rows travel as 16-bit words and widen to the same binary32."""
    narrow = np.array([[0x3C00, 0x8000, 0x0001, 0x7C00]], dtype=np.uint16)  # 1, -0, least subnormal, +inf
    for fmt in ("binary16", "bfloat16"):
        inputs = CallInputs(
            jsonl.widen16(narrow, fmt), np.ones(1, np.float32), *(np.zeros(1, np.uint64),) * 3, 0x3F800000
        )
        for frame in (False, True):
            line, payload = jsonl.encode_request(1, jsonl.Call(inputs, fmt, narrow), False, frame=frame)
            req = jsonl.decode_request(line, payload or None)
            assert req.call is not None and req.call.fmt == fmt
            assert np.array_equal(req.call.inputs.logits.view(np.uint32), inputs.logits.view(np.uint32))
    assert jsonl.widen16(narrow, "binary16").view(np.uint32).tolist() == [
        [0x3F800000, 0x80000000, 0x33800000, 0x7F800000]
    ]
    assert jsonl.widen16(narrow, "bfloat16").view(np.uint32).tolist()[0][0] == 0x3C000000


@pytest.mark.parametrize("case", cases_for(python=False), ids=lambda c: c.name)
def test_every_invalid_wire_request_names_its_argument_in_the_decoder(case: InvalidCall) -> None:
    """The library decoder rejects each wire form naming the case's argument (clause 1.5)."""
    for frames in (False, True):
        line, payload = case.wire(5, frames)
        with pytest.raises(ArgumentError) as exc:
            jsonl.decode_request(line, payload or None)
        assert exc.value.argument == case.argument, (frames, exc.value)


def test_response_round_trip_and_errors() -> None:
    p = VECTORS[1].expected
    line = jsonl.encode_response(4, p, VECTORS[1].expected_trace)
    resp = jsonl.decode_response(line, 2)
    assert resp.proposal is not None and resp.trace == VECTORS[1].expected_trace
    assert np.array_equal(resp.proposal.tickets, p.tickets)
    err = jsonl.decode_response(jsonl.encode_error(4, "tau", "must be > 0"), 2)
    assert err.proposal is None and err.error_argument == "tau"
    with pytest.raises(jsonl.ProtocolError):
        jsonl.decode_response('{"id": 4, "status": [0], "token": [0], "ids": [], "tickets": []}', 2)
    with pytest.raises(jsonl.ProtocolError):
        jsonl.decode_handshake('{"protocol": "other"}')


# --- reports -----------------------------------------------------------------------------------


def _report(impl: Implementation) -> RunReport:
    entry = ImplementationReport(name=impl.name, mode="test", traced=True)
    entry.vectors = run_vectors(impl, VECTORS)
    return RunReport("a" * 64, "b" * 64, [entry], subject=impl.name)


def test_reports_render(tmp_path: Path) -> None:
    bad = _report(PythonImplementation(MUTANTS["batch_failure"][0], "batch_failure"))
    good = _report(fast_impl())
    # vectors alone are not a conformance verdict: a reduced run that says what it left out
    assert re.search(
        r'REDUCED subject "fast" vectors 4/4 trace-keys (\d+)/\1 invalid 0/0 accumulated 0/0 fuzz 0/0 rows 0'
        r" \(reduced run, not checked: accumulated check, fuzz, golden vectors, invalid calls\)$",
        summary_line(good),
    ), summary_line(good)
    assert summary_line(good).startswith(
        f"dyadic24-floor-first-v1 spec-sha256:{'a' * 64} vectors-sha256:{'b' * 64}"
    )
    assert 'NON-CONFORMANT subject "batch_failure" vectors 3/4' in summary_line(bad)
    notes = {
        "batch": {"text": "a note", "clauses": ["2.4"]},
        "nan": {"text": "unrelated", "clauses": ["2.1"]},
    }
    text = render_text(bad, flag_notes=notes)
    assert "clause 2.4" in text and "[batch] a note" in text
    assert "[nan]" not in text  # the flag does not bear on clause 2.4, where the vector diverged
    table = clause_table(bad.implementations[0].vectors)
    # the failing vector (clauses 2.1 and 2.4 declared) counts under 2.4 alone, its diverging clause
    assert table["2.4"] == {"pass": 0, "fail": 1, "diverged": 1}
    assert "2.1" not in table  # (old tables counted a failure under every declared clause)
    write_json(bad, tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["conformant"] is False and data["implementations"][0]["vectors_passed"] == 3
    assert data["verdict"] == "NON-CONFORMANT"
    write_junit(bad, tmp_path / "r.xml")
    suite = ET.parse(tmp_path / "r.xml").getroot().find("testsuite")
    # 4 vectors, and the 4 required checks this run left out (the full vector set among them) as skipped cases
    assert suite is not None and suite.get("failures") == "1" and suite.get("tests") == "8"
    assert suite.get("skipped") == "4"


def test_torch_tensor_outputs_are_converted() -> None:
    """Clause 12.2: torch implementations may return tensors; the runner converts them."""
    torch = pytest.importorskip("torch")

    def as_tensors(*args: Any, tau: Any, trace: bool = False) -> Any:
        p = propose_fast(*args, tau=tau, trace=trace)
        fields = {k: torch.from_numpy(getattr(p, k).copy()) for k in ("status", "token", "ids", "tickets")}
        return type("TorchProposal", (), {**fields, "trace": p.trace})()

    results = run_vectors(PythonImplementation(as_tensors, "torch outputs"), VECTORS)
    assert all(r.passed and r.traced for r in results)

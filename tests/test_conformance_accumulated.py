"""The runner's accumulated check (clause 13.2): the references pass it and a mutant fails it."""

from __future__ import annotations

from dyadic24.conformance.impls import HostedImplementation, PythonImplementation
from dyadic24.conformance.mutants import MUTANTS
from dyadic24.conformance.report import ImplementationReport
from dyadic24.conformance.runner import run_accumulated
from dyadic24.reference.exact import propose_exact
from dyadic24.reference.fast import propose_fast


def test_references_reproduce_the_accumulated_digests() -> None:
    for func, rows in ((propose_fast, 10_000), (propose_exact, 1000)):
        result = run_accumulated(PythonImplementation(func, func.__name__), rows)
        assert result.ok, result


def test_a_mutant_fails_the_accumulated_check_and_the_report() -> None:
    func, clause, _ = MUTANTS["u_low_bits"]
    result = run_accumulated(PythonImplementation(func, "u_low_bits"), 1000)
    assert clause == "9.4"
    assert not result.ok and result.got is not None and result.got != result.expected
    entry = ImplementationReport(name="u_low_bits", mode="mutant", accumulated=result)
    assert entry.failed and entry.verdict == "NON-CONFORMANT"


def test_the_accumulated_check_of_a_hosted_subject_gives_the_same_digest() -> None:
    """A Python subject in its host process (conformance/host.py) hashes the same stream."""
    impl = HostedImplementation("target:dyadic24.reference.fast:propose_fast", "fast")
    bad = HostedImplementation("mutant:u_low_bits", "m")
    try:
        assert run_accumulated(impl, 1000, progress=False).ok
        assert not run_accumulated(bad, 1000, progress=False).ok
    finally:
        impl.close()
        bad.close()

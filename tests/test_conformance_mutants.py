"""The mutant registry and the kill matrix: the golden vectors alone reject every mutant and the first
divergence names the clause the mutant breaks (clause 13.1); the committed KILL_MATRIX.json agrees
with a rerun of its vector part; the exact and fast references pass every vector."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dyadic24.conformance import kill_matrix
from dyadic24.conformance.impls import PythonImplementation
from dyadic24.conformance.mutants import MUTANTS
from dyadic24.conformance.report import citation
from dyadic24.conformance.runner import run_vectors
from dyadic24.reference.exact import propose_exact
from dyadic24.reference.fast import propose_fast
from dyadic24.vectors import store

REPO = Path(__file__).resolve().parent.parent
# The fixed clause numbers of the rule (clauses 2-9) a mutant may break.
RULE_CLAUSES = {
    "2.1", "2.3", "2.4", "3.1", "3.2", "3.3", "4.1", "5.1", "5.2", "5.3", "6.1", "6.2",
    "7.1", "7.2", "7.3", "8.1", "9.2", "9.3", "9.4", "9.5",
}  # fmt: skip
REQUIRED = {
    "exp_fp32", "exp2_log2e", "ftz_exp", "reciprocal_tau", "scale_before_max", "sum_sequential",
    "sum_numpy_pairwise", "sum_descending", "p_binary32", "largest_remainder", "remainder_lowest_id",
    "remainder_highest_count", "ties_higher_id", "negzero_below_poszero", "nan_as_neg_inf", "pos_inf_ok",
    "batch_failure", "support_by_logit", "philox_counter_swapped", "u_low_bits", "no_domain_key",
    "slots_skip_neg_inf",
}  # fmt: skip


@pytest.fixture(scope="module")
def vectors() -> list[Any]:
    found = list(store.iter_vectors())
    assert found, "no golden vectors in vectors/data"
    return found


@pytest.fixture(scope="module")
def committed() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(kill_matrix.JSON_PATH.read_text(encoding="utf-8"))
    return data


def test_registry() -> None:
    assert len(MUTANTS) >= 20
    assert set(MUTANTS) >= REQUIRED
    for name, (func, clause, description) in MUTANTS.items():
        assert clause in RULE_CLAUSES, name
        assert description and callable(func)
        assert "trace" in inspect.signature(func).parameters, name


def test_importing_the_suite_does_not_import_torch() -> None:
    code = (
        "import sys, dyadic24.conformance.cli, dyadic24.conformance.runner, dyadic24.conformance.mutants;"
        "assert 'torch' not in sys.modules and 'triton' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=120)


@pytest.mark.parametrize("func", [propose_exact, propose_fast], ids=["exact", "fast"])
def test_references_pass_every_vector(func: Any, vectors: list[Any]) -> None:
    results = run_vectors(PythonImplementation(func, func.__name__), vectors)
    failing = [d.message() for r in results for d in r.divergences]
    assert not failing, failing[:5]


def test_committed_matrix_is_current(committed: dict[str, Any]) -> None:
    """Regenerate with `python -m dyadic24.conformance.kill_matrix` when the vectors or mutants change."""
    assert committed["citation"] == citation(store.spec_sha256(), store.vector_set_sha256())
    assert set(committed["mutants"]) == set(MUTANTS)
    assert kill_matrix.MD_PATH.read_text(encoding="utf-8") == kill_matrix.render_markdown(committed)


def test_vectors_alone_reject_every_mutant_naming_its_clause(
    committed: dict[str, Any], vectors: list[Any]
) -> None:
    """The rerun of the vector part equals the committed one, and every mutant is rejected by the
    vectors with its declared clause named by a first divergence."""
    fresh = kill_matrix.vector_matrix(vectors)
    assert fresh == kill_matrix.vector_columns(committed)
    for name, row in fresh.items():
        assert row["vectors"]["killed"], f"{name} survives the golden vectors"
        assert row["vectors"]["names_declared_clause"], (name, row["clause"], row["vectors"]["clauses_named"])

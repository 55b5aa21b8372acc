"""The kill matrix: which check of ``dyadic24 conform`` rejects each mutant, and by which clause.

    python -m dyadic24.conformance.kill_matrix            # rewrite conformance/KILL_MATRIX.md and .json
    python -m dyadic24.conformance.kill_matrix --check    # rerun the vector part, compare with the file

For every mutant of dyadic24.conformance.mutants:
- vectors: the golden vectors alone, trace compared (as the runner does for an implementation that
  offers one), and once more comparing the output arrays only;
- accumulated: the clause-13.2 digest of 10,000 rows (outputs only);
- fuzz: hypothesis fuzzing against the fast reference, the default budget (200 examples, seed 0, no
  shrinking);
- bulk: ``--bulk 100000`` (seed 0, outputs only), up to the first call with a differing row.
A mutant is killed by the default run when any of vectors, accumulated check and fuzzing reject it.
A mutant that the output arrays alone never reject needs an entry in OUTPUTS_NEVER_DIFFER: the reason
its outputs cannot differ from the rule's. Fuzz and bulk results depend on the hypothesis version
and on the code base, so ``--check`` compares the vector part only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import hypothesis
import numpy as np

from dyadic24.api import SEMANTIC_ID
from dyadic24.conformance.impls import PythonImplementation
from dyadic24.conformance.mutants import MUTANTS
from dyadic24.conformance.report import VectorResult, citation

HERE = Path(__file__).resolve().parent
JSON_PATH = HERE / "KILL_MATRIX.json"
MD_PATH = HERE / "KILL_MATRIX.md"
FUZZ_EXAMPLES = 200
FUZZ_SEED = 0
ACCUMULATED_ROWS = 10_000
BULK_ROWS = 100_000
BULK_SEED = 0

# Mutants whose output arrays can never differ from the rule's, with the proof. (Empty: every mutant's
# outputs differ on some golden vector; a mutant added here must be one the outputs-only column misses.)
OUTPUTS_NEVER_DIFFER: dict[str, str] = {}


# The trace holds Philox's outputs (the key, clause 9.2; the block, 9.3), not its rounds: a mistake in
# the function itself (clause 9.1) shows first in one of them.
NAMED_BY = {"9.1": {"9.1", "9.2", "9.3"}}


def _vector_part(results: list[VectorResult], declared: str) -> dict[str, Any]:
    failing = [v for v in results if not v.passed]
    clauses = Counter(v.divergences[0].clause for v in failing)
    first = failing[0].divergences[0].message() if failing else None
    return {
        "killed": bool(failing),
        "failing_vectors": len(failing),
        "clauses_named": dict(sorted(clauses.items())),
        "names_declared_clause": bool(NAMED_BY.get(declared, {declared}) & set(clauses)),
        "example": f"{failing[0].file} {first}" if failing else None,
        "flags_failing": sorted({f for v in failing for f in v.flags}),
    }


def _impl(name: str) -> PythonImplementation:
    return PythonImplementation(MUTANTS[name][0], name, origin=f"mutant:{name}")


def vector_matrix(vectors: Sequence[Any], names: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """The vector part: per mutant, with the trace compared and with the outputs only."""
    from dyadic24.conformance.runner import run_vectors

    out: dict[str, dict[str, Any]] = {}
    for name in names or list(MUTANTS):
        impl = _impl(name)
        traced = _vector_part(run_vectors(impl, vectors, trace=True, progress=False), MUTANTS[name][1])
        plain = run_vectors(impl, vectors, trace=False, progress=False)
        out[name] = {
            "clause": MUTANTS[name][1],
            "vectors": traced,
            "outputs_only": {
                "killed": any(not v.passed for v in plain),
                "failing_vectors": sum(not v.passed for v in plain),
            },
        }
    return out


def run_matrix(name: str, workers: int) -> dict[str, Any]:
    """The accumulated, fuzz and bulk columns of one mutant."""
    from dyadic24.conformance.bulk import run_bulk
    from dyadic24.conformance.cli import oracle
    from dyadic24.conformance.runner import run_accumulated, run_fuzz

    impl = _impl(name)
    acc = run_accumulated(impl, ACCUMULATED_ROWS, progress=False)
    fuzz = run_fuzz(
        impl, oracle("fast"), examples=FUZZ_EXAMPLES, seed=FUZZ_SEED, shrink=False, progress=False
    )
    bulk = run_bulk(
        impl, BULK_ROWS, seed=BULK_SEED, workers=workers, progress=False, max_failures=1, stop_at_first=True
    )
    first = bulk.failures[0] if bulk.failures else None
    return {
        "accumulated": {"killed": not acc.ok},
        "fuzz": {
            "killed": fuzz.failure is not None,
            "at_example": fuzz.examples if fuzz.failure is not None else None,
            "clause_named": fuzz.failure.clause if fuzz.failure is not None else None,
            "example": fuzz.failure.message() if fuzz.failure is not None else None,
        },
        "bulk": {
            "killed": not bulk.ok,
            "rows_run": bulk.rows,
            "family": first.family if first else None,
            "example": first.divergence.message()
            if first
            else (bulk.call_errors[0] if bulk.call_errors else None),
        },
    }


def build(vectors: Sequence[Any], workers: int) -> dict[str, Any]:
    from dyadic24.vectors import store

    start = time.perf_counter()
    vec = vector_matrix(vectors)
    vec_seconds = time.perf_counter() - start
    start = time.perf_counter()
    mutants: dict[str, Any] = {}
    for name in MUTANTS:
        rest = run_matrix(name, workers)
        default = vec[name]["vectors"]["killed"] or rest["accumulated"]["killed"] or rest["fuzz"]["killed"]
        mutants[name] = {
            "clause": MUTANTS[name][1],
            "description": MUTANTS[name][2],
            **vec[name],
            **rest,
            "default_run_kills": default,
            "outputs_never_differ": OUTPUTS_NEVER_DIFFER.get(name),
        }
        print(
            f"  {name}: default {default}, bulk {rest['bulk']['killed']} at {rest['bulk']['rows_run']} rows",
            file=sys.stderr,
        )
    return {
        "semanticId": SEMANTIC_ID,
        "citation": citation(store.spec_sha256(), store.vector_set_sha256()),
        "vectors": len(vectors),
        "budget": {
            "fuzz_examples": FUZZ_EXAMPLES,
            "fuzz_seed": FUZZ_SEED,
            "oracle": "fast",
            "shrink": False,
            "accumulated_rows": ACCUMULATED_ROWS,
            "bulk_rows": BULK_ROWS,
            "bulk_seed": BULK_SEED,
            "hypothesis": hypothesis.__version__,
            "numpy": np.__version__,
        },
        "seconds": {"vectors": round(vec_seconds, 1), "other": round(time.perf_counter() - start, 1)},
        "mutants": mutants,
    }


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def _yes(killed: bool) -> str:
    return "killed" if killed else "SURVIVED"


def render_markdown(matrix: dict[str, Any]) -> str:
    m = matrix["mutants"]
    b = matrix["budget"]
    n = len(m)
    paths = {
        "vectors": ("vectors", "killed"), "named": ("vectors", "names_declared_clause"),
        "outputs": ("outputs_only", "killed"), "fuzz": ("fuzz", "killed"), "bulk": ("bulk", "killed"),
    }  # fmt: skip
    count = {key: sum(bool(v[a][b]) for v in m.values()) for key, (a, b) in paths.items()}
    count["default"] = sum(bool(v["default_run_kills"]) for v in m.values())
    lines = [
        "# Kill matrix of the conformance mutants",
        "",
        "Generated by `python -m dyadic24.conformance.kill_matrix` (do not edit by hand);",
        "`tests/test_conformance_mutants.py` checks the vector columns against a rerun.",
        "",
        f"- Vector set: `{matrix['citation']}` ({matrix['vectors']} vectors).",
        f"- The default `dyadic24 conform` run (trace compared) rejects {count['default']}/{n} mutants;"
        f" the golden vectors alone {count['vectors']}/{n}, their first divergence naming the mutant's"
        f" declared clause for {count['named']}/{n}.",
        f"- Golden vectors alone, output arrays only (no trace): {count['outputs']}/{n} rejected"
        + ("; the others' outputs provably never differ (below)." if count["outputs"] < n else "."),
        f"- `--bulk {b['bulk_rows']}` (seed {b['bulk_seed']}, outputs only): {count['bulk']}/{n} rejected.",
        f"- Hypothesis fuzzing alone ({b['fuzz_examples']} examples, seed {b['fuzz_seed']}, oracle: fast"
        f" reference, hypothesis {b['hypothesis']}, numpy {b['numpy']}): {count['fuzz']}/{n} rejected.",
        "",
        "Columns: *vectors* = failing vectors with the trace compared and the clauses their first divergences"
        " name; *outputs* = failing vectors comparing the output arrays only; *accumulated* = the 10,000-row"
        " digest (outputs only); *fuzz* = the example at which fuzzing first diverged and the clause named;"
        " *bulk* = the rows run until the first differing one, and that row's family.",
        "",
        "| mutant | clause | what it does wrong | vectors | clauses named | outputs | accumulated | fuzz"
        " | bulk |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in m.items():
        v, f, bk = row["vectors"], row["fuzz"], row["bulk"]
        named = ", ".join(f"{c} x{k}" for c, k in v["clauses_named"].items()) or "-"
        if v["killed"] and not v["names_declared_clause"]:
            named += " (declared clause not named)"
        fuzz_txt = f"killed at {f['at_example']} ({f['clause_named']})" if f["killed"] else "survived"
        bulk_txt = f"killed within {bk['rows_run']:,} rows ({bk['family']})" if bk["killed"] else "SURVIVED"
        lines.append(
            f"| `{name}` | {row['clause']} | {_md_escape(row['description'])} | "
            f"{v['failing_vectors'] if v['killed'] else 'SURVIVED'} | {named} | "
            f"{row['outputs_only']['failing_vectors']} | {_yes(row['accumulated']['killed'])} | {fuzz_txt}"
            f" | {bulk_txt} |"
        )
    proofs = [(name, row["outputs_never_differ"]) for name, row in m.items() if row["outputs_never_differ"]]
    if proofs:
        lines += ["", "Mutants whose output arrays never differ from the rule's:", ""]
        lines += [f"- `{name}`: {_md_escape(text)}" for name, text in proofs]
    lines += ["", "First divergence reported for each mutant (golden vectors, fuzzing, bulk):", ""]
    for name, row in m.items():
        lines.append(f"- `{name}`: {_md_escape(row['vectors']['example'] or 'none')}")
        if row["fuzz"]["example"]:
            lines.append(f"  - fuzz: {_md_escape(row['fuzz']['example'])}")
        if row["bulk"]["example"]:
            lines.append(f"  - bulk: {_md_escape(row['bulk']['example'])}")
    return "\n".join(lines) + "\n"


def vector_columns(matrix: dict[str, Any]) -> dict[str, Any]:
    """The deterministic part compared by --check and the tests."""
    return {
        name: {"clause": row["clause"], "vectors": row["vectors"], "outputs_only": row["outputs_only"]}
        for name, row in matrix["mutants"].items()
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dyadic24.conformance.kill_matrix", description=__doc__)
    parser.add_argument("--check", action="store_true", help="rerun the vector part and compare")
    parser.add_argument("--workers", type=int, default=None, help="processes for the reference side")
    args = parser.parse_args(argv)
    from dyadic24.conformance.workers import default_workers
    from dyadic24.vectors import store

    vectors = list(store.iter_vectors())
    if args.check:
        committed = json.loads(JSON_PATH.read_text(encoding="utf-8"))
        current = citation(store.spec_sha256(), store.vector_set_sha256())
        if committed.get("citation") != current:
            print(
                f"kill_matrix: made for {committed.get('citation')}, the vectors are now {current};"
                " regenerate",
                file=sys.stderr,
            )
            return 1
        fresh = vector_matrix(vectors)
        expected = vector_columns(committed)
        bad = [n for n in set(fresh) | set(expected) if fresh.get(n) != expected.get(n)]
        if bad:
            print(f"kill_matrix: the vector part differs for {sorted(bad)}; regenerate", file=sys.stderr)
            return 1
        print(f"kill_matrix: vector part matches ({len(fresh)} mutants)")
        return 0
    matrix = build(vectors, args.workers or default_workers())
    JSON_PATH.write_text(json.dumps(matrix, indent=1) + "\n", encoding="utf-8")
    MD_PATH.write_text(render_markdown(matrix), encoding="utf-8")
    took = matrix["seconds"]
    print(f"wrote {JSON_PATH.name} and {MD_PATH.name}: vectors {took['vectors']} s, other {took['other']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The kill matrix: which mutants the golden vectors and hypothesis fuzzing each reject, and by which clause.

    python -m dyadic24.conformance.kill_matrix            # rewrite conformance/KILL_MATRIX.md and .json
    python -m dyadic24.conformance.kill_matrix --check    # rerun the vector part, compare with the file

For every mutant of dyadic24.conformance.mutants:
- vectors: the golden vectors alone, trace compared (as the runner does for any implementation with a
  trace), and once more comparing the output arrays only;
- fuzz: hypothesis fuzzing alone against the fast reference, a CI-sized budget (200 examples, seed 0,
  no shrinking). Fuzz results depend on the hypothesis version (its generation algorithm) and on the
  code base (hypothesis mixes constants found in the loaded modules into its draws), so ``--check``
  compares the vector part only.
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
from dyadic24.conformance.impls import PythonImplementation, load_target
from dyadic24.conformance.mutants import MUTANTS
from dyadic24.conformance.report import VectorResult, citation
from dyadic24.conformance.runner import run_fuzz, run_vectors

HERE = Path(__file__).resolve().parent
JSON_PATH = HERE / "KILL_MATRIX.json"
MD_PATH = HERE / "KILL_MATRIX.md"
FUZZ_EXAMPLES = 200
FUZZ_SEED = 0


def _vector_part(results: list[VectorResult], declared: str) -> dict[str, Any]:
    failing = [v for v in results if not v.passed]
    clauses = Counter(d.clause for v in failing for d in v.divergences[:1])
    first = failing[0].divergences[0].message() if failing else None
    return {
        "killed": bool(failing),
        "failing_vectors": len(failing),
        "clauses_named": dict(sorted(clauses.items())),
        "names_declared_clause": declared in clauses,
        "example": f"{failing[0].file} {first}" if failing else None,
        "flags_failing": sorted({f for v in failing for f in v.flags}),
    }


def vector_matrix(vectors: Sequence[Any], names: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """The vector part: per mutant, with the trace compared and with the outputs only."""
    out: dict[str, dict[str, Any]] = {}
    for name in names or list(MUTANTS):
        func, clause, _ = MUTANTS[name]
        impl = PythonImplementation(func, name)
        traced = _vector_part(run_vectors(impl, vectors, trace=True), clause)
        plain = run_vectors(impl, vectors, trace=False)
        out[name] = {
            "clause": clause,
            "vectors": traced,
            "outputs_only": {
                "killed": any(not v.passed for v in plain),
                "failing_vectors": sum(not v.passed for v in plain),
            },
        }
    return out


def fuzz_matrix(
    names: Sequence[str] | None = None, examples: int = FUZZ_EXAMPLES, seed: int = FUZZ_SEED
) -> dict[str, dict[str, Any]]:
    oracle = PythonImplementation(load_target("dyadic24.reference.fast:propose_fast"), "fast reference")
    out: dict[str, dict[str, Any]] = {}
    for name in names or list(MUTANTS):
        func = MUTANTS[name][0]
        result = run_fuzz(
            PythonImplementation(func, name), oracle, examples=examples, seed=seed, shrink=False
        )
        out[name] = {
            "killed": result.failure is not None,
            "at_example": result.examples if result.failure is not None else None,
            "clause_named": result.failure.clause if result.failure is not None else None,
            "example": result.failure.message() if result.failure is not None else None,
            "seconds": round(result.seconds, 2),
            "rows": result.rows,
        }
    return out


def build(vectors: Sequence[Any]) -> dict[str, Any]:
    from dyadic24.vectors import store

    start = time.perf_counter()
    vec = vector_matrix(vectors)
    vec_seconds = time.perf_counter() - start
    start = time.perf_counter()
    fuzz = fuzz_matrix()
    fuzz_seconds = time.perf_counter() - start
    mutants = {
        name: {"clause": MUTANTS[name][1], "description": MUTANTS[name][2], **vec[name], "fuzz": fuzz[name]}
        for name in MUTANTS
    }
    return {
        "semanticId": SEMANTIC_ID,
        "citation": citation(store.spec_sha256(), store.vector_set_sha256()),
        "vectors": len(vectors),
        "fuzz_budget": {
            "examples": FUZZ_EXAMPLES,
            "seed": FUZZ_SEED,
            "oracle": "fast",
            "shrink": False,
            "hypothesis": hypothesis.__version__,
            "numpy": np.__version__,
        },
        "seconds": {"vectors": round(vec_seconds, 1), "fuzz": round(fuzz_seconds, 1)},
        "mutants": mutants,
    }


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(matrix: dict[str, Any]) -> str:
    m = matrix["mutants"]
    fb = matrix["fuzz_budget"]
    vec_killed = sum(v["vectors"]["killed"] for v in m.values())
    named = sum(v["vectors"]["names_declared_clause"] for v in m.values())
    out_killed = sum(v["outputs_only"]["killed"] for v in m.values())
    fuzz_killed = sum(v["fuzz"]["killed"] for v in m.values())
    lines = [
        "# Kill matrix of the conformance mutants",
        "",
        "Generated by `python -m dyadic24.conformance.kill_matrix` (do not edit by hand);",
        "`tests/test_conformance_mutants.py` checks the vector columns against a rerun.",
        "",
        f"- Vector set: `{matrix['citation']}` ({matrix['vectors']} vectors).",
        f"- Golden vectors alone (trace compared): {vec_killed}/{len(m)} mutants rejected;"
        " the first divergence"
        f" names the mutant's declared clause for {named}/{len(m)}.",
        f"- Golden vectors alone, output arrays only (no trace): {out_killed}/{len(m)} rejected.",
        f"- Hypothesis fuzzing alone ({fb['examples']} examples, seed {fb['seed']}, oracle: fast reference,"
        f" hypothesis {fb['hypothesis']}, numpy {fb['numpy']}): {fuzz_killed}/{len(m)} rejected.",
        "",
        "The fuzz column is deterministic for a given code base and hypothesis version (hypothesis also"
        " draws constants it finds in the loaded modules, so editing the code can move it).",
        "",
        "Columns: *vectors* = failing vectors (trace compared) and the clauses their first divergences"
        " name; *outputs only* = failing vectors when only the output arrays are compared; *fuzz* = the"
        " example at which fuzzing first diverged and the clause named.",
        "",
        "| mutant | clause | what it does wrong | vectors | clauses named | outputs only | fuzz |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in m.items():
        v, f = row["vectors"], row["fuzz"]
        named_txt = ", ".join(f"{c} x{n}" for c, n in v["clauses_named"].items()) or "-"
        if v["killed"] and not v["names_declared_clause"]:
            named_txt += " (declared clause not named)"
        fuzz_txt = f"killed at {f['at_example']} ({f['clause_named']})" if f["killed"] else "survived"
        lines.append(
            f"| `{name}` | {row['clause']} | {_md_escape(row['description'])} | "
            f"{v['failing_vectors'] if v['killed'] else 'SURVIVED'} | {named_txt} | "
            f"{row['outputs_only']['failing_vectors']} | {fuzz_txt} |"
        )
    lines += ["", "First divergence reported for each mutant (golden vectors, then fuzzing):", ""]
    for name, row in m.items():
        lines.append(f"- `{name}`: {_md_escape(row['vectors']['example'] or 'none')}")
        if row["fuzz"]["example"]:
            lines.append(f"  - fuzz: {_md_escape(row['fuzz']['example'])}")
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
    args = parser.parse_args(argv)
    from dyadic24.vectors import store

    vectors = list(store.iter_vectors())
    if not vectors:
        print("kill_matrix: no golden vectors found", file=sys.stderr)
        return 2
    if args.check:
        committed = json.loads(JSON_PATH.read_text(encoding="utf-8"))
        current = citation(store.spec_sha256(), store.vector_set_sha256())
        if committed.get("citation") != current:
            print(
                f"kill_matrix: the matrix was made for {committed.get('citation')}, the vectors are now"
                f" {current}; regenerate",
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
    matrix = build(vectors)
    JSON_PATH.write_text(json.dumps(matrix, indent=1) + "\n", encoding="utf-8")
    MD_PATH.write_text(render_markdown(matrix), encoding="utf-8")
    print(
        f"wrote {JSON_PATH.name} and {MD_PATH.name}: vectors {matrix['seconds']['vectors']} s,"
        f" fuzz {matrix['seconds']['fuzz']} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The pytest plugin (entry point pytest11) as a serving stack's CI runs it, through pytester in a
subprocess: the conformance checks are items of the user's own session, selectable with -k and by
node ID and counted in the collection; the session ends with the runner's verdict line; a subject
that cannot start, or a vector set that is not this release's, is one error line before any item
runs; a reduced run fails unless the user opts in. The recipe tested is conformance/README.md's."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from dyadic24.conformance.invalid import cases_for
from dyadic24.vectors import store

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent
OWN = """
from dyadic24.reference.fast import propose_fast
from dyadic24.conformance.mutants import MUTANTS

def propose(logits, temperature, seed, round, position, *, tau=0.7):
    return propose_fast(logits, temperature, seed, round, position, tau=tau)

wrong = MUTANTS["remainder_lowest_id"][0]
ftz = MUTANTS["binary16_ftz"][0]
"""
TEST_FILE = "def test_own():\n    assert True\n"
FINAL = re.compile(
    r"^dyadic24-floor-first-v1 spec-sha256:[0-9a-f]{64} vectors-sha256:[0-9a-f]{64} (\S+) subject "
)


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A serving stack's repository: its sampler module and one test of its own."""
    pytester.makepyfile(mymod=OWN, test_own=TEST_FILE)
    monkeypatch.setenv("PYTHONPATH", f"{pytester.path}:{REPO}")
    return pytester


def run(p: pytest.Pytester, *args: str) -> pytest.RunResult:
    return p.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=900)


def verdict(result: pytest.RunResult) -> str:
    lines = [line for line in result.outlines if FINAL.match(line)]
    assert len(lines) == 1, result.stdout.str()[-3000:]
    m = FINAL.match(lines[0])
    assert m is not None
    return m.group(1)


def recipe() -> list[str]:
    """The options of conformance/README.md's CI recipe (the block after 'CI recipe')."""
    text = (REPO / "conformance" / "README.md").read_text()
    block = text.split("<!-- CI recipe -->", 1)[1].split("```", 2)[1]
    line = next(ln for ln in block.splitlines() if ln.strip().startswith("pytest "))
    return line.split()[1:]


def test_the_readme_recipe_gives_the_verdict_and_passes(project: pytest.Pytester) -> None:
    args = [
        a.replace("mypkg.sampler:propose", "mymod:propose").replace('"$GIT_COMMIT"', "abc123")
        for a in recipe()
    ]
    result = run(project, *args)
    assert result.ret == 0, result.stdout.str()[-3000:]
    assert verdict(result) == "CONFORMANT"
    assert 'label "abc123"' in result.stdout.str()
    vectors = list(store.iter_vectors())
    forms = Counter(v.narrow_format for v in vectors)
    checks = len(vectors) + forms["binary16"] + len(cases_for(True)) + 2  # + accumulated and fuzz
    result.assert_outcomes(passed=1 + checks, skipped=forms["bfloat16"])  # + the project's own test


def test_collection_counts_the_items(project: pytest.Pytester) -> None:
    result = run(project, "--dyadic24-impl", "mymod:propose", "--collect-only", "-q")
    assert result.ret == 0
    ids = [line for line in result.outlines if line.startswith("dyadic24::")]
    assert "dyadic24::golden_draw.json::tcId 1" in ids and "dyadic24::invalid::tau_zero" in ids
    assert "dyadic24::accumulated::10000 rows" in ids and "dyadic24::fuzz::200 examples" in ids
    assert f"{len(ids) + 1} tests collected" in result.stdout.str()


def test_items_selected_by_k_and_by_node_id(project: pytest.Pytester) -> None:
    result = run(project, "--dyadic24-impl", "mymod:propose", "-k", "golden_tree", "--dyadic24-allow-reduced")
    result.assert_outcomes(passed=20)
    assert verdict(result) == "REDUCED"
    result = run(
        project,
        "--dyadic24-impl",
        "mymod:propose",
        "dyadic24::golden_tree.json::tcId 3",
        "--dyadic24-allow-reduced",
    )
    result.assert_outcomes(passed=1)
    result = run(
        project,
        "--dyadic24-impl",
        "mymod:propose",
        "dyadic24::invalid",
        "test_own.py",
        "--dyadic24-allow-reduced",
    )
    result.assert_outcomes(passed=26)


def test_a_reduced_run_fails_unless_allowed(project: pytest.Pytester) -> None:
    reduced = ("--dyadic24-impl", "mymod:propose", "--dyadic24-examples", "10", "--dyadic24-accumulated", "0")
    result = run(project, *reduced)
    assert result.ret == 1 and verdict(result) == "REDUCED"
    assert "a REDUCED run fails the session" in result.stdout.str()
    result = run(project, *reduced, "--dyadic24-allow-reduced")
    assert result.ret == 0 and verdict(result) == "REDUCED"


def test_failures_carry_the_clause_and_the_flag_notes(project: pytest.Pytester) -> None:
    result = run(
        project, "--dyadic24-impl", "mymod:wrong", "-k", "allocation and tcId", "--dyadic24-allow-reduced"
    )
    assert result.ret == 1 and verdict(result) == "NON-CONFORMANT"
    text = result.stdout.str()
    assert "(clause 7.3)" in text and "t of token " in text
    assert re.search(r"\[\w+\] .*Production effect:", text)


def test_a_subject_that_cannot_start_is_one_error_before_any_item(project: pytest.Pytester) -> None:
    result = run(project, "--dyadic24-impl", "nosuch:thing")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.startswith("ERROR:")]
    assert errors == ["ERROR: dyadic24: --dyadic24-impl: cannot load the implementation: nosuch:thing: raised"
                      " ModuleNotFoundError: No module named 'nosuch'"]  # fmt: skip
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()
    project.makepyfile(dies="import sys\nsys.stderr.write('gone\\n')\nsys.exit(5)\n")
    result = run(project, "--dyadic24-cmd", f"{shutil.which('python3') or 'python3'} dies.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert any("no handshake line" in line and "exit status 5" in line for line in result.errlines)


def test_a_changed_vector_set_is_one_error(
    project: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    shutil.copytree(
        REPO / "dyadic24", site / "dyadic24", ignore=shutil.ignore_patterns("__pycache__", "reports")
    )
    data = site / "dyadic24" / "vectors" / "data" / "golden_tree.json"
    data.write_text(data.read_text().replace('"comment"', '"comment" ', 1))
    monkeypatch.setenv("PYTHONPATH", f"{project.path}:{site}")
    result = run(project, "--dyadic24-impl", "mymod:propose")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.startswith("ERROR:")]
    assert (
        len(errors) == 1
        and "golden_tree.json: sha256" in errors[0]
        and "pip install --force-reinstall" in errors[0]
    )


def test_16_bit_forms_a_subject_does_not_take_are_skipped_not_passed(project: pytest.Pytester) -> None:
    result = run(
        project, "--dyadic24-impl", "mymod:propose", "-k", "bfloat16", "-rs", "--dyadic24-allow-reduced"
    )
    result.assert_outcomes(skipped=9)
    assert "nothing to check: the subject does not take bfloat16 logits" in result.stdout.str()


def test_outputs_alone_reject_a_binary16_flush_to_zero(project: pytest.Pytester) -> None:
    result = run(
        project,
        "--dyadic24-impl",
        "mymod:ftz",
        "--dyadic24-no-trace",
        "-k",
        "binary16",
        "--dyadic24-allow-reduced",
    )
    assert result.ret == 1 and verdict(result) == "NON-CONFORMANT"
    assert "binary16_subnormal_max" in result.stdout.str()


def test_with_xdist_the_verdict_is_the_same(project: pytest.Pytester) -> None:
    result = run(project, "--dyadic24-impl", "mymod:propose", "-n", "2")
    assert result.ret == 0 and verdict(result) == "CONFORMANT"


def test_without_the_option_the_plugin_adds_nothing(project: pytest.Pytester) -> None:
    result = run(project)
    result.assert_outcomes(passed=1)
    assert "dyadic24::" not in result.stdout.str() and "dyadic24 conformance" not in result.stdout.str()

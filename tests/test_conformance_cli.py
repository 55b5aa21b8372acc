"""`dyadic24 conform`, `dyadic24 cite`, `dyadic24 --version`, run as a user runs them: the real command in
a subprocess. The verdict is earned (clause 13.4): CONFORMANT (exit 0) only with every required check
run in full and passed, NON-CONFORMANT (1) on any failure, a usage error (2) before any work, REDUCED (3)
for a run that left a required check out."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
CITATION = re.compile(r"^dyadic24-floor-first-v1 spec-sha256:[0-9a-f]{64} vectors-sha256:[0-9a-f]{64}")
FAST = "dyadic24.reference.fast:propose_fast"
QUICK = ["--vectors", "tree", "--examples", "10", "--accumulated", "100", "--no-progress"]  # a reduced run

# A user's own implementation in a module of their own (not on sys.path): the fast reference behind
# the clause-12.2 call protocol, with no trace parameter (outputs only).
OWN = """
from dyadic24.reference.fast import propose_fast

def propose(logits, temperature, seed, round, position, *, tau=0.7):
    return propose_fast(logits, temperature, seed, round, position, tau=tau)

def says_trace(logits, temperature, seed, round, position, *, tau=0.7, trace=False):
    # announces traces (a trace parameter) but never returns one: breaks clause 12.3
    return propose_fast(logits, temperature, seed, round, position, tau=tau)

def accepts_zero_tau(logits, temperature, seed, round, position, *, tau=0.7):
    # clause 1.5: tau = 0 must be rejected; this one silently uses the default
    if type(tau) is float and tau == 0.0:
        tau = 0.7
    return propose_fast(logits, temperature, seed, round, position, tau=tau)
"""


def run(
    *args: str, cwd: Path = REPO, timeout: float = 900, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), full_env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [PY, "-m", "dyadic24", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def own(tmp_path: Path) -> Path:
    (tmp_path / "mymod.py").write_text(OWN)
    return tmp_path


def last(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout.strip().splitlines()[-1]


def test_version() -> None:
    proc = run("--version")
    from dyadic24 import __version__

    assert (
        proc.returncode == 0
        and proc.stdout.strip()
        == f"dyadic24 {__version__} (dyadic24-floor-first-v1; JSON-lines protocol dyadic24-jsonl-1.1)"
    )


def test_cite_prints_the_release_citation() -> None:
    proc = run("cite")
    assert proc.returncode == 0 and CITATION.match(proc.stdout.strip()), proc.stderr
    from dyadic24.vectors import pins

    assert proc.stdout.strip().endswith(pins.VECTORS_SHA256) and pins.SPEC_SHA256 in proc.stdout
    assert run("cite", "extra").returncode == 2


def test_full_run_of_an_own_module_is_conformant(own: Path, tmp_path: Path) -> None:
    """The module is found from its own folder (as python -m does); every required check runs."""
    proc = run(
        "conform",
        "--impl",
        "mymod:propose",
        "--no-progress",
        "--json",
        str(tmp_path / "r.json"),
        "--junit",
        str(tmp_path / "r.xml"),
        cwd=own,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    line = last(proc)
    assert CITATION.match(line) and ' CONFORMANT subject "mymod:propose" vectors ' in line
    m = re.search(
        r"CONFORMANT subject \S+ vectors (\d+)/(\d+) binary16 (\d+)/(\d+) invalid (\d+)/(\d+)"
        r" accumulated 1/1 fuzz 200/200 rows \d+$",
        line,
    )
    assert m and m.group(1) == m.group(2) and int(m.group(2)) >= 291 and m.group(5) == m.group(6)
    assert m.group(3) == m.group(4) and int(m.group(4)) > 0  # binary16 forms (clause 1.2)
    assert "outputs only (no trace offered)" in proc.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    impl = report["implementations"][0]
    assert report["verdict"] == "CONFORMANT" and impl["missing"] == [] and impl["vectors_traced"] == 0
    assert (
        impl["narrow_run"] > 0 and impl["narrow_passed"] == impl["narrow_run"]
    )  # binary16 forms (clause 1.2)
    assert ET.parse(tmp_path / "r.xml").getroot().find("testsuite").get("skipped") == "0"  # type: ignore[union-attr]


def test_a_run_that_checks_little_is_reduced_never_conformant(own: Path) -> None:
    """The run of the issue: no vectors, no fuzz, no accumulated check. It said CONFORMANT before."""
    proc = run(
        "conform", "--impl", "mymod:propose", "--no-vectors", "--no-fuzz", "--accumulated", "0", cwd=own
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "CONFORMANT" not in proc.stdout.replace("NON-CONFORMANT", "").replace("CONFORMANT needs", "")
    assert (
        ' REDUCED subject "mymod:propose" vectors 0/0 invalid 25/25 accumulated 0/0 fuzz 0/0 rows 0'
        " (reduced run, not checked:" in last(proc)
    )
    assert (
        "not checked: golden vectors (--no-vectors), accumulated check (10,000 rows), fuzz (200 examples)"
        in proc.stdout
    )


@pytest.mark.parametrize(
    ("reduce", "missing"),
    [
        (["--vectors", "tree"], "golden vectors (a subset: tree)"),
        (["--examples", "20"], "fuzz (200 examples)"),
        (["--accumulated", "1000"], "accumulated check (10,000 rows)"),
        (["--no-invalid"], "invalid calls (--no-invalid)"),
    ],
)
def test_each_reduction_alone_makes_the_run_reduced(own: Path, reduce: list[str], missing: str) -> None:
    """Everything else in full: leaving out one required check is enough to lose the verdict."""
    proc = run("conform", "--impl", "mymod:propose", "--no-progress", *reduce, cwd=own)
    assert proc.returncode == 3 and " REDUCED " in last(proc), proc.stdout[-2000:]
    assert f"not checked: {missing})" in proc.stdout


def test_a_run_that_checks_nothing_is_a_usage_error(own: Path) -> None:
    proc = run(
        "conform",
        "--impl",
        "mymod:propose",
        "--no-vectors",
        "--no-fuzz",
        "--accumulated",
        "0",
        "--no-invalid",
        cwd=own,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "nothing to check" in proc.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--examples", "0"], "--examples"),
        (["--examples", "-5"], "--examples"),
        (["--accumulated", "5"], "--accumulated"),
        (["--json", "/nonexistent/dir/r.json"], "--json"),
        (["--junit", "/nonexistent/dir/r.xml"], "--junit"),
        (["--timeout", "-1"], "--timeout"),
        (["--bulk", "0"], "--bulk"),
        (["--workers", "0"], "--workers"),
        (["--max-report", "0"], "--max-report"),
        (["--exp", "mymod:propose"], "--exp"),
        (["--only", "fast"], "--only"),
        (["--vectors", "no_such_file"], "--vectors"),
    ],
)
def test_every_option_is_checked_before_any_work(own: Path, args: list[str], named: str) -> None:
    proc = run("conform", "--impl", "mymod:propose", *args, cwd=own, timeout=60)
    assert proc.returncode == 2, proc.stdout[-1000:] + proc.stderr
    assert proc.stdout == "" and proc.stderr.count("\n") == 1 and named in proc.stderr, proc.stderr


def test_unloadable_implementations_are_usage_errors(tmp_path: Path) -> None:
    for target in ("no.such.module:propose", "dyadic24.reference.fast", "dyadic24.reference.fast:nothing"):
        proc = run("conform", "--impl", target, *QUICK, cwd=tmp_path, timeout=60)
        assert proc.returncode == 2 and "--impl: cannot load the implementation" in proc.stderr
    proc = run("conform", "--mutant", "no_such_mutant", *QUICK, timeout=60)
    assert proc.returncode == 2 and "--mutant" in proc.stderr


def test_announced_trace_that_never_comes_breaks_clause_12_3(own: Path, tmp_path: Path) -> None:
    proc = run("conform", "--impl", "mymod:says_trace", *QUICK, "--json", str(tmp_path / "r.json"), cwd=own)
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "NON-CONFORMANT" in last(proc)
    assert "trace: got none, expected one clause-12.3 trace per row (clause 12.3)" in proc.stdout
    report = json.loads((tmp_path / "r.json").read_text())["implementations"][0]
    assert report["traced"] is True and report["vectors_traced"] == 0 and report["vectors_passed"] == 0


def test_an_accepted_invalid_call_is_non_conformant(own: Path) -> None:
    proc = run("conform", "--impl", "mymod:accepts_zero_tau", *QUICK, cwd=own)
    assert proc.returncode == 1 and "NON-CONFORMANT" in last(proc)
    assert (
        "invalid call tau_zero (finite and > 0 (clause 1.3)): accepted it and returned outputs;"
        in proc.stdout
    )
    assert "invalid 24/25" in last(proc)


def test_a_mutant_lists_its_failures_with_and_n_more(tmp_path: Path) -> None:
    proc = run(
        "conform",
        "--mutant",
        "remainder_lowest_id",
        "--vectors",
        "allocation",
        "--no-fuzz",
        "--accumulated",
        "0",
        "--max-report",
        "2",
        "--json",
        str(tmp_path / "r.json"),
    )
    assert proc.returncode == 1
    assert re.search(r"and \d+ more \(--max-report N, or --json for all\)", proc.stdout)
    clauses = json.loads((tmp_path / "r.json").read_text())["implementations"][0]["clauses"]
    # a failing vector counts under the clause its first divergence names, and nowhere else
    assert clauses["7.3"]["fail"] > 0
    assert all(row["fail"] == 0 for clause, row in clauses.items() if clause != "7.3")


def test_fuzz_failure_gives_a_protocol_reproducer(own: Path) -> None:
    proc = run(
        "conform",
        "--mutant",
        "u_low_bits",
        "--no-vectors",
        "--examples",
        "30",
        "--accumulated",
        "0",
        "--no-invalid",
        "--no-shrink",
    )
    assert proc.returncode == 1
    line = next(ln for ln in proc.stdout.splitlines() if "reproduce (JSON-lines request" in ln)
    request = json.loads(line.split("PROTOCOL.md): ", 1)[1])
    assert request["id"] == 1 and request["trace"] is True  # the mutant offers traces
    assert "(clause 9.4)" in proc.stdout


def test_bundled_references_are_conformant() -> None:
    proc = run("conform", "--bundled", "--only", "exact,fast", "--no-progress")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "oracle exact" in proc.stdout and "oracle fast" in proc.stdout
    assert re.search(
        r' CONFORMANT subject "bundled exact,fast" vectors (\d+)/\1 binary16 (\d+)/\2 trace-keys (\d+)/\3'
        r" invalid (\d+)/\4 accumulated 2/2 fuzz 400/400",
        last(proc),
    )


# Two users' modules around the fast reference that record every fuzz call's inputs: the same code,
# but one also holds constants of its own (any module a user writes does). Hypothesis mixes the
# constants of every local module it finds loaded into its draws; the runner's seeded fuzzing must not.
RECORDING = """
import hashlib, os
import numpy as np
from dyadic24.reference.fast import propose_fast

DIGEST = hashlib.sha256()

def propose(logits, temperature, seed, round, position, *, tau=0.7):
    for a in (logits, temperature, seed, round, position, np.float32(tau)):
        DIGEST.update(np.ascontiguousarray(a).tobytes())
    with open(os.environ["RECORD_TO"], "w") as f:
        f.write(DIGEST.hexdigest())
    return propose_fast(logits, temperature, seed, round, position, tau=tau)
"""
CONSTANTS = "\nODD = (3.0e38, -1.5e-40, 65519.0, 2**31 - 7, 163839, 1e-30, -7.25, 4097, 131071)\n"


def test_seeded_fuzzing_draws_the_same_rows_whatever_the_users_code_holds(tmp_path: Path) -> None:
    """--seed names the fuzz examples (clause 13.4's reproducibility): two subjects that differ only in
    constants of their own source get the same calls (hypothesis's local-constant draws are off)."""
    (tmp_path / "plain.py").write_text(RECORDING)
    (tmp_path / "withconst.py").write_text(RECORDING + CONSTANTS)
    digests = []
    for name in ("plain", "withconst"):
        record = tmp_path / f"{name}.sha"
        args = ["--no-vectors", "--no-invalid", "--accumulated", "0", "--examples", "60", "--no-progress"]
        r = run("conform", "--impl", f"{name}:propose", *args, cwd=tmp_path, env={"RECORD_TO": str(record)})
        assert r.returncode == 3, r.stdout + r.stderr  # REDUCED, every example passed
        digests.append(record.read_text())
    assert digests[0] == digests[1]

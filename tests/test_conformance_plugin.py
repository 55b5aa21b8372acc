"""The pytest plugin (entry point pytest11): `pytest --dyadic24-impl M:F` makes the conformance checks test
items of a user's own CI, with the runner's failure messages; without the option it adds nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OWN = """
from dyadic24.reference.fast import propose_fast
from dyadic24.conformance.mutants import MUTANTS

def propose(logits, temperature, seed, round, position, *, tau=0.7):
    return propose_fast(logits, temperature, seed, round, position, tau=tau)

wrong = MUTANTS["remainder_lowest_id"][0]
"""


def pytest_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "mymod.py").write_text(OWN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rN",
            "--rootdir",
            str(tmp_path),
            *args,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_every_check_is_an_item(tmp_path: Path) -> None:
    proc = pytest_run(
        tmp_path,
        "--dyadic24-impl",
        "mymod:propose",
        "--dyadic24-examples",
        "10",
        "--dyadic24-accumulated",
        "100",
        "--collect-only",
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    items = [ln for ln in proc.stdout.splitlines() if "dyadic24::" in ln]
    assert any("golden_draw.json::tcId 1" in i for i in items) and any(" binary16" in i for i in items)
    assert any("invalid::tau_zero" in i for i in items)
    assert any("accumulated::100 rows" in i for i in items) and any("fuzz::10 examples" in i for i in items)
    assert len([i for i in items if ".json" in i]) >= 291


def test_a_wrong_implementation_fails_items_with_the_runner_messages(tmp_path: Path) -> None:
    proc = pytest_run(
        tmp_path,
        "--dyadic24-impl",
        "mymod:wrong",
        "--dyadic24-examples",
        "10",
        "--dyadic24-accumulated",
        "100",
        "-k",
        "allocation or accumulated",
    )
    assert proc.returncode == 1
    assert "(clause 7.3)" in proc.stdout and "t of token 0: got " in proc.stdout
    assert "accumulated check of 100 rows: got " in proc.stdout


def test_a_conformant_implementation_passes(tmp_path: Path) -> None:
    proc = pytest_run(
        tmp_path,
        "--dyadic24-impl",
        "mymod:propose",
        "--dyadic24-examples",
        "10",
        "--dyadic24-accumulated",
        "100",
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout


def test_without_the_option_the_plugin_adds_nothing(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text("def test_x():\n    assert True\n")
    proc = pytest_run(tmp_path)
    assert proc.returncode == 0 and "1 passed" in proc.stdout

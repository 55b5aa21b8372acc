"""The repository is clean under ruff (lint and format) and mypy --strict (project convention)."""

from __future__ import annotations

import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)


@pytest.mark.skipif(find_spec("ruff") is None, reason="ruff is not installed (test extra)")
def test_ruff_lint_and_format() -> None:
    # (the interpreter's own ruff: a venv's bin directory need not be on PATH)
    lint = _run([sys.executable, "-m", "ruff", "check", "."])
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = _run([sys.executable, "-m", "ruff", "format", "--check", "."])
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_mypy_strict() -> None:
    pytest.importorskip("mypy", reason="mypy is not installed (test extra)")
    result = _run([sys.executable, "-m", "mypy", "-p", "dyadic24"])
    assert result.returncode == 0, result.stdout + result.stderr
    result = _run([sys.executable, "-m", "mypy", "tests"])
    assert result.returncode == 0, result.stdout + result.stderr
    # benchmarks/ (scripts importing each other from their folder, not a package)
    result = _run([sys.executable, "-m", "mypy", "benchmarks"])
    assert result.returncode == 0, result.stdout + result.stderr

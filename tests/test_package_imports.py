"""Packaging conventions: the reference never imports torch or triton, and the kernels package's
own import is light (clause 12.2 callers that only want the reference pay nothing for the GPU)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _assert_clean(modules: str) -> None:
    check = "bad = [m for m in ('torch', 'triton') if m in sys.modules]; assert not bad, bad"
    code = f"import sys, {modules}; {check}"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=120)


def test_reference_and_vectors_do_not_import_torch_or_triton() -> None:
    _assert_clean(
        "dyadic24, dyadic24.reference.exact, dyadic24.reference.fast, dyadic24.reference.philox,"
        " dyadic24.vectors.store, dyadic24.vectors.accumulated, dyadic24.cli"
    )


def test_kernels_package_import_is_light() -> None:
    _assert_clean("dyadic24.kernels")

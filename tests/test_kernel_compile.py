"""The kernels compile for the H200 (sm_90) and their PTX uses only the intended float instructions.

Runs dyadic24.kernels.aot_check in a child process (the kernel modules must be imported in compiled
mode, while this test session runs them under the interpreter). Needs no GPU: Triton's passes and
ptxas run on the CPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
triton = pytest.importorskip("triton")

REPO = Path(__file__).resolve().parent.parent
DEEP = os.environ.get("DYADIC24_DEEP", "") not in ("", "0")


def _has_nvidia_backend() -> bool:
    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    return ptxas.is_file()


@pytest.mark.skipif(not _has_nvidia_backend(), reason="triton without the NVIDIA backend / ptxas")
def test_kernels_compile_for_sm90_with_exact_float_instructions(tmp_path: Path) -> None:
    """clauses 5.1, 5.2, 6.2, 7.1 in PTX: 1 sub.f64, 2 div.rn.f64, the tree's add.f64, nothing approximate."""
    env = {**os.environ, "TRITON_INTERPRET": "0", "TRITON_CACHE_DIR": str(tmp_path / "cache")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    report = tmp_path / "aot.json"
    cmd = [sys.executable, "-m", "dyadic24.kernels.aot_check", "--json", str(report)] + (
        ["--all"] if DEEP else []
    )
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert report.is_file(), proc.stderr[-4000:]
    result = json.loads(report.read_text())
    assert result["passed"], result["problems"]
    assert all(v["compiled"] for v in result["variants"].values())

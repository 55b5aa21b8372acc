"""benchmarks/h200.sh ab times two trees in one device call (benchmarks/DESIGN.md "Measurement
method"): each arm must run its own tree's kernels. Until d134243 the before arm ran the working
tree's script from `.before/`, which put the working tree first on sys.path, so both arms timed one
tree. Here: a tree's own bench_propose.py imports that tree's kernels and names their digest, and
the ab mode runs the script in `.before`, after copying this tree's harness there (both arms timed
alike: "First launch")."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("dyadic24", "kernels", "conformance", "reference", "spec", "vectors", "benchmarks")
PROBE = """
import importlib.util
spec = importlib.util.spec_from_file_location("bench_propose", "benchmarks/bench_propose.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(module.kp.__file__)
print(module.kernel_sources())
"""


def _own_script(tree: Path) -> tuple[Path, str]:
    """The kernels that `cd TREE && PYTHONPATH=$PWD python benchmarks/bench_propose.py` imports, and
    their digest (the ab mode's before arm, less the timing, which needs a GPU)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "TRITON_INTERPRET": "1"}
    command = [sys.executable, "-c", PROBE]
    out = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    path, digest = out.stdout.split()[-2:]
    return Path(path).resolve(), digest


def test_each_tree_times_its_own_kernels(tmp_path: Path) -> None:
    before = tmp_path / ".before"
    for part in PARTS:
        skip = shutil.ignore_patterns("__pycache__")
        shutil.copytree(ROOT / part, before / part, symlinks=True, ignore=skip)
    with (before / "kernels" / "tile_jit.py").open("a") as fh:
        fh.write("# another tree's kernels\n")
    here_path, here_digest = _own_script(ROOT)
    there_path, there_digest = _own_script(before)
    assert here_path.is_relative_to(ROOT.resolve()) and not here_path.is_relative_to(before.resolve())
    assert there_path.is_relative_to(before.resolve())
    assert here_digest != there_digest


def test_ab_mode_runs_the_before_trees_own_script() -> None:
    script = (ROOT / "benchmarks" / "h200.sh").read_text()
    arm = [line for line in script.splitlines() if "cd .before" in line and "bench_propose.py" in line]
    assert arm, "h200.sh ab: no before arm found"
    assert all("../benchmarks" not in line for line in arm)
    assert all("python benchmarks/bench_propose.py" in line for line in arm)


def test_ab_mode_times_both_arms_with_this_trees_harness() -> None:
    lines = (ROOT / "benchmarks" / "h200.sh").read_text().splitlines()
    start = lines.index("ab)")
    arm = next(i for i, line in enumerate(lines) if i > start and "cd .before" in line)
    copies = [line.split() for line in lines[start:arm] if line.strip().startswith("cp ")]
    assert ["cp", "benchmarks/bench_propose.py", "benchmarks/peers.py", ".before/benchmarks/"] in copies

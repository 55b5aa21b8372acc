"""The supported versions (kernels/versions.py): the import check and pyproject.toml's bounds agree,
and an unsupported release refuses ``import dyadic24.kernels`` with one line naming the versions."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import pytest

from dyadic24.kernels import versions

REPO = Path(__file__).resolve().parents[1]


def _lookup(found: dict[str, str]) -> Callable[[str], str]:
    def lookup(dist: str) -> str:
        if dist not in found:
            raise metadata.PackageNotFoundError(dist)
        return found[dist]

    return lookup


def test_release_parses_local_and_dev_versions() -> None:
    assert versions.release("3.7.1") == (3, 7)
    assert versions.release("2.13.0+cpu") == (2, 13)
    assert versions.release("3.6.0+git9a1b2c3") == (3, 6)
    assert versions.release("nightly") is None


def test_supported_combinations_pass() -> None:
    for triton, torch in (("3.6.0", "2.11.0"), ("3.7.1", "2.13.0"), ("3.9.0", "2.13.0+cpu")):
        found = {"Python": "3.13.0", "torch": torch, "triton": triton, "numpy": "2.5.5"}
        assert versions.problem(found) is None


def test_an_old_triton_is_refused_in_one_line_naming_every_version() -> None:
    found = {"Python": "3.12.1", "torch": "2.13.0", "triton": "3.5.1", "numpy": "2.1.3"}
    line = versions.problem(found)
    assert line is not None and "\n" not in line
    assert "triton 3.5.1 (needs >= 3.6)" in line
    for name, version in found.items():
        assert f"{name} {version}" in line
    assert versions.SUPPORTED in line
    both = versions.problem({**found, "numpy": "1.26.4"})
    assert both is not None and "numpy 1.26.4 (needs >= 2.0)" in both and "triton 3.5.1" in both


def test_check_reads_metadata_and_leaves_absent_packages_alone() -> None:
    versions.check(_lookup({"numpy": "2.4.0"}))  # (no torch, no triton)
    # PyTorch's nightly triton distribution counts as triton
    with pytest.raises(versions.UnsupportedVersionError, match=r"triton 3\.4\.0\+git"):
        versions.check(_lookup({"pytorch-triton": "3.4.0+gitc3c476f8", "numpy": "2.4.0"}))


def test_pyproject_bounds_are_the_checked_minimums() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    specs = [*project["dependencies"], *project["optional-dependencies"]["kernels"]]
    bounds = {m.group(1): m.group(2) for s in specs if (m := re.fullmatch(r"([a-z]+)>=([\d.]+)", s))}
    bounds["Python"] = project["requires-python"].removeprefix(">=")
    for name, (major, minor) in versions.MINIMUM.items():
        assert versions.release(bounds[name] + ".0") == (major, minor), (name, bounds.get(name))


def test_import_refuses_an_installed_triton_below_3_6(tmp_path: Path) -> None:
    """The real import, with a triton 3.5.1 distribution first on sys.path: the error is one line."""
    info = tmp_path / "triton-3.5.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: triton\nVersion: 3.5.1\n")
    path = os.pathsep.join([str(tmp_path), str(REPO), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    proc = subprocess.run(
        [sys.executable, "-c", "import dyadic24.kernels"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    error = "dyadic24.kernels.versions.UnsupportedVersionError: dyadic24.kernels does not support"
    assert last.startswith(error), proc.stderr[-2000:]
    assert "triton 3.5.1 (needs >= 3.6)" in last and "torch " in last and "Python " in last

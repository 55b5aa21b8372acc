"""The multi-process bulk fuzz driver (kernels/bulk_fuzz.py) at a tiny size, in the interpreter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")


def test_bulk_fuzz_small_run_passes_and_reports(tmp_path: Path) -> None:
    from dyadic24.kernels import bulk_fuzz

    assert bulk_fuzz.main(["--rows", "40", "--workers", "1", "--max-batch", "8", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "bulk_fuzz.json").read_text())["bulk_fuzz"]
    assert report["rows"] == 40 and report["failing_rows"] == 0
    assert sum(report["status_counts"].values()) == 40

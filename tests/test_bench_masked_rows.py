"""benchmarks/masked_rows.py's table of an A/B (the measurement itself needs a GPU): each run's
unmasked and masked medians side by side, one row per case, and its usage errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "masked_rows.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
                          check=False)  # fmt: skip


def _results(plain: float, masked: float) -> dict[str, object]:
    rows = [{"dtype": "bf16", "B": 64, "impl": impl, "masked": m, "median_us": v + (impl == "greedy")}
            for impl in ("sampled", "greedy") for m, v in ((False, plain), (True, masked))]  # fmt: skip
    return {"info": {}, "results": rows}


def test_table_puts_each_runs_medians_side_by_side(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_results(74.2, 1172.5)))
    b.write_text(json.dumps(_results(74.0, 117.7)))
    out = _run("--table", f"old={a}", f"new={b}")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "| dtype | B | impl | old plain | old masked | new plain | new masked |"
    assert lines[2:] == [
        "| bf16 | 64 | sampled | 74.2 | 1172.5 | 74.0 | 117.7 |",
        "| bf16 | 64 | greedy | 75.2 | 1173.5 | 75.0 | 118.7 |",
    ]


def test_usage_errors_name_the_argument(tmp_path: Path) -> None:
    bad = _run("--table", str(tmp_path / "a.json"))
    assert bad.returncode == 2 and "--table" in bad.stderr and "NAME=JSON" in bad.stderr
    none = _run()
    assert none.returncode == 2 and "--out" in none.stderr

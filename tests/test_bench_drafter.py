"""benchmarks/bench_drafter.py (issue 44) on the CPU: the smoke run (a tiny drafter, eager, the kernel in
Triton's interpreter, the compiled loop under aot_eager) passes its bits-in-context check for every
checked series, logits dtype and B, and the check itself reports a proposal or a dense q that differs
from what the logits give."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "bench_drafter.py"


def _module() -> Any:
    spec = importlib.util.spec_from_file_location("bench_drafter", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_drafter"] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_smoke_run_checks_every_position_against_the_fast_reference(tmp_path: Path) -> None:
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, str(SCRIPT), "--smoke", "--out", str(tmp_path)]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    report = json.loads((tmp_path / "bench_drafter.json").read_text())
    checks = {(c["series"], c["dtype"], c["B"]): c for c in report["checks"]}
    want = {
        (s, d, b)
        for s in ("dyadic24", "dyadic24+q", "dyadic24-compiled")
        for d in ("bf16", "fp32")
        for b in (1, 3)
    }
    assert set(checks) == want
    for (_, _, batch), c in checks.items():
        assert c["passed"] and c["mismatched"] == 0 and c["rows"] == 5 * batch
    timed = {(r["series"], r["dtype"], r["B"]) for r in report["results"]}
    assert {(s, "fp32", 3) for s in ("forward", "greedy", "torch-race", "dyadic24")} <= timed
    info = report["info"]
    assert info["commit"] and info["date"] and info["torch"] and info["kernels"]
    md = (tmp_path / "bench_drafter.md").read_text()
    assert "12 / 12 checks passed" in md and info["commit"] in md.splitlines()[0]


def test_the_check_reports_a_wrong_token_and_a_wrong_dense_q() -> None:
    bd = _module()
    device = torch.device("cpu")
    bd.kp.prepare(device)
    model = bd.Drafter(bd.SMOKE_MODEL, device, seed=1)
    case = bd.Case(model, 3, True, device)
    case.body("dyadic24+q", bd.race_mixed, None)()
    assert case.dense_q_ok() == {"dense_q_values": True, "dense_q_nonzeros": True}
    checker = bd.Checker(0)
    try:
        key = {"series": "dyadic24+q", "model": "smoke", "dtype": "fp32", "B": 3}
        checker.submit(dict(key), case, case.proposals("dyadic24+q"))
        case.outs[2][1][1] += 1  # position 2, row 1: another token
        checker.submit(dict(key), case, case.proposals("dyadic24+q"))
        assert case.qbuf is not None
        case.qbuf[0, 4, 0] += 2.0**-24  # one more ticket's worth of q where the row has none (or one)
        checker.submit({**key, **case.dense_q_ok()}, case, case.proposals("dyadic24+q"))
        good, bad_token, bad_q = checker.results()
    finally:
        checker.close()
    assert good["passed"] and good["rows"] == 15 and good["mismatched"] == 0
    assert not bad_token["passed"] and bad_token["mismatched"] == 1
    assert bad_token["first_mismatch"]["position"] == 2 and bad_token["first_mismatch"]["row"] == 1
    assert not bad_q["passed"] and not (bad_q["dense_q_values"] and bad_q["dense_q_nonzeros"])

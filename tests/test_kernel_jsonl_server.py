"""The bundled kernel as a JSON-lines program (kernels/jsonl_server.py, conformance/PROTOCOL.md minor 1):
a reduced ``dyadic24 conform --cmd`` run through the real CLI (golden vectors in all three formats with
traces, every invalid call, fuzz), and the exp method and protocol edges on the wire.

Without a GPU the kernel runs in Triton's interpreter (tests/conftest.py sets TRITON_INTERPRET=1, which
the subprocesses inherit).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from dyadic24.api import CallInputs
from dyadic24.conformance import jsonl
from dyadic24.reference.fast_exp import exp32_np

REPO = Path(__file__).resolve().parents[1]
SERVER = [sys.executable, "-m", "dyadic24.kernels.jsonl_server"]


def _env() -> dict[str, str]:
    # (the source tree first, for the runner and for the server it starts)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def test_reduced_conform_run_through_the_cli(tmp_path: Path) -> None:
    """Exit 3 (REDUCED: a vector subset, no accumulated check, few fuzz examples) with nothing failed:
    the widening vectors in binary32, binary16 and bfloat16 frames with traces compared, the invalid
    calls each answered naming the argument, fuzz against the fast reference."""
    report = tmp_path / "report.json"
    cmd = [
        sys.executable, "-m", "dyadic24", "conform", "--cmd", " ".join(SERVER), "--vectors", "widening",
        "--examples", "3", "--accumulated", "0", "--no-progress", "--quiet", "--json", str(report),
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 3, proc.stdout[-3000:] + proc.stderr[-3000:]
    impl = json.loads(report.read_text())["implementations"][0]
    assert impl["verdict"] == "REDUCED" and impl["skipped"] is None
    assert "Triton kernel" in impl["mode"]
    assert impl["traced"] and impl["formats"] == ["binary32", "binary16", "bfloat16"]
    assert impl["vectors_run"] > 0 and impl["vectors_passed"] == impl["vectors_run"]
    assert impl["narrow_run"] > 0 and impl["narrow_passed"] == impl["narrow_run"]
    assert impl["trace_keys"][0] == impl["trace_keys"][1] > 0
    assert impl["invalid"]["cases"] > 0 and impl["invalid"]["passed"] == impl["invalid"]["cases"]
    assert impl["fuzz"]["passed"] == impl["fuzz"]["examples"] == 3


def _send(stdin: IO[bytes], line: str, payload: bytes = b"") -> None:
    stdin.write(line.encode() + b"\n" + payload)
    stdin.flush()


def _receive(stdout: IO[bytes]) -> tuple[dict[str, Any], bytes]:
    unit = jsonl.read_unit(stdout)
    assert unit is not None, "the server closed its output"
    return json.loads(unit[0]), unit[1]


def test_exp_and_protocol_edges_on_the_wire(tmp_path: Path) -> None:
    """The handshake, an exp range against the fast reference's exp, a frame that is not whole rows
    (read, answered naming logits, the stream kept in step), a line that is not JSON (id and argument
    null), and plain JSON integers in a propose response."""
    errors = (tmp_path / "stderr").open("wb")  # (a file, not a pipe: nobody reads it until the end)
    proc = subprocess.Popen(
        SERVER, cwd=REPO, env=_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        hello = jsonl.decode_handshake(proc.stdout.readline())
        assert (hello.minor, hello.frames, hello.exp, hello.trace) == (1, True, True, True)
        assert hello.formats == jsonl.FORMATS

        start, count = 0xBF800000, 64  # -1.0 and the 63 patterns below it
        _send(proc.stdin, jsonl.encode_exp_request(1, start, count))
        head, frame = _receive(proc.stdout)
        assert head == {"id": 1, "frame": 4 * count}
        z = np.arange(start, start + count, dtype=np.uint64).astype(np.uint32)
        want = exp32_np(z.view(np.float32)).view(np.uint32)
        assert np.array_equal(np.frombuffer(frame, dtype="<u4"), want)

        bad = '{"id":2,"tauBits":"3f333333","vocab":3,"frame":10,"temperature":["3f800000"],'
        bad += '"seed":["1"],"round":["0"],"position":["0"],"trace":false}'
        _send(proc.stdin, bad, bytes(10))
        head, _ = _receive(proc.stdout)
        assert head["id"] == 2 and head["error"]["argument"] == "logits"

        _send(proc.stdin, "not json")
        head, _ = _receive(proc.stdout)
        assert head["id"] is None and head["error"]["argument"] is None

        logits = np.array([[1.0, -1.0, 0.5, 2.0]], dtype=np.float32)
        one = np.ones(1, dtype=np.float32)
        call = jsonl.Call(CallInputs(logits, one, *(np.zeros(1, np.uint64),) * 3, tau_bits=0x3F333333))
        line, payload = jsonl.encode_request(3, call, trace=False, frame=True)
        _send(proc.stdin, line, payload)
        unit = jsonl.read_unit(proc.stdout)
        assert unit is not None
        response = jsonl.decode_response(unit[0], 1)
        assert response.id == 3 and response.proposal is not None
        raw = json.loads(unit[0])
        assert all(type(v) is int for key in ("status", "token") for v in raw[key])
        assert all(type(v) is int for key in ("ids", "tickets") for row in raw[key] for v in row)
    finally:
        proc.stdin.close()
        code = proc.wait(timeout=120)
        errors.close()
        assert code == 0, (tmp_path / "stderr").read_text()[-2000:]

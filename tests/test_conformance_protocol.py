"""`dyadic24 conform --cmd` against JSON-lines programs (clause 12.4, conformance/PROTOCOL.md), through the
real command: the example program at minor versions 1 and 0, and programs that break the protocol
(a bad handshake, another semantic ID, a crash midway, a malformed response, error responses)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
EXAMPLE = f"{PY} -m dyadic24.conformance.examples.jsonl_fast"
HELLO = '{"protocol": "dyadic24-jsonl-1", "semanticId": "dyadic24-floor-first-v1", "trace": false}'
HELLO1 = json.dumps(
    {"protocol": "dyadic24-jsonl-1", "minor": 1, "semanticId": "dyadic24-floor-first-v1", "trace": False}
)


def run(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
    }
    return subprocess.run(
        [PY, "-m", "dyadic24", "conform", *args, "--no-progress"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def program(tmp_path: Path, body: str) -> str:
    path = tmp_path / "impl.py"
    path.write_text(body)
    return f"{PY} {path}"


def test_example_program_minor_1_is_conformant(tmp_path: Path) -> None:
    """Frames, binary16 and bfloat16 forms, invalid calls, traces: the whole minor version 1."""
    proc = run("--cmd", EXAMPLE, "--json", str(tmp_path / "r.json"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert (
        "JSON-lines dyadic24-jsonl-1.1, implementation 'fast reference (jsonl_fast example)'" in proc.stdout
    )
    impl = json.loads((tmp_path / "r.json").read_text())["implementations"][0]
    assert impl["verdict"] == "CONFORMANT" and impl["formats"] == ["binary32", "binary16", "bfloat16"]
    fmts = {v["format"] for v in impl["vectors"]}
    assert fmts == {"binary32", "binary16", "bfloat16"}
    assert (
        impl["vectors_traced"] == impl["vectors_run"]
        and impl["invalid"]["passed"] == impl["invalid"]["cases"]
    )


def test_example_program_minor_0_gets_a_reduced_run() -> None:
    """An old program keeps working (binary32 hex requests only), but cannot be sent invalid calls."""
    proc = run("--cmd", f"{EXAMPLE} --minor 0 --no-trace", "--vectors", "tree", "--examples", "10")
    assert proc.returncode == 3, proc.stdout[-2000:]
    assert "JSON-lines dyadic24-jsonl-1.0" in proc.stdout
    assert "invalid calls (the subject speaks JSON-lines minor version 0; announce minor 1" in proc.stdout


def test_a_mutant_behind_the_protocol_names_its_clause() -> None:
    proc = run(
        "--cmd",
        f"{EXAMPLE} --mutant exp2_log2e",
        "--vectors",
        "allocation",
        "--no-fuzz",
        "--accumulated",
        "0",
    )
    assert proc.returncode == 1 and "(clause 5.3)" in proc.stdout and "e of token" in proc.stdout


def test_bad_handshake_is_a_setup_error(tmp_path: Path) -> None:
    proc = run("--cmd", program(tmp_path, "print('hello')\n"), "--vectors", "tree")
    assert proc.returncode == 2 and "handshake is not valid JSON" in proc.stderr and "'hello'" in proc.stderr


def test_other_semantic_id_is_refused(tmp_path: Path) -> None:
    hello = HELLO.replace("floor-first-v1", "floor-first-v2")
    proc = run("--cmd", program(tmp_path, f"print({hello!r})\n"), "--vectors", "tree")
    assert proc.returncode == 2 and "dyadic24-floor-first-v2" in proc.stderr and "clause 11.1" in proc.stderr


def test_a_crash_is_reported_where_the_vectors_fail(tmp_path: Path) -> None:
    """The program answers two requests, then dies: the third vector fails with its exit status and its
    last standard error line, and so does every vector after it."""
    body = (
        "import json, sys\n"
        f"print({HELLO1!r}, flush=True)\n"
        "from dyadic24.conformance.examples.jsonl_fast import parse\n"
        "from dyadic24.reference.fast import propose_fast\n"
        "for n, line in enumerate(sys.stdin):\n"
        "    if n == 2:\n"
        "        print('segfault in my_kernel.cu:42', file=sys.stderr, flush=True)\n"
        "        sys.exit(7)\n"
        "    req = json.loads(line)\n"
        "    r = propose_fast(*parse(req, None)[:5], tau=parse(req, None)[5])\n"
        "    print(json.dumps({'id': req['id'], 'status': r.status.tolist(), 'token': r.token.tolist(),\n"
        "                      'ids': r.ids.tolist(), 'tickets': r.tickets.tolist()}), flush=True)\n"
    )
    proc = run("--cmd", program(tmp_path, body), "--vectors", "allocation", "--no-fuzz", "--accumulated", "0")
    assert proc.returncode == 1
    lines = [ln for ln in proc.stdout.splitlines() if "golden_allocation.json" in ln]
    assert "tcId 3: call: got " in lines[0] and "exited (exit status 7); its last standard error:" in lines[0]
    assert "segfault in my_kernel.cu:42" in lines[0] and "(clause 12.4)" in lines[0]
    assert re.search(r"vectors 2/\d+ ", proc.stdout.splitlines()[-1])


def test_a_malformed_response_is_quoted(tmp_path: Path) -> None:
    body = (
        f"import sys\nprint({HELLO!r}, flush=True)\n"
        "for line in sys.stdin:\n"
        '    print(\'{"id": 1, "status": [0], oops this is not json\', flush=True)\n'
    )
    proc = run("--cmd", program(tmp_path, body), "--vectors", "tree", "--no-fuzz", "--accumulated", "0")
    assert proc.returncode == 1
    assert "response is not valid JSON" in proc.stdout and "oops this is not json" in proc.stdout


def test_error_responses_fail_calls(tmp_path: Path) -> None:
    body = (
        f"import json, sys\nprint({HELLO!r}, flush=True)\n"
        "for line in sys.stdin:\n"
        "    rid = json.loads(line)['id']\n"
        "    err = {'argument': 'logits', 'message': 'V too large'}\n"
        "    print(json.dumps({'id': rid, 'error': err}), flush=True)\n"
    )
    proc = run(
        "--cmd",
        program(tmp_path, body),
        "--no-vectors",
        "--examples",
        "10",
        "--accumulated",
        "0",
        "--no-shrink",
    )
    assert proc.returncode == 1 and "error on argument 'logits': V too large" in proc.stdout

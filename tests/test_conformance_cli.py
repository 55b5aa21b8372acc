"""`dyadic24 conform` and `dyadic24 cite`: the three ways to name an implementation (clause 12.2
callables, clause 12.4 JSON-lines programs, the bundled ones), the reports and the exit status
(0 only on full conformance, 1 on a divergence, 2 on a usage or setup error)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dyadic24.conformance import cite, cli
from dyadic24.vectors import store

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
EXAMPLE = f"{PY} -m dyadic24.conformance.examples.jsonl_fast"
CITATION = re.compile(r"^dyadic24-floor-first-v1 spec-sha256:[0-9a-f]{64} vectors-sha256:[0-9a-f]{64}$")
FUZZ = ["--examples", "15", "--progress", "0"]


@pytest.fixture(autouse=True)
def _child_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """JSON-lines programs are started as `python -m dyadic24...`: they must find this source tree."""
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    )
    monkeypatch.chdir(REPO)


def small_vectors() -> list[str]:
    """The smallest vector file (a subset keeps the CLI tests quick), or no vectors before they exist."""
    files = store.vector_files()
    if not files:
        return ["--no-vectors"]
    return ["--vectors", min(files, key=lambda p: p.stat().st_size).name]


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cite_prints_the_one_line_citation(capsys: pytest.CaptureFixture[str]) -> None:
    """Appendix E: semantic ID, spec SHA-256, vector set SHA-256."""
    assert cite.main([]) == 0
    line = capsys.readouterr().out.strip()
    assert CITATION.match(line), line
    assert line.endswith(store.vector_set_sha256()) and store.spec_sha256() in line
    assert cite.main(["extra"]) == 2


def test_python_callable_conformant(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run_cli(
        capsys, "--impl", "dyadic24.reference.fast:propose_fast", *small_vectors(), *FUZZ,
        "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml"),
    )  # fmt: skip
    assert code == 0, out
    last = out.strip().splitlines()[-1]
    assert re.match(
        r"^dyadic24-floor-first-v1 spec-sha256:\S+ vectors-sha256:\S+ CONFORMANT vectors \d+/\d+", last
    )
    assert re.search(r"fuzz 15/15 rows \d+$", last)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["conformant"] is True and report["summary"] == last
    fuzz = report["implementations"][0]["fuzz"]
    assert fuzz["examples"] == 15 and fuzz["rows_per_s"] > 0
    assert ET.parse(tmp_path / "r.xml").getroot().tag == "testsuites"


def test_mutant_fails_with_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "--mutant", "u_low_bits", *small_vectors(), *FUZZ)
    assert code == 1
    assert "NON-CONFORMANT" in out.strip().splitlines()[-1]
    assert "(clause 9.4)" in out


def test_json_lines_example_conformant(capsys: pytest.CaptureFixture[str]) -> None:
    """Clause 12.4: the example program wrapping the fast reference, with its trace."""
    code, out, _ = run_cli(capsys, "--cmd", EXAMPLE, *small_vectors(), *FUZZ)
    assert code == 0, out
    assert "JSON-lines, implementation 'fast reference (jsonl_fast example)'" in out


def test_json_lines_mutant_names_the_clause(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "--cmd", f"{EXAMPLE} --mutant exp2_log2e", *small_vectors(), *FUZZ)
    assert code == 1
    assert "(clause 5.3)" in out and "e of token" in out


def test_json_lines_without_trace_compares_outputs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "--cmd", f"{EXAMPLE} --no-trace", *small_vectors(), *FUZZ)
    assert code == 0, out
    if "--no-vectors" not in small_vectors():
        assert "trace compared: no (outputs only)" in out


def _program(tmp_path: Path, body: str) -> str:
    path = tmp_path / "impl.py"
    path.write_text(body)
    return f"{PY} {path}"


def test_bad_handshake_is_a_setup_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "--cmd", _program(tmp_path, "print('hello')\n"), "--no-vectors")
    assert code == 2 and "handshake" in err


def test_other_semantic_id_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    hello = '{"protocol": "dyadic24-jsonl-1", "semanticId": "dyadic24-floor-first-v2", "trace": false}'
    code, _, err = run_cli(capsys, "--cmd", _program(tmp_path, f"print({hello!r})\n"), "--no-vectors")
    assert code == 2 and "dyadic24-floor-first-v2" in err and "clause 11.1" in err


def test_program_exiting_midway_fails_the_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    hello = '{"protocol": "dyadic24-jsonl-1", "semanticId": "dyadic24-floor-first-v1", "trace": false}'
    body = f"import sys\nprint({hello!r}, flush=True)\nsys.stdin.readline()\n"
    code, out, _ = run_cli(capsys, "--cmd", _program(tmp_path, body), "--no-vectors", *FUZZ, "--no-shrink")
    assert code == 1
    assert "the implementation exited" in out and "clause 12.4" in out


def test_error_responses_fail_calls(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    hello = '{"protocol": "dyadic24-jsonl-1", "semanticId": "dyadic24-floor-first-v1", "trace": false}'
    body = (
        f"import json, sys\nprint({hello!r}, flush=True)\n"
        "for line in sys.stdin:\n"
        "    rid = json.loads(line)['id']\n"
        "    err = {'argument': 'logits', 'message': 'V too large'}\n"
        "    print(json.dumps({'id': rid, 'error': err}), flush=True)\n"
    )
    code, out, _ = run_cli(capsys, "--cmd", _program(tmp_path, body), "--no-vectors", *FUZZ, "--no-shrink")
    assert code == 1 and "error on argument 'logits': V too large" in out


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "--impl", "no.such.module:propose", "--no-vectors")[0] == 2
    assert run_cli(capsys, "--impl", "dyadic24.reference.fast", "--no-vectors")[0] == 2
    assert run_cli(capsys, "--mutant", "no_such_mutant", "--no-vectors")[0] == 2
    assert run_cli(capsys, "--bundled", "--only", "gpu", "--no-vectors")[0] == 2
    assert (
        run_cli(capsys, "--impl", "dyadic24.reference.fast:propose_fast", "--vectors", "no_such_file")[0] == 2
    )
    with pytest.raises(SystemExit) as exc:
        cli.main([])  # one of --impl / --cmd / --mutant / --bundled is required
    assert exc.value.code == 2


def test_bundled_references(capsys: pytest.CaptureFixture[str]) -> None:
    """The exact and fast references; the fast one is fuzzed against the exact one."""
    code, out, _ = run_cli(capsys, "--bundled", "--only", "exact,fast", *small_vectors(), *FUZZ)
    assert code == 0, out
    assert "oracle exact" in out and "oracle fast" in out


def test_kernel_adapter_runs_or_is_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    """The Triton kernel: on the GPU, or in the interpreter (TRITON_INTERPRET=1) on a CPU-only machine;
    conformant on a vector file, fuzzing and the clause-13.2 accumulated check (100 rows: the main
    job's 1000 take over a minute in the interpreter)."""
    code, out, err = run_cli(
        capsys, "--bundled", "--only", "kernel", *small_vectors(), "--examples", "3", "--progress", "0",
        "--accumulated", "100",
    )  # fmt: skip
    if "SKIPPED" in out:
        assert code == 2 and "no implementation could be run" in err
    else:
        assert code == 0, out[-3000:]
        assert "TRITON_INTERPRET=1 (Triton interpreter on the CPU)" in out or "Triton on GPU" in out
        assert "accumulated check (clause 13.2): 100 rows" in out and "] CONFORMANT" in out


def test_skipped_kernel_is_reported(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from dyadic24.conformance import impls

    monkeypatch.setattr(impls, "triton_mode", lambda: ("torch is not importable (test)", ""))
    code, out, _ = run_cli(capsys, "--bundled", "--only", "fast,kernel", *small_vectors(), *FUZZ)
    assert code == 0, out
    assert "[kernel] SKIPPED: torch is not importable (test)" in out


def test_entry_point_exit_status() -> None:
    """`python -m dyadic24 conform` returns the runner's exit status (a mutant: 1)."""
    proc = subprocess.run(
        [PY, "-m", "dyadic24", "conform", "--mutant", "no_domain_key", *small_vectors(), "--examples", "5",
         "--quiet"],
        capture_output=True, text=True, cwd=REPO, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.count("\n") == 1 and "NON-CONFORMANT" in proc.stdout

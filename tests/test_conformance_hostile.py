"""Hostile and careless subjects through the real command (issue 41): whatever a subject does, the
verdict, the exit status and the timeout are the runner's, every cause gives at most one line of
error, nothing is written outside the paths the user named, and nothing the subject started outlives
the run. The subjects are in tests/hostile_subjects.py; each is right except for one misbehaviour."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
SUBJECTS = Path(__file__).resolve().parent / "hostile_subjects.py"
REDUCED = ["--vectors", "tree", "--examples", "3", "--accumulated", "100", "--no-progress"]
FINAL = re.compile(r"^dyadic24-floor-first-v1 spec-sha256:[0-9a-f]{64} vectors-sha256:[0-9a-f]{64} (\S+) ")


@pytest.fixture
def here(tmp_path: Path) -> Path:
    """The user's folder: the hostile subjects' module beside them."""
    shutil.copy(SUBJECTS, tmp_path / "hostile_subjects.py")
    return tmp_path


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), e.get("PYTHONPATH")) if p)
    return e


def conform(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    # -P: like the installed console script, the current directory is not on the runner's path
    return subprocess.run(
        [PY, "-P", "-m", "dyadic24", "conform", *args],
        cwd=cwd,
        env=env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def started(
    cwd: Path, *args: str, impl: str = "slow", runner: tuple[str, ...] = ("-m", "dyadic24", "conform")
) -> subprocess.Popen[str]:
    """A conform run of a slow subject in a session of its own, to be signalled as a terminal does."""
    return subprocess.Popen(
        [PY, "-P", *runner, "--impl", f"hostile_subjects:{impl}", "--workers", "2", *args],
        cwd=cwd,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def verdict(proc: subprocess.CompletedProcess[str]) -> str:
    last = proc.stdout.strip().splitlines()[-1]
    m = FINAL.match(last)
    assert m, last[:300]
    return m.group(1)


def files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if "__pycache__" not in p.parts}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


# ---- Python callables: their failures are theirs, never the runner's exit


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("exit_on_invalid", "raised SystemExit, not ArgumentError"),
        ("keyboard_interrupt", "raised KeyboardInterrupt"),
        ("generator_exit", "raised GeneratorExit"),
        ("unprintable_error", "its message could not be formatted"),
        ("bad_arrays", "reading its result raised ValueError: detach raises"),
        ("bad_property", "the property raises"),
        ("os_exit", "exited (exit status 0)"),
    ],
)
def test_a_python_subject_that_exits_or_raises_is_non_conformant(here: Path, name: str, says: str) -> None:
    before = files(here)
    proc = conform(here, "--impl", f"hostile_subjects:{name}", *REDUCED)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert verdict(proc) == "NON-CONFORMANT"
    assert says in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    assert files(here) - before <= {"hostile_subjects.py"}


def test_a_hanging_python_subject_is_timed_out(here: Path) -> None:
    start = time.monotonic()
    proc = conform(here, "--impl", "hostile_subjects:hang", "--timeout", "2", *REDUCED, timeout=120)
    assert proc.returncode == 1 and verdict(proc) == "NON-CONFORMANT"
    assert "no response within 2 s (--timeout)" in proc.stdout
    assert time.monotonic() - start < 60


def test_timeout_default_is_stated_in_help() -> None:
    proc = subprocess.run(
        [PY, "-m", "dyadic24", "conform", "--help"], env=env(), capture_output=True, text=True, check=False
    )
    assert "(default 600)" in " ".join(proc.stdout.split())


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("raise SystemExit(3)\n", "raised SystemExit: 3"),
        ("def propose(:\n", "SyntaxError"),
        ("{}['missing']\n", "KeyError"),
        ("import os\nos._exit(4)\n", "exit status 4"),
    ],
)
def test_a_module_that_cannot_load_is_one_line_and_exit_2(tmp_path: Path, source: str, says: str) -> None:
    (tmp_path / "broken.py").write_text(
        source + "def propose(*a, **k): pass\n" if "def" not in source else source
    )
    proc = conform(tmp_path, "--impl", "broken:propose", "--no-progress")
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dyadic24 conform: --impl: cannot load the implementation")
    assert says in lines[0]


def test_bfloat16_declared_without_torch_is_one_line(here: Path) -> None:
    (here / "torch.py").write_text("raise ImportError('torch is not installed here')\n")
    proc = conform(here, "--impl", "hostile_subjects:bf16_declared", "--no-progress")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "declares bfloat16" in lines[0] and "torch is not installed here" in lines[0]


def test_prints_on_standard_output_do_not_reach_the_report(here: Path) -> None:
    proc = conform(here, "--impl", "hostile_subjects:prints", "--no-progress")
    assert proc.returncode == 0 and verdict(proc) == "CONFORMANT"
    assert "a subject's own print" not in proc.stdout
    assert "a subject's own print" in proc.stderr


def test_a_flood_of_standard_error_is_cut(here: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    proc = conform(here, "--impl", "hostile_subjects:floods_stderr", *REDUCED, "--json", str(report))
    assert proc.returncode == 3 and verdict(proc) == "REDUCED"
    assert len(proc.stderr) < 2_000_000  # the subject wrote 3 MB per call
    assert "further standard error not shown" in proc.stderr


def test_a_huge_error_message_is_cut_in_every_report(here: Path, tmp_path: Path) -> None:
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    proc = conform(
        here, "--impl", "hostile_subjects:huge_error", *REDUCED, "--json", str(report), "--junit", str(junit)
    )
    assert proc.returncode == 1
    assert len(proc.stdout) < 200_000
    assert report.stat().st_size < 2_000_000 and junit.stat().st_size < 2_000_000
    assert "characters)" in report.read_text()


def test_a_forked_child_of_a_python_subject_is_ended(here: Path) -> None:
    proc = conform(here, "--impl", "hostile_subjects:forks", *REDUCED)
    assert proc.returncode == 3, proc.stderr[-2000:]
    pid = int((here / "forked.pid").read_text())
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid)


# ---- JSON-lines programs: every response checked for its JSON types


def cmd(mode: str) -> str:
    return f"{PY} hostile_subjects.py {mode}"


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("float_token", "not a JSON integer"),
        ("string_token", "not a JSON integer"),
        ("float_integral_token", "not a JSON integer"),
        ("duplicate_keys", "duplicate key 'token'"),
        ("bad_error_argument", "error argument must be null or one of"),
        ("giant_frame", "announces a frame of 1,000,000,000,000,000 bytes"),
    ],
)
def test_a_malformed_response_fails_its_call(here: Path, mode: str, says: str) -> None:
    proc = conform(here, "--cmd", cmd(mode), *REDUCED, timeout=120)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert verdict(proc) == "NON-CONFORMANT"
    assert says in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_a_giant_response_line_is_refused_and_cut(here: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    proc = conform(here, "--cmd", cmd("giant_line"), *REDUCED, "--json", str(report), timeout=300)
    assert proc.returncode == 1
    assert "a response line longer than 64 MiB" in proc.stdout
    assert len(proc.stdout) < 200_000 and report.stat().st_size < 2_000_000


def test_a_program_that_stops_reading_is_timed_out(here: Path) -> None:
    start = time.monotonic()
    proc = conform(
        here,
        "--cmd",
        cmd("never_reads"),
        "--timeout",
        "2",
        "--vectors",
        "large_vocab",
        "--no-fuzz",
        "--accumulated",
        "0",
        "--no-progress",
        timeout=120,
    )
    assert proc.returncode == 1 and verdict(proc) == "NON-CONFORMANT"
    assert "stopped reading its input" in proc.stdout or "no response within 2 s" in proc.stdout
    assert time.monotonic() - start < 60


def test_a_program_whose_child_holds_the_pipes_does_not_hang_the_run(here: Path) -> None:
    start = time.monotonic()
    proc = conform(here, "--cmd", cmd("forks_and_exits"), *REDUCED, timeout=120)
    assert proc.returncode == 1 and verdict(proc) == "NON-CONFORMANT"
    assert "exited (exit status 0)" in proc.stdout
    assert time.monotonic() - start < 60
    pid = int((here / "forked.pid").read_text())
    time.sleep(0.5)
    assert not alive(pid)


def test_a_program_exiting_after_its_handshake_fails_every_call_quickly(here: Path) -> None:
    proc = conform(here, "--cmd", cmd("exits"), *REDUCED, timeout=120)
    assert proc.returncode == 1 and verdict(proc) == "NON-CONFORMANT"
    assert "vectors 0/20" in proc.stdout


def test_a_program_dying_at_start_is_one_line_and_exit_2(here: Path) -> None:
    proc = conform(here, "--cmd", cmd("no_handshake"), *REDUCED)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = [line for line in proc.stderr.splitlines() if line.startswith("dyadic24 conform:")]
    assert len(lines) == 1 and "no handshake line" in lines[0] and "exit status 3" in lines[0]


def test_a_programs_stderr_flood_is_cut(here: Path) -> None:
    proc = conform(here, "--cmd", cmd("stderr_flood"), *REDUCED, timeout=300)
    assert proc.returncode == 3
    assert len(proc.stderr) < 2_000_000


# ---- the verdict's labels: every count is of what was compared


def test_failed_16_bit_forms_show_in_the_final_line(here: Path) -> None:
    proc = conform(
        here, "--impl", "hostile_subjects:wrong_on_binary16", "--vectors", "widening", *REDUCED[2:]
    )
    assert proc.returncode == 1
    last = proc.stdout.strip().splitlines()[-1]
    assert re.search(r"vectors (\d+)/\1 binary16 0/\d+", last), last


def test_the_final_line_names_the_subject_and_label(here: Path) -> None:
    proc = conform(here, "--impl", "hostile_subjects:wrong_on_binary16", "--label", "abc123 (v2)", *REDUCED)
    last = proc.stdout.strip().splitlines()[-1]
    assert 'subject "hostile_subjects:wrong_on_binary16" label "abc123 (v2)"' in last


def test_a_partial_trace_passes_and_is_counted_as_partial(here: Path) -> None:
    proc = conform(here, "--impl", "hostile_subjects:partial_trace", "--no-progress")
    assert proc.returncode == 0, proc.stdout[-3000:]
    got, total = map(int, re.search(r"trace-keys (\d+)/(\d+)", proc.stdout).groups())  # type: ignore[union-attr]
    assert 0 < got < total / 5  # status and path only


def test_a_wrong_key_of_a_partial_trace_fails(here: Path) -> None:
    proc = conform(here, "--impl", "hostile_subjects:wrong_partial_trace", *REDUCED)
    assert proc.returncode == 1 and "path: got greedy, expected sampled" in proc.stdout


def test_a_trace_value_of_the_wrong_type_is_a_clause_12_3_failure(here: Path) -> None:
    proc = conform(here, "--impl", "hostile_subjects:mistyped_trace", *REDUCED)
    assert proc.returncode == 1 and "key 'm' is 5, not 8 lower-case hex digits (clause 12.3)" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_an_exp_sweep_of_a_subject_without_exp_is_a_usage_error(here: Path) -> None:
    proc = conform(here, "--impl", "hostile_subjects:prints", "--exp-sweep", *REDUCED)
    assert (
        proc.returncode == 2 and "--exp-sweep: hostile_subjects:prints exposes no exp routine" in proc.stderr
    )
    proc = conform(here, "--cmd", cmd("float_token"), "--exp-sweep", *REDUCED)
    assert proc.returncode == 2 and "exposes no exp routine" in proc.stderr


def test_a_bundled_implementation_that_cannot_run_makes_the_run_reduced(here: Path) -> None:
    (here / "torch.py").write_text("raise ImportError('no torch here')\n")
    proc = conform(here, "--bundled", "--only", "fast,kernel", "--no-progress", timeout=600)
    assert proc.returncode == 3, proc.stdout[-2000:]
    assert verdict(proc) == "REDUCED" and "could not run: kernel" in proc.stdout


# ---- signals: one signal ends the run within seconds, with its partial report


@pytest.mark.parametrize(
    ("sig", "args", "status"),
    [
        (
            signal.SIGINT,
            [
                "--bulk",
                "100000000",
                "--no-vectors",
                "--no-invalid",
                "--no-fuzz",
                "--accumulated",
                "0",
                "--workers",
                "2",
            ],
            130,
        ),
        (signal.SIGTERM, ["--no-vectors", "--no-invalid", "--no-fuzz", "--accumulated", "1000000"], 143),
        (
            signal.SIGTERM,
            [
                "--no-vectors",
                "--no-invalid",
                "--no-fuzz",
                "--accumulated",
                "0",
                "--exp-sweep",
                "--exp",
                "hostile_subjects:exp_of",
                "--workers",
                "2",
            ],
            143,
        ),
    ],
)
def test_one_signal_ends_the_run_with_its_partial_report(
    here: Path, sig: int, args: list[str], status: int
) -> None:
    proc = started(here, "--no-progress", *args)
    time.sleep(8)
    os.killpg(proc.pid, sig)  # as a terminal's Ctrl-C or an outer `timeout` sends it
    start = time.monotonic()
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - start < 15
    assert proc.returncode == status, err[-2000:]
    last = out.strip().splitlines()[-1]
    assert (
        FINAL.match(last) and " INTERRUPTED " in last and f"(stopped by {signal.Signals(sig).name})" in last
    )
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and group(proc.pid):
        time.sleep(0.2)
    assert group(proc.pid) == ""  # no worker or host left behind


def test_a_stopped_run_leaves_the_runner_no_thread_to_outlive_it(here: Path) -> None:
    """The runner's own threads (one reader, writer and relay per subject) have ended by the time its
    main returns: one that woke while the interpreter finalized crashed CPython 3.12.1 (SIGSEGV
    instead of status 130 on CI, 2026-12-07). The subject's escaped child holds its pipes for 1.5 s
    after the host is killed, within kill's 2 s wait for the threads."""
    script = (
        "import sys, threading\n"
        "from dyadic24.conformance.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print('threads:', sorted(t.name for t in threading.enumerate()), flush=True)\n"
        "sys.exit(code)\n"
    )
    quiet = ["--no-vectors", "--no-invalid", "--no-fuzz", "--accumulated", "0", "--no-progress"]
    proc = started(here, "--bulk", str(10**7), *quiet, impl="escapes_briefly", runner=("-c", script))
    time.sleep(8)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert "threads: ['MainThread']" in out, out[-500:]


def group(pgid: int) -> str:
    return subprocess.run(
        ["pgrep", "-g", str(pgid)], capture_output=True, text=True, check=False
    ).stdout.strip()


# ---- nothing written where it must not be


def test_reports_are_never_written_into_the_package(here: Path) -> None:
    inside = REPO / "conformance" / "report.json"
    (here / "link").symlink_to(REPO / "vectors")
    for target in (str(inside), str(here / "link" / "x.json")):
        proc = conform(here, "--impl", "hostile_subjects:prints", "--json", target, *REDUCED)
        assert proc.returncode == 2 and "lies inside the dyadic24 package" in proc.stderr
    assert not inside.exists() and not (REPO / "vectors" / "x.json").exists()


def test_a_failed_report_write_keeps_the_verdict(here: Path) -> None:
    proc = conform(here, "--impl", "hostile_subjects:prints", "--json", "/dev/full", *REDUCED)
    assert proc.returncode == 3 and verdict(proc) == "REDUCED"
    assert "--json /dev/full: the report could not be written" in proc.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--timeout", "inf"], "--timeout"),
        (["--timeout", "nan"], "--timeout"),
        (["--bulk", str(10**18)], "--bulk"),
        (["--label", "two\nlines"], "--label"),
    ],
)
def test_bad_sizes_are_one_line_usage_errors(here: Path, args: list[str], named: str) -> None:
    proc = conform(here, "--impl", "hostile_subjects:prints", *args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dyadic24 conform: {named}")


def test_a_huge_bulk_starts_at_once(here: Path) -> None:
    proc = started(
        here, "--bulk", str(10**15), "--no-vectors", "--no-invalid", "--no-fuzz", "--accumulated", "0"
    )
    time.sleep(12)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-3000:]
    assert re.search(r" bulk (\d+)/\1 ", out.strip().splitlines()[-1]), err[-2000:]  # rows were compared


def test_the_reference_side_is_the_runners_package_not_the_users_folder(here: Path) -> None:
    """A folder ./dyadic24 whose fast reference agrees with a wrong subject must not become the
    reference of the bulk check's workers."""
    fake = here / "dyadic24"
    shutil.copytree(REPO / "dyadic24", fake, ignore=shutil.ignore_patterns("__pycache__", "reports", "data"))
    fast = fake / "reference" / "fast.py"
    fast.write_text(
        fast.read_text() + "\n_orig = propose_fast\n"
        "def propose_fast(*a, **k):\n"
        "    out = _orig(*a, **k)\n"
        "    out.token[out.status == 0] += 1\n"
        "    return out\n"
    )
    (here / "wrong.py").write_text(
        "from dyadic24.reference.fast import propose_fast as f\n"
        "def propose(*a, **k):\n"
        "    out = f(*a, **k)\n"
        "    out.token[out.status == 0] += 1\n"
        "    return out\n"
    )
    proc = conform(
        here,
        "--impl",
        "wrong:propose",
        "--bulk",
        "300",
        "--workers",
        "2",
        "--no-vectors",
        "--no-invalid",
        "--no-fuzz",
        "--accumulated",
        "0",
        "--no-progress",
    )
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert not re.search(r" bulk (\d+)/\1", proc.stdout.strip().splitlines()[-1])


def test_json_report_counts(here: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    proc = conform(
        here, "--impl", "hostile_subjects:partial_trace", *REDUCED, "--json", str(report), "--label", "L"
    )
    assert proc.returncode == 3
    doc = json.loads(report.read_text())
    assert doc["subject"] == "hostile_subjects:partial_trace" and doc["label"] == "L"
    impl = doc["implementations"][0]
    assert 0 < impl["trace_keys"][0] < impl["trace_keys"][1]


def test_workers_are_capped_by_the_cpus(here: Path) -> None:
    proc = conform(
        here, "--impl", "hostile_subjects:prints", "--bulk", "40", "--workers", "1000", "--no-vectors",
        "--no-invalid", "--no-fuzz", "--accumulated", "0", "--no-progress",
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr[-2000:]
    used = int(re.search(r"(\d+) reference workers", proc.stdout).group(1))  # type: ignore[union-attr]
    assert 1 <= used <= (os.cpu_count() or 1)

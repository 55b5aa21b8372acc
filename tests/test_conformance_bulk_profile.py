"""The bulk stream's deployment profile (`conform --bulk N --shapes ...`, conformance/bulk.py): every call
at the deployment's shapes, every row family and status and the golden vectors kept; the calls' logits
travel in shared-memory segments that no run leaves behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from dyadic24.conformance import bulk
from dyadic24.conformance.impls import PythonImplementation
from dyadic24.reference.fast import propose_fast

REPO = Path(__file__).resolve().parent.parent
SHAPES = "V=4097,9000 formats=bf16,fp32 B=2..9"


def test_profile_parses_and_names_its_errors() -> None:
    p = bulk.Profile.parse("V=163840,151936 formats=bf16,fp32 B=1..256")
    assert p.vocabs == (151936, 163840) and p.formats == ("bfloat16", "binary32") and p.batches == (1, 256)
    assert bulk.Profile.parse(p.text()) == p
    assert bulk.Profile.parse("B=8").batches == (8, 8)
    for bad, says in (
        ("V=0", "V takes integers"),
        ("formats=fp64", "unknown format"),
        ("B=9..3", "B takes N or LO..HI"),
        ("W=3", "unknown key"),
        ("V", "KEY=VALUES"),
        ("", "no shape given"),
    ):
        with pytest.raises(bulk.ProfileError, match=says):
            bulk.Profile.parse(bad)


def test_every_call_is_at_the_profiles_shapes_with_every_family() -> None:
    profile = bulk.Profile.parse(SHAPES)
    families: Counter[str] = Counter()
    replays = 0
    for index in range(240):
        c = bulk.generate(3, index, None, profile)
        i = c.call.inputs
        assert i.vocab in (4097, 9000) and 2 <= i.batch <= 9 and c.call.fmt in ("bfloat16", "binary32")
        if c.call.fmt == "bfloat16":
            assert c.call.narrow is not None
            assert np.array_equal(c.call.narrow.astype(np.uint32) << 16, i.logits.view(np.uint32))
        families.update(c.families)
        replays += c.plan.band == "replay"
    assert set(bulk.FAMILIES) <= set(families) and families["golden"] > 0 and replays == 20


def test_a_replayed_vector_is_placed_whole_among_minus_infinity() -> None:
    profile = bulk.Profile.parse("V=5000 formats=fp32 B=1..64")
    index = bulk.REPLAY_EVERY // 2
    c = bulk.generate(0, index, None, profile)
    v = bulk.golden()[c.plan.replay]
    rows = [r for r, f in enumerate(c.families) if f == "golden"]
    assert len(rows) == v.batch and c.call.inputs.vocab == 5000
    bits = c.call.inputs.logits.view(np.uint32)
    for r in rows:
        finite = np.flatnonzero(bits[r] != 0xFF800000)
        src = v.logits.view(np.uint32)
        assert any(
            np.array_equal(bits[r][finite], s[s != 0xFF800000]) for s in src
        )  # the vector's row, shifted


@pytest.mark.parametrize("workers", [1, 2])
def test_the_profile_run_agrees_with_the_reference_and_leaves_no_segment(workers: int) -> None:
    impl = PythonImplementation(propose_fast, "fast")
    result = bulk.run_bulk(
        impl, 300, seed=1, workers=workers, progress=False, profile=bulk.Profile.parse(SHAPES)
    )
    assert result.ok and result.rows == 300 and result.profile == bulk.Profile.parse(SHAPES).text()
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"d24-{os.getpid()}-")]


def test_a_stopped_profile_run_leaves_no_segment(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = ["--bulk", "100000000", "--shapes", "V=70000 B=16..32", "--workers", "2", "--no-vectors"]
    args += ["--no-invalid", "--no-fuzz", "--accumulated", "0", "--no-progress"]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-P",
            "-m",
            "dyadic24",
            "conform",
            "--impl",
            "dyadic24.reference.fast:propose_fast",
            *args,
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    time.sleep(10)
    os.killpg(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err[-2000:]
    assert "(stopped by SIGTERM)" in out.strip().splitlines()[-1]
    time.sleep(1)
    left = [n for n in os.listdir("/dev/shm") if n.startswith(f"d24-{proc.pid}-")]
    assert left == []

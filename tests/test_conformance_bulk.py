"""`conform --bulk N` (dyadic24.conformance.bulk) and `--exp-sweep` (dyadic24.conformance.expsweep): the
documented generator covers what it promises, is deterministic, and a wrong implementation is caught
with a reproducing request; the sweep compares every value it is sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dyadic24.api import Status
from dyadic24.conformance import bulk, expsweep, jsonl
from dyadic24.conformance.impls import CommandImplementation, PythonImplementation
from dyadic24.conformance.mutants import MUTANTS
from dyadic24.reference.fast import propose_fast
from dyadic24.reference.fast_exp import exp32_np

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
CALLS = 600  # calls drawn for the statistics (about 12,000 rows)


@pytest.fixture(scope="module")
def sample() -> list[bulk.BulkCall]:
    return [bulk.generate(0, i) for i in range(CALLS)]


def test_generation_is_deterministic_and_call_by_call() -> None:
    a, b = bulk.generate(7, 123), bulk.generate(7, 123)
    assert a.plan == b.plan and a.families == b.families
    assert np.array_equal(a.call.inputs.logits.view(np.uint32), b.call.inputs.logits.view(np.uint32))
    assert not np.array_equal(bulk.generate(8, 123).call.inputs.seed, a.call.inputs.seed)
    cut = bulk.generate(7, 123, rows=1)
    assert cut.call.inputs.batch == 1
    assert np.array_equal(cut.call.inputs.logits[0].view(np.uint32), a.call.inputs.logits[0].view(np.uint32))
    assert sum(bulk.sizes(3, 5000)) == 5000


def test_the_generator_covers_what_it_documents(sample: list[bulk.BulkCall]) -> None:
    rows = sum(c.call.inputs.batch for c in sample)
    big = sum(c.call.inputs.batch for c in sample if c.call.inputs.vocab > 4096)
    assert big / rows > 0.04  # a real share of tiled vocabularies
    assert max(c.call.inputs.vocab for c in sample) > 131072
    vocab_all = {c.call.inputs.vocab for c in sample}
    assert {1, 2, 32, 33} <= vocab_all and any(v in bulk.VOCABS for v in vocab_all)
    taus = Counter(c.call.inputs.tau_bits for c in sample)
    assert taus.most_common(1)[0][0] == 0x3F333333  # the default tau is the most frequent
    assert {c.call.fmt for c in sample} == {"binary32", "binary16", "bfloat16"}
    families = Counter(f for c in sample for f in c.families)
    assert set(bulk.FAMILIES) | {"golden"} <= set(families)
    statuses: Counter[int] = Counter()
    greedy_tied = 0
    for c in sample:
        i = c.call.inputs
        out = propose_fast(
            i.logits, i.temperature, i.seed, i.round, i.position, tau=np.uint32(i.tau_bits).view(np.float32)
        )
        statuses.update(out.status.tolist())
        for r in range(i.batch):
            row = i.logits[r]
            if out.status[r] == 0 and i.temperature[r] == 0 and np.count_nonzero(row == row.max()) > 1:
                greedy_tied += 1
    assert set(statuses) == {int(s) for s in Status}
    assert greedy_tied > 0  # greedy rows with tied maxima (clause 4.1: the lowest ID)
    narrow = [c for c in sample if c.call.fmt != "binary32"]
    for c in narrow[:20]:  # the 16-bit patterns widen exactly to the call's binary32 logits (clause 1.2)
        assert c.call.narrow is not None
        wide = jsonl.widen16(c.call.narrow, c.call.fmt).view(np.uint32)
        assert np.array_equal(wide, c.call.inputs.logits.view(np.uint32))


def test_a_conformant_subject_passes_and_a_mutant_is_caught() -> None:
    good = bulk.run_bulk(PythonImplementation(propose_fast, "fast"), 3000, progress=False)
    assert good.ok and good.rows == 3000 and good.differing_rows == 0
    assert sum(good.formats.values()) == 3000
    bad = bulk.run_bulk(
        PythonImplementation(MUTANTS["remainder_lowest_id"][0], "m"), 3000, progress=False, max_failures=3
    )
    assert not bad.ok and bad.differing_rows > 0 and len(bad.failures) == 3
    failure = bad.failures[0]
    assert failure.divergence.clause == "8.1" or failure.divergence.clause.startswith(("7", "9"))
    request = json.loads(failure.reproducer)
    assert request["id"] == 1 and len(request["logits"]) == 1  # the failing row alone


def test_bulk_through_the_command() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [
            PY,
            "-m",
            "dyadic24",
            "conform",
            "--mutant",
            "u_low_bits",
            "--no-vectors",
            "--no-invalid",
            "--no-fuzz",
            "--accumulated",
            "0",
            "--bulk",
            "2000",
            "--workers",
            "2",
            "--no-progress",
            "--max-report",
            "2",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
    assert "bulk: " in proc.stdout and 'reproduce: {"id":1,' in proc.stdout
    assert "token: got " in proc.stdout and "(clause 9.5)" in proc.stdout  # outputs only: the token's clause


# ---- exp sweep


def _small_domain(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    tasks = [(0, 1), (0x80000000, 1 << 14), (0xB3000000 - 4096, 8192), (0xC2CFF000, 8192), (0xFF7FF000, 4097)]
    monkeypatch.setattr(expsweep, "chunks", lambda: tasks)
    monkeypatch.setattr(expsweep, "TOTAL", sum(n for _, n in tasks))
    return tasks


def test_exp_sweep_passes_a_correct_routine_and_finds_a_wrong_one(monkeypatch: pytest.MonkeyPatch) -> None:
    _small_domain(monkeypatch)
    right = PythonImplementation(propose_fast, "fast", exp=lambda z: exp32_np(z.view(np.float32)))
    result = expsweep.run_exp_sweep(right, progress=False)
    assert result.ok and result.total == expsweep.TOTAL and result.mismatches == 0

    def one_off(z: Any) -> Any:
        e = exp32_np(z.view(np.float32)).view(np.uint32).copy()
        e[z == 0xB3000001] += 1
        return e

    wrong = PythonImplementation(propose_fast, "wrong", exp=one_off)
    result = expsweep.run_exp_sweep(wrong, progress=False)
    assert not result.ok and result.mismatches == 1
    assert result.examples == [("b3000001", "3f800000", "3f7fffff")]


def test_exp_sweep_of_a_json_lines_program(monkeypatch: pytest.MonkeyPatch) -> None:
    _small_domain(monkeypatch)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    impl = CommandImplementation([PY, "-m", "dyadic24.conformance.examples.jsonl_fast"])
    try:
        assert impl.has_exp and impl.frames
        result = expsweep.run_exp_sweep(impl, progress=False)
    finally:
        impl.close()
    assert result.ok, result


def test_the_sweep_covers_the_rule_s_domain() -> None:
    tasks = expsweep.chunks()
    assert tasks[0] == (0, 1) and tasks[1][0] == 0x80000000
    assert sum(n for _, n in tasks) == expsweep.TOTAL == 2_139_095_042
    start, count = tasks[-1]
    assert start + count - 1 == 0xFF800000
    assert expsweep.expected((0xFF800000 - 3, 4)).tolist() == [0, 0, 0, 0]
    assert expsweep.expected((0, 1)).tolist() == [0x3F800000]

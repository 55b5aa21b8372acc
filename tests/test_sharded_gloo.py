"""The vocabulary-sharded proposal over torch.distributed (gloo) under the Triton interpreter.

Clauses 2.1 (flags ORed across shards), 2.4 (row isolation: golden vectors of one V and tau run as one
call), 3.1-3.2 (C = top 32 of the union of the shards' top 32), 1.5 (argument errors raised on every
rank), 13.1 (golden vectors). Each world size starts its ranks once, as separate processes (start
method spawn, FileStore rendezvous in a temporary directory), through the same driver the lead runs
on two GPUs (dyadic24.kernels.sharded_check), at small sizes; the tests read rank 0's report, in which
EVERY rank's outputs were compared with the expected outputs / the fast reference.

CI cost on 2 cores: world 2 runs, of each (V, tau, format) group of golden vectors, the vectors up
to 8 rows (128 of 291 vectors, 168 of 470 rows; every rank runs the merge of every row, ~0.08 s per
row and rank under the interpreter), the targeted status rows, the validation cases and a small
fuzz. Every golden vector runs unsharded in the default run
(tests/test_kernel_propose.py, with traces), and test_merge_over_many_ranks_without_processes
merges 40 ranks' records in one process. DYADIC24_DEEP=1: every split pattern of every golden
vector at world 2, a bigger fuzz, and world 4 (four
processes, which on CI's 2 cores cost more than the rest of this file): every golden vector, uneven
shards in shuffled rank order, V < 4, the validation cases on 4 ranks; and world 8, the largest
tensor-parallel degree of one host (issue 24): every golden vector split over 8 ranks (many of them
empty), the status rows, the validation cases on 8 ranks and fuzzed rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
dist = pytest.importorskip("torch.distributed")

from dyadic24.kernels.backend import select_backend  # noqa: E402

select_backend()

from dyadic24.api import ArgumentError  # noqa: E402
from dyadic24.kernels import sharded, sharded_check, sharded_check_bits, sharded_check_rows  # noqa: E402
from dyadic24.kernels.exp_table import TABLE_PATH  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEEP = os.environ.get("DYADIC24_DEEP", "") not in ("", "0")
WORLD2_GOLDEN_ROWS = 8  # per (V, tau, format) group, outside the deep profile (CI time: module docstring)

pytestmark = [
    pytest.mark.skipif(not TABLE_PATH.is_file(), reason="exp_near_midpoints.json not generated yet"),
    pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="no gloo backend"),
]


def _golden_count() -> tuple[int, int, int]:
    """The golden vectors, their rows and their (V, tau, format) groups."""
    from dyadic24.vectors.store import iter_vectors

    vectors = rows = 0
    groups = set()
    for vec in iter_vectors():
        vectors += 1
        rows += vec.batch
        groups.add((vec.vocab, vec.tau_bits, vec.narrow_format))
    return vectors, rows, len(groups)


def _spawn(tmp: Path, world: int, extra: list[str]) -> dict[str, Any]:
    """Run the check's ranks as processes with gloo; they import the kernels under the interpreter (the
    variable is set only while the ranks start, so this session's own backend choice stays as it is)."""
    argv = ["--out", str(tmp), "--world", str(world), "--backend", "gloo", "--timeout", "240", *extra]
    before = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        code = sharded_check.main(argv)
    finally:
        if before is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = before
    report_path = tmp / "sharded_check.json"
    assert report_path.is_file(), f"no report (exit status {code})"
    report: dict[str, Any] = json.loads(report_path.read_text())
    report["exit_status"] = code
    return report


@pytest.fixture(scope="module")
def world2(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    extra = ["--only", "golden,statuses,validation,reuse,exchange,fuzz", "--rows", "200" if DEEP else "32",
             "--max-vocab", "5000", "--max-batch", "8", "--unsharded-every", "4",
             "--fuzz-seconds", "0", "--reference-rows", "100000"]  # fmt: skip
    extra += ["--golden-splits", "all"] if DEEP else ["--golden-rows-per-group", str(WORLD2_GOLDEN_ROWS)]
    return _spawn(tmp_path_factory.mktemp("sharded2"), 2, extra)


@pytest.fixture(scope="module", params=[4, 8], ids=["world4", "world8"])
def wide(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """World 4 and world 8 (the tensor-parallel degrees of one host), each started once."""
    world: int = request.param
    if not DEEP:
        pytest.skip(f"world {world}: deep profile (DYADIC24_DEEP=1; CI's budget, module docstring)")
    rows, seed = {4: ("100", "3"), 8: ("64", "5")}[world]
    extra = ["--only", "golden,statuses,validation,fuzz", "--rows", rows, "--max-vocab", "64",
             "--max-batch", "6", "--fuzz-seconds", "0", "--reference-rows", "100000",
             "--golden-rows-per-group", "0", "--seed", seed]  # fmt: skip
    report = _spawn(tmp_path_factory.mktemp(f"sharded{world}"), world, extra)
    report["world"] = world
    return report


def _section(report: dict[str, Any], name: str) -> dict[str, Any]:
    sec: dict[str, Any] = report["sections"][name]
    assert "error" not in sec, sec["error"]
    assert sec["passed"], json.dumps(sec, indent=1)[:6000]
    return sec


# ---------------------------------------------------------------- in-process


def test_partition_accepts_any_rank_order_and_empty_ranks() -> None:
    """The shard ranges must partition [0, vocab_total); order and empty ranks are free (clause 3.1)."""
    sharded.check_partition([0, 40], [40, 60], 100)
    sharded.check_partition([60, 0], [40, 60], 100)
    sharded.check_partition([0, 1, 1, 0], [1, 0, 0, 0], 1)  # V < world
    sharded.check_partition([7, 0, 3], [0, 3, 4], 7)


@pytest.mark.parametrize(
    ("offsets", "sizes", "total", "argument"),
    [
        ([0, 41], [40, 59], 100, "vocab_offset"),  # gap
        ([0, 39], [40, 61], 100, "vocab_offset"),  # overlap (and past the end)
        ([0, 39], [40, 60], 100, "vocab_offset"),  # overlap
        ([0, 40], [40, 50], 100, "vocab_total"),  # short
        ([0, 0], [0, 0], 0, "vocab_total"),
        ([0, 101], [100, 0], 100, "vocab_offset"),  # empty range outside [0, total]
    ],
)
def test_partition_rejects(offsets: list[int], sizes: list[int], total: int, argument: str) -> None:
    """clause 1.5: the error names the argument."""
    with pytest.raises(ArgumentError) as info:
        sharded.check_partition(offsets, sizes, total)
    assert info.value.argument == argument


def test_needs_a_process_group() -> None:
    """clause 1.5: without torch.distributed the call names the group."""
    if dist.is_initialized():
        pytest.skip("a process group exists in this session")
    x = torch.zeros((1, 4), dtype=torch.float32)
    u = torch.zeros(1, dtype=torch.int64)
    with pytest.raises(ArgumentError) as info:
        sharded.propose_sharded(x, 0, 4, torch.ones(1), u, u, u)
    assert info.value.argument == "group"


def test_merge_over_many_ranks_without_processes() -> None:
    """clauses 2.1, 3.2: the kernels alone, no process group: 40 shards' records (uneven, some empty,
    shuffled order, more ranks than one merge block of 32) merged as 40 ranks would, against the fast
    reference, for rows of every status."""
    import numpy as np

    from dyadic24.kernels import fuzz, propose, sharded_jit
    from dyadic24.kernels.exp_table import load_table
    from dyadic24.reference.fast import propose_fast

    rng = np.random.default_rng(17)
    world, batch, vocab = 40, 6, 300
    families = ("nan", "pinf", "neginf", "badtemp", "ties", "normal")
    call = fuzz.make_call(rng, batch, vocab, "float32", [], families=families)
    offsets, sizes = sharded_check_rows.make_split(rng, vocab, world, "shuffled")
    dev = propose.kernel_device()
    records = []
    for off, size in zip(offsets, sizes, strict=True):
        rec = torch.empty((batch, sharded.RECORD_WORDS), dtype=torch.int64, device=dev)
        if size == 0:
            rec[:, :32], rec[:, 32] = sharded.KEY_PAD, 0
        else:
            part = torch.from_numpy(np.ascontiguousarray(call.logits[:, off : off + size])).to(dev)
            with np.errstate(all="ignore"):
                sharded_jit.shard_tile_kernel[(batch,)](
                    part.view(torch.int32), rec, rec, size, off, 1, sharded.RECORD_WORDS, 32,
                    sharded.RECORD_WORDS, TILE=64, SRC=0,
                )  # fmt: skip
        records.append(rec)
    gathered = torch.cat(records)
    outs = sharded.make_outputs(batch, dev)
    tab = load_table(dev)
    u64 = [torch.from_numpy(a.view(np.int64).copy()).to(dev) for a in (call.seed, call.round, call.position)]
    temp = torch.from_numpy(call.temperature).to(dev).view(torch.int32)
    tau_bits = int(np.float32(call.tau).view(np.uint32))
    with np.errstate(all="ignore"):
        sharded_jit.shard_merge_kernel[(batch,)](
            gathered, temp, *u64, tab.z, tab.e, *outs, batch, world, tau_bits, tab.size,
            WBLOCK=32, TAB_ITERS=tab.iterations,
        )  # fmt: skip
    want = propose_fast(call.logits, call.temperature, call.seed, call.round, call.position, tau=call.tau)
    assert sorted(set(want.status.tolist())) == [0, 1, 2, 3, 4]
    for got, field in zip(outs, sharded_check_rows.FIELDS, strict=True):
        assert np.array_equal(got.cpu().numpy(), getattr(want, field)), field


def test_sharded_kernels_compile_for_sm90(tmp_path: Path) -> None:
    """The sharded kernels compile for the H200 (sm_90); tile and reduce hold no float instruction, the
    merge the exact clause-5/6/7 float instructions of the unsharded merge (aot_check's rules)."""
    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    if not ptxas.is_file():
        pytest.skip("triton without the NVIDIA backend / ptxas")
    env = {**os.environ, "TRITON_INTERPRET": "0", "TRITON_CACHE_DIR": str(tmp_path / "cache")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    out = tmp_path / "aot.json"
    cmd = [sys.executable, "-m", "dyadic24.kernels.sharded_check", "--aot", "--json", str(out)]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert out.is_file(), proc.stderr[-4000:]
    result = json.loads(out.read_text())
    assert result["passed"], result["problems"]


# ---------------------------------------------------------------- world 2


def test_world2_golden(world2: dict[str, Any]) -> None:
    """clause 13.1: golden vectors (every one when deep; else every (V, tau, format) group, up to
    WORLD2_GOLDEN_ROWS rows of each), split across 2 ranks, equal their expected outputs and the fast
    reference on every rank; the split patterns include a rank holding nothing."""
    sec = _section(world2, "golden")
    vectors, rows, groups = _golden_count()
    if DEEP:
        assert (sec["vectors"], sec["vectors_left_out"]) == (vectors, 0)
        assert sec["rows"] == rows * len(sharded_check_bits.GOLDEN_SPLITS)
    else:
        assert sec["vectors"] + sec["vectors_left_out"] == vectors
        assert sec["vectors"] >= groups and sec["rows"] >= sec["vectors"]
    assert set(sec["failing_rows"]) >= {"across_ranks", "expected", "fast_reference"}
    assert not any(sec["failing_rows"].values())
    assert sec["empty_rank_shards"] > 0
    assert set(sec["splits"]) == set(sharded_check_bits.GOLDEN_SPLITS)


def test_world2_statuses(world2: dict[str, Any]) -> None:
    """clauses 2.1, 2.3: NaN / +inf / -inf in one shard decide the row on every rank; ties across shard
    boundaries keep the lowest ID (3.1); vocab_total < world."""
    sec = _section(world2, "statuses")
    assert sec["calls"] == 2 and sec["rows"] > 30


def test_world2_validation(world2: dict[str, Any]) -> None:
    """clause 1.5: a bad argument on one rank raises the same ArgumentError on every rank."""
    sec = _section(world2, "validation")
    assert len(sec["cases"]) >= 14
    for name, case in sec["cases"].items():
        assert case["ranks"] == [case["expected"]] * 2, name


def test_world2_workspace_reuse(world2: dict[str, Any]) -> None:
    """The capturable form (workspace + out reused; multi-tile shards through the reduce kernel) gives
    the reference's bits."""
    sec = _section(world2, "reuse")
    assert sec["rows"] == 8 and sec["n_tiles"] >= 2


def test_world2_exchange_bytes(world2: dict[str, Any]) -> None:
    """Only one 33-word int64 record per row and rank crosses ranks."""
    sec = _section(world2, "exchange")
    assert sec["bytes_sent_per_row_per_rank"] == 33 * 8
    assert sec["bytes_received_per_row_per_rank"] == 2 * 33 * 8
    assert sec["collectives_per_call"] == 1


def test_world2_fuzz_core_loop(world2: dict[str, Any]) -> None:
    """The 2-GPU check's fuzz loop at tiny sizes: every rank against the fast reference on every row and
    against the unsharded kernel on every fourth batch; every status occurs."""
    sec = _section(world2, "fuzz")
    assert sec["rows"] == sec["rows_requested"]
    assert sec["rows_vs_fast_reference"] == sec["rows"]
    assert sec["rows_vs_unsharded_kernel"] > 0
    assert not any(sec["failing_rows"].values())


def test_world2_report_files(world2: dict[str, Any]) -> None:
    assert world2["exit_status"] == 0 and world2["passed"] and world2["complete"]
    assert world2["environment"]["backend"] == "gloo"
    assert world2["environment"]["devices"] == ["cpu", "cpu"]


# ---------------------------------------------------------------- worlds 4 and 8


def test_wide_world_golden(wide: dict[str, Any]) -> None:
    """clause 13.1 at worlds 4 and 8: every golden vector, the small-V ones leaving ranks empty."""
    sec = _section(wide, "golden")
    vectors, _, _ = _golden_count()
    assert (sec["vectors"], sec["vectors_left_out"]) == (vectors, 0)
    assert sec["empty_rank_shards"] > 0
    assert not any(sec["failing_rows"].values())


def test_wide_world_statuses_and_validation(wide: dict[str, Any]) -> None:
    """clauses 1.5, 2.1, 2.3, 3.1 (uneven shards in shuffled rank order, then V < world)."""
    _section(wide, "statuses")
    sec = _section(wide, "validation")
    for name, case in sec["cases"].items():
        assert case["ranks"] == [case["expected"]] * wide["world"], name


def test_wide_world_fuzz(wide: dict[str, Any]) -> None:
    """Fuzzed rows (V <= 64, so many ranks hold nothing) against the fast reference."""
    sec = _section(wide, "fuzz")
    assert sec["rows"] == sec["rows_requested"] == sec["rows_vs_fast_reference"]
    assert sec["batches_with_an_empty_rank"] > 0
    assert wide["exit_status"] == 0 and wide["passed"]

"""The Triton implementation against the golden vectors and the fast reference (clauses 1-12).

On a machine without a GPU the kernels run under TRITON_INTERPRET=1 (tests/conftest.py sets it before
triton is imported; dyadic24.kernels.backend sets it too when the kernel modules are imported first).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from dyadic24.kernels.backend import select_backend  # noqa: E402

select_backend()

from dyadic24.api import TICKETS, ArgumentError, Proposal  # noqa: E402
from dyadic24.kernels import adapter, fuzz, gpu_check  # noqa: E402
from dyadic24.kernels import trace as trace_mod  # noqa: E402
from dyadic24.kernels.exp_table import TABLE_PATH, load_table  # noqa: E402
from dyadic24.kernels.gpu_check import FIELDS, Inputs, row_diffs  # noqa: E402
from dyadic24.kernels.propose import (  # noqa: E402
    TRACE_WORDS,
    Plan,
    kernel_device,
    make_outputs,
    make_workspace,
    propose,
)
from dyadic24.reference.fast import propose_fast  # noqa: E402

DEVICE = kernel_device()
DEEP = os.environ.get("DYADIC24_DEEP", "") not in ("", "0")

pytestmark = pytest.mark.skipif(not TABLE_PATH.is_file(), reason="exp_near_midpoints.json not generated yet")


def _table_z() -> list[int]:
    return [int(v) for v in load_table(DEVICE).z.cpu().tolist()]


def _assert_same(got: Proposal, want: Proposal, what: str = "") -> None:
    diffs = row_diffs(got, want)
    assert not diffs, f"{what}: {diffs[:5]}"


def _vector_files() -> list[str]:
    try:
        from dyadic24.vectors.store import vector_files
    except ImportError:
        return []
    return [p.name for p in vector_files()]


@pytest.mark.parametrize("name", _vector_files() or ["<none>"])
def test_golden_vectors(name: str) -> None:
    """clause 13.1: every golden vector, outputs and the full trace (clause 12.3)."""
    if name == "<none>":
        pytest.skip("no golden vector files")
    from dyadic24.vectors.store import iter_vectors

    count = 0
    for vec in iter_vectors([name]):
        got = adapter.propose(
            vec.logits, vec.temperature, vec.seed, vec.round, vec.position,
            tau=np.uint32(vec.tau_bits).view(np.float32), trace=True,
        )  # fmt: skip
        for f in FIELDS:
            assert np.array_equal(getattr(got, f), getattr(vec.expected, f)), f"{name} tc {vec.tc_id}: {f}"
        assert got.trace is not None
        for r, want in enumerate(vec.expected_trace):
            assert gpu_check.trace_diff(got.trace[r], want) == [], f"{name} tc {vec.tc_id} row {r}"
        count += 1
    assert count > 0


@pytest.mark.parametrize("seed", range(8 if DEEP else 3))
def test_fuzz_against_fast_reference(seed: int) -> None:
    """Random calls mixing every status and hard case; outputs and traces equal the fast reference."""
    rng = np.random.default_rng(1000 + seed)
    table_z = _table_z()
    rows = 0
    while rows < (120 if DEEP else 40):
        batch = int(rng.integers(1, 9))
        vocab = int(rng.choice([1, 2, 5, 31, 32, 33, 64, 100, 257]))
        dtype = str(rng.choice(["float32", "float32", "bfloat16", "float16"]))
        inp = Inputs(fuzz.make_call(rng, batch, vocab, dtype, table_z), DEVICE)
        _assert_same(inp.run(trace=True), inp.reference(trace=True), f"seed {seed} {dtype} V={vocab}")
        rows += batch


def test_table_rows_use_the_table() -> None:
    """Rows built so that z hits the near-midpoint table (clause 5.3) take the table path and agree."""
    rng = np.random.default_rng(5)
    call = replace(fuzz.make_call(rng, 6, 64, "float32", _table_z(), families=("table",)), tau=np.float32(1))
    inp = Inputs(call, DEVICE)
    buf = torch.zeros((6, TRACE_WORDS), dtype=torch.int64, device=DEVICE)
    out = propose(inp.logits, inp.temperature, inp.seed, inp.round, inp.position, tau=call.tau, trace=buf)
    flagged, missing = trace_mod.table_stats(buf.cpu().numpy())
    assert flagged > 0 and missing == 0
    assert gpu_check.outputs_match(out, inp.reference())


@pytest.mark.parametrize(
    ("vocab", "tile", "pool"),
    [(1100, 32, (64, 8)), (4097, 4096, (2, 32)), (10000, 4096, (4, 32)), (3000, 64, (64, 8))],
)  # fmt: skip
def test_multi_tile_merge(vocab: int, tile: int, pool: tuple[int, int]) -> None:
    """Several vocabulary tiles (clause 3.2) give the reference's bits through the merge's paired pools
    (past 128 tiles, the threshold merge: test_kernel_select.py)."""
    rng = np.random.default_rng(vocab)
    inp = Inputs(fuzz.make_call(rng, 2, vocab, "float32", _table_z(), families=("ties", "normal")), DEVICE)
    c = inp.call
    plan = Plan.for_shape(2, vocab, tile)
    assert plan.pool_shape == pool
    out = propose(inp.logits, inp.temperature, inp.seed, inp.round, inp.position, tau=c.tau, plan=plan)
    assert gpu_check.outputs_match(out, inp.reference())


def test_tile_grid_rows_past_its_second_axis(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tile grid's rows y + z Y (propose.tile_grid): with Y shrunk to 3, a batch of 7 takes three z
    slices whose last holds two rows past the batch, which must do nothing; every row keeps the
    reference's bits (as past CUDA's 65,535 rows along y)."""
    from dyadic24.kernels import propose as kp

    rng = np.random.default_rng(11)
    inp = Inputs(fuzz.make_call(rng, 7, 300, "float32", _table_z(), families=("normal", "greedy")), DEVICE)
    c = inp.call
    plan = Plan.for_shape(7, 300, 128)
    monkeypatch.setattr(kp, "GRID_Y", 3)
    assert kp.tile_grid(plan) == (plan.n_tiles, 3, 3)
    out = propose(inp.logits, inp.temperature, inp.seed, inp.round, inp.position, tau=c.tau, plan=plan)
    assert gpu_check.outputs_match(out, inp.reference())
    monkeypatch.setattr(kp, "GRID_Y", 65535)
    assert kp.tile_grid(Plan.for_shape(65535, 64)) == (1, 65535, 1)
    assert kp.tile_grid(Plan.for_shape(65536, 64)) == (1, 65535, 2)


def _call_tensors(call: fuzz.Call) -> tuple[Any, ...]:
    inp = Inputs(call, DEVICE)
    return (inp.logits, inp.temperature, inp.seed, inp.round, inp.position)


def test_row_isolation_and_batch_position_invariance() -> None:
    """clause 2.4: each row's outputs are those of the row alone, wherever it sits in the batch."""
    rng = np.random.default_rng(8)
    fams = ("normal", "nan", "ties", "pinf", "badtemp", "neginf", "greedy", "sparse")
    call = fuzz.make_call(rng, len(fams), 40, "float32", _table_z(), families=fams)
    whole = [t.cpu().numpy() for t in propose(*_call_tensors(call), tau=call.tau)]
    status = whole[0]
    assert set(status.tolist()) == {0, 1, 2, 3, 4}  # every status present, failing rows among OK rows
    perm = rng.permutation(len(fams))
    shuffled = fuzz.Call(
        call.logits[perm], call.temperature[perm], call.seed[perm], call.round[perm], call.position[perm],
        call.tau, call.dtype, tuple(fams[i] for i in perm),
    )  # fmt: skip
    moved = [t.cpu().numpy() for t in propose(*_call_tensors(shuffled), tau=call.tau)]
    for a, b in zip(whole, moved, strict=True):
        assert np.array_equal(a[perm], b)
    for r in (0, 1, 6):
        single = fuzz.Call(
            call.logits[r : r + 1], call.temperature[r : r + 1], call.seed[r : r + 1], call.round[r : r + 1],
            call.position[r : r + 1], call.tau, call.dtype, (fams[r],),
        )  # fmt: skip
        alone = [t.cpu().numpy() for t in propose(*_call_tensors(single), tau=call.tau)]
        for a, b in zip(whole, alone, strict=True):
            assert np.array_equal(a[r : r + 1], b)


def test_failed_and_greedy_rows_have_the_fixed_outputs() -> None:
    """clauses 2.3 and 4.1: failed rows -1 / 0; greedy rows a* with 2^24 tickets, no draw."""
    rng = np.random.default_rng(9)
    fams = ("nan", "pinf", "neginf", "badtemp", "greedy")
    call = fuzz.make_call(rng, 5, 50, "float32", [], families=fams)
    status, token, ids, tickets = (t.cpu().numpy() for t in propose(*_call_tensors(call), tau=call.tau))
    assert status.tolist() == [1, 2, 3, 4, 0]
    assert token[:4].tolist() == [-1] * 4 and (ids[:4] == -1).all() and (tickets[:4] == 0).all()
    assert token[4] == int(np.argmax(call.logits[4])) == ids[4, 0]
    assert tickets[4, 0] == TICKETS and (ids[4, 1:] == -1).all() and (tickets[4, 1:] == 0).all()


def test_out_and_workspace_are_used_in_place() -> None:
    rng = np.random.default_rng(10)
    call = fuzz.make_call(rng, 3, 5000, "float32", _table_z())
    args = _call_tensors(call)
    outs = make_outputs(3, DEVICE)
    ws = make_workspace(3, 5000, DEVICE)
    first = propose(*args, tau=call.tau, out=outs, workspace=ws)
    assert all(a is b for a, b in zip(first, outs, strict=True))
    snapshot = [t.clone() for t in outs]
    for t in outs:
        t.fill_(-5)
    propose(*args, tau=call.tau, out=outs, workspace=ws)
    assert all(torch.equal(a, b) for a, b in zip(outs, snapshot, strict=True))
    assert gpu_check.outputs_match(outs, Inputs(call, DEVICE).reference())


def test_adapter_numpy_protocol() -> None:
    """clause 12.2 via the adapter: numpy float32 and float16, uint64 arrays, trace; tau default."""
    rng = np.random.default_rng(11)
    call = fuzz.make_call(rng, 4, 70, "float16", _table_z())
    logits16 = call.logits.astype(np.float16)
    got = adapter.propose(logits16, call.temperature, call.seed, call.round, call.position, trace=True)
    want = propose_fast(logits16, call.temperature, call.seed, call.round, call.position, trace=True)
    _assert_same(got, want, "adapter float16")
    bf = torch.from_numpy(call.logits).to(torch.bfloat16)
    got_bf = adapter.propose(bf, call.temperature, call.seed, call.round, call.position, tau=0.5)
    widened = bf.float().numpy()
    want_bf = propose_fast(widened, call.temperature, call.seed, call.round, call.position, tau=0.5)
    _assert_same(got_bf, want_bf, "adapter bfloat16")


def _bad_calls() -> list[tuple[str, dict[str, Any]]]:
    rng = np.random.default_rng(12)
    call = fuzz.make_call(rng, 2, 40, "float32", [])
    lg, tp, sd, rd, ps = _call_tensors(call)
    good: dict[str, Any] = {"logits": lg, "temperature": tp, "seed": sd, "round": rd, "position": ps}
    cases: list[tuple[str, dict[str, Any]]] = [
        ("logits", {"logits": lg.double()}),
        ("logits", {"logits": lg[0]}),
        ("logits", {"logits": lg[:0]}),
        ("logits", {"logits": lg.t().contiguous().t()}),
        ("logits", {"logits": lg.numpy() if lg.device.type == "cpu" else lg.cpu()}),
        ("logits", {"logits": lg.to("meta")}),
        ("temperature", {"temperature": tp[:1]}),
        ("temperature", {"temperature": tp.double()}),
        ("seed", {"seed": sd.float()}),
        ("round", {"round": rd[:1]}),
        ("position", {"position": torch.stack([ps, ps], 1)[:, 0]}),
        ("tau", {"tau": float("nan")}),
        ("tau", {"tau": 0.0}),
        ("tau", {"tau": -1.0}),
        ("tau", {"tau": float("inf")}),
        ("tau", {"tau": torch.tensor(0.7)}),
        ("out.status", {"out": make_outputs(3, DEVICE)}),
        ("out", {"out": make_outputs(2, DEVICE)[:3]}),
        ("out.ids", {"out": (*make_outputs(2, DEVICE)[:2], torch.zeros((2, 32), dtype=torch.int64), tp)}),
        ("workspace", {"workspace": make_workspace(3, 40, DEVICE)}),  # (a workspace for 3 rows)
        ("workspace", {"workspace": "scratch"}),
        ("trace", {"trace": torch.zeros((2, 7), dtype=torch.int64, device=DEVICE)}),
    ]
    return [(name, {**good, **change}) for name, change in cases]


@pytest.mark.parametrize(("argument", "kwargs"), _bad_calls())
def test_bad_arguments_raise_naming_the_argument(argument: str, kwargs: dict[str, Any]) -> None:
    """clause 1.5: ArgumentError naming the argument, before any kernel runs."""
    args = [kwargs.pop(k) for k in ("logits", "temperature", "seed", "round", "position")]
    with pytest.raises(ArgumentError) as info:
        propose(*args, **kwargs)
    assert info.value.argument == argument


def test_uint64_tensors_accepted() -> None:
    if not hasattr(torch, "uint64"):
        pytest.skip("torch without uint64")
    rng = np.random.default_rng(13)
    call = fuzz.make_call(rng, 3, 40, "float32", [])
    lg, tp, sd, rd, ps = _call_tensors(call)
    a = propose(lg, tp, sd.view(torch.uint64), rd.view(torch.uint64), ps.view(torch.uint64), tau=call.tau)
    b = propose(lg, tp, sd, rd, ps, tau=call.tau)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_custom_op_eager_and_compiled() -> None:
    """torch.ops.dyadic24.propose with its fake implementation, eagerly and under torch.compile."""
    rng = np.random.default_rng(14)
    call = fuzz.make_call(rng, 3, 100, "float32", _table_z())
    args = _call_tensors(call)
    want = Inputs(call, DEVICE).reference()
    assert gpu_check.outputs_match(torch.ops.dyadic24.propose(*args, float(call.tau)), want)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fake = torch.ops.dyadic24.propose(*(mode.from_tensor(t) for t in args), 0.7)
    assert [tuple(t.shape) for t in fake] == [(3,), (3,), (3, 32), (3, 32)]
    assert all(t.dtype == torch.int32 for t in fake)
    tau = float(call.tau)
    compiled = torch.compile(
        lambda *a: torch.ops.dyadic24.propose(*a, tau), backend="aot_eager", fullgraph=True
    )
    assert gpu_check.outputs_match(compiled(*args), want)


def test_gpu_check_script_runs(tmp_path: Any) -> None:
    """The lead's GPU script, on tiny sizes under whatever backend this machine has."""
    code = gpu_check.main([
        "--out", str(tmp_path), "--only", "fuzz,exp_sweep", "--rows", "6", "--max-vocab", "40",
        "--max-batch", "3", "--sweep-start", "c2ce8000", "--sweep-stop", "c2ce83ff",
    ])  # fmt: skip
    assert code == 0
    assert (tmp_path / "gpu_check.json").is_file() and (tmp_path / "gpu_check.md").is_file()

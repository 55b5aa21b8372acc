"""16-bit logits and traces through the kernel's merges (clauses 1.2, 12.3).

Split from test_kernel_select.py so that pytest-xdist's two workers, which take whole files, share
the kernel tests evenly (CI's budget, README).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from dyadic24.kernels.backend import select_backend  # noqa: E402

select_backend()

from dyadic24.kernels.exp_table import TABLE_PATH  # noqa: E402
from dyadic24.kernels.gpu_check import Inputs, row_diffs  # noqa: E402
from dyadic24.kernels.propose import TRACE_WORDS, make_workspace, propose  # noqa: E402
from dyadic24.kernels.trace import decode  # noqa: E402

from kernel_rows import DEVICE, check_plan, make_call, plan_for  # noqa: E402

pytestmark = pytest.mark.skipif(not TABLE_PATH.is_file(), reason="exp_near_midpoints.json not generated yet")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_logits(dtype: str) -> None:
    """clause 1.2: the int32 widening of the tile stage equals the reference's exact widening."""
    call = make_call(5000, 77, dtype)
    inp = Inputs(call, DEVICE)
    got = inp.run()
    assert not row_diffs(got, inp.reference())


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_logits_in_big_tiles(dtype: str) -> None:
    """clause 1.2 through the 16-bit tile of 8192 (two parts of 4096: 8 elements per 16-bit load, 4 rows
    per part), the default tile below B = 14 at V = 163,840."""
    check_plan("two_parts", 9000, dtype)


F16_KINDS = ("f16_subnormal_top", "f16_subnormal_neg", "f16_subnormal_max", "neg_nan", "normal")


@pytest.mark.parametrize("plan_name", ["one_part", "two_parts"])
def test_binary16_subnormals_and_nan(plan_name: str) -> None:
    """clause 1.2: binary16 logits compared in their own format by the 16-bit tile (tile16_jit; the
    binary32 tile on their widening in other tiles: test_kernel_select16.py): subnormal candidates,
    a subnormal argmax, -0 == +0 among negative subnormals and a NaN row give the reference's bits,
    in full and partial tiles of both sizes."""
    check_plan(plan_name, 9000, "float16", kinds=F16_KINDS, greedy=("f16_subnormal_max", "f16_subnormal_neg"))


@pytest.mark.parametrize("plan_name", ["one_part", "poll"])
def test_trace_matches_and_workspace_replays(plan_name: str) -> None:
    """clause 12.3 through the merge that waits and the polling merge (greedy rows with a trace take the
    full finish); the polling merge leaves each row's counter at the next epoch for the next launch,
    whose words a second launch on the same workspace must tell from the first's (the merge that
    waits keeps no state between launches: one launch)."""
    call = make_call(9000, 5)
    inp = Inputs(call, DEVICE)
    rows = len(call.logits)
    plan = plan_for(plan_name, rows, 9000)
    ws = make_workspace(rows, 9000, DEVICE, plan.tile)
    assert plan.tags is (plan_name == "poll")  # (3 tiles: a paired pool of 4)
    for launch in range(2 if plan.tags else 1):
        buf = torch.zeros((rows, TRACE_WORDS), dtype=torch.int64, device=DEVICE)
        out = propose(inp.logits, inp.temperature, inp.seed, inp.round, inp.position, tau=call.tau,
                      trace=buf, workspace=ws, plan=plan)  # fmt: skip
        counter = ws.counter.cpu().numpy()
        assert not (counter & 0xFFFFFF).any()
        assert ((counter >> 24) == (launch + 1 if plan.tags else 0)).all()
        _, token, ids, tickets = (t.cpu().numpy() for t in out)
        traces = decode(buf.cpu().numpy(), token, ids, tickets)
        want = inp.reference(trace=True)
        assert want.trace is not None
        for r, (a, b) in enumerate(zip(traces, want.trace, strict=True)):
            assert a.as_json() == b.as_json(), (r, call.families[r])

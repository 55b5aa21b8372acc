"""The merge's pools and tagged words give the reference's bits (clauses 2.4, 3.2).

The paired pool (with the exactness check that sends it to the hot pairs' whole lists), the merge
that waits for the tile grid and the one that polls the tile programs' tagged words (the GPU's), and
one workspace shared by both across epochs. Rows and plans: kernel_rows.py; the tag algebra itself
on crafted words: test_kernel_tags.py.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from dyadic24.kernels.backend import select_backend  # noqa: E402

select_backend()

from dyadic24.api import Proposal  # noqa: E402
from dyadic24.kernels.exp_table import TABLE_PATH  # noqa: E402
from dyadic24.kernels.gpu_check import Inputs, row_diffs  # noqa: E402
from dyadic24.kernels.propose import make_workspace, propose  # noqa: E402

from kernel_rows import DEVICE, check_plan, make_call, plan_for, vocab_cases  # noqa: E402

pytestmark = pytest.mark.skipif(not TABLE_PATH.is_file(), reason="exp_near_midpoints.json not generated yet")

POOLS = ["poll", "small_tiles_poll"]


@pytest.mark.parametrize(("plan_name", "vocab"), vocab_cases(POOLS))
def test_pool_plans_give_the_reference_bits(plan_name: str, vocab: int) -> None:
    """clause 3.2: the pools, their hot pairs and both arrivals of the tiles' words agree with the
    reference."""
    check_plan(plan_name, vocab)


def test_one_workspace_across_plans_and_epochs() -> None:
    """clause 2.4 across launches: the polling merge and the one that waits share one workspace (each
    leaves its candidates in a form the other's tag checks reject) while the epoch counters wrap from
    their last epoch to 0; every launch gives the reference's bits (hot pairs included), and only the
    polling launches advance the epoch."""
    vocab = 1100
    call = make_call(vocab, 11, kinds=("normal", "pair_hot", "top_heavy", "uniform"), greedy=("ramp",))
    inp = Inputs(call, DEVICE)
    rows = len(call.logits)
    want = inp.reference()
    ws = make_workspace(rows, vocab, DEVICE, 64)
    ws.counter.fill_(126 << 24)  # the last epoch: the next polling launch wraps to 0
    epoch = 126
    for name in ["small_tiles_poll", "small_tiles", "small_tiles_poll", "small_tiles_poll"]:
        plan = plan_for(name, rows, vocab)
        out = propose(inp.logits, inp.temperature, inp.seed, inp.round, inp.position, tau=call.tau,
                      workspace=ws, plan=plan)  # fmt: skip
        got = [t.cpu().numpy() for t in out]
        diffs = row_diffs(Proposal(status=got[0], token=got[1], ids=got[2], tickets=got[3]), want)
        assert not diffs, (name, diffs[:3])
        assert plan.tags == plan.poll
        if plan.tags:
            epoch = (epoch + 1) % 127
        assert (ws.counter.cpu().numpy() == epoch << 24).all(), name
    assert epoch == 2

"""The merge's pools and tagged words give the reference's bits (clauses 2.4, 3.2).

The pooled merge (paired, in quads, unpaired; the exactness checks that send it to the hot tiles'
whole lists), the two-launch merge that waits and the one that polls the tile programs' tagged words,
the fused form's tagged and untagged arrivals, first looks at stale words, and one workspace shared
by them across epochs. Rows and plans: kernel_rows.py.
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
from dyadic24.kernels.propose import Plan, make_workspace, propose  # noqa: E402

from kernel_rows import DEVICE, PLANS, check_plan, make_call, vocab_cases  # noqa: E402

pytestmark = pytest.mark.skipif(not TABLE_PATH.is_file(), reason="exp_near_midpoints.json not generated yet")

POOLS = ["pool_small", "pool_pair", "pool_quads", "pool_unpaired", "two_launch_waits", "tagged_pairs",
         "tagged_stale_keys", "tagged_stale_flags", "untagged_fused", "poll_stale"]  # fmt: skip


@pytest.mark.parametrize(("plan_name", "vocab"), vocab_cases(POOLS))
def test_pool_plans_give_the_reference_bits(plan_name: str, vocab: int) -> None:
    """clause 3.2: every pool and every arrival of the tiles' words at the merge agrees with the reference."""
    check_plan(plan_name, vocab)


def test_one_workspace_across_plans_and_epochs() -> None:
    """clause 2.4 across launches: tagged and untagged fused plans, the two-launch form and its polling
    merge share one workspace (each leaves its candidates in a form the others' tag checks reject)
    while the arrival counters wrap from their last epoch to 0; every launch gives the reference's
    bits."""
    vocab = 4097
    call = make_call(vocab, 11)
    inp = Inputs(call, DEVICE)
    rows = len(call.logits)
    want = inp.reference()
    ws = make_workspace(rows, vocab, DEVICE, 1024)
    ws.counter.fill_(126 << 24)  # the last epoch: the next fused launch wraps to 0
    names = ["tagged_pairs", "two_launch_waits", "untagged_fused", "pool_pair", "tagged_stale_keys"]
    epoch = 126
    for name in names:
        opts = {**PLANS[name], "tile": 1024, "merge_pool": 128, "by_count": None}  # (the interpreter's order)
        plan = Plan.for_shape(rows, vocab, **opts)
        out = propose(inp.logits, inp.temperature, inp.seed, inp.round, inp.position, tau=call.tau,
                      workspace=ws, plan=plan)  # fmt: skip
        got = [t.cpu().numpy() for t in out]
        diffs = row_diffs(Proposal(status=got[0], token=got[1], ids=got[2], tickets=got[3]), want)
        assert not diffs, (name, diffs[:3])
        if plan.fused or plan.tags:
            epoch = (epoch + 1) % 127
        assert (ws.counter.cpu().numpy() == epoch << 24).all(), name

"""The kernel's selection paths give the reference's bits (clauses 2.1, 3.1-3.3, 4.1).

The tile and merge stages bound the 32nd value by a threshold and compact what lies above it; ties
at the threshold, more candidates than the compaction slots (the exact fallbacks: the strided-group
tile, 32 successive maxima, the threshold merge) and the greedy argmax-only branch are each forced
here by constructed rows and tile sizes (kernel_rows.py). The merge's pools and tagged words:
test_kernel_select_pools.py; Triton's bitonic ordering (the GPU's) under the interpreter:
test_kernel_select_order.py; 16-bit logits and traces: test_kernel_select_trace.py.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from dyadic24.kernels.backend import select_backend  # noqa: E402

select_backend()

from dyadic24.kernels.exp_table import TABLE_PATH  # noqa: E402

from kernel_rows import check_plan, plan_for, vocab_cases  # noqa: E402

pytestmark = pytest.mark.skipif(not TABLE_PATH.is_file(), reason="exp_near_midpoints.json not generated yet")

PATHS = ["one_part", "two_parts", "three_parts", "small_tiles", "tiny_tiles"]


@pytest.mark.parametrize(("plan_name", "vocab"), vocab_cases(PATHS))
def test_plans_give_the_reference_bits(plan_name: str, vocab: int) -> None:
    """clauses 3.2 / 4.1: every selection path agrees with the reference."""
    check_plan(plan_name, vocab)


def test_three_part_tile_ties() -> None:
    """clause 3.1 in the three-part tile (kp.TILE_3): ties only in a tile's third part (every column's
    lowest tie in its third mask: phi among third-part indices), in every part, in the second only
    (half_ties: a tile's second part, the next tile's first) and everywhere."""
    check_plan("three_parts", 30000, kinds=("third_ties", "tie_pairs", "half_ties", "uniform"),
               greedy=("third_ties", "uniform"))  # fmt: skip


def test_threshold_merge_and_its_fallback() -> None:
    """clause 3.2 past 128 tiles (tiles of 32 at V = 4,200: 132 tiles, no pool): the threshold merge
    over three chunks of candidates, its ties (uniform) and its fallback, 32 successive maxima, when
    more than MCAP candidates lie above its bound (ramp, descending); greedy rows through the flags'
    and argmaxes' loops over several chunks of tiles."""
    plan = plan_for("tiny_tiles", 6, 4200)
    assert plan.pool_shape == (0, 0) and plan.n_tiles == 132
    kinds = ("normal", "ramp", "descending", "uniform")
    check_plan("tiny_tiles", 4200, kinds=kinds, greedy=("ramp", "normal"))

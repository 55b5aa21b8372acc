"""The kernel's selection paths give the reference's bits (clauses 2.1, 3.1-3.3, 4.1).

The tile and merge stages bound the 32nd value by a threshold and compact what lies above it; ties
at the threshold, more candidates than the compaction slots (the extraction path), the one-, two- and
three-launch forms and the greedy argmax-only branch are each forced here by constructed rows
(kernel_rows.py) and launch plans. The merge's pools and tagged words: test_kernel_select_pools.py;
Triton's bitonic ordering (the GPU's) under the interpreter: test_kernel_select_order.py; 16-bit
logits and traces through the launch forms: test_kernel_select_trace.py.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from dyadic24.kernels.backend import select_backend  # noqa: E402

select_backend()

from dyadic24.kernels.exp_table import TABLE_PATH  # noqa: E402

from kernel_rows import check_plan, vocab_cases  # noqa: E402

pytestmark = pytest.mark.skipif(not TABLE_PATH.is_file(), reason="exp_near_midpoints.json not generated yet")

PATHS = ["default", "fused", "split_finish", "early_draw", "small_tiles", "tiny_tiles", "group32",
         "no_greedy_fast", "extraction", "prev_tile", "halves", "halves_fused"]  # fmt: skip


@pytest.mark.parametrize(("plan_name", "vocab"), vocab_cases(PATHS))
def test_plans_give_the_reference_bits(plan_name: str, vocab: int) -> None:
    """clauses 3.2 / 4.1: every selection path and launch form agrees with the reference."""
    check_plan(plan_name, vocab)

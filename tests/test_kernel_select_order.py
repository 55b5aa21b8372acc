"""Triton's bitonic top-k and sort (the GPU's ordering) give the reference's bits (clauses 3.1, 3.2).

Under the interpreter the default plans order candidates by exact count matrices (``by_count``); the
plans here take the GPU's bitonic networks instead, in the tile (with its per-warp bound), the
merge's pool and its hot pairs. Slow under the interpreter: V = 9000 and 4500 by default, more in the
deep profile. Rows and plans: kernel_rows.py.
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

ORDER = ["bitonic", "halves_bitonic", "bitonic_pairs"]


@pytest.mark.parametrize(("plan_name", "vocab"), vocab_cases(ORDER))
def test_gpu_ordering_plans_give_the_reference_bits(plan_name: str, vocab: int) -> None:
    """clauses 3.1 / 3.2: the bitonic orderings agree with the reference (ties by lowest ID)."""
    check_plan(plan_name, vocab)

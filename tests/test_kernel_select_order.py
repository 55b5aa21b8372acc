"""Triton's bitonic top-k and sort (the GPU's ordering) give the reference's bits (clauses 3.1, 3.2).

Under the interpreter the default plans order candidates by exact count matrices (``by_count``); the
plans here take the GPU's bitonic networks instead, in the tile (with its per-warp bound), the
merge's pool and its hot pairs. Slow under the interpreter: V = 9000 and 4500 by default, more in the
deep profile. Rows and plans: kernel_rows.py. The merge's network for pools of bitonic runs
(select_jit.top32_runs) is also checked alone on constructed runs.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from dyadic24.kernels.backend import select_backend  # noqa: E402

select_backend()

import numpy as np  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from dyadic24.kernels import select_jit  # noqa: E402
from dyadic24.kernels.exp_table import TABLE_PATH  # noqa: E402
from dyadic24.kernels.ieee_jit import KEY_PAD  # noqa: E402
from dyadic24.kernels.propose import kernel_device  # noqa: E402

from kernel_rows import check_plan, vocab_cases  # noqa: E402

pytestmark = pytest.mark.skipif(not TABLE_PATH.is_file(), reason="exp_near_midpoints.json not generated yet")

ORDER = ["bitonic", "halves_bitonic", "bitonic_pairs", "bitonic_pairs_network"]


@pytest.mark.parametrize(("plan_name", "vocab"), vocab_cases(ORDER))
def test_gpu_ordering_plans_give_the_reference_bits(plan_name: str, vocab: int) -> None:
    """clauses 3.1 / 3.2: the bitonic orderings agree with the reference (ties by lowest ID)."""
    check_plan(plan_name, vocab)


@triton.jit  # type: ignore[untyped-decorator]
def _runs_kernel(x_ptr, out_ptr, N: tl.constexpr, RUN: tl.constexpr):  # type: ignore[no-untyped-def]
    tl.store(out_ptr + tl.arange(0, 32), select_jit.top32_runs(tl.load(x_ptr + tl.arange(0, N)), RUN, False))


@pytest.mark.parametrize(("n", "run"), [(32, 32), (64, 32), (256, 8), (256, 16), (128, 4), (256, 1)])
def test_top32_of_bitonic_runs_is_the_top32(n: int, run: int) -> None:
    """clause 3.2: top32_runs (a bitonic merge per run, then Triton's top-k network from the next
    stage) gives the 32 largest keys in descending order when each aligned run of ``run`` lanes is
    bitonic: a descending and an ascending run met lane by lane (the paired pool), missing tiles and
    lists shorter than the run as KEY_PAD, and rotations (a rotated bitonic run is bitonic). A run
    that is not merged far enough (one merge step fewer) fails here."""
    rng = np.random.default_rng(n * 100 + run)
    pad = np.int64(KEY_PAD.value)
    for trial in range(3):
        runs = []
        for _ in range(n // run):
            a = np.sort(rng.integers(-(2**40), 2**40, run))[::-1].copy()
            b = np.sort(rng.integers(-(2**40), 2**40, run))
            a[rng.integers(0, run + 1) :] = pad  # a short list (and sometimes an empty tile)
            m = np.maximum(a, b) if trial != 1 else np.maximum(a, np.full(run, pad))
            runs.append(np.roll(m, int(rng.integers(0, run))) if trial == 2 else m)
        keys = np.concatenate(runs)
        x = torch.tensor(keys, dtype=torch.int64, device=kernel_device())
        out = torch.empty(32, dtype=torch.int64, device=kernel_device())
        _runs_kernel[(1,)](x, out, n, run)
        assert out.cpu().numpy().tolist() == np.sort(keys)[::-1][:32].tolist()

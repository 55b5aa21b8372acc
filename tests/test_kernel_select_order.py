"""Triton's bitonic top-k and sort (the GPU's ordering) give the reference's bits (clauses 3.1, 3.2).

Under the interpreter the default plans order candidates by exact count matrices (``by_count``); the
plans here take the GPU's bitonic networks instead, in the tile (with its per-warp bound), the
merge's pool and its hot pairs. Slow under the interpreter: V = 9000 and 4500 by default, more in the
deep profile. Rows and plans: kernel_rows.py. The merge's network for pools of bitonic runs
(select_jit.top32_runs) and the finish's slot order (finish_jit.slot_order, clause 6.1) are also
checked alone on constructed inputs.
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

from dyadic24.kernels import finish_jit, select_jit  # noqa: E402
from dyadic24.kernels.exp_table import TABLE_PATH  # noqa: E402
from dyadic24.kernels.ieee_jit import KEY_PAD  # noqa: E402
from dyadic24.kernels.propose import kernel_device  # noqa: E402

from kernel_rows import check_plan, vocab_cases  # noqa: E402

pytestmark = pytest.mark.skipif(not TABLE_PATH.is_file(), reason="exp_near_midpoints.json not generated yet")

ORDER = ["bitonic", "two_parts_bitonic", "three_parts_bitonic", "bitonic_pairs"]


@pytest.mark.parametrize(("plan_name", "vocab"), vocab_cases(ORDER))
def test_gpu_ordering_plans_give_the_reference_bits(plan_name: str, vocab: int) -> None:
    """clauses 3.1 / 3.2: the bitonic orderings agree with the reference (ties by lowest ID)."""
    check_plan(plan_name, vocab)


@triton.jit  # type: ignore[untyped-decorator]
def _runs_kernel(x_ptr, out_ptr, N: tl.constexpr, RUN: tl.constexpr, SORTED: tl.constexpr):  # type: ignore[no-untyped-def]
    top = select_jit.top32_runs(tl.load(x_ptr + tl.arange(0, N)), RUN, False, SORTED)
    tl.store(out_ptr + tl.arange(0, 32), top)


@pytest.mark.parametrize("ordered", [True, False])
@pytest.mark.parametrize(("n", "run"), [(32, 32), (64, 32), (256, 8), (256, 16), (128, 4), (256, 2)])
def test_top32_of_bitonic_runs_is_the_top32(n: int, run: int, ordered: bool) -> None:
    """clause 3.2: top32_runs (a bitonic merge per run, then Triton's top-k network from the next
    stage) gives the 32 largest keys in descending order when each aligned run of ``run`` lanes is
    bitonic: a descending and an ascending run met lane by lane (the paired pool), missing tiles and
    lists shorter than the run as KEY_PAD, and rotations (a rotated bitonic run is bitonic). A run
    that is not merged far enough (one merge step fewer) fails here. Not ``ordered`` (the merge
    without a trace): the same 32 keys in some order, which past 32 lanes is not descending."""
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
        _runs_kernel[(1,)](x, out, n, run, ordered)
        got = out.cpu().numpy()
        want = np.sort(keys)[::-1][:32]
        assert (got if ordered else np.sort(got)[::-1]).tolist() == want.tolist()
        if not ordered and n > 32 and len(set(want.tolist())) == 32:
            assert got.tolist() != want.tolist()  # (the last merge is left out)


@triton.jit  # type: ignore[untyped-decorator]
def _slot_order_kernel(ids_ptr, src_ptr, slot_ptr, K, IDS26: tl.constexpr, BY_COUNT: tl.constexpr):  # type: ignore[no-untyped-def]
    lane = tl.arange(0, 32)
    valid = lane < K
    ids = tl.where(valid, tl.load(ids_ptr + lane), -1)
    src, slot_id = finish_jit.slot_order(ids, valid, lane, IDS26, BY_COUNT)
    tl.store(src_ptr + lane, src)
    tl.store(slot_ptr + lane, slot_id.to(tl.int64))


@pytest.mark.parametrize("by_count", [False, True])
@pytest.mark.parametrize("ids26", [True, False])
def test_slot_order_sorts_ids_and_keeps_padding_last(ids26: bool, by_count: bool) -> None:
    """clause 6.1: slot s holds the s-th smallest ID and names its lane (src), for every count K of
    real lanes; the padding lanes (K < 32, V < 32) follow in lane order. IDs span the whole range of
    each word width: below 2^26 for the int32 words (IDS26), up to 2^31 - 2 for the int64 ones. A
    padding that overflowed the int32 word would sort first and fail here."""
    rng = np.random.default_rng(26 if ids26 else 31)
    top = (1 << 26) if ids26 else (1 << 31) - 1
    for k in (1, 2, 7, 31, 32):
        ids = np.unique(np.concatenate([[0, top - 1], rng.integers(0, top, 64)]))
        ids = rng.permutation(ids)[:k]
        buf = np.full(32, -1, dtype=np.int64)
        buf[:k] = ids
        dev = kernel_device()
        x = torch.tensor(buf, device=dev)
        src = torch.empty(32, dtype=torch.int32, device=dev)
        slot = torch.empty(32, dtype=torch.int64, device=dev)
        _slot_order_kernel[(1,)](x, src, slot, k, ids26, by_count)
        want_src = np.concatenate([np.argsort(ids, kind="stable"), np.arange(k, 32)])
        assert src.cpu().numpy().tolist() == want_src.tolist()
        assert slot.cpu().numpy()[:k].tolist() == np.sort(ids).tolist()

"""The 16-bit tile (tile16_jit) gives the reference's bits (clauses 1.2, 2.1, 3.1, 3.2, 4.1).

Rows of kernel_rows.py in bfloat16 and binary16 through the 16-bit tile of 4,096 (one part), 8,192
(two) and 16,384 (four), in the interpreter's ordering and the GPU's (Triton's top-k); a numpy model of
the tile's bound shows which of its paths each row reaches, so that the rows keep reaching them: the
ties bounded by phi in every part, the exact fallback past FCAP, the common path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from dyadic24.kernels.backend import interpreting, select_backend  # noqa: E402

select_backend()

from dyadic24.kernels import fuzz, tile_jit  # noqa: E402
from dyadic24.kernels.exp_table import TABLE_PATH  # noqa: E402

from kernel_rows import (  # noqa: E402
    EDGES16,
    F16_EDGES,
    GREEDY_KINDS,
    check_plan,
    kinds16,
    make_row,
    vocab_cases,
)

pytestmark = pytest.mark.skipif(not TABLE_PATH.is_file(), reason="exp_near_midpoints.json not generated yet")

FCAP = 128  # tile_jit.FCAP


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize(
    ("plan_name", "vocab"), vocab_cases(["four_parts", "four_parts_bitonic", "four_parts_poll"])
)
def test_tile_of_four_parts(plan_name: str, vocab: int, dtype: str) -> None:
    """clauses 1.2, 3.1-3.2, 4.1 in the 16-bit tile of 16,384: one partial tile (V = 33, 9,001: odd, so
    no 16-byte load), three tiles with a partial last (40,000), the GPU's ordering and its polling
    merge; every row kind sampled and the tie, subnormal and status kinds greedy."""
    check_plan(plan_name, vocab, dtype, kinds=kinds16(dtype), greedy=GREEDY_KINDS + EDGES16)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("plan_name", ["one_part", "two_parts", "two_parts_bitonic"])
def test_tiles_of_one_and_two_parts(plan_name: str, dtype: str) -> None:
    """The 16-bit tile of 4,096 and 8,192 on the 16-bit edge rows (kernel_rows.py's other rows in these
    tiles: test_kernel_select_trace.py)."""
    kinds = ("normal", "tie_pairs", "zeros", *EDGES16, *(F16_EDGES if dtype == "float16" else ()))
    check_plan(plan_name, 9000, dtype, kinds=kinds, greedy=("zeros", *EDGES16))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("vocab", [1000, 1100])
def test_pool_words_in_the_gpu_ordering(vocab: int, dtype: str) -> None:
    """clauses 1.2, 3.1-3.2: the merge pool's top 32 of 16-bit logits' keys ordered as 32-bit words
    (merge_jit._top32_words16) in the GPU's network, the pairs' runs: 16 tiles of 64 pooled as 16 of
    32 keys (V = 1,000) and 18 as 32 of 16 (1,100, with hot pairs where a row's top 32 crowd two
    tiles); every row kind, values tied across tiles among them, sampled."""
    check_plan("bitonic_pairs", vocab, dtype, kinds=kinds16(dtype), greedy=EDGES16)


@pytest.mark.parametrize(("plan_name", "dtype"), [("three_parts", "bfloat16"), ("small_tiles", "float16")])
def test_binary32_tile_of_widened_16_bit_logits(plan_name: str, dtype: str) -> None:
    """The tiles the 16-bit tile does not take (TILE_3, tiles below 1,024) widen 16-bit logits into the
    binary32 tile (clause 1.2): the same bits."""
    kinds = ("normal", "tie_pairs", *EDGES16, *(F16_EDGES if dtype == "float16" else ()))
    check_plan(plan_name, 9000 if plan_name == "three_parts" else 1100, dtype, kinds=kinds, greedy=EDGES16)


def _tile_path(values: np.ndarray[Any, Any], tile: int, by_count: bool) -> tuple[str, int]:
    """The path the 16-bit tile takes on one tile's binary32 values (the widened 16-bit logits, -inf
    past V): ("common", n) for n elements above the bound, ("ties", n) for the ties with them, ("head",
    n) when the first 32 elements tie (phi = 31), ("phi", n) when phi bounds the ties otherwise, and
    ("fallback", n) past FCAP. Column group t holds the elements whose
    index mod 1,024 lies in [8 t, 8 t + 8) (tile16_jit's layout), warp w the column groups 32 w ..
    32 w + 31; theta is the 32nd largest column maximum (by_count, the interpreter's plan) or the
    smallest of the warps' 8th largest (the GPU's); phi 31 or the smaller of the 32nd smallest of the
    column groups' lowest tie index and the 4th smallest of their 8th lowest."""
    idx = np.arange(tile)
    col = (idx % 1024) // 8
    cmax = np.full(128, -np.inf)
    np.maximum.at(cmax, col, values)
    theta = np.sort(cmax)[-32] if by_count else np.sort(cmax.reshape(4, 32), axis=1)[:, -8].min()
    gt, eq = values > theta, values == theta
    if gt.sum() >= 32:
        n, path = int(gt.sum()), "common"
    elif gt.sum() + eq.sum() <= FCAP:
        n, path = int(gt.sum() + eq.sum()), "ties"
    elif eq[:32].all():
        n, path = int(gt.sum()) + 32, "head"
    else:
        first = np.full(128, tile)
        np.minimum.at(first, col[eq], idx[eq])
        eighth = np.array([np.append(idx[eq & (col == g)], [tile] * 8)[7] for g in range(128)])
        phi = min(np.sort(first)[31], np.sort(eighth)[3])
        n, path = int(gt.sum() + (eq & (idx <= phi)).sum()), "phi"
    return ("fallback" if n > FCAP else path), n


@pytest.mark.parametrize(
    ("kind", "dtype", "tile", "by_count", "path"),
    [
        ("normal", "bfloat16", 16384, True, "common"),
        ("normal", "float16", 16384, False, "common"),
        ("quarter_ties", "bfloat16", 16384, True, "phi"),  # the lowest ties all in the fourth part
        ("quarter_ties", "float16", 16384, False, "phi"),
        ("part_straddle", "bfloat16", 16384, True, "phi"),
        ("part_straddle", "bfloat16", 16384, False, "phi"),
        ("half_ties", "bfloat16", 8192, True, "phi"),  # in the second part
        ("tie_pairs", "float16", 16384, True, "phi"),
        ("column_block", "bfloat16", 16384, True, "fallback"),
        ("warp_heavy", "float16", 8192, False, "fallback"),  # (the GPU's bound only)
        ("uniform", "bfloat16", 16384, True, "head"),
        ("sparse", "bfloat16", 16384, False, "head"),  # (5 finite: a masked row's -inf ties, 32 selected)
        ("masked", "float16", 8192, True, "head"),
        ("masked_head", "bfloat16", 16384, True, "phi"),  # (the groups' 8th lowest ties: ~40, first row)
        ("masked_head", "float16", 8192, False, "phi"),
        ("plateau_dip", "float16", 16384, False, "phi"),  # (31 of the first 32 tie, none above theta)
        ("bf16_subnormal_mix", "bfloat16", 8192, True, "ties"),
        ("f16_subnormal_top", "float16", 8192, True, "common"),
    ],
)
def test_rows_reach_the_paths_of_the_16_bit_tile(kind: str, dtype: str, tile: int, by_count: bool,
                                                 path: str) -> None:  # fmt: skip
    """The row kinds above reach the 16-bit tile's path they are meant for in one of their tiles at
    V = 40,000, under the interpreter's bound (by_count) or the GPU's."""
    vocab = 40_000
    row = fuzz._round_to(make_row(kind, vocab, np.random.default_rng(7))[None, :], dtype)[0]
    padded = np.full(-(-vocab // tile) * tile, -np.inf, dtype=np.float64)
    padded[:vocab] = row
    got = [_tile_path(padded[t : t + tile], tile, by_count) for t in range(0, padded.size, tile)]
    assert path in {p for p, _ in got}, got


class _Counted:
    """A kernel function that records each call (the interpreter resolves a callee by its module's
    global name at each call, so replacing that name counts the calls)."""

    def __init__(self, fn: Any, calls: list[str]) -> None:
        self.fn, self.calls = fn, calls

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(getattr(self.fn, "__name__", "?"))
        return self.fn(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fn, name)


@pytest.mark.skipif(not interpreting(), reason="counts the fallback's calls in the interpreter")
@pytest.mark.parametrize(
    ("plan_name", "dtype"),
    [("four_parts", "bfloat16"), ("four_parts_bitonic", "float16"), ("two_parts", "float16"),
     ("two_parts", "float32")],
)  # fmt: skip
def test_masked_rows_take_no_fallback(plan_name: str, dtype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows masked to -inf but for a few tokens (guided decoding) and all-tie rows: each tile's ties at
    theta fill its first rows, and phi (31 when a tile's first 32 elements tie, else, as in
    masked_head's tiles, the groups' 8th or, in the binary32 tile, 4th lowest ties) bounds them to 32
    or a few more, so no tile takes the exact fallback (tile_jit._parts_fallback; ~16x slower
    masked rows on an H100 when it did, benchmarks/DESIGN.md "The 16-bit tile"); the reference's bits."""
    calls: list[str] = []
    for name in ("_parts_fallback", "_parts_fallback_call"):
        monkeypatch.setattr(tile_jit, name, _Counted(getattr(tile_jit, name), calls))
    kinds = ("masked", "masked_head", "plateau_dip", "sparse", "uniform")
    check_plan(plan_name, 40_000, dtype, kinds=kinds, greedy=())
    assert calls == []
    # (and the counting sees the fallback where it is taken: column_block's 256 large values)
    check_plan(plan_name, 40_000, dtype, kinds=("column_block",), greedy=())
    assert calls

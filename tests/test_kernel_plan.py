"""Launch-plan choices of the Triton kernel (shape-only, no data-dependent host logic).

The merge's pool shape, the batch-size defaults (one launch at small B, a register cap for the
two-launch tile kernel) and the workspace's compaction width; none of these changes an output bit
(test_kernel_select*.py run every plan against the reference)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from dyadic24.api import ArgumentError  # noqa: E402
from dyadic24.kernels import propose as kp  # noqa: E402
from dyadic24.kernels.backend import interpreting  # noqa: E402


@pytest.mark.parametrize(
    ("vocab", "shape"),
    [
        (1, (1, 32)),
        (9000, (4, 32)),
        (81_920, (32, 16)),
        (163_840, (64, 8)),
        (262_144, (64, 8)),
        (524_288, (128, 4)),
        (1_000_000, (0, 0)),  # 245 tiles: fewer than 4 keys each, the full threshold merge
    ],
)
def test_pool_shape(vocab: int, shape: tuple[int, int]) -> None:
    plan = kp.Plan.for_shape(1, vocab, tile=kp.TILE)
    assert plan.pool_shape == shape
    tiles, per = shape
    if tiles:
        assert tiles >= plan.n_tiles and tiles * per <= kp.MERGE_POOL and per & (per - 1) == 0


def test_pool_off_for_extraction_and_zero_pool() -> None:
    assert kp.Plan.for_shape(1, 163_840, threshold=False).pool_shape == (0, 0)
    assert kp.Plan.for_shape(1, 163_840, merge_pool=0).pool_shape == (0, 0)


@pytest.mark.parametrize("batch", [1, 4, 5, 8, 9, 16, 64, 256])
def test_batch_defaults(batch: int) -> None:
    plan = kp.Plan.for_shape(batch, 163_840)
    assert plan.fused == (batch <= kp.FUSED_MAX_BATCH)
    assert plan.tile == (kp.BIG_TILE if batch * 40 >= kp.BIG_TILE_PROGRAMS else kp.TILE)  # (40 of TILE)
    if not plan.fused and plan.tile > kp.TILE:
        assert plan.maxnreg == kp.BIG_TILE_MAXNREG
        assert plan.stagger_wave == 65536 // (128 * 32 * 4) == 4  # (an H200 SM holds four)
    elif not plan.fused:
        programs = batch * plan.n_tiles
        assert plan.maxnreg == (kp.TILE_MAXNREG if programs > kp.TILE_UNCAPPED_PROGRAMS else None)
    else:
        assert plan.maxnreg == (kp.FUSED_MAXNREG if batch > kp.FUSED_UNCAPPED_BATCH else None)
    fused = kp.Plan.for_shape(batch, 163_840, fused=True)
    assert fused.maxnreg == (kp.FUSED_MAXNREG if batch > kp.FUSED_UNCAPPED_BATCH else None)
    assert plan.launches == (1 if plan.fused else 2)
    assert kp.Plan.for_shape(batch, 163_840, fused=False, maxnreg=None).maxnreg is None
    assert plan.poll == (kp.MERGE_POLL and not plan.fused)
    assert plan.early_draw == (kp.FUSED_EARLY_DRAW if plan.fused or plan.poll else kp.EARLY_DRAW)
    # the programmatic dependent launch: GPU only (the interpreter runs programs one by one)
    assert plan.pdl == (kp.PDL_MERGE and not plan.fused and not interpreting())
    assert plan.warp_bound == kp.WARP_BOUND
    assert plan.num_warps == kp.default_warps(batch)
    gpu = kp.WIDE_WARPS if batch <= kp.WIDE_MAX_BATCH else kp.NUM_WARPS
    assert kp.default_warps(batch, interpreter=False) == gpu
    assert kp.default_warps(batch, interpreter=True) == kp.NUM_WARPS


def test_fast_tile_needs_a_full_row_of_groups() -> None:
    assert kp.Plan.for_shape(1, 5000).fast_tile
    assert not kp.Plan.for_shape(1, 5000, tile=512).fast_tile  # (bf16 groups need 1024 per row)
    # a thread's 32-bit selection mask holds 32 elements of each of at most two halves
    assert kp.Plan.for_shape(1, 50000, tile=8192, num_warps=4).fast_tile
    assert not kp.Plan.for_shape(1, 50000, tile=16384, num_warps=4).fast_tile
    assert kp.Plan.for_shape(1, 50000, tile=16384, num_warps=8).fast_tile
    assert not kp.Plan.for_shape(1, 5000, threshold=False).fast_tile
    assert kp.Plan.for_shape(1, 5000).scratch_width == max(kp.CAP, kp.FCAP)
    assert kp.Plan.for_shape(1, 5000, fast_tile=False).scratch_width == kp.CAP


@pytest.mark.parametrize(
    ("batch", "vocab", "tile"),
    [(1, 163_840, 4096), (3, 163_840, 4096), (4, 163_840, 8192), (2, 262_144, 4096), (3, 262_144, 8192),
     (1, 655_360, 8192), (64, 4096, 4096), (160, 4096, 8192)],
)  # fmt: skip
def test_default_tile_from_the_shape(batch: int, vocab: int, tile: int) -> None:
    """BIG_TILE from BIG_TILE_PROGRAMS programs of TILE on (the shape alone decides)."""
    assert kp.default_tile(batch, vocab) == tile
    assert kp.Plan.for_shape(batch, vocab).tile == tile
    assert kp.make_workspace(batch, vocab, "cpu").cand.shape[1] == -(-vocab // tile)


def test_ordering_default_follows_the_backend() -> None:

    assert kp.Plan.for_shape(1, 5000).by_count == interpreting()
    assert not kp.Plan.for_shape(1, 5000, by_count=False).by_count


def test_narrow_workspace_is_rejected() -> None:
    device = kp.kernel_device()
    logits = torch.zeros((2, 5000), dtype=torch.float32, device=device)
    i64 = torch.zeros(2, dtype=torch.int64, device=device)
    ws = kp.make_workspace(2, 5000, device, cap=kp.CAP)  # wide enough only without the fast tile
    with pytest.raises(ArgumentError, match="workspace"):
        kp.propose(logits, torch.ones(2, device=device), i64, i64, i64, workspace=ws)
    plan = kp.Plan.for_shape(2, 5000, fast_tile=False)
    out = kp.propose(logits, torch.ones(2, device=device), i64, i64, i64, workspace=ws, plan=plan)
    assert out[0].tolist() == [0, 0]


@pytest.mark.parametrize(("vocab", "paired"), [(1, False), (4097, True), (163_840, True), (1_000_000, False)])
def test_pool_pairs_need_two_pooled_tiles(vocab: int, paired: bool) -> None:
    """_merge_pool_pairs pairs tile t with t + MPOOL_T / 2: only with a pool of at least two tiles."""
    assert kp.Plan.for_shape(1, vocab, tile=kp.TILE).pool_pairs is paired
    assert not kp.Plan.for_shape(1, vocab, pair_pool=False).pool_pairs


@pytest.mark.parametrize(
    ("batch", "vocab", "opts", "tags"),
    [
        (1, 163_840, {}, True),  # the default plan (the polling merge): 40 tiles, a paired pool
        (4, 262_144, {"tile": 4096}, True),  # 64 tiles: the flags fit one FLAG_CHUNK
        (4, 300_000, {"tile": 4096}, False),  # 74 tiles: more flag words than one chunk
        (4, 300_000, {}, True),  # the default's 37 tiles of BIG_TILE
        (1, 163_840, {"tagged": False}, False),
        (8, 163_840, {"fused": True}, True),  # the fused form, register-capped
        (16, 163_840, {}, True),  # two launches, the polling merge
        (16, 163_840, {"poll": False}, False),  # two launches, the merge waits for the tile grid
        (16, 163_840, {"split_finish": True}, False),  # three launches
        (1, 4097, {"tile": 4096}, True),  # two pooled tiles
        (1, 4096, {}, False),  # one tile: no pairs
        (1, (1 << 24) + 1, {"tile": 16384, "merge_pool": 1 << 14}, False),  # 1025 tiles, IDs past 2^24
    ],
)
def test_tagged_arrival_where_it_applies(batch: int, vocab: int, opts: dict[str, object], tags: bool) -> None:
    """tile_kernel's TAGGED: only the fused form or the polling two-launch merge, with a paired pool,
    one chunk of flags and IDs below 2^24 (the tag shares a key's ID word)."""
    assert kp.Plan.for_shape(batch, vocab, **opts).tags is tags  # type: ignore[arg-type]


def test_pool_folds_and_retry_defaults() -> None:
    """Quads only when asked for and with at least four pooled tiles; the exact-bound retry by
    default only in the fused form (it cost the register-capped two-launch tile kernel ~6 %, the
    uncapped one ~20 % at B = 8)."""
    assert kp.Plan.for_shape(1, 163_840).pool_folds == 1
    assert kp.Plan.for_shape(1, 163_840, pool_quads=True).pool_folds == 2
    assert kp.Plan.for_shape(1, 9000, pool_quads=True).pool_folds == 2  # 3 tiles, a pool of 4
    assert kp.Plan.for_shape(1, 4097, pool_quads=True).pool_folds == 1  # a pool of 2 tiles
    assert kp.Plan.for_shape(1, 163_840, pair_pool=False, pool_quads=True).pool_folds == 0
    assert kp.Plan.for_shape(1, 163_840).bound_retry is (kp.BOUND_RETRY and kp.FUSED_MAX_BATCH >= 1)
    assert kp.Plan.for_shape(64, 163_840).bound_retry is False
    assert kp.Plan.for_shape(1, 163_840, fused=True).bound_retry is kp.BOUND_RETRY
    assert kp.Plan.for_shape(64, 163_840, bound_retry=True).bound_retry is True


def test_probe_timeline_anchors_exist() -> None:
    """benchmarks/probe_timeline.py inserts its clock reads after fixed source lines of the kernels;
    every anchor must still occur exactly once (it asserts so while building the probed copy)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "probe_timeline.py"
    spec = importlib.util.spec_from_file_location("probe_timeline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert "_probe(" in module.probed_source()


def test_stagger_defaults() -> None:
    """The tile programs' stagger (timing only): one slot's tiles at STAGGER_BYTES_PER_NS, rounded up
    (an H200: 132 SMs x 16 KiB of binary32 tiles, 451 ns; bfloat16 half of that); off under the
    interpreter and off a GPU, explicit values kept on a GPU, and the default only where a second
    slot exists in the two-launch form."""
    assert kp.stagger_ns(132, 4096, 4) == 451  # ceil(2,162,688 / 4800)
    assert kp.stagger_ns(132, 4096, 2) == 226
    assert kp.stagger_ns(1, 1, 1) == 1
    assert kp.stagger_ns(132, 8192, 4) == 902
    plan = kp.Plan.for_shape(16, 163_840, tile=kp.TILE)
    assert plan.stagger is None
    assert plan.stagger_wave == kp.STAGGER_WAVE  # (64 registers: eight programs per SM)
    assert kp.Plan.for_shape(16, 163_840).stagger_wave == 4  # (BIG_TILE at 128 registers: four)
    assert kp.Plan.for_shape(16, 163_840, stagger_wave=6).stagger_wave == 6
    assert kp._stagger(plan, torch.device("cpu"), 0) == 0
    assert kp._stagger(kp.Plan.for_shape(16, 163_840, stagger=300), torch.device("cpu"), 0) == 0


def test_stagger_choice_on_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """_stagger as a compiled launch on an H200 sees it (132 SMs; the interpreter switched off here)."""
    monkeypatch.setattr(kp, "interpreting", lambda: False)
    monkeypatch.setattr(kp, "_slots", lambda device: 132)
    gpu = torch.device("cuda")
    assert kp._stagger(kp.Plan.for_shape(16, 163_840, fused=False, tile=kp.TILE), gpu, 0) == 451  # 640
    assert kp._stagger(kp.Plan.for_shape(16, 163_840, fused=False, tile=kp.TILE), gpu, 1) == 226  # bf16
    assert kp._stagger(kp.Plan.for_shape(16, 163_840, fused=False), gpu, 0) == 902  # 320 of BIG_TILE
    assert kp._stagger(kp.Plan.for_shape(3, 163_840, fused=False), gpu, 0) == 0  # 120 programs: one slot
    assert kp._stagger(kp.Plan.for_shape(6, 163_840, fused=False), gpu, 0) == 0  # 120 of BIG_TILE
    assert kp._stagger(kp.Plan.for_shape(16, 163_840, fused=True), gpu, 0) == 0  # not measured fused
    assert kp._stagger(kp.Plan.for_shape(16, 163_840, fused=False, stagger=0), gpu, 0) == 0
    assert kp._stagger(kp.Plan.for_shape(1, 163_840, stagger=700), gpu, 0) == 700

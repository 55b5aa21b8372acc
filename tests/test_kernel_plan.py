"""Launch-plan choices of the Triton kernel (shape and backend only, no data-dependent host logic).

The merge's pool shape, where tags apply, the tile size and register cap by shape, the backend's
choices and the stagger; none of these changes an output bit (test_kernel_select*.py run the plans
against the reference)."""

from __future__ import annotations

from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from dyadic24.api import ArgumentError  # noqa: E402
from dyadic24.kernels import propose as kp  # noqa: E402
from dyadic24.kernels.backend import interpreting  # noqa: E402


@pytest.mark.parametrize(
    ("vocab", "shape"),
    [
        (1, (1, 32)),  # one tile: its list is C
        (4097, (2, 32)),
        (9000, (4, 32)),
        (81_920, (32, 16)),
        (163_840, (64, 8)),
        (262_144, (64, 8)),
        (524_288, (128, 4)),
        (1_000_000, (0, 0)),  # 245 tiles: fewer than 4 keys each, the threshold merge
    ],
)
def test_pool_shape(vocab: int, shape: tuple[int, int]) -> None:
    plan = kp.Plan.for_shape(1, vocab, tile=kp.TILE)
    assert plan.pool_shape == shape
    tiles, per = shape
    if tiles:
        assert tiles >= plan.n_tiles > tiles // 2 and tiles * per <= kp.MERGE_POOL and per & (per - 1) == 0


@pytest.mark.parametrize("batch", [1, 3, 4, 10, 13, 19, 64, 256])
def test_batch_defaults(batch: int) -> None:
    """The tile and its register cap by shape; the backend's choices (the count ordering and no
    programmatic dependent launch under the interpreter, both the other way on an sm_90 GPU). 16-bit
    logits (the 16-bit tile): BIG_TILE at five programs per SM, the tile of 16,384 at BIG_TILE's cap
    once its programs give every SM one (B >= 14 at V = 163,840 on 132 SMs)."""
    plan = kp.Plan.for_shape(batch, 163_840, sms=132)
    assert plan.tile == kp.BIG_TILE
    assert plan.n_tiles == -(-163_840 // plan.tile)
    assert plan.maxnreg == kp.BIG_TILE_MAXNREG
    assert plan.stagger_wave == 65536 // (128 * 32 * 4) == 4  # (an H200 SM holds four)
    half = kp.Plan.for_shape(batch, 163_840, itemsize=2, sms=132)
    both = [kp.Plan.for_shape(b, 163_840, itemsize=2, sms=132).tile for b in (13, 14)]
    assert both == [8192, 16384]
    if batch >= 14:
        assert (half.tile, half.maxnreg, half.stagger_wave) == (kp.BIG_TILE_16, kp.BIG_TILE_MAXNREG, 4)
    else:
        assert (half.tile, half.maxnreg) == (kp.BIG_TILE, kp.BIG_TILE_MAXNREG_16)  # five per SM
        assert half.stagger_wave == 65536 // (96 * 32 * 4) == 5
    assert kp.Plan.for_shape(batch, 163_840, maxnreg=None).maxnreg is None
    assert plan.by_count == interpreting()
    assert plan.pdl == plan.poll == (not interpreting() and kp._pdl_device())
    assert plan.stagger is None


def test_register_caps_of_explicit_tiles() -> None:
    """A tile of TILE runs uncapped up to TILE_UNCAPPED_PROGRAMS programs and at TILE_MAXNREG above
    them (eight programs per SM: the stagger's wave)."""
    assert kp.default_maxnreg(256, kp.TILE) is None
    assert kp.default_maxnreg(257, kp.TILE) == kp.TILE_MAXNREG
    assert kp.default_maxnreg(1, kp.BIG_TILE) == kp.BIG_TILE_MAXNREG
    assert kp.default_maxnreg(1, kp.BIG_TILE, 2) == kp.BIG_TILE_MAXNREG_16
    assert kp.default_maxnreg(1, kp.BIG_TILE_16, 2) == kp.BIG_TILE_MAXNREG
    capped = kp.Plan.for_shape(16, 163_840, tile=kp.TILE)
    assert capped.maxnreg == kp.TILE_MAXNREG and capped.stagger_wave == kp.STAGGER_WAVE


@pytest.mark.parametrize(("batch", "vocab"), [(1, 163_840), (4, 163_840), (2, 262_144), (64, 4096), (1, 1)])
def test_default_tile_at_every_shape(batch: int, vocab: int) -> None:
    """BIG_TILE wherever TILE_3 would not relieve the busiest SM (DESIGN.md "Tile size, warps and
    registers"), and the workspace's."""
    assert kp.Plan.for_shape(batch, vocab, sms=132).tile == kp.BIG_TILE
    assert kp.make_workspace(batch, vocab, "cpu").cand.shape[1] == -(-vocab // kp.BIG_TILE)


@pytest.mark.parametrize(
    ("vocab", "sms", "batches"),
    [
        # 20 tiles of BIG_TILE against 14 of TILE_3: B = 7-9 go from two programs on some SMs to one,
        # B = 14-18 from three to two; B = 19 needs a third TILE_3 program on some SMs
        (163_840, 132, [7, 8, 9, 14, 15, 16, 17, 18]),
        (262_144, 132, [5, 6, 9, 10, 11, 12]),  # 32 against 22 tiles
        (163_840, 108, [6, 7, 11, 12, 13, 14, 15]),  # an A100's 108 SMs
    ],
)
def test_three_part_tile_where_it_relieves_the_busiest_sm(vocab: int, sms: int, batches: list[int]) -> None:
    """TILE_3 (uncapped, two programs per SM: the stagger's wave) for binary32 logits exactly where
    all its programs run at once and the busiest SM holds fewer than under BIG_TILE; never for 16-bit
    logits (their 16-bit tile takes power-of-two tiles: BIG_TILE or BIG_TILE_16 there)."""
    got = [b for b in range(1, 300) if kp.Plan.for_shape(b, vocab, sms=sms).tile == kp.TILE_3]
    assert got == batches
    plan = kp.Plan.for_shape(batches[0], vocab, sms=sms)
    assert (plan.maxnreg, plan.stagger_wave, plan.n_tiles) == (None, 2, -(-vocab // kp.TILE_3))
    sixteen = {kp.Plan.for_shape(b, vocab, itemsize=2, sms=sms).tile for b in batches}
    assert sixteen <= {kp.BIG_TILE, kp.BIG_TILE_16}
    assert kp.make_workspace(batches[0], vocab, "cpu", kp.TILE_3).cand.shape[1] == plan.n_tiles


@pytest.mark.parametrize("tile", [16, 48, 12289, 24576, 32768])
def test_bad_tiles_are_rejected(tile: int) -> None:
    with pytest.raises(ArgumentError, match="tile"):
        kp.Plan.for_shape(1, 5000, tile=tile)


def test_workspace_with_too_few_tiles_is_rejected() -> None:
    """A workspace serves every plan of at most its tiles per row (the kernels index its words by tile
    program): the default one (BIG_TILE's tiles) every default plan, TILE_3's included; one of fewer
    tiles than the plan is refused, naming the workspace."""
    device = kp.kernel_device()
    logits = torch.randn((2, 20000), generator=torch.Generator().manual_seed(5)).to(device)
    i64 = torch.zeros(2, dtype=torch.int64, device=device)
    one = torch.ones(2, device=device)
    small = kp.make_workspace(2, 20000, device)  # 3 tiles of BIG_TILE
    with pytest.raises(ArgumentError, match="workspace: holds 3 tiles per row, the plan needs 5"):
        kp.propose(logits, one, i64, i64, i64, workspace=small, plan=kp.Plan.for_shape(2, 20000, tile=4096))
    want = kp.propose(logits, one, i64, i64, i64)
    for tile in (kp.TILE_3, kp.BIG_TILE, 4096):  # 2, 3 and 5 tiles in a workspace of 5
        plan = kp.Plan.for_shape(2, 20000, tile=tile)
        ws = kp.make_workspace(2, 20000, device, 4096)
        got = kp.propose(logits, one, i64, i64, i64, workspace=ws, plan=plan)
        assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
    with pytest.raises(ArgumentError, match="plan"):
        kp.propose(logits, one, i64, i64, i64, plan=kp.Plan.for_shape(2, 20001))


@pytest.mark.parametrize(
    ("batch", "vocab", "tile", "tags"),
    [
        (1, 163_840, None, True),  # the default plan's 40 tiles, a paired pool
        (4, 262_144, 4096, True),  # 64 tiles: the flags fit one FLAG_CHUNK
        (4, 300_000, 4096, False),  # 74 tiles: more flag words than one chunk
        (4, 300_000, None, True),  # the default's 37 tiles of BIG_TILE
        (16, 163_840, None, True),
        (1, 4097, 4096, True),  # two pooled tiles
        (1, 4096, None, False),  # one tile: no pairs (its list is C)
        (1, 2_000_000, None, False),  # 245 tiles: no pool
        (1, (1 << 24) + 1, 16384, False),  # 1025 tiles, IDs past 2^24
    ],
)
def test_tags_where_they_apply(batch: int, vocab: int, tile: int | None, tags: bool) -> None:
    """The polling merge's tags: with ``poll``, a paired pool, one chunk of flags and IDs below 2^24
    (a key's tag shares its ID word); never without ``poll``."""
    plan = kp.Plan.for_shape(batch, vocab, tile)
    assert replace(plan, poll=True).tags is tags
    assert replace(plan, poll=False).tags is False


def test_launch_options_follow_the_plan() -> None:
    """What launch and aot_check compile: the tile kernel's 4 warps and register cap, the merge's 8
    warps, pool, tags and programmatic dependent launches (the tile kernel's on its predecessor)."""
    plan = kp.Plan.for_shape(16, 163_840, kp.BIG_TILE)
    plan = replace(plan, by_count=False, pdl=True, poll=True)
    tile = kp.tile_options(plan, src=0, trace=False, pdl=True, wait=True, stagger=902, slots=132)
    assert tile == {"TILE": 8192, "SRC": 0, "TRACE": False, "BY_COUNT": False, "TAGGED": True, "PDL": True,
                    "WAIT": True, "STAGGER": 902, "SLOTS": 132, "WAVE": 2, "num_warps": 4,
                    "maxnreg": 128, "launch_pdl": True}  # fmt: skip
    unstaggered = kp.tile_options(plan, src=1, trace=True, pdl=False, wait=False, stagger=0, slots=132)
    assert (unstaggered["SLOTS"], unstaggered["WAVE"], unstaggered["PDL"]) == (1, kp.STAGGER_WAVE, False)
    assert (unstaggered["WAIT"], "launch_pdl" in unstaggered) == (False, False)
    merge = kp.merge_options(plan, src=2, trace=True, tab_iterations=6, pdl=True)
    assert merge == {"TAB_ITERS": 6, "TRACE": True, "SRC": 2, "MPOOL_T": 32, "MPOOL_K": 16,
                     "BY_COUNT": False, "TILE": 8192, "PDL": True, "TAGGED": True, "IDS26": True,
                     "num_warps": 8, "launch_pdl": True}  # fmt: skip
    assert "launch_pdl" not in kp.merge_options(plan, src=0, trace=False, tab_iterations=6, pdl=False)
    # the finish's int32 slot-order words hold ID * 32 + slot while V <= 2^26
    for vocab, ids26 in ((1 << 26, True), ((1 << 26) + 1, False)):
        wide = kp.merge_options(kp.Plan.for_shape(1, vocab), src=0, trace=False, tab_iterations=6, pdl=False)
        assert wide["IDS26"] is ids26


def test_probe_timeline_anchors_exist() -> None:
    """benchmarks/probe_timeline.py inserts its clock reads after fixed source lines of the kernels;
    every anchor must still occur exactly once (it asserts so while building the probed copies)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "probe_timeline.py"
    spec = importlib.util.spec_from_file_location("probe_timeline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sources = module.probed_sources()
    assert set(sources) == {"tile_jit", "merge_jit", "finish_jit"}
    assert all("_probe(" in src for src in sources.values())


def test_stagger_defaults() -> None:
    """The tile programs' stagger (timing only): one slot's tiles at STAGGER_BYTES_PER_NS, rounded up
    (an H200: 132 SMs x 16 KiB of binary32 tiles, 451 ns; bfloat16 half of that); off under the
    interpreter and off a GPU."""
    assert kp.stagger_ns(132, 4096, 4) == 451  # ceil(2,162,688 / 4800)
    assert kp.stagger_ns(132, 4096, 2) == 226
    assert kp.stagger_ns(1, 1, 1) == 1
    assert kp.stagger_ns(132, 8192, 4) == 902
    plan = kp.Plan.for_shape(16, 163_840, tile=kp.TILE)
    assert plan.stagger is None
    assert kp.Plan.for_shape(16, 163_840, stagger_wave=6).stagger_wave == 6
    assert kp._stagger(plan, torch.device("cpu"), 0) == 0
    assert kp._stagger(kp.Plan.for_shape(16, 163_840, stagger=300), torch.device("cpu"), 0) == 0


@pytest.mark.parametrize(
    ("batch", "slots"),
    # V = 163,840, 132 SMs, tiles of 8,192 (TILE_3 at B = 7, 8 and 16: 98, 112 and 224 programs):
    # programs / SMs 0.74, 0.85, 1.52, 1.82, 1.70, 3.03, 3.64, 9.7
    [(7, 1), (8, 1), (10, 2), (12, 2), (16, 2), (20, 3), (24, 4), (64, 4)],
)
def test_stagger_covers_the_half_full_slots(batch: int, slots: int) -> None:
    """The stagger spaces out the SM slots at least half full, at most the plan's wave (the choice
    measured at these batches, DESIGN.md "Stagger"); WAVE, the tile kernel's constant, follows."""
    plan = kp.Plan.for_shape(batch, 163_840)
    assert kp.stagger_slots(plan, 132) == slots
    assert kp.stagger_slots(replace(plan, stagger_wave=3), 132) == min(3, slots)
    wave = kp.tile_options(plan, src=0, trace=False, pdl=True, wait=True, stagger=902, slots=132)["WAVE"]
    assert wave == slots


def test_stagger_choice_on_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """_stagger as a compiled launch on an H200 sees it (132 SMs; the interpreter switched off here):
    the default where a second slot exists, explicit values kept."""
    monkeypatch.setattr(kp, "interpreting", lambda: False)
    monkeypatch.setattr(kp, "_slots", lambda device: 132)
    gpu = torch.device("cuda")
    assert kp._stagger(kp.Plan.for_shape(16, 163_840, tile=kp.TILE), gpu, 0) == 451  # 640 programs
    assert kp._stagger(kp.Plan.for_shape(16, 163_840, tile=kp.TILE), gpu, 1) == 226  # bf16
    assert kp._stagger(kp.Plan.for_shape(16, 163_840, tile=kp.BIG_TILE), gpu, 0) == 902  # 320 of BIG_TILE
    assert kp._stagger(kp.Plan.for_shape(16, 163_840), gpu, 0) == 1352  # 224 of TILE_3: two slots
    assert kp._stagger(kp.Plan.for_shape(3, 163_840), gpu, 0) == 0  # 120 programs: one slot
    assert kp._stagger(kp.Plan.for_shape(6, 163_840), gpu, 0) == 0  # 120 of BIG_TILE
    assert kp._stagger(kp.Plan.for_shape(8, 163_840), gpu, 0) == 0  # 160: the second slot 21 % full
    assert kp._stagger(kp.Plan.for_shape(10, 163_840), gpu, 0) == 902  # 200: 52 % full
    assert kp._stagger(kp.Plan.for_shape(16, 163_840, stagger=0), gpu, 0) == 0
    assert kp._stagger(kp.Plan.for_shape(1, 163_840, stagger=700), gpu, 0) == 700

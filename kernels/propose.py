"""Torch entry point of the Triton implementation (clauses 1, 2.4, 12.1) and the custom op.

``propose`` takes tensors on the kernel device (CUDA; CPU when Triton's interpreter is active) and
returns int32 status [B], token [B], ids [B, 32], tickets [B, 32]. It is CUDA-graph capturable when
``out`` and ``workspace`` are given and the exp table was loaded before capture (any earlier call on
that device, or :func:`prepare`): argument checks read only tensor metadata, nothing is allocated and
nothing waits for the device. ``torch.ops.dyadic24.propose`` wraps it as a torch custom op with a
fake implementation, so torch.compile'd graphs can call it.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from dyadic24.api import K_MAX, TAU_DEFAULT_BITS, V_MAX, ArgumentError, tau_to_bits
from dyadic24.kernels.backend import interpreting, select_backend

select_backend()

from dyadic24.kernels import propose_jit  # noqa: E402
from dyadic24.kernels.exp_table import ExpTable, load_table  # noqa: E402

TAU_DEFAULT = float(np.uint32(TAU_DEFAULT_BITS).view(np.float32))  # clause 1.3: RN32(0.7)
TRACE_WORDS = 320
# Defaults measured on an H200 (benchmarks/NOTES.md): tiles of 4096 with 4 warps beat 2048/2,
# 8192/8 and 4096/8 at every batch size tried (1, 4, 64, 256).
TILE = 4096  # vocabulary elements per tile program
BIG_TILE = 8192  # the default tile from BIG_TILE_PROGRAMS programs of TILE on: the column-group tile in
# two halves (64 elements per thread) halves the per-tile work (bound, compaction, top 32) per element.
# H200, session 13 (benchmarks/NOTES.md item 66; tie masks formed lazily in both): fp32 V = 163,840,
# B = 4 / 16 / 64 / 256 45.2 / 59.4 / 119.7 / 355.1 -> 44.4 / 58.0 / 106.0 / 303.4 us; B = 1 / 2
# 40.0 / 41.6 -> 40.6 / 42.2
BIG_TILE_PROGRAMS = 160  # (B = 4 at V = 163,840)
BIG_TILE_MAXNREG = 128  # four programs per SM: 96 (five) 111.8 against 106.0 at B = 64, 80 spills
SM_REGISTERS = 65536  # 32-bit registers per SM (sm_80 / sm_90): the programs an SM holds at a cap
NUM_WARPS = 4
WIDE_WARPS = 8  # default_warps: warps per program up to WIDE_MAX_BATCH rows. Session 4 measured 8
# better at B <= 2 (52.3 vs 56.3 us at B = 1), but only because ptxas serialised two of a 4-warp
# program's eight loads behind the others' data; with the tile's loads batched (_tile_bits) 4 warps
# win (session 6, H200: B = 1 50.8 vs 51.4, B = 2 51.8 vs 53.0), so no batch size takes 8 by default.
WIDE_MAX_BATCH = 0
CHUNK = 2048  # candidate keys per step of the merge scan (64 tiles)
FLAG_CHUNK = 64  # tile flags per merge step
GROUPS = 128  # strided group maxima per tile (their 32nd largest bounds the tile's 32nd value)
CAP = 64  # compaction slots per tile (more elements above the bound: the extraction path)
POOL = 128  # candidates whose 32nd largest value bounds the row's 32nd value
MCAP = 64  # compaction slots of the merge
MERGE_WARPS = 8  # the two-launch merge program's warps. With the polling merge 8 beat 4 at every B
# (H200, session 10: B = 1 / 2 / 8 / 16 / 64 42.0 / 43.7 / 53.0 / 66.1 / 133.0 -> 41.0 / 42.2 / 52.1 /
# 64.9 / 132.1 us, clustered rows B = 1 / 4 / 8 / 16 -2.3 / -2.8 / -2.6 / -2.5; benchmarks/NOTES.md
# item 61); with the merge that waits for the tile grid (session 9) it made no difference
FAST_TILE = True  # per-thread groups, bitonic top-k bound, compaction scan over thread totals
FCAP = 128  # compaction slots of the fast tile path (more: the GROUPS / CAP path)
MERGE_POOL = 512  # keys the merge's first try reads (the first POOL_K of every tile)
BOUND_RETRY = True  # the fused form's column-group tile retries with the exact bound (clustered rows
# with 8 warps: H200, B = 1 78.1 -> 67.1 us); not the two-launch tile kernel: capped, it cost B = 256
# 561.6 against 527.3 us and B = 64 199.7 against 190.6 (benchmarks/NOTES.md item 36); uncapped (the
# default up to 256 programs since session 9) B = 8 62.4 against 52.1 and no gain at B = 1 / 4, clustered
# rows included (item 59)
PAIR_POOL = True  # the merge halves its pool by pairing tiles first (_merge_pool_pairs)
POOL_QUADS = False  # the merge halves the paired pool once more (quads of tiles, _fold_quads):
# H200, B = 4 56.7 against 58.4 us, but B = 1 51.8 against 51.2, B = 2 54.0 against 52.8 and
# clustered rows B = 1 70.5 against 66.7, B = 4 77.1 against 72.7 (benchmarks/NOTES.md item 38)
TAGGED_ARRIVAL = True  # the fused form's tagged arrival (tile_kernel: no release / acquire on the
# last program's path, the merge's loads before the arrival)
TAG_MAX_VOCAB = 1 << 24  # tagged keys need IDs below 2^24 (the tag shares the ID word)
MERGE_POOL_MIN_K = 4  # below this many keys per tile the merge starts with the full threshold path
FUSED_MAX_BATCH = 0  # default_fused: one launch per position up to this batch size. Sessions 3-8 took
# it up to B = 8 (session 8, H200: at B = 8 56.2 against 58.1 us for two launches); since session 9 the
# two-launch form with a programmatic dependent, polling merge wins at every B measured (PDL_MERGE,
# MERGE_POLL; H200, B = 1 / 4 / 8 41.9 / 46.9 / 52.2 against 43.6 / 48.3 / 55.9, clustered rows 56.5 /
# 60.5 / 65.8 against 58.5 / 63.3 / 73.6; benchmarks/NOTES.md items 57-58)
FUSED_MAXNREG = 128  # register cap of the fused form above FUSED_UNCAPPED_BATCH rows: 4 programs per SM
# instead of 2 (231 registers uncapped), so B = 8's 320 programs are resident at once (H200, session 8,
# B = 8: 59.4 against 66.4 uncapped; B = 4: 48.4 either way)
FUSED_UNCAPPED_BATCH = 4
TILE_UNCAPPED_PROGRAMS = 256  # up to this many programs (two per SM of an H200: uncapped, the tile
# kernel needs 168 registers for binary32 logits and 185 for bfloat16) the two-launch tile kernel is
# uncapped. Session 9, H200, polled merge: fp32 V = 163,840, B = 1 / 4 41.9 / 46.9 uncapped against
# 42.6 / 47.4 at 64 registers; above two programs per SM, waves: B = 8 (320 programs) fp32 52.2 against
# 53.3 but bf16 60.5 and V = 262,144 (512 programs) 66.1, B = 16 70.7 against 66.0
TILE_MAXNREG = 64  # register cap of the two-launch tile kernel (more programs per SM): at B = 256
# 623 vs 1095 us sampled and 286 vs 517 greedy, at B = 64 239 vs 346 and 93 vs 151
FUSED = False  # one launch per position at every batch size
WARP_BOUND = True  # the column-group tile's bound from each warp's columns alone (no cross-warp top-k):
# H200, fused B = 1 62.9 -> 61.2 us, two launches B = 64 211.8 -> 198.3, B = 256 590.4 -> 537.0
GREEDY_FAST = True  # greedy rows without trace compute the argmax only (device-side branch)
EARLY_DRAW = False  # the Philox draw before C is known, in the two-launch merge (session 1: no gain)
FUSED_EARLY_DRAW = True  # the same in the fused kernel: H200, B = 1, 62.9 -> 61.9 us (session 3)
SPLIT_FINISH = False  # a third launch, with FINISH_WARPS warps, runs the finish: measured +1-2 % at
# B <= 4, -1 % at B = 256
FINISH_WARPS = 1
PDL_MERGE = True  # the two-launch merge as a programmatic dependent launch of the tile kernel (sm_90
# and later): its programs are resident before the tile grid ends (H200, session 9: -0.8 us per
# position at every B; benchmarks/NOTES.md item 57)
MERGE_POLL = True  # the two-launch merge polls the tile programs' tagged words instead of waiting for
# the tile grid to end (H200, session 9: a further -0.2 to -0.8 us per position; item 58)
STAGGER_BYTES_PER_NS = 4800  # the two-launch tile programs load in turn by SM slot (``Plan.stagger``):
# slot g (program pid, g = pid // SMs) waits g times the time the HBM takes for one slot's tiles at
# this rate (the H200's 4.8 TB/s), so that DRAM serves the slots in turn and each slot's selection
# overlaps the next slot's loads instead of every program loading at once and then computing at once.
# H200, session 12 (benchmarks/NOTES.md item 65): fp32 B = 16 65.0 -> 61.8 us, B = 64 132.3 -> 127.5,
# bf16 best at about half the fp32 wait (its tiles have half the bytes), B <= 4 unchanged
STAGGER_WAVE = 8  # the stagger covers the first STAGGER_WAVE slots (64-register tile programs: eight
# per SM); later programs start as earlier ones end (H200, B = 64: 127.5 against 130.8 with 5)
LOGIT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)  # clause 1.2
_SRC_KIND = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}  # ieee_jit.SRC_*
Outputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class Plan:
    """Launch geometry and method for a [B, V] call; every choice gives the same bits (the top 32 of
    a union is exact, and the thresholds only decide which exact path finds it).

    The sizes are fixed rather than fitted to V so that one compiled variant per logits dtype serves
    every shape (a tile of a small vocabulary is mostly masked lanes; V is large in practice).
    ``threshold``: the bound-and-compact selection (False: 32 successive maxima, or tl.topk);
    ``fused``: one launch per position; ``greedy_fast``: greedy rows (no trace) find the argmax only;
    ``early_draw``: the Philox draw is computed while the merge waits for memory (``for_shape``'s
    default: FUSED_EARLY_DRAW for the fused form, EARLY_DRAW for the others); ``merge_warps``: the
    warps of the two-launch form's merge program; ``split_finish``: a third launch of
    ``finish_warps`` warps per row runs clauses 3.3-9 after the merge found C.

    ``fast_tile``: the column-group tile selection (falls back to the strided-group one, ``groups`` /
    ``cap``, when more than ``fcap`` elements pass its bound; only for 256 to 2048 elements per warp:
    a 16-byte load per thread, and a thread's elements of each of at most two halves fit one 32-bit
    selection mask; it forms the masks of the ties at its bound only when fewer than 32 elements lie
    above the bound); ``merge_pool``:
    keys of the merge's first try, the leading keys of every tile (``pool_shape``; 0 disables it);
    ``maxnreg``: register cap of the tile kernel (None: none; ``for_shape``'s default 0 means
    default_maxnreg(batch, fused, programs)). ``launches`` is the number of
    launches per position.
    ``by_count``: the column-group tile and the pooled merge order their candidates by exact integer
    count matrices instead of Triton's bitonic top-k (same bits; ``for_shape``'s default under
    Triton's interpreter, where the bitonic network is slow; the GPU default is the top-k, which the
    interpreter tests also run through explicit plans). ``for_shape`` leaves ``fused`` to
    default_fused(batch) unless given. ``warp_bound``: the column-group tile takes its bound from each
    warp's columns alone (a lower bound, no cross-warp top-k; ignored when ``by_count``).
    ``pair_pool``: the merge first keeps the larger half of each pair of tiles' pooled keys and takes
    the top 32 of that half (``pool_pairs``; exactness check in _merge_pool_pairs), and with
    ``pool_quads`` halves that once more (``pool_folds``). ``bound_retry``:
    when more than ``fcap`` elements pass the per-warp bound (large values in a few warps' columns),
    the column-group tile retries with the exact bound before its fallback (``for_shape``'s default:
    BOUND_RETRY in the fused form only). ``tagged``: the fused
    form checks tags on the words it merges instead of ordering the programs' stores before their
    arrivals (``tags``: only with a paired pool, at most FLAG_CHUNK tiles and V <= 2^24;
    tile_kernel's docstring); ``stale_first`` (tests only; bits 1, 2, 4: the pool's keys, the flags,
    the hot pairs' lists) makes the merge's first look see stale words of those kinds.
    ``pdl``: the two-launch merge is a programmatic dependent launch of the tile kernel (its programs
    are scheduled once every tile program has started; not under the interpreter, and only on
    devices of compute capability 9.0 or later); ``poll``: the two-launch merge polls the tile
    programs' tagged words (``tags``) instead of waiting for the tile grid's end (merge_kernel).
    ``stagger`` (ns; 0: off; None: stagger_ns for the two-launch form on a GPU, else off; never under
    the interpreter): tile program pid < SMs * ``stagger_wave`` waits (pid // SMs) * stagger ns
    before it loads (STAGGER_BYTES_PER_NS; ``for_shape``'s default wave: the programs an SM holds at
    the register cap, at most STAGGER_WAVE). Timing only: no output depends on it.
    """

    batch: int
    vocab: int
    tile: int
    n_tiles: int
    chunk: int
    groups: int = GROUPS
    cap: int = CAP
    pool: int = POOL
    mcap: int = MCAP
    num_warps: int = NUM_WARPS
    threshold: bool = True
    fused: bool = FUSED
    greedy_fast: bool = GREEDY_FAST
    early_draw: bool = EARLY_DRAW
    merge_warps: int = MERGE_WARPS
    split_finish: bool = SPLIT_FINISH
    finish_warps: int = FINISH_WARPS
    fast_tile: bool = FAST_TILE
    fcap: int = FCAP
    merge_pool: int = MERGE_POOL
    maxnreg: int | None = None
    by_count: bool = False
    warp_bound: bool = WARP_BOUND
    pair_pool: bool = PAIR_POOL
    bound_retry: bool = BOUND_RETRY
    tagged: bool = TAGGED_ARRIVAL
    stale_first: int = 0
    pool_quads: bool = POOL_QUADS
    pdl: bool = False
    poll: bool = False
    stagger: int | None = None
    stagger_wave: int = STAGGER_WAVE

    @property
    def launches(self) -> int:
        return 1 if self.fused else (3 if self.split_finish else 2)

    @property
    def scratch_width(self) -> int:
        """int64 slots per tile program in the workspace's compaction rows."""
        return max(self.cap, self.fcap) if self.fast_tile else self.cap

    @property
    def pool_shape(self) -> tuple[int, int]:
        """(tiles, keys per tile) of the merge's first try, (0, 0) when it is not used: every tile's
        list padded to a power of two, as many leading keys of each as fit in ``merge_pool``."""
        tiles = 1 << max(0, (self.n_tiles - 1).bit_length())
        per = min(32, self.merge_pool // tiles) if self.merge_pool >= tiles else 0
        if not self.threshold or per < MERGE_POOL_MIN_K:
            return (0, 0)
        return (tiles, 1 << (per.bit_length() - 1))

    @property
    def pool_pairs(self) -> bool:
        """Whether the merge pairs the pool's tiles (``pair_pool`` and a pool of at least two tiles)."""
        return self.pair_pool and self.pool_shape[0] >= 2

    @property
    def pool_folds(self) -> int:
        """How often the merge halves its pool before the top 32: 0 (no pairing), 1 (pairs of tiles)
        or 2 (quads: ``pool_quads`` and a pool of at least four tiles)."""
        if not self.pool_pairs:
            return 0
        return 2 if self.pool_quads and self.pool_shape[0] >= 4 else 1

    @property
    def tags(self) -> bool:
        """Whether the tile programs tag their words for the fused form's arrival or the polling merge
        (``tagged`` where it applies)."""
        return (
            self.tagged
            and (self.fused or self.poll)
            and self.pool_pairs
            and self.n_tiles <= FLAG_CHUNK
            and self.vocab <= TAG_MAX_VOCAB
        )

    @staticmethod
    def for_shape(
        batch: int,
        vocab: int,
        tile: int | None = None,
        chunk: int = CHUNK,
        *,
        groups: int = GROUPS,
        cap: int = CAP,
        pool: int = POOL,
        mcap: int = MCAP,
        num_warps: int | None = None,
        threshold: bool = True,
        fused: bool | None = None,
        greedy_fast: bool = GREEDY_FAST,
        early_draw: bool | None = None,
        merge_warps: int | None = None,
        split_finish: bool = SPLIT_FINISH,
        finish_warps: int = FINISH_WARPS,
        fast_tile: bool = FAST_TILE,
        fcap: int = FCAP,
        merge_pool: int = MERGE_POOL,
        maxnreg: int | None = 0,
        by_count: bool | None = None,
        warp_bound: bool = WARP_BOUND,
        pair_pool: bool = PAIR_POOL,
        bound_retry: bool | None = None,
        tagged: bool = TAGGED_ARRIVAL,
        stale_first: int = 0,
        pool_quads: bool = POOL_QUADS,
        pdl: bool | None = None,
        poll: bool | None = None,
        stagger: int | None = None,
        stagger_wave: int | None = None,
    ) -> Plan:
        """The plan for [batch, vocab]; tile and num_warps default by batch size (default_tile,
        default_warps)."""
        if tile is None:
            tile = default_tile(batch, vocab)
        if fused is None:
            fused = default_fused(batch)
        poll = (MERGE_POLL if poll is None else poll) and not fused and not split_finish
        if early_draw is None:
            early_draw = FUSED_EARLY_DRAW if fused or poll else EARLY_DRAW
        if maxnreg == 0:  # the default: default_maxnreg
            maxnreg = default_maxnreg(batch, fused, batch * -(-vocab // tile), tile)
        if bound_retry is None:  # the default: only in the fused form
            bound_retry = BOUND_RETRY and fused
        if num_warps is None:
            num_warps = default_warps(batch)
        if stagger_wave is None:  # the programs one SM holds at once (64 registers: 8; 128: 4)
            per_sm = SM_REGISTERS // (maxnreg * 32 * num_warps) if maxnreg else STAGGER_WAVE
            stagger_wave = min(STAGGER_WAVE, per_sm)
        for name, value in (("tile", tile), ("chunk", chunk), ("groups", groups), ("pool", pool)):
            if value < 32 or value & (value - 1):
                raise ArgumentError(name, f"must be a power of two >= 32, got {value}")
        for name, value in (("cap", cap), ("mcap", mcap), ("fcap", fcap)):
            if value < 64 or value & (value - 1):
                raise ArgumentError(name, f"must be a power of two >= 64, got {value}")
        if threshold and (tile > 16384 or chunk > 16384):
            raise ArgumentError("tile", "the threshold selection takes tiles and chunks of at most 16384")
        return Plan(
            batch, vocab, tile, -(-vocab // tile), chunk, min(groups, tile), cap, pool, mcap, num_warps,
            threshold, fused, greedy_fast, early_draw, MERGE_WARPS if merge_warps is None else merge_warps,
            split_finish and not fused, finish_warps,
            fast_tile and threshold and 256 * num_warps <= tile <= 2048 * num_warps, fcap, merge_pool,
            maxnreg,
            interpreting() if by_count is None else by_count, warp_bound, pair_pool,
            bound_retry, tagged, stale_first, pool_quads,
            (PDL_MERGE if pdl is None else pdl) and not fused and not split_finish and not interpreting(),
            poll, stagger, stagger_wave,
        )  # fmt: skip


@dataclass(frozen=True)
class Workspace:
    """Scratch of one [B, V] shape: per-tile candidates (int64 [B, n_tiles, 32]), flags (int32
    [B, n_tiles]), the tiles' compaction rows (int64 [B * n_tiles, CAP]), the merge's (int64
    [B, MCAP + 32]), the rows' arrival counters (int32 [B]: epoch << 24 between launches) and C with
    the flag word for a separate finish launch (int64 [B, 33]).

    One workspace serves one stream at a time (the counters assume launches do not overlap). The
    candidates, flags and counters start zero-filled (make_workspace): the tagged arrival
    (propose_jit.tile_kernel) relies on a zero word never carrying a tag."""

    cand: torch.Tensor
    flags: torch.Tensor
    scratch: torch.Tensor
    mscratch: torch.Tensor
    counter: torch.Tensor
    best: torch.Tensor


def default_tile(batch: int, vocab: int) -> int:
    """Tile size of the default plan for a shape (shape only; no data-dependent host logic): BIG_TILE from
    BIG_TILE_PROGRAMS programs of TILE on, else TILE."""
    return BIG_TILE if batch * -(-vocab // TILE) >= BIG_TILE_PROGRAMS else TILE


def default_warps(batch: int, interpreter: bool | None = None) -> int:
    """Warps per program of the default plan: on the GPU WIDE_WARPS up to WIDE_MAX_BATCH rows (a hook
    kept for the measured choice, now none: see WIDE_WARPS), else NUM_WARPS. Under
    Triton's interpreter (``interpreter`` None: the current backend) always NUM_WARPS: the bits are
    the same, and the interpreter's exact count matrices grow with the square of the column groups
    (the wide plan of tests/test_kernel_select_order.py runs 8-warp programs explicitly)."""
    if interpreter is None:
        interpreter = interpreting()
    if interpreter:
        return NUM_WARPS
    return WIDE_WARPS if batch <= WIDE_MAX_BATCH else NUM_WARPS


def default_maxnreg(batch: int, fused: bool, programs: int, tile: int = TILE) -> int | None:
    """The default register cap of the tile kernel: in the two-launch form BIG_TILE_MAXNREG for tiles
    above TILE, else TILE_MAXNREG above TILE_UNCAPPED_PROGRAMS tile programs (more programs per SM);
    FUSED_MAXNREG for the fused form above FUSED_UNCAPPED_BATCH rows; else none."""
    if not fused:
        if tile > TILE:
            return BIG_TILE_MAXNREG
        return TILE_MAXNREG if programs > TILE_UNCAPPED_PROGRAMS else None
    return FUSED_MAXNREG if batch > FUSED_UNCAPPED_BATCH else None


def default_fused(batch: int) -> bool:
    """Whether the default plan for a batch size launches once per position (the row's last tile
    program merges). Measured on an H200 (benchmarks/NOTES.md): one launch wins at small B, where the
    position is a latency chain, and loses at large B, where the merge's registers cost tile programs."""
    return FUSED or batch <= FUSED_MAX_BATCH


def kernel_device() -> torch.device:
    """The device the kernels run on: CUDA when compiling, CPU under the interpreter."""
    return torch.device("cpu") if interpreting() else torch.device("cuda")


def make_workspace(
    batch: int,
    vocab: int,
    device: torch.device | str | None = None,
    tile: int | None = None,
    *,
    cap: int | None = None,
    mcap: int = MCAP,
) -> Workspace:
    """Allocate the workspace for a [batch, vocab] call (reuse it across calls and graph replays);
    ``tile`` must match the call's plan (default: the default plan's, default_tile(batch, vocab))."""
    n_tiles = -(-vocab // (tile if tile is not None else default_tile(batch, vocab)))
    if cap is None:
        cap = max(CAP, FCAP)  # wide enough for every plan's compaction rows (Plan.scratch_width)
    dev = torch.device(device) if device is not None else kernel_device()
    return Workspace(
        cand=torch.zeros((batch, n_tiles, 32), dtype=torch.int64, device=dev),
        flags=torch.zeros((batch, n_tiles), dtype=torch.int32, device=dev),
        scratch=torch.empty((batch * n_tiles, cap), dtype=torch.int64, device=dev),
        mscratch=torch.empty((batch, mcap + 32), dtype=torch.int64, device=dev),
        counter=torch.zeros(batch, dtype=torch.int32, device=dev),
        best=torch.empty((batch, 33), dtype=torch.int64, device=dev),
    )


def make_outputs(batch: int, device: torch.device | str | None = None) -> Outputs:
    """Allocate status [B], token [B], ids [B, 32], tickets [B, 32] (int32) for ``out=``."""
    dev = torch.device(device) if device is not None else kernel_device()
    return (
        torch.empty(batch, dtype=torch.int32, device=dev),
        torch.empty(batch, dtype=torch.int32, device=dev),
        torch.empty((batch, K_MAX), dtype=torch.int32, device=dev),
        torch.empty((batch, K_MAX), dtype=torch.int32, device=dev),
    )


def prepare(device: torch.device | str | None = None) -> ExpTable:
    """Load the exp correction table onto the device (do this before CUDA-graph capture)."""
    return load_table(torch.device(device) if device is not None else kernel_device())


def check_tensor(
    name: str,
    value: Any,
    dtypes: Sequence[torch.dtype],
    shape: tuple[int, ...],
    device: torch.device,
    device_note: str = "",
) -> torch.Tensor:
    """The tensor, if it has one of ``dtypes``, ``shape``, ``device`` and contiguous strides; else
    ArgumentError naming the argument (clause 1.5). ``device_note`` says where the device comes from."""
    if not isinstance(value, torch.Tensor):
        raise ArgumentError(name, f"must be a torch.Tensor, got {type(value).__name__}")
    if value.dtype not in dtypes:
        raise ArgumentError(name, f"must have dtype in {[str(d) for d in dtypes]}, got {value.dtype}")
    if tuple(value.shape) != shape:
        raise ArgumentError(name, f"must have shape {list(shape)}, got {list(value.shape)}")
    if value.device != device:
        raise ArgumentError(name, f"must be on {device}{device_note}, got {value.device}")
    if not value.is_contiguous():
        raise ArgumentError(name, f"must be contiguous, got strides {list(value.stride())}")
    return value


def _check_logits(logits: Any) -> tuple[torch.Tensor, torch.device]:
    if not isinstance(logits, torch.Tensor):
        raise ArgumentError("logits", f"must be a torch.Tensor, got {type(logits).__name__}")
    if logits.dtype not in LOGIT_DTYPES:
        raise ArgumentError(
            "logits", f"must be float32, bfloat16 or float16 (clause 1.1), got {logits.dtype}"
        )
    if logits.dim() != 2:
        raise ArgumentError("logits", f"must be a matrix [B, V] (clause 1.1), got {logits.dim()} dimensions")
    batch, vocab = logits.shape
    if batch < 1:
        raise ArgumentError("logits", "must have B >= 1 rows (clause 1.1)")
    if not 1 <= vocab <= V_MAX:
        raise ArgumentError("logits", f"must have 1 <= V <= 2^31 - 1 columns (clause 1.1), got {vocab}")
    expected = kernel_device().type
    if logits.device.type != expected:
        raise ArgumentError("logits", f"must be on a {expected} device, got {logits.device}")
    if not logits.is_contiguous():
        raise ArgumentError("logits", f"must be contiguous, got strides {list(logits.stride())}")
    return logits, logits.device


def check_outputs(out: Any, batch: int, device: torch.device, device_note: str = "") -> Outputs:
    """``out`` as the clause-12.1 outputs (status, token, ids, tickets): int32 [B], [B], [B, 32],
    [B, 32] on ``device``; else ArgumentError naming the tensor (clause 1.5)."""
    if not isinstance(out, (tuple, list)) or len(out) != 4:
        raise ArgumentError("out", "must be a sequence (status, token, ids, tickets) of 4 tensors")
    shapes = ((batch,), (batch,), (batch, K_MAX), (batch, K_MAX))
    names = ("status", "token", "ids", "tickets")
    checked = [
        check_tensor(f"out.{n}", t, [torch.int32], s, device, device_note)
        for n, t, s in zip(names, out, shapes, strict=True)
    ]
    return (checked[0], checked[1], checked[2], checked[3])


def _u64_view(name: str, value: Any, batch: int, device: torch.device) -> torch.Tensor:
    dtypes = [torch.int64] + ([torch.uint64] if hasattr(torch, "uint64") else [])
    tensor = check_tensor(name, value, dtypes, (batch,), device)
    return tensor if tensor.dtype == torch.int64 else tensor.view(torch.int64)


def propose(
    logits: torch.Tensor,
    temperature: torch.Tensor,
    seed: torch.Tensor,
    round: torch.Tensor,
    position: torch.Tensor,
    *,
    tau: Any = TAU_DEFAULT,
    out: Sequence[torch.Tensor] | None = None,
    workspace: Workspace | None = None,
    trace: torch.Tensor | None = None,
    table: ExpTable | None = None,
    use_tl_topk: bool = False,
    tile: int | None = None,
    chunk: int = CHUNK,
    plan: Plan | None = None,
) -> Outputs:
    """Run dyadic24-floor-first-v1 on one position for B rows (clauses 1-12).

    seed, round, position: int64 (uint64 bit patterns) or uint64 [B]; temperature: float32 [B];
    logits: float32 / bfloat16 / float16 [B, V], contiguous; tau: a binary32 scalar (Python float or
    numpy float), finite and > 0. ``trace``: optional int64 [B, 320] buffer that receives every
    intermediate (decoded by dyadic24.kernels.trace). ``table`` overrides the exp correction table
    (tests only); ``use_tl_topk`` selects the extraction path with Triton's bitonic top-k, ``tile`` /
    ``chunk`` the tile and merge-chunk sizes (powers of two >= 32), ``plan`` every launch choice
    (Plan.for_shape; it overrides tile and chunk); none of them changes any output bit.
    Raises ArgumentError naming the bad argument (clause 1.5).
    """
    logits, device = _check_logits(logits)
    batch, vocab = (int(v) for v in logits.shape)
    temp = check_tensor("temperature", temperature, [torch.float32], (batch,), device)
    seed64 = _u64_view("seed", seed, batch, device)
    round64 = _u64_view("round", round, batch, device)
    pos64 = _u64_view("position", position, batch, device)
    tau_bits = tau_to_bits(tau)
    if plan is None:
        plan = Plan.for_shape(batch, vocab, tile, chunk, threshold=not use_tl_topk)
    elif not isinstance(plan, Plan) or (plan.batch, plan.vocab) != (batch, vocab):
        raise ArgumentError("plan", f"must be a Plan for shape [{batch}, {vocab}]")

    outputs = make_outputs(batch, device) if out is None else check_outputs(out, batch, device)
    if workspace is None:
        ws = make_workspace(batch, vocab, device, plan.tile, cap=plan.scratch_width, mcap=plan.mcap)
    else:
        if not isinstance(workspace, Workspace):
            raise ArgumentError("workspace", f"must be a Workspace, got {type(workspace).__name__}")
        n = plan.n_tiles
        check_tensor("workspace", workspace.cand, [torch.int64], (batch, n, 32), device)
        check_tensor("workspace", workspace.flags, [torch.int32], (batch, n), device)
        width = int(workspace.scratch.shape[-1]) if workspace.scratch.dim() == 2 else 0
        if width < plan.scratch_width:
            raise ArgumentError("workspace", f"compaction rows must hold >= {plan.scratch_width} keys")
        check_tensor("workspace", workspace.scratch, [torch.int64], (batch * n, width), device)
        check_tensor("workspace", workspace.mscratch, [torch.int64], (batch, plan.mcap + 32), device)
        check_tensor("workspace", workspace.counter, [torch.int32], (batch,), device)
        check_tensor("workspace", workspace.best, [torch.int64], (batch, 33), device)
        ws = workspace
    if trace is not None:
        trace_buf = check_tensor("trace", trace, [torch.int64], (batch, TRACE_WORDS), device)
    else:
        trace_buf = ws.flags  # never written: TRACE is off
    tab = table if table is not None else _table_for(device)

    # The kernels read integer views of the logits and widen them with integer operations.
    src = _SRC_KIND[logits.dtype]
    bits = logits.view(torch.int32 if logits.dtype == torch.float32 else torch.int16)
    common = (
        temp.view(torch.int32), seed64, round64, pos64, tab.z, tab.e,
        outputs[0], outputs[1], outputs[2], outputs[3], trace_buf,
    )  # fmt: skip
    with _launch_context(device):
        launch(plan, bits, ws, common, tau_bits, tab, trace=trace is not None, src=src,
               use_tl_topk=use_tl_topk)  # fmt: skip
    return outputs


def launch(
    plan: Plan,
    bits: torch.Tensor,
    ws: Workspace,
    common: tuple[Any, ...],
    tau_bits: int,
    tab: ExpTable,
    *,
    trace: bool,
    src: int,
    use_tl_topk: bool = False,
    stages: tuple[str, ...] = ("tile", "merge", "finish"),
) -> None:
    """Launch the plan's kernels on checked arguments (``stages`` selects some, for stage timing).

    ``common``: temperature (int32 view), seed, round, position, exp table z and e, the four outputs
    and the trace buffer (any int tensor when ``trace`` is off)."""
    pool_t, pool_k = plan.pool_shape
    vocab = plan.vocab
    pdl = plan.pdl and _grid_dependency_control(bits.device)
    stagger = _stagger(plan, bits.device, src)
    if "tile" in stages:
        propose_jit.tile_kernel[(plan.batch * plan.n_tiles,)](
            bits, ws.cand, ws.flags, ws.scratch, ws.mscratch, ws.counter, *common,
            vocab, plan.n_tiles, tau_bits, tab.size,
            TILE=plan.tile, GROUPS=plan.groups, CAP=plan.cap, POOL=plan.pool, MCAP=plan.mcap,
            CHUNK=plan.chunk, FCHUNK=FLAG_CHUNK, TAB_ITERS=tab.iterations, TRACE=trace,
            SRC=src, USE_TL_TOPK=use_tl_topk, THRESHOLD=plan.threshold, FUSED=plan.fused,
            GREEDY_FAST=plan.greedy_fast, EARLY_DRAW=plan.early_draw, FAST=plan.fast_tile,
            NT=32 * plan.num_warps, FCAP=plan.fcap, MPOOL_T=pool_t, MPOOL_K=pool_k, BY_COUNT=plan.by_count,
            WARP_BOUND=plan.warp_bound, MPOOL_PAIRS=plan.pool_folds, RETRY=plan.bound_retry,
            TAGGED=plan.tags, STALE_FIRST=plan.stale_first, PDL=pdl and "merge" in stages,
            STAGGER=stagger, SLOTS=_slots(bits.device) if stagger else 1,
            WAVE=plan.stagger_wave if stagger else STAGGER_WAVE,
            num_warps=plan.num_warps, **({} if plan.maxnreg is None else {"maxnreg": plan.maxnreg}),
        )  # fmt: skip
    if not plan.fused and "merge" in stages:
        propose_jit.merge_kernel[(plan.batch,)](
            bits, ws.cand, ws.flags, ws.mscratch, ws.best, ws.counter, *common,
            vocab, plan.n_tiles, tau_bits, tab.size,
            POOL=plan.pool, MCAP=plan.mcap, CHUNK=plan.chunk, FCHUNK=FLAG_CHUNK,
            TAB_ITERS=tab.iterations, TRACE=trace, SRC=src, USE_TL_TOPK=use_tl_topk,
            THRESHOLD=plan.threshold, GREEDY_FAST=plan.greedy_fast, EARLY_DRAW=plan.early_draw,
            SPLIT=plan.split_finish, MPOOL_T=pool_t, MPOOL_K=pool_k, BY_COUNT=plan.by_count,
            MPOOL_PAIRS=plan.pool_folds, TILE=plan.tile, num_warps=plan.merge_warps,
            TAGGED=plan.tags, STALE_FIRST=plan.stale_first,
            **({"PDL": True, "launch_pdl": True} if pdl else {}),
        )  # fmt: skip
    if plan.split_finish and "finish" in stages:
        propose_jit.finish_kernel[(plan.batch,)](
            bits, ws.best, *common, vocab, tau_bits, tab.size, 1,
            TAB_ITERS=tab.iterations, TRACE=trace, SRC=src, EARLY_DRAW=plan.early_draw,
            num_warps=plan.finish_warps,
        )  # fmt: skip


@functools.cache
def _slots(device: torch.device) -> int:
    """The device's SM count (the stagger's slot width)."""
    return int(torch.cuda.get_device_properties(device).multi_processor_count)


def stagger_ns(slots: int, tile: int, itemsize: int) -> int:
    """The default wait per slot (ns): the time one slot's tiles (slots x tile x itemsize bytes) take at
    STAGGER_BYTES_PER_NS, rounded up."""
    return -(-slots * tile * itemsize // STAGGER_BYTES_PER_NS)


def _stagger(plan: Plan, device: torch.device, src: int) -> int:
    """The tile programs' wait per SM slot for this launch (``Plan.stagger``): 0 under the interpreter,
    off a GPU, in the fused form (not measured) and when every program has a slot of its own."""
    if interpreting() or device.type != "cuda":
        return 0
    if plan.stagger is not None:
        return plan.stagger
    slots = _slots(device)
    if plan.fused or plan.batch * plan.n_tiles <= slots:
        return 0
    return stagger_ns(slots, plan.tile, 4 if src == _SRC_KIND[torch.float32] else 2)


def _grid_dependency_control(device: torch.device) -> bool:
    """Whether the device runs programmatic dependent launches (griddepcontrol: sm_90 and later)."""
    return device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 9


def _table_for(device: torch.device) -> ExpTable:
    if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        from dyadic24.kernels import exp_table

        cached = [t for k, t in exp_table._CACHE.items() if k.startswith(f"{device}|")]
        if not cached:
            raise RuntimeError("call dyadic24.kernels.propose.prepare(device) before CUDA-graph capture")
        return cached[0]
    return load_table(device)


@contextlib.contextmanager
def _launch_context(device: torch.device) -> Iterator[None]:
    """Launch on the tensors' GPU (Triton uses the current device); under the interpreter, silence numpy:
    failed rows compute clause 5 on NaN / infinities and discard the result."""
    if interpreting():
        with np.errstate(all="ignore"):
            yield
    else:
        with torch.cuda.device(device):
            yield


# ---------------------------------------------------------------- torch custom op


@torch.library.custom_op("dyadic24::propose", mutates_args=())
def propose_op(
    logits: torch.Tensor,
    temperature: torch.Tensor,
    seed: torch.Tensor,
    round: torch.Tensor,
    position: torch.Tensor,
    tau: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``torch.ops.dyadic24.propose``: the functional form of :func:`propose` (fresh outputs)."""
    return propose(logits, temperature, seed, round, position, tau=tau)


@propose_op.register_fake
def _propose_fake(
    logits: torch.Tensor,
    temperature: torch.Tensor,
    seed: torch.Tensor,
    round: torch.Tensor,
    position: torch.Tensor,
    tau: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    batch = logits.shape[0]
    return (
        logits.new_empty((batch,), dtype=torch.int32),
        logits.new_empty((batch,), dtype=torch.int32),
        logits.new_empty((batch, K_MAX), dtype=torch.int32),
        logits.new_empty((batch, K_MAX), dtype=torch.int32),
    )

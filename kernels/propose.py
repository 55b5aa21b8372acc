"""Torch entry point of the Triton implementation (clauses 1, 2.4, 12.1) and the custom op.

``propose`` takes tensors on the kernel device (CUDA; CPU when Triton's interpreter is active) and
returns int32 status [B], token [B], ids [B, 32], tickets [B, 32]. It is CUDA-graph capturable when
``out`` and ``workspace`` are given and the exp table was loaded before capture (any earlier call on
that device, or :func:`prepare`): argument checks read only tensor metadata, nothing is allocated and
nothing waits for the device. ``torch.ops.dyadic24.propose`` wraps it as a torch custom op with a
fake implementation, so torch.compile'd graphs can call it.

One position is two launches (benchmarks/DESIGN.md "Two launches and the polling merge"): the tile
kernel (:mod:`dyadic24.kernels.tile_jit`, one program per row and vocabulary tile) and the merge
kernel (:mod:`dyadic24.kernels.merge_jit`, one program per row, which runs the finish of
:mod:`dyadic24.kernels.finish_jit`). :class:`Plan` holds what the launches vary by shape and backend.
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

from dyadic24.kernels import merge_jit, tile_jit  # noqa: E402
from dyadic24.kernels.exp_table import ExpTable, load_table  # noqa: E402

TAU_DEFAULT = float(np.uint32(TAU_DEFAULT_BITS).view(np.float32))  # clause 1.3: RN32(0.7)
TRACE_WORDS = 320  # int64 words of a row's trace (finish_jit.TR_*; clause 12.3)
LAUNCHES = 2  # kernels per position: DESIGN.md "Two launches and the polling merge"
# benchmarks/DESIGN.md "Tile size, warps and registers":
TILE = 4096  # the largest tile selected in one part; a plan's choice (default below 160 programs once)
# the default tile at every shape (selected in two parts): below 160 programs of TILE (B <= 3 at
# V = 163,840) TILE was the faster until the pool's top 32 sorted the pairs' runs by merges
BIG_TILE = 8192
BIG_TILE_MAXNREG = 128  # BIG_TILE's register cap for binary32 logits: four programs per SM
BIG_TILE_MAXNREG_16 = 96  # and for 16-bit logits (half the bytes per thread): five per SM
# 16-bit logits where their programs fill the SMs: the 16-bit tile (tile16_jit) of BIG_TILE's bytes,
# in four parts, at BIG_TILE_MAXNREG (its 64 registers of packed logits per thread)
BIG_TILE_16 = 16384
TILE_UNCAPPED_PROGRAMS = 256  # a tile of TILE runs uncapped up to this many programs (two per SM)
TILE_MAXNREG = 64  # and at this cap above them (eight per SM)
TILE_WARPS = int(tile_jit.WARPS.value)  # warps per tile program
GRID_Y = 65535  # CUDA's largest grid extent along y: the tile grid's rows per z slice (tile_grid)
SM_REGISTERS = 65536  # 32-bit registers per SM (sm_80 / sm_90): the programs an SM holds at a cap
MAX_TILE = 16384  # the largest tile: its counts share packed fields below 2^15 (select_jit.count_pair)
TILE_3 = 3 * TILE  # the one tile that is not a power of two: three column-group parts of TILE
TILE_3_PER_SM = 2  # TILE_3 runs uncapped (255 registers): two programs per SM at once
H200_SMS = 132  # the SMs a plan assumes where no CUDA device is seen (tests, aot_check)
# benchmarks/DESIGN.md "Merge":
MERGE_WARPS = int(merge_jit.MERGE_THREADS.value) // 32  # warps of the merge program
MERGE_POOL = 512  # keys of the merge's pool, every tile's leading ones (merge_jit)
MERGE_POOL_MIN_K = 4  # fewer pooled keys per tile than this (more than 128 tiles): the threshold merge
FLAG_CHUNK = int(merge_jit.FCHUNK.value)  # flag words per merge step; tags apply up to this many tiles
TAG_MAX_VOCAB = 1 << 24  # a key's tag shares its ID word: IDs below 2^24 (tags_jit)
SORT32_MAX_VOCAB = 1 << 26  # up to this V the finish sorts ID * 32 + slot as int32 words (finish_jit)
# benchmarks/DESIGN.md "Stagger":
STAGGER_BYTES_PER_NS = 4800  # the memory rate the stagger's wait assumes (an H200's 4.8 TB/s)
STAGGER_WAVE = 8  # the stagger covers at most this many SM slots
LOGIT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)  # clause 1.2
_SRC_KIND = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}  # ieee_jit.SRC_*
Outputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class Plan:
    """The launches of one [B, V] call, by shape and backend (:meth:`for_shape`). No field changes an
    output bit: the top 32 of a union is exact, and the sizes only decide which exact path finds it.

    ``tile``, ``n_tiles``: vocabulary elements per tile program and tiles per row (tiles of 1,024 to
    8,192 take the column-group selection, others the strided-group one; tests use small tiles to
    reach the exact fallbacks at small V). ``maxnreg``: the tile kernel's register cap (None: none).
    ``by_count``: order candidates by exact integer count matrices instead of Triton's bitonic
    top-k and sort (the interpreter's choice: the same bits, fast where the networks are slow).
    ``pdl``: the merge is a programmatic dependent launch of the tile kernel (a CUDA device of
    compute capability 9.0 or later, never the interpreter); ``poll``: the merge polls the tile
    programs' tagged words (tags_jit) where tags apply (:attr:`tags`) instead of waiting for the tile
    grid's end (with ``pdl``). ``stagger`` (ns; None: :func:`stagger_ns` at launch on a GPU, 0: off)
    and ``stagger_wave``: tile program pid < SMs * stagger_wave waits (pid // SMs) * stagger ns
    before it loads (timing only; never under the interpreter). 16-bit logits in power-of-two tiles
    of 1,024 to 16,384 take the 16-bit tile (tile16_jit), in others the binary32 tile on their
    widening.
    """

    batch: int
    vocab: int
    tile: int
    n_tiles: int
    maxnreg: int | None
    by_count: bool
    pdl: bool
    poll: bool
    stagger: int | None
    stagger_wave: int

    @staticmethod
    def for_shape(
        batch: int,
        vocab: int,
        tile: int | None = None,
        *,
        maxnreg: int | None = 0,
        stagger: int | None = None,
        stagger_wave: int | None = None,
        itemsize: int = 4,
        sms: int | None = None,
    ) -> Plan:
        """The default plan for [batch, vocab] logits of ``itemsize`` bytes on this backend: ``tile``
        default_tile on ``sms`` SMs (None: the current CUDA device's, else H200_SMS), ``maxnreg`` (0)
        default_maxnreg, ``stagger_wave`` the programs one SM holds at the cap (at most
        STAGGER_WAVE); ``pdl`` and ``poll`` from the device."""
        if tile is None:
            tile = default_tile(batch, vocab, itemsize, _plan_sms() if sms is None else sms)
        if (tile < 32 or tile & (tile - 1) or tile > MAX_TILE) and tile != TILE_3:
            raise ArgumentError("tile", f"must be a power of two in [32, {MAX_TILE}] or {TILE_3}, got {tile}")
        n_tiles = -(-vocab // tile)
        if maxnreg == 0:
            maxnreg = default_maxnreg(batch * n_tiles, tile, itemsize)
        if stagger_wave is None:
            per_sm = SM_REGISTERS // (maxnreg * 32 * TILE_WARPS) if maxnreg else STAGGER_WAVE
            if tile == TILE_3 and maxnreg is None:
                per_sm = TILE_3_PER_SM
            stagger_wave = min(STAGGER_WAVE, per_sm)
        pdl = _pdl_device()
        return Plan(
            batch, vocab, tile, n_tiles, maxnreg, interpreting(), pdl, pdl, stagger, stagger_wave
        )  # fmt: skip

    @property
    def pool_shape(self) -> tuple[int, int]:
        """(tiles, keys per tile) of the merge's pool: the tiles padded to a power of two, as many
        leading keys of each as fit in MERGE_POOL (a power of two, at most 32); (0, 0) when fewer than
        MERGE_POOL_MIN_K fit (the threshold merge). One tile, (1, 32): its list is C."""
        return pool_shape(self.n_tiles)

    @property
    def tags(self) -> bool:
        """Whether the tile programs tag their words for the polling merge: ``poll``, a paired pool
        (two tiles or more), the flags in one merge step and IDs below 2^24."""
        return (
            self.poll
            and self.pool_shape[0] >= 2
            and self.n_tiles <= FLAG_CHUNK
            and self.vocab <= TAG_MAX_VOCAB
        )


@dataclass(frozen=True)
class Workspace:
    """Scratch of one [B, V] shape: per-tile candidates (int64 [B, n_tiles, 32]), flags (int32
    [B, n_tiles]), the tile programs' compaction rows (int64 [B * n_tiles, FCAP]), the merge's
    (int64 [B, MCAP + 32]) and the rows' epoch counters (int32 [B], tags_jit).

    One workspace serves one stream at a time (the counters assume launches do not overlap). The
    candidates, flags and counters start zero-filled (make_workspace): a zero word never carries a
    tag (tags_jit)."""

    cand: torch.Tensor
    flags: torch.Tensor
    scratch: torch.Tensor
    mscratch: torch.Tensor
    counter: torch.Tensor


def pool_shape(n_tiles: int) -> tuple[int, int]:
    """Plan.pool_shape for rows of n_tiles tiles."""
    tiles = 1 << max(0, (n_tiles - 1).bit_length())
    per = min(32, MERGE_POOL // tiles)
    if per < MERGE_POOL_MIN_K:
        return (0, 0)
    return (tiles, 1 << (per.bit_length() - 1))


def default_tile(batch: int, vocab: int, itemsize: int, sms: int) -> int:
    """The default plan's tile on a GPU of ``sms`` SMs: TILE_3 for binary32 logits where all its
    programs run at once (at most TILE_3_PER_SM per SM) and the busiest SM then holds fewer than
    under BIG_TILE; else BIG_TILE. At V = 163,840 on an H200: B = 7-9 and 14-18 (BIG_TILE puts two or
    three programs on some SMs, TILE_3 one or two); measured there 0.4-2.1 us per depth 5 faster
    sampled, greedy rows up to 2.9 us slower (DESIGN.md "Tile size, warps and registers": "The
    default tile"). 16-bit logits (the 16-bit tile): BIG_TILE_16 where its programs give every SM one
    at least (B >= 14 at V = 163,840 on an H100 or H200), else BIG_TILE (DESIGN.md "The 16-bit tile")."""
    if itemsize != 4:
        return BIG_TILE_16 if batch * -(-vocab // BIG_TILE_16) >= sms else BIG_TILE
    big = batch * -(-vocab // BIG_TILE)
    three = batch * -(-vocab // TILE_3)
    fewer = -(-three // sms) < -(-big // sms)
    return TILE_3 if three <= TILE_3_PER_SM * sms and fewer else BIG_TILE


def _plan_sms() -> int:
    """The SMs a default plan assumes: the current CUDA device's when the kernels compile for one, else
    H200_SMS (under the interpreter the tile changes no bit and no timing that matters)."""
    if interpreting() or not torch.cuda.is_available():
        return H200_SMS
    return _slots(torch.device("cuda", torch.cuda.current_device()))


def default_maxnreg(programs: int, tile: int = TILE, itemsize: int = 4) -> int | None:
    """The tile kernel's default register cap: none for TILE_3 (it is the default only where its
    programs fit at once uncapped); for other tiles above TILE, BIG_TILE_MAXNREG for binary32 logits
    and for tiles above BIG_TILE, BIG_TILE_MAXNREG_16 for 16-bit ones of BIG_TILE; else TILE_MAXNREG
    above TILE_UNCAPPED_PROGRAMS programs (more programs per SM), else none."""
    if tile == TILE_3:
        return None
    if tile > TILE:
        return BIG_TILE_MAXNREG if itemsize == 4 or tile > BIG_TILE else BIG_TILE_MAXNREG_16
    return TILE_MAXNREG if programs > TILE_UNCAPPED_PROGRAMS else None


def kernel_device() -> torch.device:
    """The device the kernels run on: CUDA when compiling, CPU under the interpreter."""
    return torch.device("cpu") if interpreting() else torch.device("cuda")


def make_workspace(
    batch: int, vocab: int, device: torch.device | str | None = None, tile: int | None = None
) -> Workspace:
    """Allocate the workspace for a [batch, vocab] call (reuse it across calls and graph replays), with
    room for the tiles per row of tiles of ``tile`` (default BIG_TILE): it serves every plan of at most
    that many tiles, so the default serves every default plan (TILE_3 takes fewer tiles)."""
    n_tiles = -(-vocab // (tile if tile is not None else BIG_TILE))
    dev = torch.device(device) if device is not None else kernel_device()
    return Workspace(
        cand=torch.zeros((batch, n_tiles, 32), dtype=torch.int64, device=dev),
        flags=torch.zeros((batch, n_tiles), dtype=torch.int32, device=dev),
        scratch=torch.empty((batch * n_tiles, int(tile_jit.FCAP.value)), dtype=torch.int64, device=dev),
        mscratch=torch.empty((batch, int(merge_jit.MCAP.value) + 32), dtype=torch.int64, device=dev),
        counter=torch.zeros(batch, dtype=torch.int32, device=dev),
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
    logits = logits_matrix("logits", logits, "[B, V]")
    batch, vocab = logits.shape
    if batch < 1:
        raise ArgumentError("logits", "must have B >= 1 rows (clause 1.1)")
    if not 1 <= vocab <= V_MAX:
        raise ArgumentError("logits", f"must have 1 <= V <= 2^31 - 1 columns (clause 1.1), got {vocab}")
    return logits_on_kernel_device("logits", logits), logits.device


def logits_matrix(name: str, value: Any, shape: str) -> torch.Tensor:
    """``value`` if it is a logits matrix (clause 1.1: a tensor of a LOGIT_DTYPES type, two dimensions,
    ``shape`` naming them in the message); else ArgumentError naming ``name`` (clause 1.5)."""
    if not isinstance(value, torch.Tensor):
        raise ArgumentError(name, f"must be a torch.Tensor, got {type(value).__name__}")
    if value.dtype not in LOGIT_DTYPES:
        raise ArgumentError(name, f"must be float32, bfloat16 or float16 (clause 1.1), got {value.dtype}")
    if value.dim() != 2:
        raise ArgumentError(name, f"must be a matrix {shape} (clause 1.1), got {value.dim()} dimensions")
    return value


def logits_on_kernel_device(name: str, value: torch.Tensor) -> torch.Tensor:
    """``value`` if it lies on the kernel device's type and is contiguous; else ArgumentError naming
    ``name`` (clause 1.5)."""
    expected = kernel_device().type
    if value.device.type != expected:
        raise ArgumentError(name, f"must be on a {expected} device, got {value.device}")
    if not value.is_contiguous():
        raise ArgumentError(name, f"must be contiguous, got strides {list(value.stride())}")
    return value


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


def u64_view(name: str, value: Any, batch: int, device: torch.device, device_note: str = "") -> torch.Tensor:
    """An int64 view of a [B] tensor of uint64 patterns (int64, or uint64 where torch has it), checked
    as check_tensor does."""
    dtypes = [torch.int64] + ([torch.uint64] if hasattr(torch, "uint64") else [])
    tensor = check_tensor(name, value, dtypes, (batch,), device, device_note)
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
    plan: Plan | None = None,
) -> Outputs:
    """Run dyadic24-floor-first-v1 on one position for B rows (clauses 1-12).

    seed, round, position: int64 (uint64 bit patterns) or uint64 [B]; temperature: float32 [B];
    logits: float32 / bfloat16 / float16 [B, V], contiguous; tau: a binary32 scalar (Python float or
    numpy float), finite and > 0. ``trace``: optional int64 [B, 320] buffer that receives every
    intermediate (decoded by dyadic24.kernels.trace). ``table`` overrides the exp correction table
    (tests only); ``plan`` the launches (Plan.for_shape; it changes no output bit). Raises
    ArgumentError naming the bad argument (clause 1.5).
    """
    logits, device = _check_logits(logits)
    batch, vocab = (int(v) for v in logits.shape)
    temp = check_tensor("temperature", temperature, [torch.float32], (batch,), device)
    seed64 = u64_view("seed", seed, batch, device)
    round64 = u64_view("round", round, batch, device)
    pos64 = u64_view("position", position, batch, device)
    tau_bits = tau_to_bits(tau)
    if plan is None:
        plan = Plan.for_shape(batch, vocab, itemsize=logits.element_size())
    elif not isinstance(plan, Plan) or (plan.batch, plan.vocab) != (batch, vocab):
        raise ArgumentError("plan", f"must be a Plan for shape [{batch}, {vocab}]")

    outputs = make_outputs(batch, device) if out is None else check_outputs(out, batch, device)
    if workspace is None:
        ws = make_workspace(batch, vocab, device, plan.tile)
    else:
        if not isinstance(workspace, Workspace):
            raise ArgumentError("workspace", f"must be a Workspace, got {type(workspace).__name__}")
        # (room for at least the plan's tiles: the kernels index the words by tile program, so the
        # first B x n_tiles rows serve; make_workspace)
        cand_shape: tuple[int, ...] = tuple(getattr(workspace.cand, "shape", ()))
        n = int(cand_shape[1]) if len(cand_shape) == 3 else plan.n_tiles
        if n < plan.n_tiles:
            raise ArgumentError("workspace", f"holds {n} tiles per row, the plan needs {plan.n_tiles}")
        check_tensor("workspace", workspace.cand, [torch.int64], (batch, n, 32), device)
        check_tensor("workspace", workspace.flags, [torch.int32], (batch, n), device)
        fcap, mcap = int(tile_jit.FCAP.value), int(merge_jit.MCAP.value)
        check_tensor("workspace", workspace.scratch, [torch.int64], (batch * n, fcap), device)
        check_tensor("workspace", workspace.mscratch, [torch.int64], (batch, mcap + 32), device)
        check_tensor("workspace", workspace.counter, [torch.int32], (batch,), device)
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
        launch(plan, bits, ws, common, tau_bits, tab, trace=trace is not None, src=src)
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
    stages: tuple[str, ...] = ("tile", "merge"),
) -> None:
    """Launch the plan's kernels on checked arguments (``stages`` selects some, for stage timing).

    ``common``: temperature (int32 view), seed, round, position, exp table z and e, the four outputs
    and the trace buffer (any int tensor when ``trace`` is off)."""
    pdl = plan.pdl and _grid_dependency_control(bits.device)
    if "tile" in stages:
        stagger = _stagger(plan, bits.device, src)
        slots = _slots(bits.device) if stagger else 1
        tile_jit.tile_kernel[tile_grid(plan)](
            bits, ws.cand, ws.flags, ws.scratch, ws.counter, common[0], plan.vocab, plan.n_tiles, plan.batch,
            **tile_options(plan, src=src, trace=trace, pdl=pdl and "merge" in stages, wait=pdl,
                           stagger=stagger, slots=slots),
        )  # fmt: skip
    if "merge" in stages:
        merge_jit.merge_kernel[(plan.batch,)](
            bits, ws.cand, ws.flags, ws.mscratch, ws.counter, *common, plan.vocab, plan.n_tiles, tau_bits,
            tab.size, **merge_options(plan, src=src, trace=trace, tab_iterations=tab.iterations, pdl=pdl),
        )  # fmt: skip


def tile_grid(plan: Plan) -> tuple[int, int, int]:
    """The tile kernel's grid (n_tiles, Y, Z): rows y + z Y, Y at most GRID_Y (CUDA's limit of the
    grid's second axis), Z as few as cover the batch (programs past the last row do nothing)."""
    y = min(plan.batch, GRID_Y)
    return plan.n_tiles, y, -(-plan.batch // y)


def tile_options(
    plan: Plan, *, src: int, trace: bool, pdl: bool, wait: bool, stagger: int, slots: int
) -> dict[str, Any]:
    """The tile kernel's compile-time arguments and launch options for ``plan`` (launch, aot_check).
    ``pdl``: the merge is its programmatic dependent; ``wait``: it is one itself (launch_pdl)."""
    return {
        "TILE": plan.tile, "SRC": src, "TRACE": trace, "BY_COUNT": plan.by_count, "TAGGED": plan.tags,
        "PDL": pdl, "WAIT": wait, "STAGGER": stagger, "SLOTS": slots if stagger else 1,
        "WAVE": stagger_slots(plan, slots) if stagger else STAGGER_WAVE,
        "num_warps": TILE_WARPS,
        **({} if plan.maxnreg is None else {"maxnreg": plan.maxnreg}),
        **({"launch_pdl": True} if wait else {}),
    }  # fmt: skip


def merge_options(plan: Plan, *, src: int, trace: bool, tab_iterations: int, pdl: bool) -> dict[str, Any]:
    """The merge kernel's compile-time arguments and launch options for ``plan`` (launch, aot_check)."""
    pool_t, pool_k = plan.pool_shape
    return {
        "TAB_ITERS": tab_iterations, "TRACE": trace, "SRC": src, "MPOOL_T": pool_t, "MPOOL_K": pool_k,
        "BY_COUNT": plan.by_count, "TILE": plan.tile, "PDL": pdl, "TAGGED": plan.tags,
        "IDS26": plan.vocab <= SORT32_MAX_VOCAB, "num_warps": MERGE_WARPS,
        **({"launch_pdl": True} if pdl else {}),
    }  # fmt: skip


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
    off a GPU and when fewer than two SM slots are at least half full (stagger_slots)."""
    if interpreting() or device.type != "cuda":
        return 0
    if plan.stagger is not None:
        return plan.stagger
    return default_stagger(plan, _slots(device), 4 if src == _SRC_KIND[torch.float32] else 2)


def default_stagger(plan: Plan, slots: int, itemsize: int) -> int:
    """The default wait per SM slot (ns) of ``plan``'s launch on a GPU of ``slots`` SMs: stagger_ns,
    or 0 when fewer than two SM slots are at least half full (stagger_slots)."""
    return stagger_ns(slots, plan.tile, itemsize) if stagger_slots(plan, slots) >= 2 else 0


def stagger_slots(plan: Plan, slots: int) -> int:
    """The SM slots the stagger spaces out (tile programs pid < slots x this wait their slot's turn): the
    slots at least half full of the launch's programs, at most ``plan.stagger_wave``. A later slot
    holding few programs gains little from waiting (they hardly contend with the first slot's loads)
    and its wait lengthens the rows it holds: DESIGN.md "Stagger"."""
    filled = (2 * plan.batch * plan.n_tiles + slots) // (2 * slots)  # (rounded half up)
    return min(plan.stagger_wave, filled)


def _grid_dependency_control(device: torch.device) -> bool:
    """Whether the device runs programmatic dependent launches (griddepcontrol: sm_90 and later)."""
    return device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 9


def _pdl_device() -> bool:
    """Whether the kernels launch on a GPU that runs programmatic dependent launches (the current CUDA
    device; never under the interpreter)."""
    return not interpreting() and torch.cuda.is_available() and _grid_dependency_control(torch.device("cuda"))


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

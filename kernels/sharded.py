"""Vocabulary-sharded proposal over torch.distributed (clauses 1-10, 12.1), bit-identical to the
unsharded kernel.

Tensor-parallel drafters hold the vocabulary split across ranks: rank r holds the contiguous global
token IDs [vocab_offset_r, vocab_offset_r + V_r) of every row. The clause-3.1 order is total, so the
row's C (clause 3.2) is the top 32 of the union of every shard's top 32, and the clause-2.1 flags are
ORs of per-shard flags. :func:`propose_sharded` therefore exchanges only one record per row and rank:

    32 int64 clause-3.1 keys (global IDs in the low words) + 1 int64 flags word = 264 bytes,

gathered with ONE all_gather into a [world * B, 33] int64 tensor. Every rank then runs the same merge
kernel over the same gathered bytes with the same (replicated) per-row inputs, so every rank obtains the
same token, support and tickets (no broadcast of the result), equal bit for bit to
:func:`dyadic24.kernels.propose.propose` over the full rows. Per row, a rank sends 264 bytes and
receives 264 * world bytes, against 4 * V / world (float32) per rank for gathering the logit shards.

Contract:
- every rank of ``group`` calls with the same B, ``vocab_total``, ``tau`` and identical per-row inputs
  (temperature, seed, round, position: replicated in tensor parallelism; :func:`check_replicated`
  verifies that, as a debugging aid);
- the shards partition [0, vocab_total): ranges are disjoint and cover it, in any rank order; a rank
  may hold V_r = 0 (it then contributes no candidate and, through its flags, no live logit), so
  vocab_total < world is allowed;
- the per-rank tensors live on the kernel device (CUDA; CPU under the Triton interpreter) and the
  group's backend can all_gather them (NCCL on GPUs, gloo on CPUs).

Validation (clause 1.5): without ``workspace`` every call first exchanges a small descriptor (ok flag,
B, V_r, offset, vocab_total, tau) so that a bad argument on any rank, a shard layout that does not
partition [0, vocab_total), or a B / vocab_total / tau that differs across ranks raises the same
ArgumentError on EVERY rank (no rank is left waiting in a collective). With a workspace from
:func:`make_sharded_workspace` (which did that exchange once, for its layout) a call checks only local
tensor metadata and raises on the offending rank alone.

CUDA graphs (NCCL): a call with ``out`` and ``workspace`` allocates nothing, never waits for the device
and issues at most three kernels (tile; reduce, when the shard spans more than one tile; merge) and one
``all_gather_into_tensor`` on a fixed-size tensor, which torch's NCCL process group can capture
(NCCL >= 2.9.6). Before capture, on every rank: create the workspace (a collective; it also loads the
exp table) and run the call once eagerly (on the side stream torch's capture recipe uses), which
compiles the kernels and, unless the process group was created with ``device_id``, creates the NCCL
communicator (NCCL cannot create one during capture). Capture with
``torch.cuda.graph(g, capture_error_mode="thread_local")``: the process group's watchdog thread
queries CUDA events while the capture runs, which the default "global" mode may reject. Every rank
must capture the same calls and replay its graphs in the same order (each replay performs the
collective). tau is a kernel argument, fixed at capture, as in
:func:`~dyadic24.kernels.propose.propose`. Not capturable: gloo (its collectives run on the host),
calls without a workspace (their descriptor exchange reads values back to the host),
:func:`check_replicated`.

No trace (clause 12.3): the candidates' binary32 patterns are decoded from their keys, which turn a -0
logit into +0; that changes no output bit but would change the sign of a zero d or z in a trace
(see dyadic24.kernels.sharded_jit).
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from dyadic24.api import TAU_DEFAULT_BITS, V_MAX, ArgumentError, tau_to_bits
from dyadic24.kernels.backend import interpreting, select_backend

select_backend()

from dyadic24.kernels import propose, sharded_jit  # noqa: E402
from dyadic24.kernels.exp_table import ExpTable, load_table  # noqa: E402
from dyadic24.kernels.propose import check_outputs  # noqa: E402

TAU_DEFAULT = float(np.uint32(TAU_DEFAULT_BITS).view(np.float32))  # clause 1.3: RN32(0.7)
TILE = 4096  # logits per tile program (as the unsharded kernel)
CHUNK = 1024  # tile candidates per step of the shard reduction
FLAG_CHUNK = 64
WBLOCK_MAX = 32  # ranks' records per step of the merge
RECORD_WORDS = 33  # int64 words exchanged per row and rank: 32 keys + the flags
KEY_PAD = -(1 << 63)  # ieee_jit.KEY_PAD: below every real key
_SRC_KIND = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}  # ieee_jit.SRC_*
Outputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]

# The descriptor exchanged by calls without a workspace (and by make_sharded_workspace).
_ARGS = ("local_logits", "vocab_offset", "vocab_total", "temperature", "seed", "round", "position",
         "tau", "out", "workspace", "group", "tile")  # fmt: skip
_D_OK, _D_ARG, _D_BATCH, _D_VLOCAL, _D_OFFSET, _D_TOTAL, _D_TAU = range(7)
DESCRIPTOR_WORDS = 7

# all_gather into one preallocated tensor (torch 2.13 renamed all_gather_into_tensor to all_gather_single)
all_gather_tensor: Any = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


@dataclass(frozen=True)
class ShardLayout:
    """Every rank's vocabulary range (agreed by all ranks); ``rank`` is this process's rank."""

    world: int
    rank: int
    batch: int
    vocab_total: int
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]

    @property
    def vocab_offset(self) -> int:
        return self.offsets[self.rank]

    @property
    def local_vocab(self) -> int:
        return self.sizes[self.rank]


@dataclass(frozen=True)
class ShardedWorkspace:
    """Buffers of one sharded shape on one rank; reuse across calls and CUDA-graph replays.

    cand int64 [B, n_tiles, 32] and flags int64 [B, n_tiles]: per-tile results (used when the shard
    spans more than one tile); send int64 [B, 33]: this rank's exchange record; gathered int64
    [world * B, 33]: every rank's records, rank-major.
    """

    layout: ShardLayout
    group: Any
    device: torch.device
    tile: int
    n_tiles: int
    cand: torch.Tensor
    flags: torch.Tensor
    send: torch.Tensor
    gathered: torch.Tensor
    table: ExpTable

    @property
    def bytes_sent_per_row(self) -> int:
        """Bytes this rank contributes to the all_gather per row."""
        return RECORD_WORDS * 8

    @property
    def bytes_received_per_row(self) -> int:
        """Bytes of the all_gather output per row on each rank (every rank's record, its own included)."""
        return RECORD_WORDS * 8 * self.layout.world


def check_partition(offsets: Sequence[int], sizes: Sequence[int], vocab_total: int) -> None:
    """Raise ArgumentError unless the ranges [offset, offset + size) partition [0, vocab_total).

    Empty ranges (size 0) are allowed anywhere in [0, vocab_total]; the others must tile the
    vocabulary without gap or overlap, in any rank order.
    """
    if not 1 <= vocab_total <= V_MAX:
        raise ArgumentError("vocab_total", f"must be in [1, 2^31 - 1] (clause 1.1), got {vocab_total}")
    ranges = sorted((o, s, r) for r, (o, s) in enumerate(zip(offsets, sizes, strict=True)))
    covered = 0
    for off, size, rank in ranges:
        if size < 0 or off < 0 or off + size > vocab_total:
            raise ArgumentError(
                "vocab_offset", f"rank {rank}: range [{off}, {off + size}) outside [0, {vocab_total})"
            )
        if size == 0:
            continue
        if off != covered:
            what = "gap" if off > covered else "overlap"
            raise ArgumentError(
                "vocab_offset",
                f"the shards do not partition [0, {vocab_total}): {what} at token {min(off, covered)} "
                f"(rank {rank} starts at {off}); ranges {list(zip(offsets, sizes, strict=True))}",
            )
        covered += size
    if covered != vocab_total:
        raise ArgumentError(
            "vocab_total",
            f"the shards cover [0, {covered}) but vocab_total = {vocab_total}; "
            f"ranges {list(zip(offsets, sizes, strict=True))}",
        )


def _index(name: str, value: Any) -> int:
    if isinstance(value, bool):
        raise ArgumentError(name, "must be an integer, got bool")
    try:
        return operator.index(value)
    except TypeError:
        raise ArgumentError(name, f"must be an integer, got {type(value).__name__}") from None


def _norm_device(device: torch.device | str | None) -> torch.device:
    dev = torch.device(device) if device is not None else _kernel_device()
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    return dev


def _kernel_device() -> torch.device:
    return torch.device("cpu") if interpreting() else torch.device("cuda")


def exchange_device(group: Any, device: torch.device) -> torch.device:
    """Where the descriptor travels: host memory for gloo, the kernel device otherwise (NCCL)."""
    backend = str(dist.get_backend(group))
    return torch.device("cpu") if "gloo" in backend else device


def _group_size_rank(group: Any) -> tuple[int, int]:
    if not (dist.is_available() and dist.is_initialized()):
        raise ArgumentError("group", "torch.distributed is not initialized (init_process_group)")
    if group is not None and not isinstance(group, dist.ProcessGroup):
        raise ArgumentError("group", f"must be a ProcessGroup or None, got {type(group).__name__}")
    rank = dist.get_rank(group)
    if rank < 0:
        raise ArgumentError("group", "this process is not a member of the group")
    return dist.get_world_size(group), rank


def _arg_code(argument: str) -> int:
    """The descriptor's code for an argument name ("out.status" counts as "out")."""
    base = argument.split(".", maxsplit=1)[0]
    return _ARGS.index(base) if base in _ARGS else _ARGS.index("local_logits")


def _agree(desc: list[int], group: Any, device: torch.device, error: ArgumentError | None) -> list[list[int]]:
    """All ranks' descriptors; if any rank found a bad argument, every rank raises (its own error first)."""
    world, _ = _group_size_rank(group)
    dev = exchange_device(group, device)
    mine = torch.tensor(desc, dtype=torch.int64, device=dev)
    every = torch.empty((world * DESCRIPTOR_WORDS,), dtype=torch.int64, device=dev)
    all_gather_tensor(every, mine, group=group)
    flat = [int(v) for v in every.cpu().tolist()]
    rows = [flat[r * DESCRIPTOR_WORDS : (r + 1) * DESCRIPTOR_WORDS] for r in range(world)]
    if error is not None:
        raise error
    for r, row in enumerate(rows):
        if row[_D_OK] != 1:
            raise ArgumentError(_ARGS[row[_D_ARG]], f"rejected on rank {r} (see that rank's error)")
    return rows


def _layout_from(rows: list[list[int]], rank: int) -> ShardLayout:
    """Cross-rank consistency of the agreed descriptors (the same decision on every rank)."""
    batches = [r[_D_BATCH] for r in rows]
    if len(set(batches)) != 1:
        raise ArgumentError("local_logits", f"the row count B differs across ranks: {batches}")
    totals = [r[_D_TOTAL] for r in rows]
    if len(set(totals)) != 1:
        raise ArgumentError("vocab_total", f"differs across ranks: {totals}")
    taus = [r[_D_TAU] for r in rows]
    if len(set(taus)) != 1:
        raise ArgumentError("tau", f"differs across ranks: {[f'0x{t:08x}' for t in taus]}")
    offsets = tuple(r[_D_OFFSET] for r in rows)
    sizes = tuple(r[_D_VLOCAL] for r in rows)
    check_partition(offsets, sizes, totals[0])
    return ShardLayout(len(rows), rank, batches[0], totals[0], offsets, sizes)


def _check_shape_args(
    batch: int, local_vocab: Any, vocab_offset: Any, vocab_total: Any
) -> tuple[int, int, int]:
    v_local = _index("local_logits", local_vocab)
    offset = _index("vocab_offset", vocab_offset)
    total = _index("vocab_total", vocab_total)
    if batch < 1:
        raise ArgumentError("local_logits", "must have B >= 1 rows (clause 1.1)")
    if v_local < 0:
        raise ArgumentError("local_logits", f"must have V_local >= 0 columns, got {v_local}")
    if not 1 <= total <= V_MAX:
        raise ArgumentError("vocab_total", f"must be in [1, 2^31 - 1] (clause 1.1), got {total}")
    if offset < 0 or offset + v_local > total:
        raise ArgumentError(
            "vocab_offset",
            f"the shard [{offset}, {offset + v_local}) must lie in [0, vocab_total = {total})",
        )
    return v_local, offset, total


def _check_tile(tile: Any) -> int:
    t = _index("tile", tile)
    if t < 32 or t & (t - 1):
        raise ArgumentError("tile", f"must be a power of two >= 32, got {t}")
    return t


def make_sharded_workspace(
    batch: int,
    local_vocab: int,
    vocab_offset: int,
    vocab_total: int,
    *,
    group: Any = None,
    device: torch.device | str | None = None,
    tile: int = TILE,
) -> ShardedWorkspace:
    """Agree on the shard layout with every rank of ``group`` and allocate this rank's buffers.

    A collective: every rank of the group must call it (with its own range). Raises the same
    ArgumentError on every rank when the ranges do not partition [0, vocab_total) or B / vocab_total
    differ. Loads the exp table onto ``device`` (default: the kernel device), so a workspace is all
    a CUDA-graph capture needs besides one eager warm-up call.
    """
    dev = _norm_device(device)
    error: ArgumentError | None = None
    t = TILE
    desc = [1, 0, -1, -1, -1, -1, TAU_DEFAULT_BITS]
    try:
        b = _index("local_logits", batch)
        v_local, offset, total = _check_shape_args(b, local_vocab, vocab_offset, vocab_total)
        t = _check_tile(tile)
        desc[_D_BATCH : _D_TOTAL + 1] = [b, v_local, offset, total]
    except ArgumentError as exc:
        error = exc
        desc[_D_OK], desc[_D_ARG] = 0, _arg_code(exc.argument)
    _, rank = _group_size_rank(group)
    layout = _layout_from(_agree(desc, group, dev, error), rank)
    return _allocate(layout, group, dev, t)


def _allocate(layout: ShardLayout, group: Any, device: torch.device, tile: int) -> ShardedWorkspace:
    batch = layout.batch
    n_tiles = -(-layout.local_vocab // tile)
    staged = n_tiles > 1  # a one-tile shard writes its record directly
    send = torch.empty((batch, RECORD_WORDS), dtype=torch.int64, device=device)
    if layout.local_vocab == 0:
        # An empty shard's record never changes: no candidate (all padding), no flag (in particular
        # not "live": such a rank cannot make a row look non-empty).
        send[:, :32] = KEY_PAD
        send[:, 32] = 0
    return ShardedWorkspace(
        layout=layout,
        group=group,
        device=device,
        tile=tile,
        n_tiles=n_tiles,
        cand=torch.empty((batch, n_tiles if staged else 0, 32), dtype=torch.int64, device=device),
        flags=torch.empty((batch, n_tiles if staged else 0), dtype=torch.int64, device=device),
        send=send,
        gathered=torch.empty((layout.world * batch, RECORD_WORDS), dtype=torch.int64, device=device),
        table=load_table(device),
    )


def make_outputs(batch: int, device: torch.device | str | None = None) -> Outputs:
    """Allocate status [B], token [B], ids [B, 32], tickets [B, 32] (int32) for ``out=``."""
    return propose.make_outputs(batch, _norm_device(device))


_ON_LOGITS = " (the local_logits device)"


def _check_tensor(
    name: str, value: Any, dtypes: Sequence[torch.dtype], shape: tuple[int, ...], device: torch.device
) -> torch.Tensor:
    return propose.check_tensor(name, value, dtypes, shape, device, _ON_LOGITS)


def _u64_view(name: str, value: Any, batch: int, device: torch.device) -> torch.Tensor:
    return propose.u64_view(name, value, batch, device, _ON_LOGITS)


def _check_logits(local_logits: Any) -> torch.Tensor:
    matrix = propose.logits_matrix("local_logits", local_logits, "[B, V_local]")
    return propose.logits_on_kernel_device("local_logits", matrix)


@dataclass(frozen=True)
class _Call:
    logits: torch.Tensor
    batch: int
    local_vocab: int
    vocab_offset: int
    vocab_total: int
    temperature: torch.Tensor
    seed: torch.Tensor
    round: torch.Tensor
    position: torch.Tensor
    tau_bits: int
    outputs: Outputs | None


def _check_call(
    local_logits: Any,
    vocab_offset: Any,
    vocab_total: Any,
    temperature: Any,
    seed: Any,
    round: Any,
    position: Any,
    tau: Any,
    out: Any,
) -> _Call:
    """Local checks, metadata only (no device synchronisation, capture-safe); clause 1.5."""
    logits = _check_logits(local_logits)
    device = logits.device
    batch = int(logits.shape[0])
    v_local, offset, total = _check_shape_args(batch, int(logits.shape[1]), vocab_offset, vocab_total)
    temp = _check_tensor("temperature", temperature, [torch.float32], (batch,), device)
    seed64 = _u64_view("seed", seed, batch, device)
    round64 = _u64_view("round", round, batch, device)
    pos64 = _u64_view("position", position, batch, device)
    tau_bits = tau_to_bits(tau)
    outputs: Outputs | None = None
    if out is not None:
        outputs = check_outputs(out, batch, device, " (the local_logits device)")
    return _Call(logits, batch, v_local, offset, total, temp, seed64, round64, pos64, tau_bits, outputs)


def _check_workspace(ws: Any, call: _Call, group: Any) -> ShardedWorkspace:
    if not isinstance(ws, ShardedWorkspace):
        raise ArgumentError("workspace", f"must be a ShardedWorkspace, got {type(ws).__name__}")
    lay = ws.layout
    have = (lay.batch, lay.local_vocab, lay.vocab_offset, lay.vocab_total)
    want = (call.batch, call.local_vocab, call.vocab_offset, call.vocab_total)
    if have != want:
        raise ArgumentError(
            "workspace",
            f"made for (B, V_local, vocab_offset, vocab_total) = {have}, called with {want}",
        )
    if ws.group is not group:
        raise ArgumentError("workspace", "made for a different process group")
    if ws.device != call.logits.device:
        raise ArgumentError("workspace", f"lives on {ws.device}, local_logits on {call.logits.device}")
    return ws


def propose_sharded(
    local_logits: torch.Tensor,
    vocab_offset: int,
    vocab_total: int,
    temperature: torch.Tensor,
    seed: torch.Tensor,
    round: torch.Tensor,
    position: torch.Tensor,
    *,
    tau: Any = TAU_DEFAULT,
    group: Any = None,
    out: Sequence[torch.Tensor] | None = None,
    workspace: ShardedWorkspace | None = None,
) -> Outputs:
    """dyadic24-floor-first-v1 on one position for B rows whose vocabulary is sharded over ``group``.

    local_logits: float32 / bfloat16 / float16 [B, V_local] (V_local >= 0), contiguous, the logits of
    global token IDs vocab_offset .. vocab_offset + V_local - 1; temperature float32 [B]; seed, round,
    position int64 (uint64 bit patterns) or uint64 [B], identical on every rank; tau a binary32 scalar,
    identical on every rank. Returns int32 status [B], token [B], ids [B, 32], tickets [B, 32]: on every
    rank the outputs of :func:`dyadic24.kernels.propose.propose` over the full [B, vocab_total] rows.
    A collective over ``group`` (default: the default group): every rank must call it. See the module
    docstring for validation and CUDA graphs.
    """
    if workspace is None:
        error: ArgumentError | None = None
        call: _Call | None = None
        desc = [1, 0, -1, -1, -1, -1, -1]
        try:
            call = _check_call(local_logits, vocab_offset, vocab_total, temperature, seed, round, position,
                               tau, out)  # fmt: skip
            desc[_D_BATCH : _D_TAU + 1] = [
                call.batch, call.local_vocab, call.vocab_offset, call.vocab_total, call.tau_bits,
            ]  # fmt: skip
        except ArgumentError as exc:
            error = exc
            desc[_D_OK], desc[_D_ARG] = 0, _arg_code(exc.argument)
        _, rank = _group_size_rank(group)
        device = local_logits.device if isinstance(local_logits, torch.Tensor) else _kernel_device()
        layout = _layout_from(_agree(desc, group, _norm_device(device), error), rank)
        if call is None:  # pragma: no cover - _agree raised the local error
            raise RuntimeError("unreachable: the local checks failed")
        ws = _allocate(layout, group, call.logits.device, TILE)
    else:
        _group_size_rank(group)
        call = _check_call(local_logits, vocab_offset, vocab_total, temperature, seed, round, position,
                           tau, out)  # fmt: skip
        ws = _check_workspace(workspace, call, group)
    outputs = call.outputs if call.outputs is not None else make_outputs(call.batch, call.logits.device)
    _run(call, ws, outputs)
    return outputs


def _run(call: _Call, ws: ShardedWorkspace, outputs: Outputs) -> None:
    batch, v_local = call.batch, call.local_vocab
    logits = call.logits
    src = _SRC_KIND[logits.dtype]
    bits = logits.view(torch.int32 if logits.dtype == torch.float32 else torch.int16)
    world = ws.layout.world
    wblock = min(WBLOCK_MAX, 1 << (world - 1).bit_length())
    with _launch_context(ws.device):
        if v_local > 0 and ws.n_tiles == 1:
            sharded_jit.shard_tile_kernel[(batch,)](
                bits, ws.send, ws.send, v_local, call.vocab_offset, 1, RECORD_WORDS, 32, RECORD_WORDS,
                TILE=ws.tile, SRC=src,
            )  # fmt: skip
        elif v_local > 0:
            sharded_jit.shard_tile_kernel[(batch * ws.n_tiles,)](
                bits, ws.cand, ws.flags, v_local, call.vocab_offset, ws.n_tiles, ws.n_tiles * 32, 0,
                ws.n_tiles, TILE=ws.tile, SRC=src,
            )  # fmt: skip
            sharded_jit.shard_reduce_kernel[(batch,)](
                ws.cand, ws.flags, ws.send, ws.n_tiles,
                CHUNK=CHUNK, FCHUNK=FLAG_CHUNK,
            )  # fmt: skip
        # (an empty shard's record was written when the workspace was made)
        all_gather_tensor(ws.gathered, ws.send, group=ws.group)
        sharded_jit.shard_merge_kernel[(batch,)](
            ws.gathered, call.temperature.view(torch.int32), call.seed, call.round, call.position,
            ws.table.z, ws.table.e, outputs[0], outputs[1], outputs[2], outputs[3],
            batch, world, call.tau_bits, ws.table.size,
            WBLOCK=wblock, TAB_ITERS=ws.table.iterations,
        )  # fmt: skip


@contextlib.contextmanager
def _launch_context(device: torch.device) -> Iterator[None]:
    """Launch on the tensors' GPU; under the interpreter silence numpy (failed rows compute clause 5
    on NaN / infinities and discard the result)."""
    if interpreting():
        with np.errstate(all="ignore"):
            yield
    else:
        with torch.cuda.device(device):
            yield


def check_replicated(
    temperature: torch.Tensor,
    seed: torch.Tensor,
    round: torch.Tensor,
    position: torch.Tensor,
    *,
    tau: Any = TAU_DEFAULT,
    group: Any = None,
) -> None:
    """Debugging aid (a collective, not capturable): raise the same ArgumentError on every rank unless
    every rank holds the same per-row inputs and tau, as :func:`propose_sharded` requires."""
    world, _ = _group_size_rank(group)
    device = temperature.device if isinstance(temperature, torch.Tensor) else _kernel_device()
    batch = int(temperature.shape[0]) if isinstance(temperature, torch.Tensor) else 0
    cols = [
        _check_tensor("temperature", temperature, [torch.float32], (batch,), device).view(torch.int32).long(),
        _u64_view("seed", seed, batch, device),
        _u64_view("round", round, batch, device),
        _u64_view("position", position, batch, device),
        torch.full((batch,), tau_to_bits(tau), dtype=torch.int64, device=device),
    ]
    dev = exchange_device(group, _norm_device(device))
    mine = torch.stack(cols, dim=1).to(dev)
    sizes = torch.empty(world, dtype=torch.int64, device=dev)
    all_gather_tensor(sizes, torch.tensor([batch], dtype=torch.int64, device=dev), group=group)
    if len(set(sizes.tolist())) != 1:
        raise ArgumentError("temperature", f"the row count B differs across ranks: {sizes.tolist()}")
    every = torch.empty((world * batch, 5), dtype=torch.int64, device=dev)
    all_gather_tensor(every, mine, group=group)
    every = every.view(world, batch, 5)
    for col, name in enumerate(("temperature", "seed", "round", "position", "tau")):
        differs = (every[:, :, col] != every[:1, :, col]).any(dim=0).nonzero().flatten().tolist()
        if differs:
            raise ArgumentError(name, f"differs across ranks in rows {differs[:8]}")

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
TILE = 4096  # vocabulary elements per tile program
CHUNK = 1024  # candidate keys per merge step (32 tiles)
FLAG_CHUNK = 64  # tile flags per merge step
LOGIT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)  # clause 1.2
_SRC_KIND = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}  # ieee_jit.SRC_*
Outputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class Plan:
    """Launch geometry for a [B, V] call; every choice gives the same bits (top-32 of a union is exact).

    The sizes are fixed rather than fitted to V so that one compiled variant per logits dtype serves
    every shape (a tile of a small vocabulary is mostly masked lanes; V is large in practice).
    """

    batch: int
    vocab: int
    tile: int
    n_tiles: int
    chunk: int

    @staticmethod
    def for_shape(batch: int, vocab: int, tile: int = TILE, chunk: int = CHUNK) -> Plan:
        for name, value in (("tile", tile), ("chunk", chunk)):
            if value < 32 or value & (value - 1):
                raise ArgumentError(name, f"must be a power of two >= 32, got {value}")
        return Plan(batch, vocab, tile, -(-vocab // tile), chunk)


@dataclass(frozen=True)
class Workspace:
    """Per-tile candidates (int64 [B, n_tiles, 32]) and flags (int32 [B, n_tiles]) for one shape."""

    cand: torch.Tensor
    flags: torch.Tensor


def kernel_device() -> torch.device:
    """The device the kernels run on: CUDA when compiling, CPU under the interpreter."""
    return torch.device("cpu") if interpreting() else torch.device("cuda")


def make_workspace(
    batch: int, vocab: int, device: torch.device | str | None = None, tile: int = TILE
) -> Workspace:
    """Allocate the workspace for a [batch, vocab] call (reuse it across calls and graph replays)."""
    plan = Plan.for_shape(batch, vocab, tile)
    dev = torch.device(device) if device is not None else kernel_device()
    return Workspace(
        cand=torch.empty((batch, plan.n_tiles, 32), dtype=torch.int64, device=dev),
        flags=torch.empty((batch, plan.n_tiles), dtype=torch.int32, device=dev),
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


def _check_tensor(
    name: str,
    value: Any,
    dtypes: Sequence[torch.dtype],
    shape: tuple[int, ...],
    device: torch.device,
) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise ArgumentError(name, f"must be a torch.Tensor, got {type(value).__name__}")
    if value.dtype not in dtypes:
        raise ArgumentError(name, f"must have dtype in {[str(d) for d in dtypes]}, got {value.dtype}")
    if tuple(value.shape) != shape:
        raise ArgumentError(name, f"must have shape {list(shape)}, got {list(value.shape)}")
    if value.device != device:
        raise ArgumentError(name, f"must be on {device}, got {value.device}")
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


def _u64_view(name: str, value: Any, batch: int, device: torch.device) -> torch.Tensor:
    dtypes = [torch.int64] + ([torch.uint64] if hasattr(torch, "uint64") else [])
    tensor = _check_tensor(name, value, dtypes, (batch,), device)
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
    tile: int = TILE,
    chunk: int = CHUNK,
) -> Outputs:
    """Run dyadic24-floor-first-v1 on one position for B rows (clauses 1-12).

    seed, round, position: int64 (uint64 bit patterns) or uint64 [B]; temperature: float32 [B];
    logits: float32 / bfloat16 / float16 [B, V], contiguous; tau: a binary32 scalar (Python float or
    numpy float), finite and > 0. ``trace``: optional int64 [B, 320] buffer that receives every
    intermediate (decoded by dyadic24.kernels.trace). ``table`` overrides the exp correction table
    (tests only); ``use_tl_topk`` selects Triton's bitonic top-k, ``tile`` / ``chunk``
    the tile and merge-chunk sizes (powers of two >= 32); none of them changes any output bit.
    Raises ArgumentError naming the bad argument (clause 1.5).
    """
    logits, device = _check_logits(logits)
    batch, vocab = (int(v) for v in logits.shape)
    temp = _check_tensor("temperature", temperature, [torch.float32], (batch,), device)
    seed64 = _u64_view("seed", seed, batch, device)
    round64 = _u64_view("round", round, batch, device)
    pos64 = _u64_view("position", position, batch, device)
    tau_bits = tau_to_bits(tau)
    plan = Plan.for_shape(batch, vocab, tile, chunk)

    if out is None:
        outputs = make_outputs(batch, device)
    else:
        if not isinstance(out, (tuple, list)) or len(out) != 4:
            raise ArgumentError("out", "must be a sequence (status, token, ids, tickets) of 4 tensors")
        shapes = ((batch,), (batch,), (batch, K_MAX), (batch, K_MAX))
        names = ("status", "token", "ids", "tickets")
        checked = [
            _check_tensor(f"out.{n}", t, [torch.int32], s, device)
            for n, t, s in zip(names, out, shapes, strict=True)
        ]
        outputs = (checked[0], checked[1], checked[2], checked[3])
    if workspace is None:
        ws = make_workspace(batch, vocab, device, tile)
    else:
        if not isinstance(workspace, Workspace):
            raise ArgumentError("workspace", f"must be a Workspace, got {type(workspace).__name__}")
        _check_tensor("workspace", workspace.cand, [torch.int64], (batch, plan.n_tiles, 32), device)
        _check_tensor("workspace", workspace.flags, [torch.int32], (batch, plan.n_tiles), device)
        ws = workspace
    if trace is not None:
        trace_buf = _check_tensor("trace", trace, [torch.int64], (batch, TRACE_WORDS), device)
    else:
        trace_buf = ws.flags  # never written: TRACE is off
    tab = table if table is not None else _table_for(device)

    # The kernels read integer views of the logits and widen them with integer operations.
    src = _SRC_KIND[logits.dtype]
    bits = logits.view(torch.int32 if logits.dtype == torch.float32 else torch.int16)
    with _launch_context(device):
        propose_jit.tile_kernel[(batch * plan.n_tiles,)](
            bits, ws.cand, ws.flags, vocab, plan.n_tiles, TILE=plan.tile, SRC=src, USE_TL_TOPK=use_tl_topk
        )
        propose_jit.merge_kernel[(batch,)](
            bits, ws.cand, ws.flags, temp.view(torch.int32), seed64, round64, pos64,
            tab.z, tab.e, outputs[0], outputs[1], outputs[2], outputs[3], trace_buf,
            vocab, plan.n_tiles, tau_bits, tab.size,
            CHUNK=plan.chunk, FCHUNK=FLAG_CHUNK, TAB_ITERS=tab.iterations, TRACE=trace is not None,
            SRC=src,
            USE_TL_TOPK=use_tl_topk,
        )  # fmt: skip
    return outputs


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

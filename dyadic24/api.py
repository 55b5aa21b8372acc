"""The call protocol shared by every implementation of dyadic24-floor-first-v1 (spec clause 12).

An implementation is a callable

    propose(logits, temperature, seed, round, position, *, tau=TAU_DEFAULT, trace=False) -> Proposal

with ``logits`` binary32 [B, V] (binary16 is widened exactly, clause 1.2), ``temperature`` binary32 [B],
``seed``, ``round``, ``position`` uint64 [B] and ``tau`` one binary32 scalar (clause 1.3). Torch
implementations accept and return tensors; the conformance runner converts.
"""

from __future__ import annotations

import enum
import math
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

SEMANTIC_ID = "dyadic24-floor-first-v1"
TICKETS = 1 << 24  # clause 7.3: every sampled or greedy row carries exactly 2^24 tickets
K_MAX = 32  # clause 3.2: K = min(32, V); outputs are padded to 32 entries (clause 8.1)
TAU_DEFAULT_BITS = 0x3F333333  # clause 1.3: RN32(0.7)
V_MAX = (1 << 31) - 1  # clause 1.1: token IDs fit int32


class Status(enum.IntEnum):
    """Row status (clause 2.2). The integer values are part of the output and of the semantic ID."""

    OK = 0
    NAN_LOGIT = 1
    POS_INF_LOGIT = 2
    ZERO_MASS = 3
    BAD_TEMPERATURE = 4


class ArgumentError(ValueError):
    """An invalid call argument (clause 1.5). The message names the argument and the rule."""

    def __init__(self, argument: str, rule: str) -> None:
        super().__init__(f"{argument}: {rule}")
        self.argument = argument
        self.rule = rule


@dataclass(frozen=True)
class RowTrace:
    """Every intermediate of clauses 3-9 for one row (clause 12.3).

    Binary32 values are given as uint32 bit patterns, binary64 values as uint64 bit patterns.
    Per-slot tuples are in slot order, i.e. ascending token ID over C (clause 6.1). Fields that a
    path does not compute are empty / None: failed rows carry only ``status`` and ``token``; greedy
    rows add ``order``, ``argmax``, ``m_bits`` and the support.
    """

    status: int
    path: str  # "failed" | "greedy" | "sampled"
    token: int
    order: tuple[int, ...] = ()  # C in the D3 order (clause 3.2)
    argmax: int = -1  # a* (clause 3.3)
    m_bits: int | None = None  # binary32 bits of m (clause 3.3)
    slot_ids: tuple[int, ...] = ()  # C in ascending ID order (clause 6.1)
    d_bits: tuple[int, ...] = ()  # clause 5.1
    z_bits: tuple[int, ...] = ()  # clause 5.2
    e_bits: tuple[int, ...] = ()  # clause 5.3
    tree: tuple[tuple[int, ...], ...] = ()  # binary64 bits of levels 1..5 (16, 8, 4, 2, 1 slots), clause 6.2
    s_bits: int | None = None  # binary64 bits of S (clause 6.2)
    p_bits: tuple[int, ...] = ()  # clause 7.1
    counts: tuple[int, ...] = ()  # c_i, clause 7.2
    remainder: int | None = None  # R, clause 7.3
    slot_tickets: tuple[int, ...] = ()  # t_i per slot, clause 7.3
    support_ids: tuple[int, ...] = ()  # clause 8.1, unpadded
    support_tickets: tuple[int, ...] = ()
    key: tuple[int, int] | None = None  # proposal-domain key (k0, k1), clause 9.2
    block: tuple[int, int, int, int] | None = None  # draw block x, clause 9.3
    u: int | None = None  # ticket index, clause 9.4

    def as_json(self) -> dict[str, Any]:
        """Language-neutral form: binary32 as 8 hex digits, binary64 as 16, integers as integers."""

        def h8(v: int) -> str:
            return f"{v:08x}"

        def h16(v: int) -> str:
            return f"{v:016x}"

        out: dict[str, Any] = {"status": self.status, "path": self.path, "token": self.token}
        if self.path == "failed":
            return out
        out.update(order=list(self.order), argmax=self.argmax, m=h8(self.m_bits or 0))
        out.update(support_ids=list(self.support_ids), support_tickets=list(self.support_tickets))
        if self.path == "greedy":
            return out
        out.update(
            slot_ids=list(self.slot_ids),
            d=[h8(v) for v in self.d_bits],
            z=[h8(v) for v in self.z_bits],
            e=[h8(v) for v in self.e_bits],
            tree=[[h16(v) for v in level] for level in self.tree],
            S=h16(self.s_bits or 0),
            p=[h16(v) for v in self.p_bits],
            counts=list(self.counts),
            R=self.remainder,
            tickets=list(self.slot_tickets),
            key=[h8(v) for v in (self.key or ())],
            block=[h8(v) for v in (self.block or ())],
            u=self.u,
        )
        return out


@dataclass(frozen=True)
class Proposal:
    """The outputs of one call (clause 12.1): int32 status [B], token [B], ids [B, 32], tickets [B, 32]."""

    status: npt.NDArray[np.int32]
    token: npt.NDArray[np.int32]
    ids: npt.NDArray[np.int32]
    tickets: npt.NDArray[np.int32]
    trace: list[RowTrace] | None = field(default=None, compare=False)


def tau_to_bits(tau: Any) -> int:
    """RN32 of the given tau as binary32 bits; raises ArgumentError unless finite and > 0 (clause 1.3)."""
    if isinstance(tau, np.ndarray):
        if tau.shape != () or tau.dtype not in (np.float32, np.float64, np.float16):
            raise ArgumentError(
                "tau", f"must be one binary32 scalar (clause 1.3), got array {tau.dtype}{tau.shape}"
            )
        tau = tau.item() if tau.dtype != np.float32 else tau[()]
    if isinstance(tau, np.float32):
        bits = int(np.asarray(tau).view(np.uint32))
    elif isinstance(tau, (float, int, np.floating, np.integer)) and not isinstance(tau, bool):
        value = float(tau)
        if math.isnan(value) or math.isinf(value):
            raise ArgumentError("tau", f"must be finite and > 0 (clause 1.3), got {value!r}")
        # Host float only to convert the argument: struct packs binary32 with round-to-nearest-even.
        try:
            bits = struct.unpack("<I", struct.pack("<f", value))[0]
        except OverflowError as exc:
            raise ArgumentError("tau", f"must be finite in binary32 (clause 1.3), got {value!r}") from exc
    else:
        raise ArgumentError("tau", f"must be a binary32 scalar (clause 1.3), got {type(tau).__name__}")
    exponent = (bits >> 23) & 0xFF
    if bits >> 31 or exponent == 0xFF or bits == 0:
        raise ArgumentError("tau", f"must be finite and > 0 (clause 1.3), got bits 0x{bits:08x}")
    return bits


@dataclass(frozen=True)
class CallInputs:
    """Validated, canonical inputs (clause 1)."""

    logits: npt.NDArray[np.float32]  # [B, V], C-contiguous
    temperature: npt.NDArray[np.float32]  # [B]
    seed: npt.NDArray[np.uint64]
    round: npt.NDArray[np.uint64]
    position: npt.NDArray[np.uint64]
    tau_bits: int

    @property
    def batch(self) -> int:
        return int(self.logits.shape[0])

    @property
    def vocab(self) -> int:
        return int(self.logits.shape[1])


def _as_u64(name: str, value: Any, batch: int) -> npt.NDArray[np.uint64]:
    arr = np.asarray(value)
    if arr.shape != (batch,):
        raise ArgumentError(name, f"must have shape [B] = [{batch}] (clause 1.4), got {list(arr.shape)}")
    if arr.dtype == np.uint64:
        return np.ascontiguousarray(arr)
    if arr.dtype.kind in "iu":
        if arr.size and (arr.min() < 0 if arr.dtype.kind == "i" else False):
            raise ArgumentError(name, "must be uint64, got a negative value (clause 1.4)")
        return np.ascontiguousarray(arr.astype(np.uint64))
    if arr.dtype == object:
        out = np.empty(batch, dtype=np.uint64)
        for i, v in enumerate(arr.tolist()):
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 1 << 64:
                raise ArgumentError(name, f"must hold uint64 values (clause 1.4), got {v!r} at row {i}")
            out[i] = v
        return out
    raise ArgumentError(name, f"must be an unsigned 64-bit integer array (clause 1.4), got dtype {arr.dtype}")


def validate_call(
    logits: Any, temperature: Any, seed: Any, round: Any, position: Any, tau: Any
) -> CallInputs:
    """Check the call arguments of clause 1 and return them canonically; raises ArgumentError."""
    arr = np.asarray(logits)
    if arr.ndim != 2:
        raise ArgumentError("logits", f"must be a matrix [B, V] (clause 1.1), got {arr.ndim} dimensions")
    if arr.dtype == np.float16:
        arr = arr.astype(np.float32)  # exact widening, clause 1.2
    elif arr.dtype != np.float32:
        raise ArgumentError("logits", f"must be binary32 or binary16 (clause 1.1), got dtype {arr.dtype}")
    batch, vocab = arr.shape
    if batch < 1:
        raise ArgumentError("logits", "must have B >= 1 rows (clause 1.1)")
    if not 1 <= vocab <= V_MAX:
        raise ArgumentError("logits", f"must have 1 <= V <= 2^31 - 1 columns (clause 1.1), got {vocab}")
    temp = np.asarray(temperature)
    if temp.shape != (batch,):
        raise ArgumentError(
            "temperature", f"must have shape [B] = [{batch}] (clause 1.4), got {list(temp.shape)}"
        )
    if temp.dtype == np.float16:
        temp = temp.astype(np.float32)
    elif temp.dtype != np.float32:
        raise ArgumentError("temperature", f"must be binary32 (clause 1.4), got dtype {temp.dtype}")
    return CallInputs(
        logits=np.ascontiguousarray(arr),
        temperature=np.ascontiguousarray(temp),
        seed=_as_u64("seed", seed, batch),
        round=_as_u64("round", round, batch),
        position=_as_u64("position", position, batch),
        tau_bits=tau_to_bits(tau),
    )


def widen_bfloat16(bits: npt.NDArray[np.uint16]) -> npt.NDArray[np.float32]:
    """bfloat16 bit patterns to binary32 (clause 1.2): exact, the 16 bits become the high half."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


Int32Array = npt.NDArray[np.int32]


def empty_outputs(batch: int) -> tuple[Int32Array, Int32Array, Int32Array, Int32Array]:
    """Outputs initialised to the failed-row values of clause 2.3."""
    return (
        np.zeros(batch, dtype=np.int32),
        np.full(batch, -1, dtype=np.int32),
        np.full((batch, K_MAX), -1, dtype=np.int32),
        np.zeros((batch, K_MAX), dtype=np.int32),
    )

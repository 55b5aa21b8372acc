"""The inputs of a golden vector before the exact reference fills in its expected outputs.

A ``Case`` is one call (clause 12.2): B >= 1 ``Row`` objects of equal V sharing one tau. Logits are
binary32 bit patterns (clause 0.2) so that no host rounding can touch them on the way to the file.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from dyadic24.api import TAU_DEFAULT_BITS, RowTrace

U32 = npt.NDArray[np.uint32]

# Binary32 bit patterns used throughout the generator (clause 0.2).
PZERO = 0x00000000
NZERO = 0x80000000
PINF = 0x7F800000
NINF = 0xFF800000
QNAN = 0x7FC00000
ONE = 0x3F800000
MAXF = 0x7F7FFFFF
MIN_SUB = 0x00000001
MIN_NORMAL = 0x00800000


def f32(x: float) -> int:
    """Binary32 bits of RN32(x) for a host float x; only used to spell constant inputs."""
    return int(struct.unpack("<I", struct.pack("<f", x))[0])


def neg(bits: int) -> int:
    return bits ^ 0x80000000


def bits_array(values: Iterable[int]) -> U32:
    return np.array(list(values), dtype=np.uint64).astype(np.uint32)


def derived_u64(*parts: object) -> int:
    """A fixed pseudo-random uint64 named by ``parts`` (stable under reordering of the cases)."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little")


@dataclass(frozen=True, eq=False)
class Row:
    """One row: logits (binary32 bits), target temperature T bits, seed, round, position (clause 1.4)."""

    logits: U32
    t_bits: int = ONE
    seed: int | None = None  # None: derived from the case comment and the row index
    round: int | None = None
    position: int | None = None
    narrow: str | None = None  # "binary16" / "bfloat16": the logits are representable there (clause 1.2)

    @property
    def vocab(self) -> int:
        return int(self.logits.shape[0])


def row(
    logits: Sequence[int] | U32,
    t_bits: int = ONE,
    seed: int | None = None,
    round: int | None = None,
    position: int | None = None,
    narrow: str | None = None,
) -> Row:
    arr = (
        np.asarray(logits, dtype=np.uint64).astype(np.uint32)
        if not isinstance(logits, np.ndarray)
        else logits
    )
    return Row(arr.astype(np.uint32), t_bits, seed, round, position, narrow)


# A check gets the case and the exact reference's traces and raises AssertionError when the
# property the case's flags claim does not hold (so that a wrong search constant cannot slip in).
Check = Callable[["Case", list[RowTrace]], None]


@dataclass(frozen=True, eq=False)
class Case:
    comment: str
    flags: tuple[str, ...]
    rows: tuple[Row, ...]
    tau_bits: int = TAU_DEFAULT_BITS
    clauses: tuple[str, ...] = ()  # targeted clauses beyond those the rows' paths exercise
    checks: tuple[Check, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.rows:
            raise ValueError(f"{self.comment}: a vector needs B >= 1 rows")
        vocab = {r.vocab for r in self.rows}
        if len(vocab) != 1:
            raise ValueError(f"{self.comment}: rows of one call need one V, got {sorted(vocab)}")

    @property
    def vocab(self) -> int:
        return self.rows[0].vocab

    def seeds(self) -> tuple[list[int], list[int], list[int]]:
        """seed, round, position per row; unspecified ones derived from the comment (fixed, uint64)."""
        s, n, p = [], [], []
        for i, r in enumerate(self.rows):
            s.append(r.seed if r.seed is not None else derived_u64(self.comment, i, "seed"))
            n.append(r.round if r.round is not None else derived_u64(self.comment, i, "round") % 1000)
            p.append(r.position if r.position is not None else derived_u64(self.comment, i, "pos") % 100000)
        return s, n, p


def case(
    comment: str,
    flags: Sequence[str],
    rows: Sequence[Row] | Row,
    tau_bits: int = TAU_DEFAULT_BITS,
    clauses: Sequence[str] = (),
    checks: Sequence[Check] = (),
) -> Case:
    rs = (rows,) if isinstance(rows, Row) else tuple(rows)
    return Case(comment, tuple(flags), rs, tau_bits, tuple(clauses), tuple(checks))


def padded(values: Sequence[int], vocab: int, fill: int = NINF) -> U32:
    """values at IDs 0.. then ``fill`` up to V."""
    out = np.full(vocab, fill, dtype=np.uint32)
    out[: len(values)] = bits_array(values)
    return out

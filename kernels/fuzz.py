"""Seeded random calls that mix every status and the rule's hard cases (for tests and gpu_check).

Each row is drawn from one of several families: ordinary logits at various scales, heavy ties with
signed zeros, extreme magnitudes (l - m overflowing to -inf, subnormals), mostly -inf rows (C then
contains -inf tokens), rows whose z values hit the near-midpoint exp table exactly, and rows that fail
(NaN, +inf, all -inf, bad temperature). Logits of bf16/fp16 calls are generated already representable
in that format, so the float32 copy handed to the reference is the exact widening (clause 1.2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
U64 = npt.NDArray[np.uint64]

FAMILIES = ("normal", "ties", "extreme", "sparse", "table", "nan", "pinf", "neginf", "badtemp", "greedy")
_WEIGHTS = np.array([30, 12, 10, 10, 8, 5, 5, 5, 8, 7], dtype=np.float64)


@dataclass(frozen=True)
class Call:
    """One call: float32 logits (exactly representable in ``dtype``) and the per-row inputs."""

    logits: F32
    temperature: F32
    seed: U64
    round: U64
    position: U64
    tau: np.float32
    dtype: str  # "float32" | "bfloat16" | "float16"
    families: tuple[str, ...]


def _f32(bits: int) -> np.float32:
    return np.uint32(bits).view(np.float32)


def _round_to(x: F32, dtype: str) -> F32:
    if dtype == "float16":
        with np.errstate(over="ignore"):
            return x.astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        bits = x.view(np.uint32).astype(np.uint64)
        # round to nearest even on the upper 16 bits; NaN stays NaN (quiet bit forced)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        nan = np.isnan(x)
        rounded = np.where(nan, (bits | 0x00400000) & 0xFFFF0000, rounded)
        return rounded.astype(np.uint32).view(np.float32)
    return x


def _row(rng: np.random.Generator, family: str, vocab: int, table_z: list[int]) -> F32:
    if family == "normal":
        scale = float(rng.choice([1e-3, 0.1, 1.0, 4.0, 30.0, 1e4]))
        row = (rng.standard_normal(vocab) * scale + float(rng.normal(0, 10))).astype(np.float32)
    elif family == "ties":
        row = rng.integers(-3, 4, vocab).astype(np.float32) * np.float32(rng.choice([1.0, 0.5, 1e-3]))
        zeros = row == 0
        row[zeros & (rng.random(vocab) < 0.5)] = np.float32(-0.0)
    elif family == "extreme":
        pool = np.array(
            [3.0e38, -3.0e38, 1e-45, -1e-45, 1.2e-38, -0.0, 0.0, -np.inf, 1e30, -1e30, 65504.0, -7.0],
            dtype=np.float32,
        )
        row = rng.choice(pool, vocab).astype(np.float32)
        mixed = rng.random(vocab) < 0.3
        row[mixed] = (rng.standard_normal(int(mixed.sum())) * 1e3).astype(np.float32)
    elif family == "sparse":
        row = np.full(vocab, -np.inf, dtype=np.float32)
        n = int(rng.integers(1, min(vocab, 40) + 1))
        at = rng.choice(vocab, n, replace=False)
        row[at] = (rng.standard_normal(n) * 5).astype(np.float32)
    elif family == "table":
        # m = 0 and l = z exactly, so with tau = 1 the z values are table entries (clause 5.3 hard cases)
        row = (rng.standard_normal(vocab) * 3 - 20).astype(np.float32)
        row[int(rng.integers(vocab))] = 0.0
        if table_z:
            n = min(vocab - 1, 31, len(table_z))
            picks = rng.choice(len(table_z), n, replace=False)
            spots = rng.choice(vocab, n + 1, replace=False)
            spots = spots[row[spots] != 0][:n]
            row[spots] = np.array([table_z[i] for i in picks[: spots.size]], dtype=np.uint32).view(np.float32)
    elif family == "nan":
        row = rng.standard_normal(vocab).astype(np.float32)
        row[int(rng.integers(vocab))] = np.float32(np.nan)
        if rng.random() < 0.5:
            row[int(rng.integers(vocab))] = np.inf
    elif family == "pinf":
        row = rng.standard_normal(vocab).astype(np.float32)
        row[int(rng.integers(vocab))] = np.inf
    elif family == "neginf":
        row = np.full(vocab, -np.inf, dtype=np.float32)
    else:  # badtemp, greedy: ordinary logits, the temperature decides
        row = (rng.standard_normal(vocab) * 2).astype(np.float32)
    return row


def _temperature(rng: np.random.Generator, family: str) -> np.float32:
    if family == "badtemp":
        bits = int(
            rng.choice([0x7FC00000, 0xFFC00000, 0x7F800001, 0xBF800000, 0xFF800000, 0x7F800000, 0x80000001])
        )
        return _f32(bits)
    if family == "greedy":
        return _f32(int(rng.choice([0x00000000, 0x80000000])))
    return np.float32(rng.choice([1.0, 0.7, 1e-30, 1e-45, 3e38, float(rng.uniform(0.05, 3.0))]))


def _tau(rng: np.random.Generator, families: list[str]) -> np.float32:
    if "table" in families and rng.random() < 0.8:
        return np.float32(1.0)
    choice = rng.random()
    if choice < 0.4:
        return np.float32(0.7)
    if choice < 0.85:
        return np.float32(np.exp(rng.uniform(np.log(1e-3), np.log(1e3))))
    return _f32(int(rng.choice([0x00000001, 0x00800000, 0x0DA24260, 0x7F7FFFFF, 0x3F800000, 0x33800000])))


def make_call(
    rng: np.random.Generator,
    batch: int,
    vocab: int,
    dtype: str = "float32",
    table_z: list[int] | None = None,
    families: tuple[str, ...] | None = None,
) -> Call:
    """A random call of shape [batch, vocab]; families are drawn per row unless given."""
    names = list(families) if families else list(rng.choice(FAMILIES, batch, p=_WEIGHTS / _WEIGHTS.sum()))
    names = [names[i % len(names)] for i in range(batch)]
    rows = [_round_to(_row(rng, f, vocab, table_z or []), dtype) for f in names]
    logits = np.ascontiguousarray(np.stack(rows).astype(np.float32))
    temperature = np.array([_temperature(rng, f) for f in names], dtype=np.float32)
    edges = np.array([0, 1, 2**32 - 1, 2**32, 2**63, 2**64 - 1], dtype=np.uint64)

    def u64() -> U64:
        out = rng.integers(0, 2**64 - 1, batch, dtype=np.uint64, endpoint=True)
        pick = rng.random(batch) < 0.1
        out[pick] = rng.choice(edges, int(pick.sum()))
        return out

    return Call(logits, temperature, u64(), u64(), u64(), _tau(rng, names), dtype, tuple(names))

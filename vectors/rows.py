"""Deterministic logit rows for the generator, from Philox4x32-10 words (no host RNG whose stream could
change between numpy versions, so ``dyadic24 vectors regen`` reproduces the files anywhere)."""

from __future__ import annotations

import hashlib

import numpy as np
import numpy.typing as npt

from dyadic24.reference.philox import philox4x32_10_np

U32 = npt.NDArray[np.uint32]
F32 = npt.NDArray[np.float32]


def words(name: str, n: int) -> U32:
    """n uint32 words of Philox4x32-10 with counter (i, 0, 0, 0) and a key named by ``name``."""
    digest = hashlib.sha256(name.encode()).digest()
    k0 = int.from_bytes(digest[0:4], "little")
    k1 = int.from_bytes(digest[4:8], "little")
    blocks = (n + 3) // 4
    idx = np.arange(blocks, dtype=np.uint64).astype(np.uint32)
    zero = np.zeros(blocks, dtype=np.uint32)
    x = philox4x32_10_np(idx, zero, zero, zero, np.uint32(k0), np.uint32(k1))
    return np.stack(x, axis=1).reshape(-1)[:n].copy()


def unit(name: str, n: int) -> npt.NDArray[np.float64]:
    """n values k / 2^24 in [0, 1), exact in binary64."""
    return (words(name, n) >> np.uint32(8)).astype(np.float64) / float(1 << 24)


def to_bits(values: npt.NDArray[np.float64]) -> U32:
    """RN32 of binary64 values (numpy's conversion rounds to nearest even) as bit patterns."""
    return np.asarray(values, dtype=np.float64).astype(np.float32).view(np.uint32).copy()


def uniform(name: str, n: int, lo: float, hi: float) -> U32:
    return to_bits(lo + (hi - lo) * unit(name, n))


def bell(name: str, n: int, center: float = 0.0, scale: float = 2.0) -> U32:
    """Roughly normal logits (sum of four uniforms), like a language model's bulk."""
    u = unit(name, 4 * n).reshape(n, 4).sum(axis=1) - 2.0
    return to_bits(center + scale * 1.7 * u)


def quantized(name: str, n: int, levels: int, step: float, top: float = 0.0) -> U32:
    """Values top - k * step for k in [0, levels): many exact ties."""
    k = (words(name, n) % np.uint32(levels)).astype(np.float64)
    return to_bits(top - k * step)


def order_key(bits: U32) -> npt.NDArray[np.int64]:
    """Clause 3.1 as an integer key (larger first); -0 == +0. NaN rows must not get here."""
    mag = (bits & np.uint32(0x7FFFFFFF)).astype(np.int64)
    return np.where((bits >> np.uint32(31)) != 0, -mag, mag)


def top_order(bits: U32) -> npt.NDArray[np.int64]:
    """All IDs in the clause-3.1 order (value descending, ties by ascending ID)."""
    key = order_key(bits)
    return np.lexsort((np.arange(bits.shape[0]), -key)).astype(np.int64)


def as_f32(bits: U32) -> F32:
    return bits.view(np.float32)

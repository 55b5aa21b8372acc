"""The rows of the bulk stream (dyadic24-bulk-2): each family's logits, the 16-bit roundings, the
temperatures and the 64-bit inputs (conformance/bulk.py documents the families and their shares).

Rows of a vocabulary's size are cheap to draw: element-wise draws of at least ``POOLED`` values come
from windows of per-process pools (``Source``) at offsets the call's own generator picks, so a row of
V = 163,840 costs a copy, not 163,840 normal or Gumbel draws (the bulk check's reference side is
bound by its CPUs; 2026-12-06). The stream stays a function of (seed, call index) alone.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from dyadic24.conformance.strategies import EDGE_U64, near_midpoint_z

U32 = npt.NDArray[np.uint32]
NINF, PINF, NEG_ZERO = 0xFF800000, 0x7F800000, 0x80000000
POOLED = 1 << 15  # values of one row at or above which a draw comes from a pool
POOL = 1 << 23  # values per pool (32 MiB)


@cache
def _pool(kind: str) -> npt.NDArray[np.float32] | U32:
    rng = np.random.default_rng([0x64796164, 0x32342062, ("normal", "gumbel", "unit", "bits").index(kind)])
    if kind == "normal":
        return rng.standard_normal(POOL, dtype=np.float32)
    if kind == "gumbel":
        return rng.gumbel(size=POOL).astype(np.float32)
    if kind == "unit":
        return rng.random(POOL, dtype=np.float32)
    return rng.integers(0, 1 << 32, POOL, dtype=np.uint32)


def _windows(kind: str, rng: np.random.Generator, n: int, v: int) -> npt.NDArray[np.float32] | U32:
    """n rows of v values: row r is the pool from an offset of its own on, wrapping around."""
    pool = _pool(kind)
    out: npt.NDArray[Any] = np.empty((n, v), dtype=pool.dtype)
    for r, first in enumerate(rng.integers(0, POOL, n).tolist()):
        left, at, start = v, 0, first
        while left:
            take = min(left, POOL - start)
            out[r, at : at + take] = pool[start : start + take]
            at, left, start = at + take, left - take, 0
    return out


class Source:
    """Element-wise draws of a family: from the call's generator for small rows, from pool windows
    (placed by the call's generator) for rows of ``POOLED`` values or more."""

    @staticmethod
    def normal(rng: np.random.Generator, n: int, v: int) -> npt.NDArray[np.float32]:
        if v < POOLED:
            return rng.standard_normal((n, v), dtype=np.float32)
        return _windows("normal", rng, n, v)  # type: ignore[return-value]

    @staticmethod
    def gumbel(rng: np.random.Generator, n: int, v: int) -> npt.NDArray[np.float64]:
        if v < POOLED:
            return rng.gumbel(size=(n, v))
        return _windows("gumbel", rng, n, v).astype(np.float64)

    @staticmethod
    def unit(rng: np.random.Generator, n: int, v: int) -> npt.NDArray[np.float32]:
        if v < POOLED:
            return rng.random((n, v), dtype=np.float32)
        return _windows("unit", rng, n, v)  # type: ignore[return-value]

    @staticmethod
    def bits(rng: np.random.Generator, n: int, v: int) -> U32:
        if v < POOLED:
            return rng.integers(0, 1 << 32, (n, v), dtype=np.uint32)
        return _windows("bits", rng, n, v)  # type: ignore[return-value]


src = Source()


def _shuffle(rng: np.random.Generator, v: int) -> npt.NDArray[np.int64]:
    """A permutation of range(v): a uniform one for small rows, i -> (a i + b) mod v (a prime to v)
    for large ones (as good for placing tie groups, and no sort of V keys)."""
    if v < POOLED:
        return rng.permutation(v)
    a = int(rng.integers(1, v))
    while np.gcd(a, v) != 1:
        a = int(rng.integers(1, v))
    return (np.arange(v, dtype=np.int64) * a + int(rng.integers(0, v))) % v


def _f32(values: npt.NDArray[np.float64]) -> U32:
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return np.asarray(values).astype(np.float32).view(np.uint32)


def family_rows(family: str, n: int, v: int, tau: float, rng: np.random.Generator) -> U32:
    """n rows of V logits (binary32 bits) of one family."""
    if family == "gauss":
        scale = np.float32(rng.choice((1e-3, 0.3, 1.0, 3.0, 10.0, 1e4)))
        return (src.normal(rng, n, v) * scale).view(np.uint32)
    if family == "lm":
        # log-probabilities falling with the ID (frequent tokens first) plus noise: clustered top tokens
        ids = np.arange(v, dtype=np.float64)
        base = -float(rng.uniform(0.5, 2.0)) * np.log1p(ids / float(rng.uniform(1, 50)))
        return _f32(base[None, :] + src.gumbel(rng, n, v) * float(rng.uniform(0.1, 2.0)))
    if family == "ties":
        pool = np.array(
            [0x00000000, NEG_ZERO, 0x3F800000, 0xBF800000, 0x40000000, 0x3FC00000, NINF, 0x00000001],
            dtype=np.uint32,
        )
        take = pool[rng.choice(len(pool), size=int(rng.integers(1, 5)), replace=False)]
        picked: U32 = take[src.bits(rng, n, v) % np.uint32(len(take))]
        return picked
    if family == "top_ties":
        out = np.empty((n, v), dtype=np.uint32)
        for r in range(n):
            top, tie, low = sorted(rng.integers(-200, 200, 3).tolist(), reverse=True)
            n_top = int(rng.integers(0, min(v, 40) + 1))
            n_tie = int(rng.integers(0, v - n_top + 1))
            vals = np.concatenate(
                [np.full(n_top, top / 8), np.full(n_tie, tie / 8), np.full(v - n_top - n_tie, low / 8)]
            )
            row = _f32(vals)
            if rng.random() < 0.5:
                row[n_top + n_tie :] = NINF
            row[(row == 0) & (rng.random(v) < 0.5)] = NEG_ZERO
            out[r] = row[_shuffle(rng, v)]
        return out
    if family == "tile_edges":
        out = src.normal(rng, n, v).view(np.uint32).copy()
        edges = [t * k for t in (256, 512, 1024, 2048, 4096, 8192) for k in range(1, v // t + 1)] or [v // 2]
        for r in range(n):
            picks = rng.choice(edges, size=min(len(edges), int(rng.integers(1, 9))), replace=False)
            value = _f32(np.array([float(rng.uniform(5, 20))]))[0]
            for e in picks.tolist():
                for pos in range(max(0, e - 3), min(v, e + 3)):
                    out[r, pos] = value  # equal values on both sides of a tile boundary (clause 3.1)
        return out
    if family == "masked":
        out = np.full((n, v), NINF, dtype=np.uint32)
        for r in range(n):
            k = int(rng.integers(0, min(v, 33) + 1))
            where = rng.choice(v, size=k, replace=False)
            out[r, where] = _f32(rng.standard_normal(k) * float(rng.choice((0.01, 1.0, 100.0))))
        return out
    if family == "zeros":
        pool = np.array([0, NEG_ZERO, 0, NEG_ZERO, NEG_ZERO | 1, NINF], dtype=np.uint32)
        zeros: U32 = pool[src.bits(rng, n, v) % np.uint32(len(pool))]
        return zeros
    if family == "subnormal":
        return src.bits(rng, n, v) & np.uint32(0x807FFFFF)  # subnormal patterns of both signs
    if family == "huge":
        raw = src.bits(rng, n, v)  # sign, exponent 250..254 and mantissa from one word
        bits = (raw & np.uint32(0x807FFFFF)) | (
            (np.uint32(250) + (raw >> np.uint32(23)) % np.uint32(5)) << np.uint32(23)
        )
        small = src.unit(rng, n, v) < 0.2
        bits[small] = _f32(rng.standard_normal(int(small.sum())))
        return bits
    if family == "spread":
        low = float(rng.integers(0, 40))
        vals = -(low + src.unit(rng, n, v).astype(np.float64) * float(rng.integers(1, 40))) * min(tau, 1e30)
        vals[np.arange(n), rng.integers(0, v, n)] = 0.0
        return _f32(vals)
    if family == "midpoint":
        pool = np.array(near_midpoint_z() or (0xBF800000,), dtype=np.uint32)
        mid: U32 = pool[src.bits(rng, n, v) % np.uint32(len(pool))]
        mid[np.arange(n), rng.integers(0, v, n)] = np.where(rng.random(n) < 0.5, 0, NEG_ZERO).astype(
            np.uint32
        )
        return mid
    if family == "half_subnormal":
        # binary16 subnormals k * 2^-24, k in 1..1023, as binary32 patterns (exact in every format)
        raw = src.bits(rng, n, v)
        magnitude = (np.uint32(1) + raw % np.uint32(1023)).astype(np.float32) * np.float32(2.0**-24)
        out = np.where((raw >> np.uint32(24)) < 77, -magnitude, magnitude).view(np.uint32)  # 30 % negative
        out[(raw >> np.uint32(16)) % np.uint32(10) == 0] = NINF
        return out
    return src.bits(rng, n, v)  # "bits"


def in_format(bits: U32, fmt: str) -> tuple[U32, npt.NDArray[np.uint16] | None]:
    """The rows rounded to a 16-bit format (the values the call carries) and their 16-bit patterns."""
    if fmt == "binary32":
        return bits, None
    if fmt == "bfloat16":
        nan = (bits & np.uint32(0x7FFFFFFF)) > np.uint32(PINF)
        up = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
        half = np.where(nan, (bits >> np.uint32(16)) | np.uint32(0x40), up).astype(np.uint16)
        return (half.astype(np.uint32) << np.uint32(16)), half
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        half = bits.view(np.float32).astype(np.float16)
    wide = half.astype(np.float32).view(np.uint32)
    return wide, half.view(np.uint16)


def temperatures(rng: np.random.Generator, n: int) -> U32:
    r = rng.random(n)
    sampled = np.array([0x3F800000, 0x3F333333, 0x00000001, 0x7F7FFFFF], dtype=np.uint32)
    out = (rng.integers(100, 150, n, dtype=np.uint32) << np.uint32(23)) | rng.integers(
        0, 1 << 23, n, dtype=np.uint32
    )
    out = np.where(r < 0.15, sampled[rng.integers(0, 4, n)], out)
    greedy = np.where(rng.random(n) < 0.5, 0, NEG_ZERO).astype(np.uint32)
    bad = np.array([0x7FC00000, 0xFFC00001, PINF, NINF, 0xBF800000, NEG_ZERO | 1], dtype=np.uint32)[
        rng.integers(0, 6, n)
    ]
    tiny = np.where(
        rng.random(n) < 0.5, rng.integers(1, 0x00800000, n, dtype=np.uint32), np.uint32(0x00800000)
    )
    out = np.where((r >= 0.60) & (r < 0.75), greedy, out)
    out = np.where((r >= 0.75) & (r < 0.82), bad, out)
    return np.where(r >= 0.82, np.where(rng.random(n) < 0.5, tiny, out), out).astype(np.uint32)


def u64s(rng: np.random.Generator, n: int) -> npt.NDArray[np.uint64]:
    r = rng.random(n)
    edge = np.array(EDGE_U64, dtype=np.uint64)[rng.integers(0, len(EDGE_U64), n)]
    wide = rng.integers(0, 1 << 63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(
        0, 2, n, dtype=np.uint64
    )
    small = rng.integers(0, 1 << 20, n, dtype=np.uint64)
    return np.where(r < 1 / 3, edge, np.where(r < 0.9, wide, small)).astype(np.uint64)

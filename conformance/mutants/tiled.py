"""Vocabulary-tiled mistakes: what a kernel that splits V > 4,096 into tiles gets wrong when the tiles
do not reproduce the rule exactly (clauses 3.1 and 5.3).

A GPU kernel for V = 163,840 reads the row in tiles (one program or thread block per 4,096 IDs here),
keeps partial results per tile and merges them. Both mutants are exact on rows with V <= 4,096, so
only vectors with several tiles (and the right values in them) can reject them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dyadic24.conformance.mutants._base import with_stages
from dyadic24.reference.fast import F32, I64, order_key32, top_k_by_key

TILE = 4096
_TILE_BITS = 12  # log2(TILE)
_TILE_INDEX_BITS = 19  # V < 2^31: at most 2^19 tiles


def tiled_softmax(
    l_c: F32,
    ids: I64,
    m: F32,
    tau: np.float32,
    scale: Callable[[F32, F32, np.float32], tuple[F32, F32]],
    exp: Callable[[F32], F32],
) -> tuple[F32, F32, F32]:
    """e from an online (vocabulary-tiled) softmax: per tile t of 4,096 IDs with maximum m_t,

        e_i = RN32(RN32(exp(RN32(RN32(l_i - m_t) / tau))) * RN32(exp(RN32(RN32(m_t - m) / tau)))),

    the "local exponential, rescaled by the tile's correction factor" of flash-style softmax kernels,
    which never hold the row's maximum m while they read a tile. Mathematically equal to exp((l_i - m)
    / tau); in binary32 it rounds three times instead of once, so e is off by an ulp for many
    candidates outside the argmax's tile (inside it m_t = m and the factor is exactly 1), and p, c and
    R follow. d and z (the trace) stay the rule's. m_t is the largest candidate logit in the tile,
    which is the tile's maximum whenever the tile holds a candidate.
    """
    d, z = scale(l_c, m, tau)
    tile = ids // TILE
    same = tile[:, :, None] == tile[:, None, :]  # [n, K, K]: candidates k in the tile of j
    m_t = np.max(np.where(same, l_c[:, None, :], np.float32(-np.inf)), axis=2).astype(np.float32)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        local_d = np.subtract(l_c, m_t, dtype=np.float32)
        local = exp(np.divide(local_d, tau, dtype=np.float32))
        shift_d = np.subtract(m_t, m[:, None], dtype=np.float32)
        factor = exp(np.divide(shift_d, tau, dtype=np.float32))
        e = np.multiply(local, factor, dtype=np.float32)
    e = np.where(l_c == -np.inf, np.float32(0.0), e).astype(np.float32)  # -inf candidates: e = +0
    return d, z, e


def select_tiles_reversed(logits: F32, k: int) -> I64:
    """C from per-tile top-K lists (each correct: higher logit first, ties to the lower ID) merged by value,
    with equal values from different tiles taken from the LATER tile first: a merge tree or a
    reduction that walks the tiles from the end and keeps the incumbent on ties (``>=`` where ``>``
    was meant). Within a tile the order is right, so rows with V <= 4,096 are unaffected; a maximum
    or a K-th value tied across tiles moves a* (the greedy token, the remainder) or C (ids, tickets).

    The merge of per-tile top-K lists under one total order equals the top K of the whole row under
    that order, which is what is computed: key (value, tile index, 4095 - ID within the tile).
    """
    v = logits.shape[1]
    pos = np.arange(v, dtype=np.uint64)
    tile = pos >> np.uint64(_TILE_BITS)
    inner = np.uint64(TILE - 1) - (pos & np.uint64(TILE - 1))
    rank = (tile << np.uint64(_TILE_BITS)) | inner
    key = (order_key32(logits).astype(np.uint64) << np.uint64(_TILE_BITS + _TILE_INDEX_BITS)) | rank
    return top_k_by_key(key, k)


FAMILY = {
    "tiled_softmax": (
        with_stages("tiled_softmax", softmax=tiled_softmax),
        "5.3",
        "vocabulary-tiled (online) softmax: e = RN32(exp((l - m_t)/tau)) * RN32(exp((m_t - m)/tau)) per "
        "4,096-ID tile with maximum m_t, three roundings instead of one",
    ),
    "tiled_merge_reversed": (
        with_stages("tiled_merge_reversed", select=select_tiles_reversed),
        "3.1",
        "per-tile top 32 of 4,096-ID tiles merged with ties across tiles going to the later tile",
    ),
}

"""Decoding the kernel's per-row trace buffer into dyadic24.api.RowTrace (clause 12.3).

The layout (int64 words per row) is fixed in dyadic24.kernels.finish_jit (TR_* constants). Per-slot
fields follow the references: they hold the K slots of C (the tree holds all 32 slots' sums).
binary32 values are stored as their uint32 patterns, binary64 values as int64 bit patterns
(converted to uint64 here).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dyadic24.api import RowTrace

TR_K = 0
TR_ARGMAX = 1
TR_M = 2
TR_S = 3
TR_R = 4
TR_KEY = 5
TR_BLOCK = 7
TR_U = 11
TR_STATUS = 12
TR_PATH = 13
TR_FLAGGED = 14
TR_MISSED = 15
TR_ORDER = 16
TR_SLOT_IDS = 48
TR_D = 80
TR_Z = 112
TR_E = 144
TR_P = 176
TR_COUNTS = 208
TR_TICKETS = 240
TR_TREE = 272
LEVEL_SIZES = (16, 8, 4, 2, 1)
PATHS = ("failed", "greedy", "sampled")


def _u64(v: int) -> int:
    return v & 0xFFFFFFFFFFFFFFFF


def decode_row(
    words: npt.NDArray[np.int64], token: int, ids: npt.NDArray[np.int32], tickets: npt.NDArray[np.int32]
) -> RowTrace:
    """One RowTrace from one trace row and the row's outputs."""
    w = [int(v) for v in words.tolist()]
    status = w[TR_STATUS]
    path = PATHS[w[TR_PATH]]
    if path == "failed":
        return RowTrace(status=status, path=path, token=token)
    k = w[TR_K]
    live = ids >= 0
    common = dict(
        status=status,
        path=path,
        token=token,
        order=tuple(w[TR_ORDER : TR_ORDER + k]),
        argmax=w[TR_ARGMAX],
        m_bits=w[TR_M],
        support_ids=tuple(int(v) for v in ids[live].tolist()),
        support_tickets=tuple(int(v) for v in tickets[live].tolist()),
    )
    if path == "greedy":
        return RowTrace(**common)  # type: ignore[arg-type]
    tree: list[tuple[int, ...]] = []
    at = TR_TREE
    for size in LEVEL_SIZES:
        tree.append(tuple(_u64(v) for v in w[at : at + size]))
        at += size
    return RowTrace(
        slot_ids=tuple(w[TR_SLOT_IDS : TR_SLOT_IDS + k]),
        d_bits=tuple(w[TR_D : TR_D + k]),
        z_bits=tuple(w[TR_Z : TR_Z + k]),
        e_bits=tuple(w[TR_E : TR_E + k]),
        tree=tuple(tree),
        s_bits=_u64(w[TR_S]),
        p_bits=tuple(_u64(v) for v in w[TR_P : TR_P + k]),
        counts=tuple(w[TR_COUNTS : TR_COUNTS + k]),
        remainder=w[TR_R],
        slot_tickets=tuple(w[TR_TICKETS : TR_TICKETS + k]),
        key=(w[TR_KEY], w[TR_KEY + 1]),
        block=(w[TR_BLOCK], w[TR_BLOCK + 1], w[TR_BLOCK + 2], w[TR_BLOCK + 3]),
        u=w[TR_U],
        **common,  # type: ignore[arg-type]
    )


def decode(
    trace: npt.NDArray[np.int64],
    token: npt.NDArray[np.int32],
    ids: npt.NDArray[np.int32],
    tickets: npt.NDArray[np.int32],
) -> list[RowTrace]:
    """RowTrace per row of a [B, 320] trace buffer copied to the host."""
    return [decode_row(trace[r], int(token[r]), ids[r], tickets[r]) for r in range(trace.shape[0])]


def table_stats(trace: npt.NDArray[np.int64]) -> tuple[int, int]:
    """(lanes whose exp came from the near-midpoint table, flagged lanes the table lacked) over rows."""
    return int(trace[:, TR_FLAGGED].sum()), int(trace[:, TR_MISSED].sum())

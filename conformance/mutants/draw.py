"""Draw mistakes: the proposal key (clause 9.2), the counter (9.3), u (9.4), the pick (9.5)."""

from __future__ import annotations

import numpy as np

from dyadic24.conformance.mutants._base import with_stages
from dyadic24.reference.fast import I32, I64, U32, U64, hi32, lo32


def key_seed_direct(seed: U64) -> tuple[U32, U32]:
    """The seed used directly as the Philox key (lo32 s, hi32 s): no proposal-domain key."""
    return lo32(seed), hi32(seed)


def block_counter_swapped(k0: U32, k1: U32, round: U64, position: U64) -> U32:
    """Counter (lo32 n, hi32 n, lo32 p, hi32 p): round and position words swapped."""
    from dyadic24.reference.philox import philox4x32_10_np

    words = philox4x32_10_np(lo32(round), hi32(round), lo32(position), hi32(position), k0, k1)
    return np.stack([np.asarray(w, dtype=np.uint32) for w in words])


def ticket_low_bits(x: U32) -> I64:
    """u = x[0] & 0xFFFFFF: the low 24 bits instead of the high ones."""
    return np.asarray(x[0] & np.uint32(0xFFFFFF), dtype=np.int64)


def pick_inclusive(ids: I32, tickets: I32, u: I64) -> I32:
    """The first entry whose cumulative count is >= u: closed instead of half-open intervals."""
    cumulative = np.cumsum(tickets.astype(np.int64), axis=1)
    entry = np.argmax(cumulative >= u[:, None], axis=1)
    return np.asarray(ids[np.arange(ids.shape[0]), entry], dtype=np.int32)


FAMILY = {
    "no_domain_key": (
        with_stages("no_domain_key", key=key_seed_direct),
        "9.2",
        "no proposal-domain key: Philox keyed by the seed itself",
    ),
    "philox_counter_swapped": (
        with_stages("philox_counter_swapped", block=block_counter_swapped),
        "9.3",
        "Philox counter words swapped: (round, position) instead of (position, round)",
    ),
    "u_low_bits": (
        with_stages("u_low_bits", ticket=ticket_low_bits),
        "9.4",
        "u taken from the low 24 bits of x[0]",
    ),
    "pick_inclusive": (
        with_stages("pick_inclusive", pick=pick_inclusive),
        "9.5",
        "the draw uses closed intervals (cumulative >= u): a u on a boundary picks the entry before",
    ),
}

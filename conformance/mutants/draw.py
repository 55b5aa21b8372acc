"""Draw mistakes: Philox (clause 9.1), the proposal key (9.2), the counter (9.3), u (9.4), the pick (9.5)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dyadic24.conformance.mutants._base import with_stages
from dyadic24.reference.fast import I32, I64, U32, U64, hi32, lo32
from dyadic24.reference.philox import DOMAIN_WORD, M0, M1, ROUNDS, W0, W1

_M32 = np.uint64(0xFFFFFFFF)
_TWO32 = float(1 << 32)


def _mulhi_double(m: int, x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """hi32 of the product m * x taken through binary64: floor(RN64(m * x) / 2^32). The product of two
    32-bit words has up to 64 bits; binary64 keeps 53, so RN64 moves it by up to 2^10 and carries into
    the high word when lo32 of the exact product lies within about 2^10 of 2^32."""
    prod = np.float64(m) * x.astype(np.float64)  # one IEEE rounding: RN64(m * x)
    return np.floor(prod / _TWO32).astype(np.uint64)


def philox_mulhi_double_np(c0: U32, c1: U32, c2: U32, c3: U32, k0: U32, k1: U32) -> tuple[U32, U32, U32, U32]:
    """Philox4x32-10 (clause 9.1) whose high product words come from binary64; lo32 stays exact.

    What a real port does: a language or target without a 64-bit integer multiply (JavaScript numbers,
    WebGPU/WGSL without u64, Lua 5.2, a GPU shader) takes ``hi = floor(a * b / 2^32)`` in doubles and
    the low word with an exact 32-bit multiply (``Math.imul``). The KATs of clause 9.1 pass, because a
    carry needs lo32 of the product within about 2^10 of 2^32 (products above 2^53): roughly one
    product in 2^22-2^23, a Philox block in some 2^18. Such a block is off from the round of the
    carry on, and the draw picks another token in some rows per million."""
    x0, x1, x2, x3, key0, key1 = (
        np.asarray(w).astype(np.uint64) for w in np.broadcast_arrays(c0, c1, c2, c3, k0, k1)
    )
    m0, m1 = np.uint64(M0), np.uint64(M1)
    for r in range(ROUNDS):
        if r:
            key0 = (key0 + np.uint64(W0)) & _M32
            key1 = (key1 + np.uint64(W1)) & _M32
        hi0, lo0 = _mulhi_double(M0, x0), (m0 * x0) & _M32
        hi1, lo1 = _mulhi_double(M1, x2), (m1 * x2) & _M32
        x0, x1, x2, x3 = hi1 ^ x1 ^ key0, lo1, hi0 ^ x3 ^ key1, lo0
    return (x0.astype(np.uint32), x1.astype(np.uint32), x2.astype(np.uint32), x3.astype(np.uint32))


def key_mulhi_double(seed: U64) -> tuple[U32, U32]:
    """The proposal key (clause 9.2) from the binary64-product Philox of ``philox_mulhi_double_np``."""
    zero = np.zeros(seed.shape, dtype=np.uint32)
    domain = np.full(seed.shape, DOMAIN_WORD, dtype=np.uint32)
    words = philox_mulhi_double_np(domain, zero, zero, zero, lo32(seed), hi32(seed))
    return words[0], words[1]


def block_mulhi_double(k0: U32, k1: U32, round: U64, position: U64) -> U32:
    """The draw block (clause 9.3) from the binary64-product Philox of ``philox_mulhi_double_np``."""
    words = philox_mulhi_double_np(lo32(position), hi32(position), lo32(round), hi32(round), k0, k1)
    return np.stack(words)


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
    "philox_mulhi_double": (
        with_stages("philox_mulhi_double", key=key_mulhi_double, block=block_mulhi_double),
        "9.1",
        "Philox's 32 x 32 -> 64-bit products taken in binary64 (hi = floor(RN64(a * b) / 2^32)): "
        "the high word is one too large when the rounding carries into it, and the key or block differs",
    ),
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

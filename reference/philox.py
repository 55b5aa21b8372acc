"""Philox4x32-10 exactly as Random123 defines it, and the dyadic24 draw (clauses 9.1-9.4).

Random123 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), philox4x32 with 10
rounds: each round maps counter (c0, c1, c2, c3) with key (k0, k1) to

    (hi(M1*c2) ^ c1 ^ k0, lo(M1*c2), hi(M0*c0) ^ c3 ^ k1, lo(M0*c0))

and the key is bumped by the Weyl constants (W0, W1) between rounds (9 bumps for 10 rounds). All
arithmetic is modulo 2^32. Key word 0 is the low 32 bits of the seed (clause 9.1).

The scalar functions use Python ints; the ``_np`` functions are the same on uint32 arrays (products in
uint64), for the fast reference and the conformance runner.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

M0: Final = 0xD2511F53
M1: Final = 0xCD9E8D57
W0: Final = 0x9E3779B9
W1: Final = 0xBB67AE85
ROUNDS: Final = 10
DOMAIN_WORD: Final = 0x70726F70  # "prop": counter word 0 of the proposal-domain key (clause 9.2)
_M32: Final = 0xFFFFFFFF

U32Array = npt.NDArray[np.uint32]


def philox4x32_10(counter: tuple[int, int, int, int], key: tuple[int, int]) -> tuple[int, int, int, int]:
    """One Philox4x32-10 block (clause 9.1): four uint32 output words."""
    c0, c1, c2, c3 = (w & _M32 for w in counter)
    k0, k1 = key[0] & _M32, key[1] & _M32
    for r in range(ROUNDS):
        if r:
            k0 = (k0 + W0) & _M32
            k1 = (k1 + W1) & _M32
        p0 = M0 * c0
        p1 = M1 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & _M32, (p0 >> 32) ^ c3 ^ k1, p0 & _M32)
    return c0, c1, c2, c3


def proposal_key(seed: int) -> tuple[int, int]:
    """(k0, k1) = first two words of Philox4x32-10((DOMAIN_WORD, 0, 0, 0), (lo32 s, hi32 s)) (clause 9.2)."""
    x = philox4x32_10((DOMAIN_WORD, 0, 0, 0), (seed & _M32, (seed >> 32) & _M32))
    return x[0], x[1]


def draw_block(seed: int, round: int, position: int) -> tuple[int, int, int, int]:
    """The draw block x = Philox4x32-10((lo p, hi p, lo n, hi n), proposal_key(s)), clause 9.3."""
    counter = (position & _M32, (position >> 32) & _M32, round & _M32, (round >> 32) & _M32)
    return philox4x32_10(counter, proposal_key(seed))


def ticket_index(block: tuple[int, int, int, int]) -> int:
    """u = x[0] >> 8, the ticket index in [0, 2^24) (clause 9.4)."""
    return (block[0] & _M32) >> 8


# ---------------------------------------------------------------- numpy versions


def _u32(a: npt.ArrayLike) -> U32Array:
    return np.asarray(a).astype(np.uint32, copy=False)


def philox4x32_10_np(
    c0: npt.ArrayLike,
    c1: npt.ArrayLike,
    c2: npt.ArrayLike,
    c3: npt.ArrayLike,
    k0: npt.ArrayLike,
    k1: npt.ArrayLike,
) -> tuple[U32Array, U32Array, U32Array, U32Array]:
    """Philox4x32-10 on uint32 arrays (broadcast together), clause 9.1."""
    words = (_u32(c0), _u32(c1), _u32(c2), _u32(c3), _u32(k0), _u32(k1))
    x0, x1, x2, x3, key0, key1 = np.broadcast_arrays(*words)
    x0, x1, x2, x3 = (a.astype(np.uint64) for a in (x0, x1, x2, x3))
    key0 = key0.astype(np.uint64)
    key1 = key1.astype(np.uint64)
    mask = np.uint64(_M32)
    shift = np.uint64(32)
    m0 = np.uint64(M0)
    m1 = np.uint64(M1)
    for r in range(ROUNDS):
        if r:
            key0 = (key0 + np.uint64(W0)) & mask
            key1 = (key1 + np.uint64(W1)) & mask
        p0 = m0 * x0
        p1 = m1 * x2
        x0, x1, x2, x3 = ((p1 >> shift) ^ x1 ^ key0, p1 & mask, (p0 >> shift) ^ x3 ^ key1, p0 & mask)
    return (x0.astype(np.uint32), x1.astype(np.uint32), x2.astype(np.uint32), x3.astype(np.uint32))


def _split_u64(a: npt.ArrayLike) -> tuple[U32Array, U32Array]:
    v = np.asarray(a, dtype=np.uint64)
    return (v & np.uint64(_M32)).astype(np.uint32), (v >> np.uint64(32)).astype(np.uint32)


def proposal_key_np(seed: npt.ArrayLike) -> tuple[U32Array, U32Array]:
    """(k0, k1) arrays for a uint64 seed array (clause 9.2)."""
    lo, hi = _split_u64(seed)
    zero = np.zeros_like(lo)
    x = philox4x32_10_np(np.full_like(lo, DOMAIN_WORD), zero, zero, zero, lo, hi)
    return x[0], x[1]


def draw_block_np(seed: npt.ArrayLike, round: npt.ArrayLike, position: npt.ArrayLike) -> U32Array:
    """The draw blocks (clause 9.3) for uint64 arrays of seeds, rounds and positions: uint32 [4, B]."""
    k0, k1 = proposal_key_np(seed)
    p_lo, p_hi = _split_u64(position)
    n_lo, n_hi = _split_u64(round)
    return np.stack(philox4x32_10_np(p_lo, p_hi, n_lo, n_hi, k0, k1))


def ticket_index_np(block: U32Array) -> U32Array:
    """u = x[0] >> 8 per column of a [4, B] block array (clause 9.4)."""
    first: U32Array = np.asarray(block, dtype=np.uint32)[0]
    return first >> np.uint32(8)

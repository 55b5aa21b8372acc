# mypy: disable-error-code="misc, no-untyped-def, untyped-decorator"
"""Philox4x32-10 exactly as Random123 (clause 9.1), on uint64 values holding uint32 words.

A 32 x 32-bit product is formed exactly in uint64 (it is below 2^64) and split into its high and
low words, which is Random123's mulhilo; no intrinsic (``umulhi``) is needed, so the GPU and the
interpreter run the same integer operations.
"""

from dyadic24.kernels.backend import select_backend

select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

PHILOX_M0 = tl.constexpr(0xD2511F53)
PHILOX_M1 = tl.constexpr(0xCD9E8D57)
PHILOX_W0 = tl.constexpr(0x9E3779B9)
PHILOX_W1 = tl.constexpr(0xBB67AE85)
DOMAIN_WORD = tl.constexpr(0x70726F70)  # "prop", clause 9.2


@triton.jit
def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Ten rounds; every argument and result is a uint64 value below 2^32 (clause 9.1)."""
    for _ in tl.static_range(10):
        p0 = c0 * PHILOX_M0
        p1 = c2 * PHILOX_M1
        n0 = (p1 >> 32) ^ c1 ^ k0
        n1 = p1 & 0xFFFFFFFF
        n2 = (p0 >> 32) ^ c3 ^ k1
        n3 = p0 & 0xFFFFFFFF
        c0 = n0
        c1 = n1
        c2 = n2
        c3 = n3
        k0 = (k0 + PHILOX_W0) & 0xFFFFFFFF
        k1 = (k1 + PHILOX_W1) & 0xFFFFFFFF
    return c0, c1, c2, c3


@triton.jit
def draw_block(seed, rnd, pos):
    """Clauses 9.2-9.3: the proposal-domain key from the seed, then the draw block for (round, position).

    seed, rnd, pos: int64 holding uint64 bit patterns. Returns (k0, k1, x0, x1, x2, x3) as uint64.
    """
    s = seed.to(tl.uint64, bitcast=True)
    n = rnd.to(tl.uint64, bitcast=True)
    p = pos.to(tl.uint64, bitcast=True)
    zero = s & 0
    k0, k1, _, _ = philox4x32_10(zero + DOMAIN_WORD, zero, zero, zero, s & 0xFFFFFFFF, s >> 32)
    x0, x1, x2, x3 = philox4x32_10(p & 0xFFFFFFFF, p >> 32, n & 0xFFFFFFFF, n >> 32, k0, k1)
    return k0, k1, x0, x1, x2, x3

"""reference.ieee against the machine's IEEE 754 arithmetic (clauses 0.2, 0.3, 3.1, 5.1, 5.2, 6.2, 7.1).

numpy's float32 / float64 operations on x86-64 are IEEE 754 with gradual underflow (numpy never sets
FTZ/DAZ), so they give the expected bits vectorized; the exact functions run per pair. The operands'
bit patterns are biased toward the edges (zeros, subnormals, the smallest normals, near-overflow,
infinities, NaNs, near-cancellation and exact ties), with 10^6 pairs in all in the default run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest

from dyadic24.reference import ieee

DEEP = os.environ.get("DYADIC24_DEEP", "") not in ("", "0")
PAIRS_PER_OP = 1_000_000 if DEEP else 250_000  # four operations: 10^6 pairs in the default run

U32 = npt.NDArray[np.uint32]
U64 = npt.NDArray[np.uint64]


def edge_bits(rng: np.random.Generator, n: int, ebits: int, mbits: int) -> npt.NDArray[np.uint64]:
    """Random bit patterns of a binary format, a third with edge exponents, some with edge mantissas."""
    emax = (1 << ebits) - 1
    bias = emax >> 1
    exp = rng.integers(0, emax + 1, size=n, dtype=np.uint64)
    edges = np.array(
        [0, 0, 1, 2, 3, emax - 3, emax - 2, emax - 1, emax - 1, emax, bias - 1, bias, bias + 1],
        dtype=np.uint64,
    )
    pick = rng.random(n) < 0.35
    exp[pick] = rng.choice(edges, size=int(pick.sum()))
    near = rng.random(n) < 0.15  # mid-range exponents, the common case of the rule
    exp[near] = rng.integers(bias - 40, bias + 40, size=int(near.sum()), dtype=np.uint64)
    man = rng.integers(0, 1 << mbits, size=n, dtype=np.uint64)
    m_edges = np.array([0, 1, 2, (1 << mbits) - 1, (1 << mbits) - 2, 1 << (mbits - 1)], dtype=np.uint64)
    pick = rng.random(n) < 0.2
    man[pick] = rng.choice(m_edges, size=int(pick.sum()))
    sign = rng.integers(0, 2, size=n, dtype=np.uint64)
    return (sign << np.uint64(ebits + mbits)) | (exp << np.uint64(mbits)) | man


def operand_pairs(seed: int, n: int, ebits: int, mbits: int) -> tuple[U64, U64]:
    """Pairs (a, b); a quarter have b within a few ulps of +-a (cancellation, ties, exact quotients)."""
    rng = np.random.default_rng(seed)
    a = edge_bits(rng, n, ebits, mbits)
    b = edge_bits(rng, n, ebits, mbits)
    close = rng.random(n) < 0.25
    delta = rng.integers(-4, 5, size=n).astype(np.int64)
    flip = rng.integers(0, 2, size=n, dtype=np.uint64) << np.uint64(ebits + mbits)
    nb = ((a.astype(np.int64) + delta).astype(np.uint64) ^ flip) & np.uint64((1 << (1 + ebits + mbits)) - 1)
    b = np.where(close, nb, b)
    return a, b


def same_result(got: int, want: int, is_nan: Callable[[int], bool]) -> bool:
    return got == want or (is_nan(got) and is_nan(want))


def check_binary(
    name: str,
    exact: Callable[[int, int], int],
    a: npt.NDArray[np.uint64],
    b: npt.NDArray[np.uint64],
    want: npt.NDArray[np.uint64],
    is_nan: Callable[[int], bool],
    width: int,
) -> None:
    bad = [
        (x, y, w)
        for x, y, w in zip(a.tolist(), b.tolist(), want.tolist(), strict=True)
        if not same_result(exact(x, y), w, is_nan)
    ]
    if bad:
        x, y, w = bad[0]
        pytest.fail(
            f"{name}: {len(bad)} of {a.size} pairs differ from IEEE, first 0x{x:0{width}x}, 0x{y:0{width}x}: "
            f"got 0x{exact(x, y):0{width}x}, IEEE 0x{w:0{width}x}"
        )


@pytest.mark.parametrize("op", ["sub32", "div32"])
def test_binary32_ops_match_ieee(op: str) -> None:
    """Clauses 5.1 and 5.2: RN32 of the exact difference and quotient, on PAIRS_PER_OP pairs."""
    a, b = operand_pairs(0x5EED32 + len(op) + ord(op[0]), PAIRS_PER_OP, 8, 23)
    fa = a.astype(np.uint32).view(np.float32)
    fb = b.astype(np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        res = (fa - fb) if op == "sub32" else (fa / fb)
    want = res.view(np.uint32).astype(np.uint64)
    t0 = time.perf_counter()
    check_binary(op, getattr(ieee, op), a, b, want, ieee.is_nan32, 8)
    print(f"{op}: {a.size} pairs in {time.perf_counter() - t0:.1f} s")


@pytest.mark.parametrize("op", ["add64", "div64"])
def test_binary64_ops_match_ieee(op: str) -> None:
    """Clauses 6.2 and 7.1: RN64 of the exact sum and quotient, on PAIRS_PER_OP pairs."""
    a, b = operand_pairs(0x5EED64 + ord(op[0]), PAIRS_PER_OP, 11, 52)
    fa = a.view(np.float64)
    fb = b.view(np.float64)
    with np.errstate(all="ignore"):
        res = (fa + fb) if op == "add64" else (fa / fb)
    want = res.view(np.uint64)
    t0 = time.perf_counter()
    check_binary(op, getattr(ieee, op), a, b, want, ieee.is_nan64, 16)
    print(f"{op}: {a.size} pairs in {time.perf_counter() - t0:.1f} s")


def test_binary64_ops_on_rule_values() -> None:
    """Clauses 6.2 and 7.1 on the operands the rule produces: sums of e_i in [0, 32], quotients by S."""
    rng = np.random.default_rng(7)
    e = rng.integers(0, 0x3F800001, size=(20_000, 2), dtype=np.uint64).astype(np.uint32).view(np.float32)
    e64 = e.astype(np.float64)
    s = e64.sum(axis=1) + 1.0
    for x, y, ss in zip(e64[:, 0].tolist(), e64[:, 1].tolist(), s.tolist(), strict=True):
        bx = int(np.float64(x).view(np.uint64))
        by = int(np.float64(y).view(np.uint64))
        bs = int(np.float64(ss).view(np.uint64))
        assert ieee.add64(bx, by) == int(np.float64(x + y).view(np.uint64))
        assert ieee.div64(bx, bs) == int(np.float64(x / ss).view(np.uint64))


def test_signed_zero_and_infinity_rules() -> None:
    """IEEE 754 clause 6.3 signs under round to nearest, as clause 5.1 relies on."""
    p0, n0 = 0x00000000, 0x80000000
    one = ieee.ONE32
    assert ieee.sub32(one, one) == p0  # x - x = +0
    assert ieee.sub32(n0, p0) == n0  # -0 - +0 = -0
    assert ieee.sub32(p0, n0) == p0
    assert ieee.sub32(n0, n0) == p0  # -0 - -0 = -0 + +0 = +0
    assert ieee.sub32(p0, p0) == p0
    assert ieee.is_nan32(ieee.sub32(ieee.POS_INF32, ieee.POS_INF32))
    assert ieee.sub32(ieee.NEG_INF32, ieee.POS_INF32) == ieee.NEG_INF32
    assert ieee.sub32(ieee.NEG_INF32, 0x7F7FFFFF) == ieee.NEG_INF32  # clause 5.1: -inf logit gives -inf
    assert ieee.sub32(0xFF7FFFFF, 0x7F7FFFFF) == ieee.NEG_INF32  # l - m overflows (brief: -3e38 - 3e38)
    assert ieee.div32(n0, 0x3F333333) == n0  # -0 / tau = -0
    assert ieee.div32(ieee.NEG_INF32, 0x3F333333) == ieee.NEG_INF32
    assert ieee.div32(0xBF800000, 0x00000001) == ieee.NEG_INF32  # overflow to -inf
    assert ieee.div32(0x80000001, 0x7F7FFFFF) == n0  # underflow to -0
    assert ieee.is_nan32(ieee.div32(p0, n0))
    assert ieee.div32(one, n0) == ieee.NEG_INF32
    assert ieee.add64(ieee.SIGN64, ieee.SIGN64) == ieee.SIGN64
    assert ieee.add64(ieee.SIGN64, 0) == 0
    assert ieee.add64(ieee.ONE64, ieee.ONE64 | ieee.SIGN64) == 0


def test_round_binary_of_fractions() -> None:
    """Clause 0.3 on exact rationals: ties to even, subnormals, overflow threshold, exact zero."""
    r32 = ieee.round_binary32
    assert r32(Fraction(0)) == 0
    assert r32(Fraction(1)) == 0x3F800000
    assert r32(Fraction(7, 10)) == 0x3F333333  # clause 1.3: tau default
    assert r32(1 + Fraction(1, 1 << 24)) == 0x3F800000  # tie to even (down)
    assert r32(1 + Fraction(3, 1 << 24)) == 0x3F800002  # tie to even (up)
    assert r32(Fraction(1, 1 << 150)) == 0  # the midpoint 2^-150 ties to +0
    assert r32(Fraction(1, 1 << 150) * (1 + Fraction(1, 1 << 60))) == 1
    assert r32(-Fraction(1, 1 << 151)) == 0x80000000  # underflow keeps the sign
    assert r32(Fraction(3, 1 << 150)) == 2  # 1.5 subnormal quanta: tie to even
    assert r32(Fraction((1 << 24) - 1, 1 << 150)) == 0x00800000  # rounds up into the normal range
    assert r32(Fraction(2**128 - 2**103)) == ieee.POS_INF32  # overflow threshold ties away to inf
    assert r32(Fraction(2**128 - 2**103 - 1)) == 0x7F7FFFFF
    assert r32(-Fraction(2**200)) == ieee.NEG_INF32
    r64 = ieee.round_binary64
    assert r64(Fraction(1, 3)) == int(np.float64(1 / 3).view(np.uint64))
    assert r64(Fraction(1, 1 << 1075)) == 0
    assert r64(Fraction(3, 1 << 1076)) == 1
    assert r64(Fraction(2**1024)) == ieee.POS_INF64


def test_round_and_decode_roundtrip() -> None:
    """decode then round is the identity on finite patterns; rounding agrees with numpy's conversions."""
    rng = np.random.default_rng(11)
    b32 = edge_bits(rng, 20_000, 8, 23).astype(np.uint32)
    for b in b32.tolist():
        if (b >> 23) & 0xFF == 0xFF:
            continue
        v = ieee.decode32(b)
        want = 0 if b == 0x80000000 else b  # exact zero rounds to +0
        assert ieee.round_binary32(v) == want
        widened = np.uint32(b).view(np.float32).astype(np.float64)
        assert ieee.widen32to64(b) == int(widened.view(np.uint64))
    # binary64 -> binary32 conversion: numpy's astype is RN32 with subnormals (x86 cvtsd2ss)
    b64 = edge_bits(rng, 50_000, 11, 52)
    f64 = b64.view(np.float64)
    with np.errstate(all="ignore"):
        want32 = f64.astype(np.float32).view(np.uint32)
    for b, w in zip(b64.tolist(), want32.tolist(), strict=True):
        if (b >> 52) & 0x7FF == 0x7FF:
            continue
        value = ieee.decode64(b)
        # round_binary32 of an exact zero is +0; a nonzero value that underflows keeps its sign
        assert ieee.round_binary32(value) == (0 if value == 0 else w), hex(b)


def test_key32_is_clause_3_1_order() -> None:
    """Clause 3.1: key32 orders like IEEE comparison, with -0 == +0 and -inf == -inf."""
    rng = np.random.default_rng(3)
    bits = edge_bits(rng, 4000, 8, 23).astype(np.uint32)
    bits = bits[~np.isnan(bits.view(np.float32))]
    vals = bits.view(np.float32)
    keys = np.array([ieee.key32(b) for b in bits.tolist()])
    i = rng.integers(0, bits.size, 20_000)
    j = rng.integers(0, bits.size, 20_000)
    assert ((keys[i] < keys[j]) == (vals[i] < vals[j])).all()
    assert ((keys[i] == keys[j]) == (vals[i] == vals[j])).all()
    assert ieee.key32(0x80000000) == ieee.key32(0)
    assert ieee.key32(ieee.NEG_INF32) < ieee.key32(0xFF7FFFFF) < ieee.key32(0x80000001) < ieee.key32(1)


def test_classification_helpers() -> None:
    assert ieee.is_nan32(0x7FC00000) and ieee.is_nan32(0xFF800001) and not ieee.is_nan32(0x7F800000)
    assert ieee.is_inf32(0xFF800000) and not ieee.is_inf32(0x7F7FFFFF)
    assert ieee.is_neg32(0x80000000) and not ieee.is_neg32(0)
    with pytest.raises(ValueError):
        ieee.decode32(0x7F800000)
    with pytest.raises(ValueError):
        ieee.decode64(ieee.NAN64)
    assert ieee.decode32(1) == Fraction(1, 1 << 149)
    assert ieee.decode64(1) == Fraction(1, 1 << 1074)

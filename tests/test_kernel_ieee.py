"""The kernels' bit-level building blocks against the exact reference (clauses 0.3, 3.1, 5.1, 5.2, 7.2, 9).

Runs the @triton.jit helpers of dyadic24.kernels through tiny test kernels: on the GPU when there is
one, else under TRITON_INTERPRET=1 (set by tests/conftest.py, and by dyadic24.kernels.backend).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

from dyadic24.kernels.backend import select_backend  # noqa: E402

select_backend()

import triton.language as tl  # noqa: E402

from dyadic24.kernels import ieee_jit, philox_jit  # noqa: E402
from dyadic24.kernels.clause5_hw_jit import bits_of_f32, clause5_hw, exp64, tau_reciprocal  # noqa: E402
from dyadic24.kernels.propose import kernel_device  # noqa: E402
from dyadic24.reference import ieee, philox  # noqa: E402

DEVICE = kernel_device()
N = 2048  # lanes per test kernel launch


@triton.jit  # type: ignore[untyped-decorator]
def _unary_kernel(x_ptr, out_ptr, aux_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i)
    aux = x * 0
    if OP == 0:
        out = ieee_jit.widen32to64(x).to(tl.int64, bitcast=True)
    elif OP == 1:
        out, aux = ieee_jit.round_to_binary32(x)
    elif OP == 2:
        out = ieee_jit.floor_times_2_24(x.to(tl.float64, bitcast=True)).to(tl.int64)
    else:
        out = ieee_jit.order_key(x, i.to(tl.int64))
    tl.store(out_ptr + i, out)
    tl.store(aux_ptr + i, aux)


@triton.jit  # type: ignore[untyped-decorator]
def _binary_kernel(a_ptr, b_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + i)
    b = tl.load(b_ptr + i)
    out = ieee_jit.sub32(a, b) if OP == 0 else ieee_jit.div32(a, b)
    tl.store(out_ptr + i, out)


@triton.jit  # type: ignore[untyped-decorator]
def _clause5_hw_kernel(l_ptr, m_ptr, t_ptr, out_ptr, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    d, z, e, unsure = clause5_hw(tl.load(l_ptr + i), tl.load(m_ptr + i), tau_reciprocal(tl.load(t_ptr + i)))
    tl.store(out_ptr + 4 * i, bits_of_f32(d))
    tl.store(out_ptr + 4 * i + 1, bits_of_f32(z))
    tl.store(out_ptr + 4 * i + 2, bits_of_f32(e))
    tl.store(out_ptr + 4 * i + 3, unsure.to(tl.int64))


@triton.jit  # type: ignore[untyped-decorator]
def _exp64_kernel(z_ptr, out_ptr, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + i, exp64(tl.load(z_ptr + i).to(tl.float64, bitcast=True)).to(tl.int64, bitcast=True))


@triton.jit  # type: ignore[untyped-decorator]
def _widen_kernel(x_ptr, out_ptr, SRC: tl.constexpr, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + i, ieee_jit.load_bits32(x_ptr, i, i >= 0, SRC))


@triton.jit  # type: ignore[untyped-decorator]
def _philox_kernel(s_ptr, n_ptr, p_ptr, out_ptr, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    k0, k1, x0, x1, x2, x3 = philox_jit.draw_block(tl.load(s_ptr + i), tl.load(n_ptr + i), tl.load(p_ptr + i))
    tl.store(out_ptr + i * 6 + 0, k0.to(tl.int64))
    tl.store(out_ptr + i * 6 + 1, k1.to(tl.int64))
    tl.store(out_ptr + i * 6 + 2, x0.to(tl.int64))
    tl.store(out_ptr + i * 6 + 3, x1.to(tl.int64))
    tl.store(out_ptr + i * 6 + 4, x2.to(tl.int64))
    tl.store(out_ptr + i * 6 + 5, x3.to(tl.int64))


def _as_i64(values: list[int]) -> Any:
    return torch.tensor(np.array(values, dtype=np.uint64).view(np.int64), device=DEVICE)


def _pad(values: list[int]) -> list[int]:
    return values + [values[0]] * (-len(values) % N)


def _unary(op: int, values: list[int]) -> tuple[list[int], list[int]]:
    xs = _pad(values)
    x = _as_i64(xs)
    out = torch.empty_like(x)
    aux = torch.empty_like(x)
    _unary_kernel[(len(xs) // N,)](x, out, aux, OP=op, BLOCK=N)
    n = len(values)
    return out.cpu().tolist()[:n], aux.cpu().tolist()[:n]


def _binary(op: int, a: list[int], b: list[int]) -> list[int]:
    ta, tb = _as_i64(_pad(a)), _as_i64(_pad(b))
    out = torch.empty_like(ta)
    with np.errstate(all="ignore"):
        _binary_kernel[(ta.numel() // N,)](ta, tb, out, OP=op, BLOCK=N)
    result: list[int] = out.cpu().tolist()[: len(a)]
    return result


EDGE32 = [
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,
    0x3F800000, 0xBF800000, 0x3F333333, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x33800000,
    0xB3800000, 0x0DA24260, 0x42D00000, 0xC2D00000, 0x34000000, 0x00400000, 0x80400001,
]  # fmt: skip


def _random32(rng: random.Random, n: int, nan: bool = False) -> list[int]:
    out: list[int] = []
    while len(out) < n:
        kind = rng.random()
        if kind < 0.4:
            b = rng.getrandbits(32)
        elif kind < 0.6:
            b = rng.getrandbits(23) | (rng.choice([0, 1]) << 31)  # subnormals
        elif kind < 0.9:
            b = (rng.randrange(100, 160) << 23) | rng.getrandbits(23) | (rng.choice([0, 1]) << 31)
        else:
            b = rng.choice(EDGE32)
        if nan or not ieee.is_nan32(b):
            out.append(b)
    return out


def test_widen32to64_is_exact() -> None:
    """clause 0.2: every binary32 class widens to the same value in binary64."""
    values = EDGE32 + _random32(random.Random(1), 3000, nan=False)
    got, _ = _unary(0, values)
    for b, g in zip(values, got, strict=True):
        assert g & (2**64 - 1) == ieee.widen32to64(b), f"{b:08x}"


@pytest.mark.parametrize("src", ["bfloat16", "float16"])
def test_half_precision_widening_all_patterns(src: str) -> None:
    """clause 1.2: all 65,536 bfloat16 / binary16 patterns widen exactly (NaN stays NaN)."""
    from dyadic24.api import widen_bfloat16

    patterns = np.arange(1 << 16, dtype=np.uint16)
    x = torch.from_numpy(patterns.view(np.int16).copy()).to(DEVICE)
    out = torch.empty(1 << 16, dtype=torch.int64, device=DEVICE)
    _widen_kernel[((1 << 16) // N,)](x, out, SRC=1 if src == "bfloat16" else 2, BLOCK=N)
    got = out.cpu().numpy().astype(np.uint32)
    if src == "bfloat16":
        want = widen_bfloat16(patterns).view(np.uint32)
    else:
        want = patterns.view(np.float16).astype(np.float32).view(np.uint32)
    nan = np.isnan(want.view(np.float32))
    assert np.array_equal(got[~nan], want[~nan])
    assert np.isnan(got[nan].view(np.float32)).all()


def _rn32_expected(b64: int) -> int:
    if ieee.is_nan64(b64):
        return 0x7FC00000 | ((b64 >> 63) << 31)
    if ieee.is_inf64(b64):
        return 0x7F800000 | ((b64 >> 63) << 31)
    value = ieee.decode64(b64)
    if value == 0:
        return (b64 >> 63) << 31
    r = ieee.round_binary32(value)
    return r | ((b64 >> 63) << 31)


def test_round_to_binary32_matches_exact_rounding() -> None:
    """clause 0.3: RN32 of binary64 values, ties to even, subnormals kept, overflow to inf."""
    rng = random.Random(2)
    values: list[int] = []
    for b32 in EDGE32 + _random32(rng, 1500):
        w = ieee.widen32to64(b32)
        values += [w, w + 1, w - 1, w + (1 << 28), w + (1 << 28) + 1, w - (1 << 28)]  # ties and neighbours
    for _ in range(3000):
        e = rng.choice([rng.randrange(0, 2048), rng.randrange(860, 1160), rng.randrange(870, 900)])
        values.append((rng.getrandbits(1) << 63) | (e << 52) | rng.getrandbits(52))
    values = [v & (2**64 - 1) for v in values if 0 <= v < 2**64]
    got, dist = _unary(1, values)
    for b, g, d in zip(values, got, dist, strict=True):
        want = _rn32_expected(b)
        assert g & 0xFFFFFFFF == want, f"{b:016x}: got {g:08x} want {want:08x}"
        assert d >= 0


def test_sub32_div32_match_exact_ieee() -> None:
    """clauses 5.1, 5.2: binary64 op + integer RN32 equals the single rounding (Figueroa; subnormals)."""
    rng = random.Random(3)
    a = _random32(rng, 6000)
    b = _random32(rng, 6000)
    # quotients that land among binary32 subnormals and near overflow
    for _ in range(2000):
        a.append((rng.randrange(1, 40) << 23) | rng.getrandbits(23) | 0x80000000)
        b.append((rng.randrange(120, 200) << 23) | rng.getrandbits(23))
    for _ in range(1000):
        a.append((rng.randrange(200, 254) << 23) | rng.getrandbits(23) | 0x80000000)
        b.append((rng.randrange(1, 60) << 23) | rng.getrandbits(23))
    subs = _binary(0, a, b)
    divs = _binary(1, a, b)
    for x, y, s, q in zip(a, b, subs, divs, strict=True):
        ws, wq = ieee.sub32(x, y), ieee.div32(x, y)
        if not ieee.is_nan32(ws):
            assert s & 0xFFFFFFFF == ws, f"sub {x:08x} {y:08x}"
        if not ieee.is_nan32(wq):
            assert q & 0xFFFFFFFF == wq, f"div {x:08x} {y:08x}"


def test_exp64_is_within_two_ulp() -> None:
    """clause 5.3's hardware path: exp64 (no branch) is within 2 ulp64 of exp(z) (mpmath, 80 bits) on
    binary32 z in [-104, 0]: random, next to the reduction's k steps (r at +-ln2 / 2, where the
    polynomial is worst) and the ends; exp_jit's flag argument allows 8."""
    import mpmath

    rng = random.Random(9)
    zs = [0.0, -0.0, -104.0, -(2.0**-149), -1e-30, -0.3465735902799726, -0.34657362]
    zs += [-rng.uniform(0.0, 104.0) for _ in range(1500)]
    zs += [-(k + 0.5) * 0.6931471805599453 * (1 + rng.uniform(-1e-6, 1e-6)) for k in range(150)]
    zs += [-rng.uniform(0.0, 1e-3) for _ in range(200)]
    z32 = np.array(zs, dtype=np.float32).astype(np.float64)
    z = torch.tensor(np.array(_pad(list(z32.view(np.int64))), dtype=np.int64), device=DEVICE)
    out = torch.empty_like(z)
    _exp64_kernel[(z.numel() // N,)](z, out, BLOCK=N)
    got = out.cpu().numpy().view(np.float64)[: len(z32)]
    with mpmath.workprec(80):
        for zv, y in zip(z32, got, strict=True):
            exact = mpmath.exp(mpmath.mpf(float(zv)))
            ulp = np.spacing(np.float64(float(exact)))
            assert abs(mpmath.mpf(float(y)) - exact) < 2 * ulp, f"z {zv!r}: {y!r}"


def test_clause5_hardware_path_matches_exact_ieee() -> None:
    """clauses 5.1-5.3 through clause5_hw_jit (the finish's common case): d is the single rounding
    for every operand class, and z and e are RN32(d / tau) and RN32(exp(z)) wherever the path does not
    hand the lane to the integer routines (subnormal d and z, overflow of z to -inf, subnormal tau,
    quotients next to a rounding boundary, one exactly on a subnormal midpoint)."""
    from dyadic24.reference.exp_exact import exp32

    rng = random.Random(6)
    ls: list[int] = []
    ms: list[int] = []
    ts: list[int] = []
    for _ in range(1500):
        a, b = (x & 0x7FFFFFFF | (rng.getrandbits(1) << 31) for x in _random32(rng, 2))
        if ieee.is_inf32(b) or (ieee.is_inf32(a) and a >> 31 == 0):
            continue
        lo, hi = sorted((a, b), key=ieee.key32)
        ls.append(lo)
        ms.append(hi)
        ts.append(rng.choice([0x3F333333, 0x3F800000, 1, 0x7F7FFFFF, 0x3A83126F, rng.getrandbits(31)]))
    ts = [t if 0 < t < 0x7F800000 else 0x3F333333 for t in ts]
    for _ in range(600):  # d / tau within ~2^-25 (relative) of a normal binary32 midpoint M 2^c
        tau = rng.randrange(0x3E000000, 0x41000000)
        mid = ((1 << 24) | rng.getrandbits(24)) | 1
        quotient = -mid * 2.0 ** rng.randrange(-70, -30) * float(np.uint32(tau).view(np.float32))
        d = int(np.float32(quotient).view(np.uint32))
        if d >> 31 and d & 0x7F800000 not in (0, 0x7F800000):
            ls.append(d)
            ms.append(0)
            ts.append(tau)
    # d / tau = -2^-150 exactly (tau = 6): a subnormal midpoint the reciprocal may miss, so unsure
    at_midpoint = len(ls)
    ls.append(0x80000003)
    ms.append(0)
    ts.append(0x40C00000)
    ls += [0x00000001, 0x80000001, 0xC2CFF1B4, 0xFF800000, 0xFF7FFFFF, 0xB2FFFFFD]  # tiny d, z = -inf, ...
    ms += [0x00000002, 0x00000001, 0x00000000, 0x3F800000, 0x7F7FFFFF, 0x00000000]
    ts += [0x3F800000, 0x3F333333, 0x3F800000, 0x3F333333, 0x3F333333, 0x3F800000]
    out = torch.empty(4 * len(_pad(ls)), dtype=torch.int64, device=DEVICE)
    with np.errstate(all="ignore"):
        _clause5_hw_kernel[(len(_pad(ls)) // N,)](
            _as_i64(_pad(ls)), _as_i64(_pad(ms)), _as_i64(_pad(ts)), out, BLOCK=N
        )
    got = out.cpu().tolist()
    unsure = 0
    for k, (lb, mb, tb) in enumerate(zip(ls, ms, ts, strict=True)):
        d, z, e, u = got[4 * k : 4 * k + 4]
        want_d = ieee.sub32(lb, mb)
        want_z = ieee.div32(want_d, tb)
        assert d == want_d, f"l {lb:08x} m {mb:08x}"
        unsure += u
        if not u:
            assert z == want_z, f"d {want_d:08x} tau {tb:08x}: z {z:08x}"
            assert e == exp32(want_z), f"z {want_z:08x}: e {e:08x}"
    assert got[4 * at_midpoint + 3] == 1
    assert unsure < len(ls) // 2


def test_floor_times_2_24() -> None:
    """clause 7.2: floor(p * 2^24) for p in [0, 1] (the truncation of the exact product)."""
    rng = random.Random(4)
    ps = [0, 0x3FF0000000000000, 0x3E70000000000000, 0x3E6FFFFFFFFFFFFF, 1, 0x0010000000000000]
    ps += [rng.randrange(0, 0x3FF0000000000001) for _ in range(4000)]
    ps += [(rng.randrange(990, 1024) << 52) | rng.getrandbits(52) for _ in range(2000)]
    got, _ = _unary(2, ps)
    for p, g in zip(ps, got, strict=True):
        assert g == int(ieee.decode64(p) * (1 << 24)), f"{p:016x}"


def test_order_key_is_clause_3_1_order() -> None:
    """clause 3.1: key order = (value descending with -0 == +0, then ID ascending); keys unique."""
    rng = random.Random(5)
    values = _random32(rng, 1500) + [0x80000000, 0x00000000] * 20 + [0xFF800000] * 20 + [0x3F800000] * 20
    rng.shuffle(values)
    keys, _ = _unary(3, values)
    assert len(set(keys)) == len(keys)
    by_key = sorted(range(len(values)), key=lambda i: -keys[i])
    by_rule = sorted(range(len(values)), key=lambda i: (-ieee.key32(values[i]), i))
    assert by_key == by_rule
    assert all(k > -(1 << 63) for k in keys)  # KEY_PAD lies below every real key


def test_philox_and_draw_block_match_random123() -> None:
    """clauses 9.1-9.3: proposal-domain key and draw block, edge and random 64-bit inputs."""
    rng = random.Random(6)
    edges = [0, 1, 2**32 - 1, 2**32, 2**63, 2**64 - 1]
    seeds = edges + [rng.getrandbits(64) for _ in range(250)]
    rounds = [rng.choice(edges) if i % 3 == 0 else rng.getrandbits(64) for i in range(len(seeds))]
    positions = [rng.choice(edges) if i % 4 == 0 else rng.getrandbits(64) for i in range(len(seeds))]
    n = len(seeds)
    pad = -n % 256
    s, r, p = (_as_i64(v + [0] * pad) for v in (seeds, rounds, positions))
    out = torch.empty((n + pad) * 6, dtype=torch.int64, device=DEVICE)
    _philox_kernel[((n + pad) // 256,)](s, r, p, out, BLOCK=256)
    words = out.cpu().view(-1, 6).tolist()
    for i in range(n):
        k = philox.proposal_key(seeds[i])
        x = philox.draw_block(seeds[i], rounds[i], positions[i])
        assert tuple(words[i][:2]) == k
        assert tuple(words[i][2:]) == x

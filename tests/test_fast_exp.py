"""exp32_np against MPFR (gmpy2) and the exact reference exp32 (clause 5.3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gmpy2
import mpmath
import numpy as np
import numpy.typing as npt
import pytest

from dyadic24.reference import fast_exp
from dyadic24.reference.fast_exp import exp32_np, near_midpoint

ROOT = Path(__file__).resolve().parent.parent
MIDPOINT_FILE = ROOT / "vectors" / "data" / "exp_near_midpoints.json"
# binary32 emulated by MPFR: 24-bit significand in [1/2, 1), exponents -148..128, gradual underflow.
BINARY32 = gmpy2.context(precision=24, emin=-148, emax=128, subnormalize=True)
NEG_ZERO_BITS = 0x80000000
NEG_104_BITS = 0xC2D00000  # binary32 -104.0; every z < about -103.972 rounds to +0


def mpfr_exp32(z: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """RN32(exp(z)) by MPFR, one lane at a time."""
    out = np.empty(z.size, dtype=np.float32)
    for i, v in enumerate(z.reshape(-1).tolist()):
        out[i] = float(BINARY32.exp(gmpy2.mpfr(v)))
    return out.reshape(z.shape)


def from_bits(bits: Any) -> npt.NDArray[np.float32]:
    return np.asarray(bits, dtype=np.uint64).astype(np.uint32).view(np.float32)


def neighbours_of_midpoints(rng: np.random.Generator, count: int) -> npt.NDArray[np.float32]:
    """Binary32 z next to log(midpoint) for random binary32 midpoints in (2^-150, 1): z whose exp
    lands close (relative ~2^-24 |z|) to a rounding midpoint."""
    out: list[int] = []
    mpmath.mp.prec = 80
    results = rng.integers(0, 0x3F800000, count)  # bit patterns of binary32 results in [0, 1)
    for bits in results.tolist():
        lower = mpmath.mpf(float(from_bits(bits)))
        upper = mpmath.mpf(float(from_bits(bits + 1)))
        z0 = float(mpmath.log((lower + upper) / 2))
        zb = int(np.float32(z0).view(np.uint32))
        out.extend(range(zb - 2, zb + 3))
    return from_bits(out)


def listed_near_midpoints() -> dict[int, int]:
    """z bits -> e bits from vectors/data/exp_near_midpoints.json (helper "exact"), {} until it exists."""
    if not MIDPOINT_FILE.exists():
        return {}
    entries = json.loads(MIDPOINT_FILE.read_text())["entries"]
    return {int(entry["z"], 16): int(entry["e"], 16) for entry in entries}


def near_midpoint_inputs() -> npt.NDArray[np.float32]:
    """The exhaustive near-midpoint list when present, plus the ones in HARD_NEAR_MIDPOINTS."""
    return from_bits(sorted(set(HARD_NEAR_MIDPOINTS) | set(listed_near_midpoints())))


# The binary32 z in [-104, -0] whose binary64 exp lies within 2^-47 (relative) of a binary32 rounding
# midpoint (49 of them; 26 within 2^-48), found by a scan of all 1.1e9 binary32 in that range with
# np.exp in binary64. Kept here so the test does not depend on the generated list.
# fmt: off
HARD_NEAR_MIDPOINTS: tuple[int, ...] = (
    0xB2FFFFFD, 0xB2FFFFFE, 0xB2FFFFFF, 0xB3000000, 0xB3000001, 0xB3000002, 0xB3C00000, 0xB3C00001,
    0xB4200001, 0xB4600002, 0xB4B00002, 0xB5480005, 0xB59C0006, 0xB5D4000B, 0xB616000B, 0xB6B50020,
    0xB6D9002E, 0xB7C9C09F, 0xB7F4C0EA, 0xB9584DB6, 0xBA525799, 0xBA7242A6, 0xBADD0AB0, 0xBAE0E25C,
    0xBB8D98F5, 0xBB9AF86A, 0xBB9CBB8E, 0xBBB70EE8, 0xBBF0EDF1, 0xBC2A461A, 0xBCB8F40F, 0xBCE017BB,
    0xBDB393EB, 0xBDF128EB, 0xBE5F667D, 0xBE67B559, 0xBEE0E6CD, 0xBEED01AF, 0xBF76FD92, 0xBF81EADF,
    0xBFBFA14B, 0xC03359CB, 0xC0382E72, 0xC0781533, 0xC13D6631, 0xC159FA1E, 0xC16912CD, 0xC236E4B4,
    0xC2B2E798,
)
# fmt: on


def test_exp32_np_matches_mpfr_on_a_million_inputs() -> None:
    """Clause 5.3 on >= 10^6 binary32 z, random, structured and near rounding midpoints."""
    rng = np.random.default_rng(20250503)
    parts = [
        rng.uniform(-104, 0, 450_000).astype(np.float32),
        from_bits(rng.integers(NEG_ZERO_BITS, NEG_104_BITS + 1, 300_000)),  # uniform in bit patterns
        rng.uniform(-104, -87, 100_000).astype(np.float32),  # subnormal results
        from_bits(np.arange(NEG_ZERO_BITS, NEG_ZERO_BITS + 20_000)),  # tiny |z|, subnormal z
        from_bits(np.arange(0xB3000000 - 20_000, 0xB3000000 + 20_000)),  # z near -2^-25: e near 1 - 2^-25
        # z near log(2^-150) = -103.972...: the midpoint between +0 and the least subnormal
        from_bits(np.arange(0xC2CFF1B5 - 20_000, 0xC2CFF1B5 + 20_000)),
        from_bits(np.arange(0xC2AEAC50 - 10_000, 0xC2AEAC50 + 10_000)),  # z near -87.34: e near 2^-126
        neighbours_of_midpoints(rng, 10_000),
        near_midpoint_inputs(),
        np.array([-np.inf, -0.0, 0.0, -1e-45, -104.0, -103.97208, -103.9720840454], dtype=np.float32),
        # Outside the rule's range (z <= 0) but exp32_np is a general function.
        np.array([1e-45, 1.0, 88.72283, 88.72284, 88.7228394, 89.0, np.inf, 3e38, -3e38], dtype=np.float32),
    ]
    z = np.concatenate(parts)
    assert z.size >= 1_000_000
    got = exp32_np(z)
    want = mpfr_exp32(z)
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    assert bad.size == 0, [(f"{int(z.view(np.uint32)[i]):08x}", got[i], want[i]) for i in bad[:10]]


def test_exp32_np_special_values() -> None:
    """exp(-inf) = +0, exp(+-0) = 1 exactly, NaN stays NaN, shapes kept (clause 5.3)."""
    z = np.array([[-np.inf, -0.0], [0.0, np.nan]], dtype=np.float32)
    e = exp32_np(z)
    assert e.shape == (2, 2) and e.dtype == np.float32
    assert e.view(np.uint32)[0].tolist() == [0, 0x3F800000]
    assert e.view(np.uint32)[1, 0] == 0x3F800000 and np.isnan(e[1, 1])
    strided = np.arange(-20, 0, dtype=np.float32)[::3]
    assert np.array_equal(exp32_np(strided), mpfr_exp32(strided))
    with pytest.raises(TypeError):
        exp32_np(np.zeros(3))  # type: ignore[arg-type]


def test_binary64_exp_error_is_inside_the_margin() -> None:
    """The margin argument of fast_exp: numpy's binary64 exp on this machine errs by < 2 ulp (< 2^-51
    relative), far inside MARGIN = 2^-48."""
    rng = np.random.default_rng(7)
    z = np.concatenate([rng.uniform(-104, 0, 50_000), rng.uniform(-1e-3, 0, 5_000)]).astype(np.float32)
    y = np.exp(z.astype(np.float64))
    worst = 0.0
    with gmpy2.context(gmpy2.get_context(), precision=160):
        for zi, yi in zip(z.astype(np.float64).tolist(), y.tolist(), strict=True):
            exact = gmpy2.exp(gmpy2.mpfr(zi))
            worst = max(worst, float(abs(gmpy2.mpfr(yi) - exact) / exact))
    assert worst < 2.0**-51, worst


def test_flag_is_exact_around_midpoints() -> None:
    """near_midpoint flags y within 2^-48 y of a midpoint and nothing farther, in the normal and
    subnormal binary32 ranges, at +0's midpoint 2^-150 and at the overflow threshold."""
    rng = np.random.default_rng(3)
    r_bits = np.concatenate(
        [rng.integers(1, 0x7F7FFFFF, 2000), [0, 1, 2, 0x007FFFFF, 0x00800000, 0x7F7FFFFF]]
    )
    r = from_bits(r_bits).astype(np.float64)
    # Above the largest finite binary32 the grid goes on at 2^128: that midpoint is the overflow threshold.
    up = np.where(
        r_bits == 0x7F7FFFFF, 2.0**128, from_bits(np.minimum(r_bits + 1, 0x7F7FFFFF)).astype(np.float64)
    )
    mid = (r + up) * 0.5
    for rel, expect in ((0.0, True), (2.0**-49, True), (2.0**-48 * 0.875, True), (2.0**-47, False)):
        for sign in (1.0, -1.0):
            y = mid * (1.0 + sign * rel)
            with np.errstate(over="ignore"):
                flags = near_midpoint(y, y.astype(np.float32))
            assert flags.all() == expect and flags.any() == expect, (rel, sign)
    assert not near_midpoint(np.array([0.0, np.inf, 1.0]), np.array([0.0, np.inf, 1.0], np.float32)).any()


def test_fallback_path_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a huge margin many lanes go through exp_exact.exp32; the results stay correct."""
    pytest.importorskip("dyadic24.reference.exp_exact")
    monkeypatch.setattr(fast_exp, "MARGIN", 2.0**-12)
    rng = np.random.default_rng(11)
    z = np.concatenate([rng.uniform(-104, 0, 3000), rng.uniform(-104, -87, 1000)]).astype(np.float32)
    y = np.exp(z.astype(np.float64))
    assert near_midpoint(y, y.astype(np.float32)).sum() > 100
    assert np.array_equal(exp32_np(z).view(np.uint32), mpfr_exp32(z).view(np.uint32))


def test_near_midpoint_inputs_take_the_exact_path() -> None:
    """Each near-midpoint z (within 2^-47): exp32_np equals MPFR, exp_exact.exp32 and the listed e."""
    z = near_midpoint_inputs()
    got = exp32_np(z)
    assert np.array_equal(got.view(np.uint32), mpfr_exp32(z).view(np.uint32))
    y = np.exp(z.astype(np.float64))
    assert near_midpoint(y, y.astype(np.float32)).sum() >= 20  # the exact path is exercised
    got_bits = dict(zip(z.view(np.uint32).tolist(), got.view(np.uint32).tolist(), strict=True))
    listed = listed_near_midpoints()
    assert all(got_bits[zb] == eb for zb, eb in listed.items())
    exact_module = pytest.importorskip("dyadic24.reference.exp_exact")
    assert [exact_module.exp32(zb) for zb in got_bits] == list(got_bits.values())

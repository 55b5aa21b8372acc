"""reference.exp_exact.exp32 against MPFR (clause 5.3: RN32(exp(z)), subnormals kept).

MPFR (through gmpy2) with precision 24, emin = -148, emax = 128, subnormalize and round to nearest
emulates binary32 exactly and its exp is correctly rounded, so it is an independent oracle for the
integer enclosure of exp_exact. The default run checks 10^6 inputs in [-104, 0], weighted toward the
non-trivial part (|z| >= 2^-25, where the result is not simply 1) plus every near-midpoint z of
vectors/data/exp_near_midpoints.json; DYADIC24_DEEP=1 checks 4 * 10^6.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from dyadic24.reference import exp_exact
from dyadic24.reference.exp_exact import exp32

gmpy2 = pytest.importorskip("gmpy2")

DEEP = os.environ.get("DYADIC24_DEEP", "") not in ("", "0")
N_INPUTS = 4_000_000 if DEEP else 1_000_000
NEAR_MIDPOINTS = Path(__file__).resolve().parents[1] / "vectors" / "data" / "exp_near_midpoints.json"
FIRST, LAST = 0x80000000, 0xC2D00000  # -0 .. -104
NONTRIVIAL = 0xB3000000  # -2^-25: from here on exp(z) is not simply 1


def mpfr_exp32(bits: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """RN32(exp(z)) per element by MPFR in an emulated binary32 context."""
    zs = bits.view(np.float32).astype(np.float64).tolist()
    ctx = gmpy2.context(precision=24, emin=-148, emax=128, subnormalize=True, round=gmpy2.RoundToNearest)
    mpfr = gmpy2.mpfr
    out = [float(ctx.exp(mpfr(z))) for z in zs]
    with np.errstate(all="ignore"):
        return np.array(out, dtype=np.float64).astype(np.float32).view(np.uint32)  # exact: already binary32


def sample_inputs(n: int, seed: int) -> npt.NDArray[np.uint32]:
    rng = np.random.default_rng(seed)
    parts = [
        rng.integers(NONTRIVIAL, LAST + 1, size=n * 7 // 10, dtype=np.uint64),  # uniform in bits, non-trivial
        rng.integers(FIRST, LAST + 1, size=n // 10, dtype=np.uint64),  # uniform over all bits
        # uniform in value: mostly large |z|, the subnormal results below z = -87.3
        (-rng.random(n // 10) * 104).astype(np.float32).view(np.uint32).astype(np.uint64),
        rng.integers(0xC2AE0000, 0xC2D00001, size=n - n * 7 // 10 - 2 * (n // 10), dtype=np.uint64),
    ]
    return np.concatenate(parts).astype(np.uint32)


def special_inputs() -> list[int]:
    """Boundaries: zeros, infinities, the 1/2^-25 region, the normal/subnormal and 2^-150 thresholds."""
    points = [0x80000000, 0x00000000, 0xFF800000, 0x7F800000, 0x80000001, 0x00000001, 0xC2D00000, 0xC2D00001]
    for center in (
        0xB3000000,
        0xB2800000,
        0x32800000,
        0x33000000,
        0xC2AEAC50,
        0xC2CFF1B5,
        0xC2CE8ED0,
        0x42B17218,
        0xC2B00000,
        0xBF800000,
        0x3F800000,
    ):
        points.extend(range(center - 64, center + 65))
    return points


def check(bits: npt.NDArray[np.uint32]) -> float:
    want = mpfr_exp32(bits)
    t0 = time.perf_counter()
    got = [exp32.__wrapped__(b) for b in bits.tolist()]
    elapsed = time.perf_counter() - t0
    bad = [(b, g, w) for b, g, w in zip(bits.tolist(), got, want.tolist(), strict=True) if g != w]
    if bad:
        b, g, w = bad[0]
        pytest.fail(f"{len(bad)} of {bits.size} differ from MPFR, first z=0x{b:08x}: 0x{g:08x} vs 0x{w:08x}")
    return elapsed


def test_exp32_matches_mpfr_on_many_inputs() -> None:
    """Clause 5.3 on N_INPUTS binary32 z in [-104, 0]."""
    bits = sample_inputs(N_INPUTS, 0xE4932)
    elapsed = check(bits)
    print(f"exp32: {bits.size} inputs, {elapsed / bits.size * 1e6:.2f} us per call")


def test_exp32_near_midpoints_and_specials() -> None:
    """Clause 5.3 on every near-midpoint z of the exhaustive search and on the boundary cases."""
    doc = json.loads(NEAR_MIDPOINTS.read_text())
    near = [int(e["z"], 16) for e in doc["entries"]]
    assert near, "the near-midpoint list is empty"
    check(np.array(near + special_inputs(), dtype=np.uint32))
    for entry in doc["entries"]:
        assert exp32(int(entry["z"], 16)) == int(entry["e"], 16), entry


def test_exp32_positive_and_special_values() -> None:
    """exp32 is correct beyond [-104, 0] too: overflow to +inf, NaN in NaN out."""
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 0x42C00000, size=50_000, dtype=np.uint64).astype(np.uint32)
    check(bits)
    assert exp32(0x7FC00000) == 0x7FC00000
    assert exp32(0x7F800000) == 0x7F800000
    assert exp32(0xFF800000) == 0  # exp(-inf) = +0 (clause 5.3)
    assert exp32(0x80000000) == exp32(0) == 0x3F800000  # clause 5.4: e_{a*} = 1
    assert exp32(0x42B17218) == 0x7F800000  # 88.72284 overflows
    assert exp32(0x42B17217) == 0x7F7FFF84


def test_exp32_precision_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The refinement loop of the module docstring: started at a tiny working precision it must double
    W until the enclosure decides, and agree with MPFR. At W = 64 every near-midpoint z of the search
    is decided (the closest lies 2^-52.6 from a midpoint; the W = 64 enclosure is about 2^-54 wide)."""
    doc = json.loads(NEAR_MIDPOINTS.read_text())
    near = [int(entry["z"], 16) for entry in doc["entries"]]
    for bits in near:
        negative, m, e = True, (bits & 0x7FFFFF) | 0x800000, ((bits >> 23) & 0xFF) - 150
        decided = exp_exact._enclose(negative, m, e, 64)
        assert decided is not None and decided == exp_exact._enclose(negative, m, e, 256)
        assert exp_exact._enclose(negative, m, e, 16) is None  # too close for 16 bits: the loop must go on
    monkeypatch.setattr(exp_exact, "_W_FIRST", 16)
    rng = np.random.default_rng(9)
    extra = rng.integers(NONTRIVIAL, LAST + 1, size=20_000, dtype=np.uint64).astype(np.uint32)
    check(np.concatenate([np.array(near, dtype=np.uint32), extra]))


def test_ln2_enclosure() -> None:
    """The ln 2 enclosure used by the argument reduction contains ln 2 (checked at 200 bits by MPFR)."""
    lo, hi = exp_exact._ln2_bounds(160)
    assert 0 <= hi - lo <= 2
    with gmpy2.context(precision=400):
        ln2 = gmpy2.log(gmpy2.mpfr(2)) * gmpy2.mpfr(2) ** 160
        assert gmpy2.mpfr(lo) <= ln2 <= gmpy2.mpfr(hi)

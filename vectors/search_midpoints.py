"""Exhaustive search for binary32 z in [-104, 0] whose exp lies near a binary32 rounding midpoint.

Clause 5.3 asks for RN32(exp(z)) correctly rounded. An implementation that evaluates exp in binary64
and rounds to binary32 (or one with a slightly inaccurate exp) gets the rounding wrong only when the
exact exp(z) lies very close to a binary32 rounding midpoint. This script lists every such z, so that
tests and golden vectors can exercise exactly the hard cases.

What is searched: every binary32 bit pattern from 0x80000000 (-0) to 0xC2D00000 (-104), about
1.12e9 values: all the z that clause 5.2 can produce (z <= 0) with a nonzero result (exp(z) < 2^-150
for z < -103.98). The midpoints are those of RN32: (k + 1/2) * 2^q between adjacent binary32 numbers,
in the normal range (q = floor(log2 x) - 23) and in the subnormal range (q = -149), including
2^-150, the midpoint between +0 and the smallest subnormal.

Output: vectors/data/exp_near_midpoints.json with every z whose exact exp(z) satisfies
|exp(z) - mid| <= 2^-47 * mid for the nearest midpoint ``mid``.

Method.
1. Screen (numpy, binary64): e = np.exp(float64(z)) for all z in chunks (the widening is exact).
   The binade scaling x = e / 2^q is exact (a power of two), k = floor(x), and the test
   |x - k - 1/2| <= 2^-44 * (k + 1/2) is evaluated without rounding error (x - k, its difference with
   1/2 and 2^-44 (k + 1/2) are all exact in binary64 because k < 2^24).
2. Confirm (mpmath, 256 bits): for every screened z the exact exp(z) is compared with the exact
   midpoint; the entry is kept when the relative distance is <= 2^-47. The correctly rounded result
   comes from reference.exp_exact.exp32 and is checked against the 256-bit value.

Why the screen is safe. If |exp(z) - mid| <= 2^-47 mid and np.exp has relative error |delta|, then
|e - mid| <= (2^-47 + |delta| (1 + 2^-47)) mid, which is below 2^-44 mid for any |delta| < 2^-45.
glibc's exp is documented within 1 ulp (relative error < 2^-52) and numpy's own SIMD exp for binary64
within a few ulp, i.e. more than 2^6 below what the margin tolerates. The script does not rely on the
documentation alone: before the search it measures np.exp against mpmath on 200,000 z spread over
[-104, 0] and stops unless the largest relative error is below 2^-49. A z whose nearest midpoint for e
and for exp(z) differ would need exp(z) within 2^-45 of a binary32 number (a quantum boundary) and so
at relative distance about 2^-25 from any midpoint: it cannot be a near-midpoint case.

Run from the repository root: ``python vectors/search_midpoints.py [--workers 2] [--out PATH]``.
With two worker processes on the 2-core development machine it takes a few minutes.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a plain script: make ``dyadic24`` importable from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mpmath

from dyadic24.reference.exp_exact import exp32
from dyadic24.reference.ieee import decode32, round_binary32, round_binary64

FIRST = 0x80000000  # -0
LAST = 0xC2D00000  # -104
MARGIN_LOG2 = -47
SCREEN_LOG2 = -44
NUMPY_ERROR_LIMIT_LOG2 = -49
CHUNK = 1 << 22
CONFIRM_PREC = 256
OUT = Path(__file__).resolve().parent / "data" / "exp_near_midpoints.json"


def screen(start: int, stop: int) -> list[int]:
    """Bits in [start, stop) whose binary64 exp lies within 2^SCREEN_LOG2 (relative) of a midpoint."""
    z = np.arange(start, stop, dtype=np.uint64).astype(np.uint32).view(np.float32).astype(np.float64)
    e = np.exp(z)
    mant, ex = np.frexp(e)  # e = mant * 2^ex, mant in [0.5, 1)
    normal = ex >= -125  # e >= 2^-126: quantum 2^(ex - 24)
    x = np.where(normal, np.ldexp(mant, 24), np.ldexp(e, 149))  # x = e / quantum, exact
    k = np.floor(x)
    dist = np.abs((x - k) - 0.5)
    hit = dist <= np.ldexp(k + 0.5, SCREEN_LOG2)
    return [start + int(i) for i in np.flatnonzero(hit)]


def _screen_task(bounds: tuple[int, int]) -> list[int]:
    return screen(*bounds)


def nearest_midpoint(value: mpmath.mpf) -> Fraction:
    """The binary32 rounding midpoint nearest to a positive value (the quantum boundary is far)."""
    q = max(int(mpmath.floor(mpmath.log(value, 2))) - 23, -149)
    # value / 2^q is in [2^23, 2^24) for normal values, [0, 2^23) for subnormal ones
    scaled = mpmath.ldexp(value, -q)
    k = int(mpmath.floor(scaled))
    return (Fraction(k) + Fraction(1, 2)) * Fraction(2) ** q


def confirm(bits: int) -> dict[str, Any] | None:
    """The JSON entry for z = bits when exp(z) is within 2^MARGIN_LOG2 of a midpoint, else None."""
    z = decode32(bits)
    with mpmath.workprec(CONFIRM_PREC):
        value = mpmath.exp(mpmath.mpf(z.numerator) / z.denominator)
        mid = nearest_midpoint(value)
        mid_mp = mpmath.mpf(mid.numerator) / mid.denominator
        rel = abs(value - mid_mp) / mid_mp
        if rel > mpmath.ldexp(1, MARGIN_LOG2):
            return None
        e_bits = exp32(bits)
        # the 256-bit value decides the rounding as well: it is at least 2^-200 away from mid
        side = "above" if value > mid_mp else "below"
        lower = round_binary32(mid - mid / (1 << 100))
        upper = round_binary32(mid + mid / (1 << 100))
        if e_bits != (upper if side == "above" else lower):
            raise AssertionError(f"exp32(0x{bits:08x}) = 0x{e_bits:08x} disagrees with the 256-bit value")
        rel_log2 = mpmath.log(rel, 2) if rel else mpmath.mpf("-inf")
        return {
            "z": f"{bits:08x}",
            "e": f"{e_bits:08x}",
            "mid": f"{round_binary64(mid):016x}",
            "rel_distance_log2": mpmath.nstr(rel_log2, 6),
            "side": side,
        }


def check_numpy_exp(samples: int = 200_000) -> float:
    """log2 of the largest relative error of np.exp (binary64) over a spread of z in [-104, 0]."""
    rng = np.random.default_rng(20240601)
    wide = rng.integers(FIRST, LAST + 1, size=samples, dtype=np.uint64)
    nontrivial = rng.integers(0xB3000000, LAST + 1, size=samples, dtype=np.uint64)
    bits = np.concatenate([wide, nontrivial]).astype(np.uint32)
    z = bits.view(np.float32).astype(np.float64)
    e = np.exp(z)
    worst = mpmath.mpf(0)
    with mpmath.workprec(120):
        for zi, ei in zip(z.tolist(), e.tolist(), strict=True):
            exact = mpmath.exp(mpmath.mpf(zi))
            worst = max(worst, abs(mpmath.mpf(ei) - exact) / exact)
    return float(mpmath.log(worst, 2)) if worst else -math.inf


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--first", type=lambda s: int(s, 16), default=FIRST, help="first bits (hex)")
    parser.add_argument("--last", type=lambda s: int(s, 16), default=LAST, help="last bits (hex), inclusive")
    args = parser.parse_args(argv)

    t0 = time.time()
    worst = check_numpy_exp()
    print(f"np.exp largest relative error on the sample: 2^{worst:.2f}", flush=True)
    if worst >= NUMPY_ERROR_LIMIT_LOG2:
        print("np.exp is not accurate enough for the screening margin; stopping", file=sys.stderr)
        return 1

    chunks = [(s, min(s + CHUNK, args.last + 1)) for s in range(args.first, args.last + 1, CHUNK)]
    screened: list[int] = []
    with multiprocessing.Pool(args.workers) as pool:
        for done, found in enumerate(pool.imap_unordered(_screen_task, chunks), start=1):
            screened.extend(found)
            if done % 16 == 0 or done == len(chunks):
                rate = done * CHUNK / max(time.time() - t0, 1e-9)
                print(
                    f"screened {done}/{len(chunks)} chunks, {len(screened)} candidates, "
                    f"{rate / 1e6:.1f} M z/s, {time.time() - t0:.0f} s",
                    flush=True,
                )
    screened.sort()
    t_screen = time.time() - t0

    entries = [entry for bits in screened if (entry := confirm(bits)) is not None]
    t_total = time.time() - t0
    print(f"confirmed {len(entries)} of {len(screened)}; screen {t_screen:.0f} s, total {t_total:.0f} s")

    doc = {
        "description": (
            "Every binary32 z in [-104, 0] (bits 0x80000000..0xC2D00000) whose exact exp(z) lies within "
            "2^-47 (relative to the midpoint) of a binary32 rounding midpoint (normal, subnormal, 2^-150). "
            "z and e are binary32 bits (e = RN32(exp(z)), clause 5.3), mid is the midpoint as binary64 bits "
            "(exact), rel_distance_log2 = log2(|exp(z) - mid| / mid), side tells whether exp(z) is above "
            "or below mid."
        ),
        "margin_log2": MARGIN_LOG2,
        "screen_margin_log2": SCREEN_LOG2,
        "range": [f"{args.first:08x}", f"{args.last:08x}"],
        "screened": len(screened),
        "count": len(entries),
        "generator": "vectors/search_midpoints.py (numpy binary64 screen, mpmath 256-bit confirmation)",
        "numpy_exp_max_rel_error_log2": round(worst, 2),
        "entries": entries,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

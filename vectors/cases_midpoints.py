"""golden_exp_midpoints.json: every z of vectors/data/exp_near_midpoints.json, reached exactly (clause 5.3).

With tau = 1 and a* = +0 at ID 0 (m = +0), a logit l = z gives d = RN32(z - 0) = z and
z = RN32(d / 1) = z, so each listed z is the exact argument of exp. 31 listed z per row (V = 32).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from dyadic24.api import RowTrace
from dyadic24.vectors.case import NINF, ONE, PZERO, U32, Case, Check, case, row

MIDPOINTS = Path(__file__).resolve().parent / "data" / "exp_near_midpoints.json"
PER_ROW = 31


def listed_z() -> list[int]:
    """The z bit patterns of the midpoint list, in file order (z <= 0 only: clause 5.2 gives d <= 0)."""
    data = json.loads(MIDPOINTS.read_text())
    zs = [int(e["z"], 16) for e in data["entries"]]
    return [z for z in zs if z == PZERO or z >> 31]


def _reached(expected: list[int]) -> Check:
    def check(c: Case, traces: list[RowTrace]) -> None:
        got = {z for t in traces for z in t.z_bits}
        missing = [z for z in expected if z not in got]
        if missing:
            raise AssertionError(f"{c.comment!r}: z {[hex(z) for z in missing]} not reached")

    return check


def _row(chunk: list[int], reverse: bool) -> U32:
    """a* = +0 at ID 0 (or at ID 31, reversed), the listed z at the other IDs, -inf padding."""
    bits = np.full(PER_ROW + 1, NINF, dtype=np.uint32)
    bits[0] = PZERO
    bits[1 : 1 + len(chunk)] = chunk
    return bits[::-1].copy() if reverse else bits


def cases() -> list[Case]:
    """Each chunk of 31 listed z twice: after a* (ID 0) and in reverse ID order before it (ID 31), so
    that every z sits in two different tree slots (clause 6.1)."""
    zs = listed_z()
    out = []
    for first in range(0, len(zs), PER_ROW):
        chunk = zs[first : first + PER_ROW]
        for reverse in (False, True):
            where = "a* = ID 31, z in reverse order" if reverse else "a* = ID 0"
            out.append(
                case(
                    f"near-midpoint z {first}..{first + len(chunk) - 1} of the midpoint list, {where}",
                    ["exp_near_midpoint", "tau_one"],
                    row(_row(chunk, reverse), ONE),
                    tau_bits=ONE,
                    checks=[_reached(chunk)],
                )
            )
    return out

"""golden_exp_midpoints.json: every z of vectors/data/exp_near_midpoints.json, reached exactly (clause 5.3).

With tau = 1 and a* = +0 at ID 0 (m = +0), a logit l = z gives d = RN32(z - 0) = z and
z = RN32(d / 1) = z, so each listed z is the exact argument of exp. 31 listed z per row (V = 32),
four rows per vector.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from dyadic24.api import RowTrace
from dyadic24.vectors.case import ONE, PZERO, Case, case, row

MIDPOINTS = Path(__file__).resolve().parent / "data" / "exp_near_midpoints.json"
PER_ROW = 31
ROWS_PER_VECTOR = 4


def listed_z() -> list[int]:
    """The z bit patterns of the midpoint list, in file order (z <= 0 only: clause 5.2 gives d <= 0)."""
    data = json.loads(MIDPOINTS.read_text())
    zs = [int(e["z"], 16) for e in data["entries"]]
    return [z for z in zs if z == PZERO or z >> 31]


def _reached(expected: list[list[int]]) -> object:
    def check(c: Case, traces: list[RowTrace]) -> None:
        for want, t in zip(expected, traces, strict=True):
            got = set(t.z_bits)
            missing = [z for z in want if z not in got]
            if missing:
                raise AssertionError(f"{c.comment!r}: z {[hex(z) for z in missing]} not reached")

    return check


def cases() -> list[Case]:
    zs = listed_z()
    chunks = [zs[i : i + PER_ROW] for i in range(0, len(zs), PER_ROW)]
    out = []
    for v in range(0, len(chunks), ROWS_PER_VECTOR):
        group = chunks[v : v + ROWS_PER_VECTOR]
        rows = []
        for chunk in group:
            bits = np.full(PER_ROW + 1, 0xFF800000, dtype=np.uint32)  # -inf pads the last row
            bits[0] = PZERO
            bits[1 : 1 + len(chunk)] = chunk
            rows.append(row(bits, ONE))
        first = v * PER_ROW
        out.append(
            case(
                f"near-midpoint z {first}..{first + sum(len(c) for c in group) - 1} of exp_near_midpoints.json",
                ["exp_near_midpoint", "tau_one"],
                rows,
                tau_bits=ONE,
                checks=[_reached(group)],  # type: ignore[list-item]
            )
        )
    return out

"""The inputs vectors/search.py found (vectors/found.json), typed for the case modules.

Searches that need many evaluations (numpy, the fast reference's exp) run once and write
found.json; regeneration reads it, so `dyadic24 vectors regen` needs neither the searches nor
numpy's exp, and the expected outputs come from the exact reference only (vectors/generate.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

FOUND_PATH = Path(__file__).resolve().parent / "found.json"

Edges = dict[str, tuple[int, int, list[int], list[int]]]


@dataclass(frozen=True)
class Found:
    pairs_to_one: list[tuple[int, int]]  # (z_b, z_c): RN32(exp z_b) + RN32(exp z_c) == 1
    rows: dict[str, list[list[int]]]  # named V = 32 rows of binary32 bits (see search.py for each)
    remainder_max: list[tuple[int, list[int]]]  # (R, [0, x * 31] row bits)
    draw_edges: Edges  # name -> (seed, round, positions putting u on a first ticket, ... on a last)
    draw_edges_by_seed: Edges  # name -> (position, round, seeds ..., seeds ...)
    u_extremes: tuple[int, int, dict[int, int]]  # (seed, round, {u: position drawing it})
    extra: dict[str, Any]  # the other searches' records, by name (search.py says what each holds)


def _bits(row: list[str]) -> list[int]:
    return [int(w, 16) for w in row]


def _edges(data: dict[str, Any], fixed: str, varied: str) -> Edges:
    return {
        name: (
            int(e[fixed]),
            int(e["round"]),
            [int(x) for x in e["first" + varied]],
            [int(x) for x in e["last" + varied]],
        )
        for name, e in data.items()
    }


@cache
def found() -> Found:
    data: dict[str, Any] = json.loads(FOUND_PATH.read_text(encoding="utf-8"))
    u = data["uExtremes"]
    known = {"description", "pairsToOne", "rows", "remainderMax", "drawEdges", "drawEdgesBySeed", "uExtremes"}
    return Found(
        pairs_to_one=[(int(a, 16), int(b, 16)) for a, b in data["pairsToOne"]],
        rows={name: [_bits(r) for r in rows] for name, rows in data["rows"].items()},
        remainder_max=[
            (int(r["R"]), [int(r["row"][0], 16)] + [int(r["row"][1], 16)] * 31) for r in data["remainderMax"]
        ],
        draw_edges=_edges(data["drawEdges"], "seed", "Positions"),
        draw_edges_by_seed=_edges(data["drawEdgesBySeed"], "position", "Seeds"),
        u_extremes=(int(u["seed"]), int(u["round"]), {int(k): int(v) for k, v in u["positions"].items()}),
        extra={k: v for k, v in data.items() if k not in known},
    )

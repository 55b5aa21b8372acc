"""Searches for the inputs of the golden vectors that need many evaluations.

Run once: ``python -m dyadic24.vectors.search --write`` (or ``--only NAME ...`` to rerun some searches).

The searches use numpy (binary32 and binary64 arithmetic is IEEE round-to-nearest-even there) and the
fast reference's correctly rounded exp (``reference/fast_exp.exp32_np``) to FIND inputs; their results
are committed in ``found.json`` so that ``dyadic24 vectors regen`` needs neither numpy's exp nor these
searches, and the expected outputs are computed by the exact reference only. The generator re-checks
every searched property on the exact reference's trace (``vectors/checks.py``). Every search is seeded
(Philox words), so a rerun prints the same values.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from dyadic24.reference.fast_exp import exp32_np
from dyadic24.reference.philox import draw_block_np
from dyadic24.vectors.rows import unit, words

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
U32 = npt.NDArray[np.uint32]
TICKETS = 1 << 24
TAU07 = np.uint32(0x3F333333).view(np.float32)


# ---------------------------------------------------------------- the rule on V = 32 rows (all in C)


def tree64(slots: F64) -> F64:
    """Clause 6.2 on [n, 32] binary64 slots."""
    level = slots
    while level.shape[1] > 1:
        level = level[:, 0::2] + level[:, 1::2]
    return level[:, 0]


def allocate(slots: F64, s: F64, a_slot: I64) -> I64:
    """Clauses 7.1-7.3: tickets per slot."""
    p = slots / s[:, None]
    c = np.floor(p * TICKETS).astype(np.int64)
    t = c.copy()
    t[np.arange(len(s)), a_slot] += TICKETS - c.sum(axis=1)
    return t


def pipeline32(logits: F32, tau: np.float32) -> tuple[F32, F32, F64, F64, I64, I64]:
    """V = 32 rows without NaN/+inf: (z, e, slots, S, a*, tickets)."""
    ids = np.arange(32)
    key = np.where(np.signbit(logits), -np.abs(logits), np.abs(logits))
    a_slot = np.argmax(key == key.max(axis=1, keepdims=True), axis=1)
    m = logits[np.arange(len(logits)), a_slot]
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        d = (logits - m[:, None]).astype(np.float32)
        z = (d / tau).astype(np.float32)
    e = exp32_np(z)
    slots = e.astype(np.float64)
    s = tree64(slots)
    del ids
    return z, e, slots, s, a_slot, allocate(slots, s, a_slot)


def f32_from_bits(bits: U32) -> F32:
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def bits_of(a: F32) -> list[int]:
    return [int(v) for v in np.asarray(a, dtype=np.float32).view(np.uint32).tolist()]


# ---------------------------------------------------------------- pairs e_b + e_c = 1


def pairs_to_one(count: int = 6) -> list[tuple[int, int]]:
    """(z_b, z_c) binary32 bits with RN32(exp z_b) + RN32(exp z_c) == 1 exactly and e_b's last bit even.

    Then S = 1 + e_b + e_c = 2 exactly and p_b * 2^24 = e_b * 2^23 is an integer: a one-ulp change of S
    moves the count of b (clause 7.2).
    """
    zb = f32_from_bits(np.arange(0xBE800000, 0xBE800000 + 200000, 97, dtype=np.uint64).astype(np.uint32))
    eb = exp32_np(zb)
    ok = (eb.view(np.uint32) & 1) == 0
    zb, eb = zb[ok], eb[ok]
    ec = (np.float32(1.0) - eb).astype(np.float32)
    assert np.all(ec.astype(np.float64) + eb.astype(np.float64) == 1.0)
    base = np.log(ec.astype(np.float64)).astype(np.float32).view(np.uint32).astype(np.int64)
    out = []
    for i in range(len(zb)):
        for k in (0, 1, -1, 2, -2, 3, -3):
            zc = np.array([base[i] + k], dtype=np.int64).astype(np.uint32).view(np.float32)
            if exp32_np(zc)[0] == ec[i]:
                out.append((bits_of(zb[i : i + 1])[0], bits_of(zc)[0]))
                break
        if len(out) >= count:
            break
    return out


# ---------------------------------------------------------------- summation orders (clause 6.2)


def alt_sums(slots: F64) -> dict[str, F64]:
    seq = np.add.accumulate(slots, axis=1)[:, -1]
    desc = np.add.accumulate(-np.sort(-slots, axis=1), axis=1)[:, -1]
    nps = np.array([np.sum(r) for r in slots])
    b32 = np.add.accumulate(slots.astype(np.float32), axis=1, dtype=np.float32)[:, -1].astype(np.float64)
    return {"sequential": seq, "descending": desc, "numpy": nps, "binary32": b32}


def compacted(slots: F64) -> F64:
    """Nonzero slots moved to the front (keeping their order): the layout D6 forbids."""
    out = np.zeros_like(slots)
    for i, r in enumerate(slots):
        nz = r[r != 0]
        out[i, : len(nz)] = nz
    return out


def tree_rows(pairs: list[tuple[int, int]], trials: int = 20000) -> dict[str, list[list[int]]]:
    """V = 32 logit rows (tau = 1, m = 0, so z = l) where another summation changes S and the tickets."""
    found: dict[str, list[list[int]]] = {
        k: [] for k in ("sequential", "descending", "numpy", "binary32", "mask")
    }
    w = words("tree-search", trials * 40).reshape(trials, 40)
    perm = np.argsort(w[:, :32], axis=1, kind="stable")
    n_tiny = 1 + (w[:, 32] % 29).astype(np.int64)
    tiny_z = (-41.0 + 8.0 * unit("tree-search-tiny", trials * 32).reshape(trials, 32)).astype(np.float32)
    pair = (w[:, 33] % len(pairs)).astype(np.int64)
    logits = np.full((trials, 32), -np.inf, dtype=np.float32)
    rows = np.arange(trials)
    zb = f32_from_bits(np.array([p[0] for p in pairs], dtype=np.uint32))
    zc = f32_from_bits(np.array([p[1] for p in pairs], dtype=np.uint32))
    logits[rows, perm[:, 0]] = 0.0
    logits[rows, perm[:, 1]] = zb[pair]
    logits[rows, perm[:, 2]] = zc[pair]
    for j in range(29):
        sel = n_tiny > j
        logits[rows[sel], perm[sel, 3 + j]] = tiny_z[sel, j]
    _, _, slots, s, a_slot, t = pipeline32(logits, np.float32(1.0))
    alts = alt_sums(slots)
    alts["mask"] = tree64(compacted(slots))
    for name, alt in alts.items():
        diff = alt != s
        for i in np.flatnonzero(diff):
            t_alt = allocate(slots[i : i + 1], alt[i : i + 1], a_slot[i : i + 1])[0]
            if np.any(t_alt != t[i]) and len(found[name]) < 4:
                found[name].append(bits_of(logits[i]))
    return found


# ---------------------------------------------------------------- counts near integers (clause 7.2)


def random_rows(name: str, n: int, spread: float = 6.0) -> F32:
    u = unit(name, n * 32 * 2).reshape(n, 32, 2).sum(axis=2) - 1.0
    out: F32 = (spread * u).astype(np.float32)
    return out


def near_integer_rows(n: int = 100000, want: int = 6) -> list[list[int]]:
    """Default tau: some non-a* p * 2^24 within 2^-20 of an integer, not on it."""
    out: list[list[int]] = []
    logits = random_rows("near-int", n)
    for start in range(0, n, 20000):
        chunk = logits[start : start + 20000]
        _, _, slots, s, a_slot, _ = pipeline32(chunk, TAU07)
        x = slots / s[:, None] * TICKETS
        dist = np.abs(x - np.round(x))
        dist[np.arange(len(chunk)), a_slot] = 1.0
        hit = np.any((dist <= 2.0**-20) & (dist > 0), axis=1)
        for i in np.flatnonzero(hit):
            if len(out) < want:
                out.append(bits_of(chunk[i]))
    return out


def remainder_max_rows(count: int = 3) -> list[tuple[int, list[int]]]:
    """Rows [0, x, ..., x] (31 equal logits x < 0, tau = 1) with the largest remainder R."""
    zs = f32_from_bits(np.arange(0xBF000000, 0xBF000000 + 4000000, 3, dtype=np.uint64).astype(np.uint32))
    e = exp32_np(zs).astype(np.float64)
    # The tree of [1, e x 31]: level 1 = [1 + e, 2e x 15], then exact doublings except slot 0's path.
    s = ((((1.0 + e) + 2 * e) + 4 * e) + 8 * e) + 16 * e
    p_a = 1.0 / s
    p_x = e / s
    c_a = np.floor(p_a * TICKETS)
    c_x = np.floor(p_x * TICKETS)
    r = TICKETS - c_a - 31 * c_x
    best = np.argsort(-r, kind="stable")[: count * 4]
    out = []
    for i in best:
        logits = [0] + [bits_of(zs[i : i + 1])[0]] * 31
        out.append((int(r[i]), logits))
        if len(out) >= count:
            break
    return out


# ---------------------------------------------------------------- wrong arithmetic variants (clause 5)


def variant_rows(n: int = 40000, want: int = 4) -> dict[str, list[list[int]]]:
    """Default-tau rows where one wrong step changes the tickets."""
    logits = random_rows("variants", n)
    key = np.where(np.signbit(logits), -np.abs(logits), np.abs(logits))
    a_slot = np.argmax(key == key.max(axis=1, keepdims=True), axis=1)
    m = logits[np.arange(n), a_slot]
    _, _, slots, s, _, t = pipeline32(logits, TAU07)
    recip = np.float32(np.float32(1.0) / TAU07)
    d32 = (logits - m[:, None]).astype(np.float32)
    variants: dict[str, F32] = {}
    variants["tau_division"] = exp32_np((d32 * recip).astype(np.float32))
    d64 = logits.astype(np.float64) - m[:, None].astype(np.float64)
    variants["difference_rounding"] = exp32_np((d64 / np.float64(TAU07)).astype(np.float32))
    log2e = np.float32(1.4426950408889634)
    with np.errstate(under="ignore"):
        z = (d32 / TAU07).astype(np.float32)
        variants["exp_via_exp2"] = np.exp2((z * log2e).astype(np.float32).astype(np.float64)).astype(
            np.float32
        )
    out: dict[str, list[list[int]]] = {k: [] for k in [*variants, "p_binary32"]}
    for name, e_alt in variants.items():
        sl = e_alt.astype(np.float64)
        t_alt = allocate(sl, tree64(sl), a_slot)
        for i in np.flatnonzero(np.any(t_alt != t, axis=1)):
            if len(out[name]) < want:
                out[name].append(bits_of(logits[i]))
    p32 = (slots.astype(np.float32) / s.astype(np.float32)[:, None]).astype(np.float32)
    c32 = np.floor(p32.astype(np.float64) * TICKETS).astype(np.int64)
    t32 = c32.copy()
    t32[np.arange(n), a_slot] += TICKETS - c32.sum(axis=1)
    for i in np.flatnonzero(np.any(t32 != t, axis=1)):
        if len(out["p_binary32"]) < want:
            out["p_binary32"].append(bits_of(logits[i]))
    return out


# ---------------------------------------------------------------- draws (clause 9)


def edge_positions(
    seed: int, round: int, tickets: list[int], first: bool, want: int = 3, start: int = 0, span: int = 1 << 22
) -> list[int]:
    """Positions whose u is the first (or last) ticket of some interval of ``tickets`` (ID order)."""
    ends = np.cumsum(np.array(tickets, dtype=np.int64))
    starts = ends - np.array(tickets, dtype=np.int64)
    targets = starts if first else ends - 1
    pos = np.arange(start, start + span, dtype=np.uint64)
    n = len(pos)
    x = draw_block_np(np.full(n, seed, dtype=np.uint64), np.full(n, round, dtype=np.uint64), pos)
    u = (x[0] >> np.uint32(8)).astype(np.int64)
    hit = np.isin(u, targets)
    return [int(v) for v in pos[hit][:want]]


def u_value_positions(seed: int, round: int, values: list[int], span: int = 1 << 24) -> dict[int, int]:
    """For each wanted u, the smallest position in [0, span) that draws it."""
    out: dict[int, int] = {}
    for start in range(0, span, 1 << 22):
        pos = np.arange(start, start + (1 << 22), dtype=np.uint64)
        n = len(pos)
        x = draw_block_np(np.full(n, seed, dtype=np.uint64), np.full(n, round, dtype=np.uint64), pos)
        u = (x[0] >> np.uint32(8)).astype(np.int64)
        for v in values:
            if v not in out:
                idx = np.flatnonzero(u == v)
                if idx.size:
                    out[v] = int(pos[idx[0]])
        if len(out) == len(values):
            break
    return out


def seed_edges(
    position: int, round: int, tickets: list[int], first: bool, want: int = 2, span: int = 1 << 22
) -> list[int]:
    """Seeds whose u (at a fixed position and round) is the first (or last) ticket of an interval."""
    ends = np.cumsum(np.array(tickets, dtype=np.int64))
    targets = ends - np.array(tickets, dtype=np.int64) if first else ends - 1
    seeds = np.arange(span, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)  # spread over all 64 bits
    n = len(seeds)
    x = draw_block_np(seeds, np.full(n, round, dtype=np.uint64), np.full(n, position, dtype=np.uint64))
    u = (x[0] >> np.uint32(8)).astype(np.int64)
    return [int(v) for v in seeds[np.isin(u, targets)][:want]]


def draw_searches() -> tuple[
    dict[str, tuple[int, int, list[int], list[int]]],
    dict[str, tuple[int, int, list[int], list[int]]],
    tuple[int, int, dict[int, int]],
]:
    from dyadic24.reference.exact import exact_row
    from dyadic24.vectors.cases_draw import DRAW_ROWS, EDGE_ROUND, EDGE_SEED

    by_pos = {}
    by_seed = {}
    for name, make in DRAW_ROWS.items():
        trace = exact_row([int(v) for v in make()], 0x3F800000, 0, 0, 0, 0x3F333333)
        tickets = list(trace.support_tickets)
        firsts = edge_positions(EDGE_SEED, EDGE_ROUND, tickets, True, want=2)
        lasts = edge_positions(EDGE_SEED, EDGE_ROUND, tickets, False, want=2)
        by_pos[name] = (EDGE_SEED, EDGE_ROUND, firsts, lasts)
        if name == "small":
            by_seed[name] = (
                12345,
                0,
                seed_edges(12345, 0, tickets, True),
                seed_edges(12345, 0, tickets, False),
            )
    extremes = u_value_positions(EDGE_SEED, 0, [0, TICKETS - 1], span=1 << 27)
    return by_pos, by_seed, (EDGE_SEED, 0, extremes)


def _hex(values: list[int]) -> list[str]:
    return [f"{v:08x}" for v in values]


def _edges(d: dict[str, tuple[int, int, list[int], list[int]]], fixed: str, varied: str) -> dict[str, Any]:
    return {
        name: {
            fixed: str(a),
            "round": str(b),
            "first" + varied: [str(x) for x in c],
            "last" + varied: [str(x) for x in e],
        }
        for name, (a, b, c, e) in d.items()
    }


def base_records() -> dict[str, Any]:
    """The records of the searches above, in found.json's layout (vectors/found_inputs.py reads it)."""
    pairs = pairs_to_one()
    rows = {f"tree_{name}": [_hex(r) for r in found_rows] for name, found_rows in tree_rows(pairs).items()}
    rows["near_integer"] = [_hex(r) for r in near_integer_rows()]
    rows.update({f"variant_{name}": [_hex(r) for r in v] for name, v in variant_rows().items()})
    by_pos, by_seed, (u_seed, u_round, u_positions) = draw_searches()
    return {
        "pairsToOne": [_hex([a, b]) for a, b in pairs],
        "rows": rows,
        "remainderMax": [{"R": r, "row": _hex(row[:2])} for r, row in remainder_max_rows()],
        "drawEdges": _edges(by_pos, "seed", "Positions"),
        "drawEdgesBySeed": _edges(by_seed, "position", "Seeds"),
        "uExtremes": {
            "seed": str(u_seed),
            "round": str(u_round),
            "positions": {str(k): str(v) for k, v in u_positions.items()},
        },
    }


DESCRIPTION = (
    "Inputs found by vectors/search.py (`python -m dyadic24.vectors.search --write`); the case modules read "
    "them (vectors/found_inputs.py). Generated: do not edit by hand; the generator re-checks each input's "
    "property on the exact reference's trace (vectors/checks.py). Binary32 values are 8 hex digits of the "
    "bit pattern, uint64 values decimal strings."
)


def write_found(records: dict[str, Any]) -> None:
    """Merge ``records`` (top-level keys of found.json) into the file and rewrite it."""
    from dyadic24.vectors import jsonfmt
    from dyadic24.vectors.found_inputs import FOUND_PATH

    data: dict[str, Any] = json.loads(FOUND_PATH.read_text()) if FOUND_PATH.is_file() else {}
    data.update(records)
    data["description"] = DESCRIPTION
    FOUND_PATH.write_bytes(jsonfmt.document(data))


# Other searches, by name: each returns found.json top-level records (vectors/search_edges.py and others).
EXTRA_SEARCHES: dict[str, Callable[[], dict[str, Any]]] = {}


def _register_extra() -> None:
    """Add the searches of vectors/search_edges.py (imported here, not at the top: it imports this module)."""
    from dyadic24.vectors.search_edges import SEARCHES

    for name, func in SEARCHES.items():
        EXTRA_SEARCHES.setdefault(name, func)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dyadic24.vectors.search", description=__doc__)
    parser.add_argument(
        "--write", action="store_true", help="run every search and rewrite vectors/found.json"
    )
    parser.add_argument(
        "--only", nargs="+", metavar="NAME", help="rerun only these searches ('base' or an extra one)"
    )
    args = parser.parse_args(argv)
    _register_extra()
    names = args.only or ["base", *EXTRA_SEARCHES]
    unknown = [n for n in names if n != "base" and n not in EXTRA_SEARCHES]
    if unknown:
        print(f"unknown search(es) {unknown}; known: base, {', '.join(EXTRA_SEARCHES)}", file=sys.stderr)
        return 2
    records: dict[str, Any] = {}
    for name in names:
        records.update(base_records() if name == "base" else EXTRA_SEARCHES[name]())
    if args.write or args.only:
        write_found(records)
        print(f"updated vectors/found.json: {sorted(records)}")
    else:
        print(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

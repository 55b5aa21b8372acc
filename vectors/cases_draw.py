"""golden_draw.json: Philox keying and the draw (clauses 0.4, 9.1-9.5, 10.1-10.2)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dyadic24.api import RowTrace
from dyadic24.reference.philox import draw_block
from dyadic24.vectors.case import NINF, ONE, Case, case, f32, row
from dyadic24.vectors.checks import any_row, philox_double_changes_token, u_on_interval_edge
from dyadic24.vectors.rows import bell, uniform

U32 = np.ndarray
M64 = (1 << 64) - 1
M32 = 0xFFFFFFFF


def uniform32() -> U32:
    """32 equal logits: 2^19 tickets each, so the token is u >> 19 and shows the draw's top bits."""
    return np.full(32, f32(-2.5), dtype=np.uint32)


def bell_row() -> U32:
    return bell("draw-bell", 32)


def small_tickets_row() -> U32:
    """A row with many small intervals (a few tickets each) next to large ones."""
    bits = uniform("draw-small", 48, -14.0, -9.0)
    bits[[0, 9, 20, 31, 47]] = [f32(0.0), f32(-0.5), f32(-1.0), f32(-1.5), f32(-2.0)]
    return bits


DRAW_ROWS = {"uniform32": uniform32, "bell": bell_row, "small": small_tickets_row}
EDGE_SEED = 0x5EED_0000_0000_0001
EDGE_ROUND = 3


def u_is(u: int) -> Callable[[RowTrace], bool]:
    return lambda t: t.u == u


def _token(seed: int, rnd: int, pos: int) -> int:
    return (draw_block(seed, rnd, pos)[0] >> 8) >> 19


def _distinct_pair(base: tuple[int, int, int], which: int, alt: int) -> tuple[int, int, int]:
    """Change the high 32 bits of seed/round/position (index ``which``) until the uniform-32 token differs."""
    for k in range(1, 1000):
        cand = list(base)
        cand[which] = (cand[which] & M32) | (((alt + k) & M32) << 32)
        if _token(*cand) != _token(*base):
            return cand[0], cand[1], cand[2]
    raise AssertionError("no distinct pair")


def _different_tokens(case_: Case, traces: list[RowTrace]) -> None:
    if len({t.token for t in traces}) < 2:
        raise AssertionError(f"{case_.comment!r}: the rows draw the same token")


def high_bits() -> list[Case]:
    out = []
    names = ("seed", "round", "position")
    for which, name in enumerate(names):
        base = (0x0000_0000_1234_5678, 0x0000_0000_0000_0007, 0x0000_0000_0000_0100)
        hi = _distinct_pair(base, which, 0xA5A5_0000)
        rows = [row(uniform32(), ONE, seed=s, round=n, position=p) for s, n, p in (base, hi)]
        out.append(
            case(
                f"two rows whose {name}s differ only in the high 32 bits (uniform 32-way row)",
                [f"{name}_high_bits"],
                rows,
                checks=[_different_tokens],
            )
        )
        swapped = list(base)
        swapped[which] = ((base[which] & M32) << 32) | (base[which] >> 32)
        out.append(
            case(
                f"{name} with its 32-bit words swapped against the plain one",
                [f"{name}_high_bits"],
                [
                    row(uniform32(), ONE, seed=base[0], round=base[1], position=base[2]),
                    row(uniform32(), ONE, seed=swapped[0], round=swapped[1], position=swapped[2]),
                ],
            )
        )
        vals = [0xFFFF_FFFF_0000_0000, 0x8000_0000_0000_0000, 0xFEDC_BA98_7654_3210]
        rows = []
        for v in vals:
            args = list(base)
            args[which] = v
            rows.append(row(bell_row(), ONE, seed=args[0], round=args[1], position=args[2]))
        out.append(
            case(f"{name}s 0xFFFFFFFF00000000, 2^63 and 0xFEDCBA9876543210", [f"{name}_high_bits"], rows)
        )
    return out


def extremes() -> list[Case]:
    out = []
    combos = [(0, 0, 0), (M64, M64, M64), (M64, 0, 0), (0, M64, 0), (0, 0, M64), (1, 1, 1)]
    out.append(
        case(
            "seed, round, position 0 and 2^64 - 1 in all corners",
            ["philox_extremes"],
            [row(uniform32(), ONE, seed=s, round=n, position=p) for s, n, p in combos],
        )
    )
    out.append(
        case(
            "the same corners on a bell row",
            ["philox_extremes"],
            [row(bell_row(), ONE, seed=s, round=n, position=p) for s, n, p in combos],
        )
    )
    out.append(
        case(
            "seed 2^64 - 1, round 2^32, position 2^32 - 1",
            ["philox_extremes", "seed_high_bits"],
            row(bell_row(), ONE, seed=M64, round=1 << 32, position=M32),
        )
    )
    return out


def edges() -> list[Case]:
    from dyadic24.vectors.found_inputs import found

    out = []
    for name, (seed, rnd, firsts, lasts) in found().draw_edges.items():
        bits = DRAW_ROWS[name]()
        for first, positions in ((True, firsts), (False, lasts)):
            what = "first" if first else "last"
            for pos in positions:
                out.append(
                    case(
                        f"{name} row: u is the {what} ticket of the chosen interval (position {pos})",
                        [f"draw_{what}_ticket"],
                        row(bits, ONE, seed=seed, round=rnd, position=pos),
                        checks=[any_row(u_on_interval_edge(first), f"u on the {what} ticket")],
                    )
                )
    for name, (pos, rnd, firsts, lasts) in found().draw_edges_by_seed.items():
        bits = DRAW_ROWS[name]()
        for first, seeds in ((True, firsts), (False, lasts)):
            what = "first" if first else "last"
            for s in seeds:
                out.append(
                    case(
                        f"{name} row: seed {s} puts u on the {what} ticket of the chosen interval",
                        [f"draw_{what}_ticket"],
                        row(bits, ONE, seed=s, round=rnd, position=pos),
                        checks=[any_row(u_on_interval_edge(first), f"u on the {what} ticket")],
                    )
                )
    u_seed, u_round, u_positions = found().u_extremes
    for u, u_pos in sorted(u_positions.items()):
        for name, make in DRAW_ROWS.items():
            out.append(
                case(
                    f"u = {u} (position {u_pos}) on the {name} row",
                    ["draw_u_extreme"],
                    row(make(), ONE, seed=u_seed, round=u_round, position=u_pos),
                    checks=[any_row(u_is(u), f"u = {u}")],
                )
            )
    return out


def _interval_order(trace: RowTrace) -> bool:
    """Intervals laid out in the C order (value descending) would pick another token."""
    if trace.path != "sampled" or trace.u is None:
        return False
    by_id = dict(zip(trace.support_ids, trace.support_tickets, strict=True))
    start = 0
    for tid in trace.order:
        t = by_id.get(tid, 0)
        if start <= trace.u < start + t:
            return tid != trace.token
        start += t
    raise AssertionError("u outside the support")


def _ticket_bits(trace: RowTrace) -> bool:
    """u from the low 24 bits of x[0], or from x[1], would pick another token."""
    if trace.path != "sampled" or trace.block is None:
        return False

    def pick(u: int) -> int:
        start = 0
        for tid, t in zip(trace.support_ids, trace.support_tickets, strict=True):
            if start <= u < start + t:
                return tid
            start += t
        raise AssertionError("u outside")

    x = trace.block
    return pick(x[0] & 0xFFFFFF) != trace.token and pick(x[1] >> 8) != trace.token


def order_and_bits() -> list[Case]:
    out = []
    for n in range(4):
        bits = bell(f"interval-{n}", 40, scale=1.0)
        bits[[3, 17]] = NINF
        out.append(
            case(
                f"bell row {n}: ascending-ID intervals pick another token than the C order would",
                ["interval_order", "ticket_bits"],
                row(bits, ONE, seed=1000 + n, round=0, position=n),
                checks=[
                    any_row(_interval_order, "interval order matters"),
                    any_row(_ticket_bits, "ticket bits matter"),
                ],
            )
        )
    return out


def depth() -> list[Case]:
    out = []
    for n, (d, seed, rnd, p0) in enumerate(
        ((4, 77, 5, 1000), (8, M64 - 5, 1 << 33, (1 << 32) - 3), (3, 0, 0, 0))
    ):
        rows = [row(bell(f"depth-{n}-{i}", 64), ONE, seed=seed, round=rnd, position=p0 + i) for i in range(d)]
        out.append(
            case(
                f"a proposal of depth {d}: positions {p0}..{p0 + d - 1}, one seed and round",
                ["consecutive_positions"] + (["position_high_bits"] if p0 + d > 1 << 32 else []),
                rows,
                clauses=["10.1", "10.2"],
            )
        )
    return out


def philox_double() -> list[Case]:
    """Uniform 32-way rows whose key or block changes when Philox's products go through binary64
    (vectors/search_edges.py, record philoxMulhiDouble): the token is u >> 19, so it shows the draw."""
    from dyadic24.vectors.found_inputs import found

    out = []
    record = found().extra["philoxMulhiDouble"]
    for part, key_differs in (("key", True), ("block", False)):
        for hit in record[part]:
            seed, rnd, pos = int(hit["seed"]), int(hit["round"]), int(hit["position"])
            what = "proposal key" if key_differs else "draw block (right key)"
            first = int(hit["philoxRound"]) + 1  # 1..10
            out.append(
                case(
                    f"binary64 Philox products: the {what} differs from round {first} of 10 "
                    f"on (first wrong product by {hit['multiplier']}) and the uniform-32 token changes",
                    ["philox_mulhi_double"],
                    row(uniform32(), ONE, seed=seed, round=rnd, position=pos),
                    clauses=["9.1", "9.2" if key_differs else "9.3"],
                    checks=[philox_double_changes_token(key_differs)],
                )
            )
    return out


def cases() -> list[Case]:
    return high_bits() + extremes() + edges() + order_and_bits() + depth() + philox_double()

"""Appendix A of the specification, generated from the exact reference.

Every number of the worked examples comes from ``dyadic24.reference.exact`` (``exact_row`` for the
intermediates, ``propose_exact`` for the call outputs), so the appendix cannot drift from the
reference by a typing error. From the repository root:

    python -m dyadic24.spec.worked_example            # print the appendix body (Markdown)
    python -m dyadic24.spec.worked_example --check    # exit 1 if the spec's Appendix A is stale
    python -m dyadic24.spec.worked_example --write    # rewrite the generated block of the spec

(``python spec/worked_example.py`` works as well.)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Context, Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np

if __name__ == "__main__" and not __package__:  # run as `python spec/worked_example.py`: find dyadic24
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dyadic24.api import K_MAX, TAU_DEFAULT_BITS, TICKETS, RowTrace, Status
from dyadic24.reference.exact import exact_row, propose_exact
from dyadic24.reference.ieee import (
    NAN32,
    NEG_INF32,
    POS_INF32,
    SIGN32,
    decode32,
    decode64,
    is_inf32,
    is_nan32,
    key32,
    round_binary32,
)
from dyadic24.reference.philox import DOMAIN_WORD, philox4x32_10

SPEC = Path(__file__).resolve().parent / "dyadic24-floor-first-v1.md"
BEGIN = "<!-- BEGIN GENERATED: spec/worked_example.py -->"
END = "<!-- END GENERATED: spec/worked_example.py -->"
M32 = 0xFFFFFFFF

# The main row (V = 40): a tie at the maximum (IDs 6, 21), a -0/+0 pair (11, 27), a tie across the
# boundary of C (8 and 35 at ranks 32 and 33), six -inf masks, and tokens of C that get no tickets.
MAIN_LOGITS = (
    "2.0625", "-1.375", "0.3", "-inf", "1.1", "-3.5", "4.5", "3.9", "-9.75", "0.75",
    "-0.6", "-0", "2.2", "-5.125", "-inf", "3.3", "-7", "1.875", "-inf", "-2.9",
    "0.125", "4.5", "-4.4", "-1", "2.5", "-40", "-6.25", "+0", "-9", "1.6",
    "-inf", "-8.5", "3.7", "-2", "0.45", "-9.75", "-inf", "-3", "1.25", "-inf",
)  # fmt: skip
SEED = 0x9E3779B97F4A7C15
ROUND = 0x8000000000000002
POSITION = 0x000000010000002A

# The small row (V = 6 < 32): -inf tokens inside C, and a positive subnormal T (a sampled row).
SMALL_LOGITS = ("-inf", "0.5", "-inf", "-inf", "2", "-1")
SMALL_T = "0x1p-149"
SMALL_SEED = 0x0123456789ABCDEF
SMALL_ROUND = 5
SMALL_POSITION = 1000

_SPECIAL = {"-inf": NEG_INF32, "+inf": POS_INF32, "nan": NAN32, "-0": SIGN32, "+0": 0}


def bits32(text: str) -> int:
    """Binary32 bits of a decimal (RN32 of its exact value, clause 1.3), ``0x1p-149`` or a special."""
    if text in _SPECIAL:
        return _SPECIAL[text]
    if text == "0x1p-149":
        return 0x00000001
    return round_binary32(Fraction(text))


def _approx(value: Fraction, digits: int) -> str:
    if value == 0:
        return "0"
    quotient = Context(prec=digits + 5).divide(Decimal(value.numerator), Decimal(value.denominator))
    return format(quotient, f".{digits}g")


def approx32(bits: int, digits: int = 9) -> str:
    """A decimal reading of a binary32 pattern, for the reader only (the bits are normative)."""
    if is_nan32(bits):
        return "NaN"
    if is_inf32(bits):
        return "-inf" if bits & SIGN32 else "+inf"
    if bits & 0x7FFFFFFF == 0:
        return "-0" if bits & SIGN32 else "+0"
    return _approx(decode32(bits), digits)


def approx64(bits: int, digits: int = 17) -> str:
    return _approx(decode64(bits), digits)


def h8(v: int) -> str:
    return f"{v:08x}"


def h16(v: int) -> str:
    return f"{v:016x}"


@dataclass(frozen=True)
class Row:
    """One row's inputs as bit patterns (clause 1.4)."""

    logits: tuple[int, ...]
    t_bits: int
    seed: int
    round: int
    position: int

    def trace(self) -> RowTrace:
        return exact_row(self.logits, self.t_bits, self.seed, self.round, self.position, TAU_DEFAULT_BITS)


def _main_row() -> Row:
    return Row(tuple(bits32(t) for t in MAIN_LOGITS), bits32("1.0"), SEED, ROUND, POSITION)


def _greedy_row() -> Row:
    main = _main_row()
    return Row(main.logits, bits32("-0"), SEED, ROUND, POSITION)


def _failed_row() -> Row:
    logits = list(_main_row().logits)
    logits[2] = POS_INF32
    logits[17] = NAN32
    return Row(tuple(logits), bits32("1.0"), SEED, ROUND, POSITION)


def _small_row() -> Row:
    return Row(
        tuple(bits32(t) for t in SMALL_LOGITS), bits32(SMALL_T), SMALL_SEED, SMALL_ROUND, SMALL_POSITION
    )


def _u64_line(name: str, value: int) -> str:
    return f"| {name} | {value} | {value:016x} | {value & M32:08x} | {value >> 32:08x} |"


def _full_order(logits: Sequence[int]) -> list[int]:
    """All V tokens in the order of clause 3.1 (for showing where C ends)."""
    return sorted(range(len(logits)), key=lambda i: (-key32(logits[i]), i))


def _tie_notes(logits: Sequence[int], k: int) -> list[str]:
    order = _full_order(logits)
    notes: list[str] = []
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and key32(logits[order[end + 1]]) == key32(logits[order[start]]):
            end += 1
        group = order[start : end + 1]
        if len(group) > 1 and not is_inf32(logits[group[0]]):
            shown = ", ".join(f"{i} ({h8(logits[i])})" for i in group)
            note = f"- IEEE-equal logits {shown} at ranks {start + 1}-{end + 1}: "
            note += "ordered by ascending ID (clause 3.1)"
            if start < k <= end:
                inside = ", ".join(str(i) for i in group[: k - start])
                note += f"; C ends inside this group, so only {inside} is in C"
            notes.append(note + ".")
        start = end + 1
    return notes


def _inputs_section(row: Row) -> list[str]:
    v = len(row.logits)
    half = (v + 1) // 2
    out = [
        "### A.1 Sampled row: inputs (clause 1)",
        "",
        f"V = {v}, so K = {min(K_MAX, v)}. The logits are written as decimals and converted with RN32; "
        "their bit patterns are what the rule sees.",
        "",
        "| ID | logit | binary32 | ID | logit | binary32 |",
        "|---:|---:|---|---:|---:|---|",
    ]
    for r in range(half):
        cells = []
        for i in (r, r + half):
            if i < v:
                cells.append(f"{i} | {MAIN_LOGITS[i]} | {h8(row.logits[i])}")
            else:
                cells.append(" | | ")
        out.append(f"| {cells[0]} | {cells[1]} |")
    out += [
        "",
        f"tau = {h8(TAU_DEFAULT_BITS)} (the default, {approx32(TAU_DEFAULT_BITS, 24)}); "
        f"T = {h8(row.t_bits)} ({approx32(row.t_bits)}).",
        "",
        "| input | decimal | hex | lo32 | hi32 |",
        "|---|---:|---|---|---|",
        _u64_line("seed s", row.seed),
        _u64_line("round n", row.round),
        _u64_line("position p", row.position),
        "",
    ]
    return out


def _candidates_section(row: Row, tr: RowTrace) -> list[str]:
    k = len(tr.order)
    finite = sum(1 for b in row.logits if not is_inf32(b))
    order = _full_order(row.logits)
    excluded = order[k:]
    out = [
        "### A.2 Status and candidates (clauses 2, 3)",
        "",
        f"No logit is NaN or +inf, {finite} of {len(row.logits)} are finite, and T = {approx32(row.t_bits)} "
        f"is positive and finite: status {Status(tr.status).name} ({tr.status}), a sampled row.",
        "",
        "C in the order of clause 3.1, best first:",
        "",
        "| ranks | IDs |",
        "|---|---|",
    ]
    for start in range(0, k, 8):
        ids = " ".join(str(i) for i in tr.order[start : start + 8])
        out.append(f"| {start + 1}-{min(start + 8, k)} | {ids} |")
    out += [""]
    out += _tie_notes(row.logits, k)
    out += [
        f"- Not in C (ranks {k + 1}-{len(order)}): IDs {', '.join(str(i) for i in excluded)}.",
        f"- a* = {tr.argmax}, m = {h8(tr.m_bits or 0)} ({approx32(tr.m_bits or 0)}).",
        "",
    ]
    return out


def _slots_section(tr: RowTrace) -> list[str]:
    out = [
        "### A.3 Per-slot values (clauses 5, 6.1, 7)",
        "",
        "Slots hold C in ascending ID order. d = RN32(l - m), z = RN32(d / tau), e = RN32(exp z) "
        "(binary32); p = RN64(e / S) (binary64); c = floor(p * 2^24); t = tickets after the remainder.",
        "",
        "| slot | ID | d | z | e | e (decimal) | p | c | t |",
        "|---:|---:|---|---|---|---:|---|---:|---:|",
    ]
    for j, i in enumerate(tr.slot_ids):
        out.append(
            f"| {j} | {i} | {h8(tr.d_bits[j])} | {h8(tr.z_bits[j])} | {h8(tr.e_bits[j])} | "
            f"{approx32(tr.e_bits[j])} | {h16(tr.p_bits[j])} | {tr.counts[j]} | {tr.slot_tickets[j]} |"
        )
    out.append("")
    return out


def _tree_section(tr: RowTrace) -> list[str]:
    s = tr.s_bits or 0
    k = len(tr.slot_ids)
    padding = "no padding slots" if k == K_MAX else f"slots {k}..31 = +0"
    out = [
        "### A.4 Tree sum (clause 6.2)",
        "",
        f"Level 0 is the 32 slots (e widened exactly to binary64; K = {k}, {padding}); slot k of level L+1 "
        "= RN64(slot 2k + slot 2k+1 of level L).",
        "",
        "| k | level 1 | level 2 | level 3 | level 4 | level 5 |",
        "|---:|---|---|---|---|---|",
    ]
    for k in range(len(tr.tree[0])):
        cells = [h16(level[k]) if k < len(level) else "" for level in tr.tree]
        out.append(f"| {k} | {' | '.join(cells)} |")
    out += ["", f"S = {h16(s)} = {approx64(s)}.", ""]
    return out


def _tickets_section(tr: RowTrace) -> list[str]:
    a_slot = tr.slot_ids.index(tr.argmax)
    total = sum(tr.counts)
    out = [
        "### A.5 Remainder and support (clauses 7.3, 8.1)",
        "",
        f"Σ c = {total}, so R = 2^24 - {total} = {tr.remainder} (0 <= R <= K = {len(tr.slot_ids)}). "
        f"a* = {tr.argmax} is slot {a_slot}: t = {tr.counts[a_slot]} + {tr.remainder} = "
        f"{tr.slot_tickets[a_slot]}. Σ t = {sum(tr.slot_tickets)} = 2^24.",
        "",
        f"Support ({len(tr.support_ids)} entries with t > 0, ascending ID) and the ticket intervals of "
        "clause 9.5:",
        "",
        "| entry | ID | tickets | interval |",
        "|---:|---:|---:|---|",
    ]
    lo = 0
    for j, (i, t) in enumerate(zip(tr.support_ids, tr.support_tickets, strict=True)):
        out.append(f"| {j} | {i} | {t} | [{lo}, {lo + t}) |")
        lo += t
    zero = [i for i, t in zip(tr.slot_ids, tr.slot_tickets, strict=True) if t == 0]
    out += ["", f"Tokens of C without tickets (not listed): {', '.join(map(str, zero)) or 'none'}.", ""]
    return out


def _draw_section(row: Row, tr: RowTrace) -> list[str]:
    key_counter = (DOMAIN_WORD, 0, 0, 0)
    key_key = (row.seed & M32, row.seed >> 32)
    key_block = philox4x32_10(key_counter, key_key)
    key = tr.key or (0, 0)
    block = tr.block or (0, 0, 0, 0)
    counter = (row.position & M32, row.position >> 32, row.round & M32, row.round >> 32)
    u = tr.u or 0
    entry = tr.support_ids.index(tr.token)
    lo = sum(tr.support_tickets[:entry])
    out = [
        "### A.6 Draw (clause 9)",
        "",
        "| step | counter | key | output |",
        "|---|---|---|---|",
        f"| proposal key (9.2) | {' '.join(map(h8, key_counter))} | {' '.join(map(h8, key_key))} | "
        f"{' '.join(map(h8, key_block))} |",
        f"| draw block (9.3) | {' '.join(map(h8, counter))} | {' '.join(map(h8, key))} | "
        f"{' '.join(map(h8, block))} |",
        "",
        f"(k0, k1) = ({h8(key[0])}, {h8(key[1])}). u = x[0] >> 8 = {h8(block[0])} >> 8 = {u:06x} = {u} "
        f"(clause 9.4). {lo} <= {u} < {lo + tr.support_tickets[entry]}: the token is **{tr.token}** "
        f"(support entry {entry}, clause 9.5).",
        "",
    ]
    return out


def _greedy_section(row: Row, tr: RowTrace) -> list[str]:
    return [
        "### A.7 Greedy row (clause 4)",
        "",
        f"The same logits with T = {h8(row.t_bits)} (-0): status OK (-0 is not negative), T == 0, so the "
        f"row is greedy. Token a* = {tr.token}, support [{tr.support_ids[0]}] with "
        f"{tr.support_tickets[0]} tickets; clauses 5-9 are not applied and no Philox is evaluated "
        "(the seed, round and position are those of A.1 and play no part).",
        "",
    ]


def _failed_section(row: Row, tr: RowTrace) -> list[str]:
    nan_ids = [i for i, b in enumerate(row.logits) if is_nan32(b)]
    inf_ids = [i for i, b in enumerate(row.logits) if b == POS_INF32]
    return [
        "### A.8 Failed row (clause 2)",
        "",
        f"The logits of A.1 with ID {inf_ids[0]} set to +inf ({h8(POS_INF32)}) and ID {nan_ids[0]} set to "
        f"NaN ({h8(NAN32)}), T = {h8(row.t_bits)}. Both the NaN and the +inf rule match; the NaN rule "
        f"comes first: status {Status(tr.status).name} ({tr.status}). Token -1, ids all -1, tickets all 0, "
        f"no Philox. Its trace is `{json.dumps(tr.as_json(), separators=(', ', ': '))}`.",
        "",
    ]


def _call_section(rows: Sequence[Row], traces: Sequence[RowTrace]) -> list[str]:
    logits = np.array([r.logits for r in rows], dtype=np.uint32).view(np.float32)
    temps = np.array([r.t_bits for r in rows], dtype=np.uint32).view(np.float32)
    seeds = np.array([r.seed for r in rows], dtype=np.uint64)
    rounds = np.array([r.round for r in rows], dtype=np.uint64)
    positions = np.array([r.position for r in rows], dtype=np.uint64)
    got = propose_exact(logits, temps, seeds, rounds, positions)
    for b, tr in enumerate(traces):  # clause 2.4: the batch equals its rows taken one at a time
        n = len(tr.support_ids)
        pad = K_MAX - n
        if (
            int(got.status[b]) != tr.status
            or int(got.token[b]) != tr.token
            or got.ids[b].tolist() != [*tr.support_ids, *([-1] * pad)]
            or got.tickets[b].tolist() != [*tr.support_tickets, *([0] * pad)]
        ):
            raise AssertionError(f"row {b} of the batch differs from exact_row (clause 2.4)")
    lines = [
        "### A.9 Outputs of the call (clause 12.1)",
        "",
        "The rows of A.1, A.7 and A.8 as one call (B = 3, tau default). Each row equals the row computed "
        "alone (clause 2.4).",
        "",
        "```",
        f"status  = {got.status.tolist()}",
        f"token   = {got.token.tolist()}",
    ]
    for name, arr in (("ids", got.ids), ("tickets", got.tickets)):
        for b in range(len(rows)):
            lines.append(f"{name}[{b}]".ljust(11) + f"= {arr[b].tolist()}")
    lines += ["```", ""]
    return lines


def _small_section(row: Row, tr: RowTrace) -> list[str]:
    items: list[str] = []
    for name, value in tr.as_json().items():
        if name == "tree":  # one level per line
            levels = ",\n".join(f"    {json.dumps(level, separators=(', ', ': '))}" for level in value)
            items.append(f'  "tree": [\n{levels}\n  ]')
        else:
            items.append(f"  {json.dumps(name)}: {json.dumps(value, separators=(', ', ': '))}")
    body = ",\n".join(items)
    inf_in_c = [i for i in tr.order if row.logits[i] == NEG_INF32]
    return [
        "### A.10 Small row: -inf tokens in C, subnormal T, and the trace form (clauses 3.2, 1.4, 12.3)",
        "",
        f"V = {len(row.logits)} (K = {len(tr.order)}), logits "
        f"[{', '.join(SMALL_LOGITS)}], T = {h8(row.t_bits)} (2^-149, a positive subnormal: a sampled row; "
        f"its value plays no part), s = {row.seed:#018x}, n = {row.round}, p = {row.position}, tau default. "
        f"Only {len(row.logits) - len(inf_in_c)} logits are finite, so C also holds the -inf tokens "
        f"{', '.join(map(str, inf_in_c))} (e = +0, no tickets). The trace in its JSON form (clause 12.3):",
        "",
        "```json",
        "{",
        body,
        "}",
        "```",
        "",
    ]


def render() -> str:
    """The body of Appendix A (between the generated-block markers)."""
    main, greedy, failed, small = _main_row(), _greedy_row(), _failed_row(), _small_row()
    tr_main, tr_greedy, tr_failed, tr_small = main.trace(), greedy.trace(), failed.trace(), small.trace()
    paths = (tr_main.path, tr_greedy.path, tr_failed.path, tr_small.path)
    if paths != ("sampled", "greedy", "failed", "sampled"):
        raise AssertionError("the example rows no longer take the paths the text describes")
    if sum(tr_main.slot_tickets) != TICKETS or sum(tr_small.slot_tickets) != TICKETS:
        raise AssertionError("tickets do not sum to 2^24 (clause 7.4)")
    lines: list[str] = []
    lines += _inputs_section(main)
    lines += _candidates_section(main, tr_main)
    lines += _slots_section(tr_main)
    lines += _tree_section(tr_main)
    lines += _tickets_section(tr_main)
    lines += _draw_section(main, tr_main)
    lines += _greedy_section(greedy, tr_greedy)
    lines += _failed_section(failed, tr_failed)
    lines += _call_section((main, greedy, failed), (tr_main, tr_greedy, tr_failed))
    lines += _small_section(small, tr_small)
    return "\n".join(lines).rstrip("\n") + "\n"


def _split(text: str) -> tuple[str, str, str]:
    head, sep1, rest = text.partition(BEGIN + "\n")
    body, sep2, tail = rest.partition(END)
    if not sep1 or not sep2:
        raise ValueError(f"{SPEC.name}: generated-block markers not found")
    return head + sep1, body, sep2 + tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if the spec's Appendix A is stale")
    mode.add_argument("--write", action="store_true", help="rewrite the generated block of the spec")
    args = parser.parse_args(argv)
    body = render()
    if not (args.check or args.write):
        sys.stdout.write(body)
        return 0
    text = SPEC.read_text(encoding="utf-8")
    head, current, tail = _split(text)
    if args.check:
        if current != body:
            print(f"{SPEC.name}: Appendix A is stale; run python -m dyadic24.spec.worked_example --write")
            return 1
        print(f"{SPEC.name}: Appendix A is up to date")
        return 0
    if current != body:
        SPEC.write_bytes((head + body + tail).encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

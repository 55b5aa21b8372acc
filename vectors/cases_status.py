"""golden_status.json: row status and its precedence (clauses 2.1-2.4), failed rows (clauses 2.3, 10.3)."""

from __future__ import annotations

import numpy as np

from dyadic24.api import Status
from dyadic24.vectors.case import MAXF, MIN_SUB, NINF, NZERO, ONE, PINF, PZERO, QNAN, Case, case, f32, row
from dyadic24.vectors.checks import any_row, every_row, status_is
from dyadic24.vectors.rows import bell, top_order

NAN_KINDS = {
    "negative quiet NaN": 0xFFC00000,
    "signalling NaN": 0x7F800001,
    "negative signalling NaN": 0xFF800001,
    "NaN with all payload bits set": 0x7FFFFFFF,
}
BAD_T = {
    "bad_temperature_nan": [QNAN, 0xFFC00001, 0x7F800001],
    "bad_temperature_negative": [f32(-1.0), f32(-0.7), 0xFF7FFFFF],
    "bad_temperature_neg_inf": [NINF, NINF, NINF],
    "bad_temperature_pos_inf": [PINF, PINF, PINF],
    "bad_temperature_neg_subnormal": [0x80000001, 0x807FFFFF, 0x80400000],
}


def _base(vocab: int, name: str = "status-base") -> np.ndarray:
    return bell(f"{name}-{vocab}", vocab)


def _positions(bits: np.ndarray) -> dict[str, int]:
    order = top_order(bits)
    return {
        "first": 0,
        "last": bits.shape[0] - 1,
        "candidate": int(order[1]),
        "non_candidate": int(order[-1]),
    }


def _injected(kind: str, value: int, where: str) -> list[Case]:
    """NaN or +inf at the first, last, a candidate or a non-candidate position, three vectors each."""
    out = []
    for vocab, t_bits, what in ((64, ONE, "T = 1"), (33, PZERO, "greedy T = +0"), (40, QNAN, "T = NaN")):
        bits = _base(vocab)
        pos = _positions(bits)[where]
        if where == "non_candidate" and vocab <= 32:
            continue
        bits = bits.copy()
        bits[pos] = value
        status = Status.NAN_LOGIT if kind == "nan" else Status.POS_INF_LOGIT
        out.append(
            case(
                f"{'NaN' if kind == 'nan' else '+inf'} at the {where.replace('_', '-')} position {pos} "
                f"of V = {vocab}, {what}",
                [f"{kind}_{where}"] + (["status_precedence"] if t_bits == QNAN else []),
                row(bits, t_bits),
                checks=[every_row(status_is(status), f"status {status.name}")],
            )
        )
    if where == "non_candidate":
        bits = _base(100).copy()
        pos = _positions(bits)[where]
        bits[pos] = value
        out.append(
            case(
                f"{'NaN' if kind == 'nan' else '+inf'} at the lowest-ranked position {pos} of V = 100",
                [f"{kind}_{where}"],
                row(bits, ONE),
            )
        )
    return out


def cases() -> list[Case]:
    out: list[Case] = []
    for kind, value in (("nan", QNAN), ("pinf", PINF)):
        for where in ("first", "last", "candidate", "non_candidate"):
            out += _injected(kind, value, where)

    # V = 1: first and last at once.
    out.append(case("NaN as the only logit (V = 1)", ["nan_first", "nan_last", "vocab_1"], row([QNAN])))
    out.append(case("+inf as the only logit (V = 1)", ["pinf_first", "pinf_last", "vocab_1"], row([PINF])))

    for name, value in NAN_KINDS.items():
        bits = _base(48).copy()
        bits[7] = value
        out.append(case(f"{name} (0x{value:08x}) at ID 7", ["nan_payload"], row(bits)))

    # NaN wins over +inf wherever they sit (clause 2.1 precedence).
    for a, b, vocab in ((0, 1, 64), (5, 2, 64), (63, 0, 64), (3, 3 + 30, 40)):
        bits = _base(vocab).copy()
        bits[a] = QNAN
        bits[b] = PINF
        out.append(
            case(
                f"NaN at {a} and +inf at {b} (V = {vocab}): NAN_LOGIT",
                ["nan_and_pinf", "status_precedence"],
                row(bits),
                checks=[every_row(status_is(Status.NAN_LOGIT), "NAN_LOGIT")],
            )
        )
    bits = np.full(64, NINF, dtype=np.uint32)
    bits[10], bits[50] = PINF, QNAN
    out.append(case("NaN and +inf among -inf only", ["nan_and_pinf", "status_precedence"], row(bits)))
    bits = np.full(64, NINF, dtype=np.uint32)
    bits[31] = PINF
    out.append(
        case(
            "+inf among -inf only: POS_INF_LOGIT, not ZERO_MASS",
            ["pinf_candidate", "status_precedence"],
            row(bits),
        )
    )

    for vocab in (1, 5, 32, 33, 64):
        out.append(
            case(
                f"all {vocab} logits -inf: ZERO_MASS",
                ["all_neg_inf"] + (["vocab_1"] if vocab == 1 else []),
                row(np.full(vocab, NINF, dtype=np.uint32)),
                checks=[every_row(status_is(Status.ZERO_MASS), "ZERO_MASS")],
            )
        )
    for t_bits, what in ((PZERO, "T = +0"), (QNAN, "T = NaN"), (f32(-1.0), "T = -1")):
        out.append(
            case(
                f"all 40 logits -inf with {what}: ZERO_MASS precedes greedy and BAD_TEMPERATURE",
                ["all_neg_inf", "status_precedence"],
                row(np.full(40, NINF, dtype=np.uint32), t_bits),
            )
        )

    for flag, temps in BAD_T.items():
        for i, (t_bits, vocab) in enumerate(zip(temps, (64, 1, 33), strict=True)):
            bits = _base(vocab, f"badt-{i}")
            out.append(
                case(
                    f"T = 0x{t_bits:08x} with V = {vocab}: BAD_TEMPERATURE",
                    [flag] + (["vocab_1"] if vocab == 1 else []),
                    row(bits, t_bits),
                    checks=[every_row(status_is(Status.BAD_TEMPERATURE), "BAD_TEMPERATURE")],
                )
            )
    for t_bits in (MIN_SUB, 0x007FFFFF, 0x00000400):
        out.append(
            case(
                f"T = 0x{t_bits:08x}, a positive subnormal, is a valid sampling temperature",
                ["temperature_pos_subnormal"],
                row(_base(64, "subt"), t_bits),
                checks=[every_row(status_is(Status.OK), "OK")],
            )
        )
    out.append(
        case("T = largest finite binary32 is valid", ["temperature_pos_subnormal"], row(_base(64), MAXF))
    )

    for bad, what in ((QNAN, "NaN"), (PINF, "+inf")):
        bits = _base(64).copy()
        bits[20] = bad
        out.append(
            case(
                f"{what} logit with T = -1: the logit status wins (clause 2.1)",
                ["status_precedence"],
                row(bits, f32(-1.0)),
            )
        )

    out += _mixed()
    return out


def _mixed() -> list[Case]:
    """One call mixing every status, greedy and sampled rows; repeated rows must agree (clause 2.4)."""
    vocab = 48
    ok = _base(vocab, "mixed-ok")
    nan_row = ok.copy()
    nan_row[3] = QNAN
    inf_row = ok.copy()
    inf_row[40] = PINF
    zero = np.full(vocab, NINF, dtype=np.uint32)
    masked = np.full(vocab, NINF, dtype=np.uint32)
    masked[[2, 17, 33]] = ok[[2, 17, 33]]
    kinds = [
        ("ok", row(ok, ONE, seed=11, round=2, position=100)),
        ("greedy", row(ok, PZERO, seed=11, round=2, position=101)),
        ("greedy-", row(masked, NZERO, seed=12, round=2, position=102)),
        ("nan", row(nan_row, ONE, seed=13, round=2, position=103)),
        ("inf", row(inf_row, ONE, seed=14, round=2, position=104)),
        ("zero", row(zero, ONE, seed=15, round=2, position=105)),
        ("badt", row(ok, QNAN, seed=16, round=2, position=106)),
        ("masked", row(masked, f32(0.5), seed=17, round=2, position=107)),
    ]
    out = []
    perms = ([0, 1, 2, 3, 4, 5, 6, 7], [6, 5, 4, 3, 2, 1, 0, 7], [3, 0, 5, 7, 1, 6, 4, 2, 0, 3])
    statuses = {Status.OK, Status.NAN_LOGIT, Status.POS_INF_LOGIT, Status.ZERO_MASS, Status.BAD_TEMPERATURE}
    for n, perm in enumerate(perms):
        rows = [kinds[i][1] for i in perm]
        out.append(
            case(
                f"mixed batch {n}: rows {[kinds[i][0] for i in perm]}",
                ["mixed_status_batch"] + (["row_isolation"] if len(set(perm)) < len(perm) else []),
                rows,
                checks=[any_row(status_is(s), s.name) for s in statuses],
            )
        )
    # Row isolation: the same sampled row next to different neighbours and at different indices.
    same = row(ok, ONE, seed=99, round=7, position=1234)
    out.append(case("one sampled row alone", ["row_isolation"], [same]))
    out.append(
        case(
            "the same row at index 2 behind a NaN and a ZERO_MASS row",
            ["row_isolation"],
            [kinds[3][1], kinds[5][1], same],
        )
    )
    out.append(
        case(
            "the same row three times among greedy rows",
            ["row_isolation"],
            [same, kinds[1][1], same, kinds[2][1], same],
        )
    )
    return out

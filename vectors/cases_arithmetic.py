"""golden_arithmetic.json: clause 5 arithmetic (differences, the division by tau, exp) and tau (1.3)."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import mpmath
import numpy as np

from dyadic24.api import RowTrace
from dyadic24.reference.exp_exact import exp32
from dyadic24.reference.ieee import decode32, div32, round_binary32, sub32
from dyadic24.vectors.case import (
    MAXF,
    MIN_NORMAL,
    MIN_SUB,
    NINF,
    NZERO,
    ONE,
    PZERO,
    Case,
    case,
    f32,
    neg,
    row,
)
from dyadic24.vectors.checks import (
    any_row,
    f32_value,
    floor_first,
    ftz_exp_changes_tickets,
    has_subnormal,
    has_value,
    tree_sum,
)
from dyadic24.vectors.found_inputs import found
from dyadic24.vectors.rows import bell, uniform

LOG2E32 = f32(1.4426950408889634)


def _exp2_32(w_bits: int) -> int:
    """RN32(2^w) for binary32 w, from a 200-bit mpmath value (far from any midpoint in practice)."""
    w = decode32(w_bits)
    with mpmath.workprec(200):
        v = mpmath.power(2, mpmath.mpf(w.numerator) / w.denominator)
        man, exp = mpmath.mpf(v).man_exp
    return round_binary32(Fraction(int(man)) * (Fraction(2) ** int(exp)))


def _mul32(a: int, b: int) -> int:
    return round_binary32(decode32(a) * decode32(b))


def _recip32(tau_bits: int) -> int:
    return round_binary32(1 / decode32(tau_bits))


Variant = Callable[[int, int, int], int]  # (l bits, m bits, tau bits) -> e bits


def _v_reciprocal(lg: int, m: int, tau: int) -> int:
    d = sub32(lg, m)
    if d == NINF:
        return PZERO
    return exp32(_mul32(d, _recip32(tau)))


def _v_unrounded_difference(lg: int, m: int, tau: int) -> int:
    if lg == NINF:
        return PZERO
    return exp32(round_binary32((decode32(lg) - decode32(m)) / decode32(tau)))


def _v_exp2(lg: int, m: int, tau: int) -> int:
    z = div32(sub32(lg, m), tau)
    if z == NINF:
        return PZERO
    return _exp2_32(_mul32(z, LOG2E32))


def variant_changes_tickets(case_: Case, variant: Variant) -> Callable[[Case, list[RowTrace]], None]:
    """Recompute e with the wrong step (V = 32 rows: every token is a candidate) and the tickets."""

    def check(c: Case, traces: list[RowTrace]) -> None:
        for r, t in zip(c.rows, traces, strict=True):
            if t.path != "sampled" or r.vocab != 32:
                continue
            m = t.m_bits or 0
            e = [f32_value(variant(int(b), m, c.tau_bits)) for b in r.logits]
            s = tree_sum(e)
            alt = floor_first([v / s for v in e], t.argmax)
            if alt != list(t.slot_tickets) and [variant(int(b), m, c.tau_bits) for b in r.logits] != list(
                t.e_bits
            ):
                return
        raise AssertionError(f"{c.comment!r}: the variant gives the same tickets")

    del case_
    return check


def subnormals() -> list[Case]:
    out = []
    sub = [MIN_SUB, 0x00000002, 0x007FFFFF, 0x00400000, neg(MIN_SUB), neg(0x00123456), NZERO, PZERO]
    out.append(
        case(
            "subnormal logits of both signs with zeros (V = 8)",
            ["subnormal_logit", "vocab_lt_32", "signed_zero_tie"],
            row(sub),
        )
    )
    out.append(
        case(
            "subnormal logits, tau = least subnormal: z = integer multiples",
            ["subnormal_logit", "tau_tiny"],
            row([0x00000010 - i for i in range(17)]),
            tau_bits=MIN_SUB,
        )
    )
    out.append(
        case(
            "maximum is the least subnormal, the rest -0 and negative subnormals",
            ["subnormal_logit", "subnormal_difference"],
            row([NZERO, MIN_SUB, neg(MIN_SUB), neg(0x00000003), NZERO, neg(0x00700000)]),
            checks=[any_row(has_subnormal("d_bits"), "subnormal d")],
        )
    )
    out.append(
        case(
            "differences of tiny normals are subnormal",
            ["subnormal_difference"],
            row([0x00C00000, MIN_NORMAL, 0x00800001, 0x00FFFFFF, 0x01000000, 0x00A00000]),
            checks=[any_row(has_subnormal("d_bits"), "subnormal d")],
        )
    )
    out.append(
        case(
            "tiny normal differences divided by the default tau become subnormal",
            ["subnormal_difference", "subnormal_z"],
            row([0x00900000, 0x00800000, 0x00880000, 0x00810000]),
            checks=[any_row(has_subnormal("z_bits"), "subnormal z")],
        )
    )
    for n, tau in enumerate((f32(1024.0), f32(2.0**40), f32(3e30))):
        bits = [
            PZERO,
            f32(-(2.0**-120)),
            f32(-(2.0**-110)),
            f32(-(2.0**-100)),
            f32(-1e-30),
            f32(-1e-9),
            f32(-1.0),
        ]
        out.append(
            case(
                f"small d over tau = 0x{tau:08x}: subnormal z",
                ["subnormal_z", "tau_huge"] if n else ["subnormal_z", "tau_other"],
                row(bits),
                tau_bits=tau,
                checks=[any_row(has_subnormal("z_bits"), "subnormal z")],
            )
        )
    for tau in (f32(2.0**30), f32(2.0**60), MAXF):
        bits = [PZERO, neg(MIN_SUB), f32(-(2.0**-140)), f32(-(2.0**-130)), neg(0x00000100)]
        out.append(
            case(
                f"d / tau underflows to -0 for tau = 0x{tau:08x}",
                ["z_underflow", "tau_huge"],
                row(bits),
                tau_bits=tau,
                checks=[any_row(has_value("z_bits", NZERO), "z = -0")],
            )
        )
    zs = [PZERO] + [f32(-v) for v in (87.5, 88.0, 90.0, 95.0, 100.0, 103.0, 103.9, 103.97)]
    out.append(
        case(
            "z in the subnormal range of exp (tau = 1, m = 0)",
            ["subnormal_exp", "tau_one"],
            row(zs),
            tau_bits=ONE,
            checks=[any_row(has_subnormal("e_bits"), "subnormal e")],
        )
    )
    scaled = [PZERO] + [f32(-v * 0.7) for v in (88.0, 91.0, 97.0, 102.0)]
    out.append(
        case(
            "z in the subnormal range of exp (default tau)",
            ["subnormal_exp"],
            row(scaled),
            checks=[any_row(has_subnormal("e_bits"), "subnormal e")],
        )
    )
    wide = uniform("subexp", 32, -80.0, 0.0)
    wide[10] = f32(0.0)
    out.append(
        case(
            "V = 32 logits in [-80, 0]: some e subnormal, some +0",
            ["subnormal_exp", "exp_underflow"],
            row(wide),
            checks=[
                any_row(has_subnormal("e_bits"), "subnormal e"),
                any_row(has_value("e_bits", PZERO), "e = +0"),
            ],
        )
    )
    # exp(z) = 2^-150 at z = -150 ln 2 = -103.972077...: the last z rounding to the least subnormal.
    edge = f32(-150 * math.log(2))
    zs = [PZERO] + [edge + k for k in range(-4, 5)] + [f32(-149.5 * math.log(2)), f32(-104.0)]
    out.append(
        case(
            "z around -150 ln 2, where RN32(exp z) turns from 2^-149 to +0",
            ["exp_underflow", "subnormal_exp", "tau_one"],
            row(zs),
            tau_bits=ONE,
            checks=[
                any_row(has_value("e_bits", PZERO), "e = +0"),
                any_row(has_value("e_bits", MIN_SUB), "e = 2^-149"),
            ],
        )
    )
    zs = (
        [PZERO]
        + [f32(-151 * math.log(2)) + k for k in (-1, 0, 1)]
        + [f32(-148.5 * math.log(2)) + k for k in (-1, 0, 1)]
    )
    out.append(
        case(
            "z near -151 ln 2 and -148.5 ln 2 (2^-151, 1.5 * 2^-149)",
            ["exp_underflow", "tau_one"],
            row(zs),
            tau_bits=ONE,
        )
    )
    return out


def overflow() -> list[Case]:
    out = []
    out.append(
        case(
            "l = -3e38, m = 3e38: l - m overflows to -inf",
            ["difference_overflow"],
            row([f32(-3e38), f32(3e38), f32(1e38), f32(-1e38), f32(2.9e38)]),
            checks=[any_row(has_value("d_bits", NINF), "d = -inf")],
        )
    )
    out.append(
        case(
            "l = -MAX, m = MAX",
            ["difference_overflow"],
            row([neg(MAXF), MAXF, PZERO, neg(MAXF)]),
            checks=[any_row(has_value("d_bits", NINF), "d = -inf")],
        )
    )
    out.append(
        case(
            "m = MAX with ordinary logits: differences round to -MAX",
            ["difference_overflow"],
            row([MAXF, f32(1.0), f32(-5.0), f32(-1e38), f32(-3.4e38)], f32(0.25)),
            checks=[any_row(has_value("d_bits", NINF), "d = -inf")],
        )
    )
    # m = 2^127: l = -(2^127 - 2^103) gives exactly -(2^128 - 2^103), the midpoint between -MAX and
    # -2^128, which rounds to even: -inf. l = -(2^127 - 2^104) gives -MAX exactly.
    out.append(
        case(
            "l - m exactly at the overflow midpoint -(2^128 - 2^103) and at -MAX",
            ["difference_overflow_edge", "difference_overflow"],
            row([0x7F000000, neg(0x7EFFFFFF), neg(0x7EFFFFFE), neg(0x7F000000)]),
            checks=[
                any_row(has_value("d_bits", NINF), "d = -inf"),
                any_row(has_value("d_bits", neg(MAXF)), "d = -MAX"),
            ],
        )
    )
    out.append(
        case(
            "m = MAX, l = -2^103 (tie: -inf), l just below 2^103 in magnitude (-MAX)",
            ["difference_overflow_edge"],
            row([MAXF, neg(0x73000000), neg(0x72FFFFFF), neg(0x73000001)]),
            checks=[
                any_row(has_value("d_bits", NINF), "d = -inf"),
                any_row(has_value("d_bits", neg(MAXF)), "d = -MAX"),
            ],
        )
    )
    out.append(
        case(
            "m = MAX, l = -2^103 with tau = MAX: z from d = -MAX and d = -inf differ",
            ["difference_overflow_edge", "tau_huge"],
            row([MAXF, neg(0x73000000), neg(0x72FFFFFF)]),
            tau_bits=MAXF,
            checks=[any_row(has_value("d_bits", NINF), "d = -inf")],
        )
    )
    for tau in (0x00000100, MIN_NORMAL, f32(1e-30)):
        out.append(
            case(
                f"d / tau overflows to -inf (tau = 0x{tau:08x})",
                ["z_overflow", "tau_tiny"],
                row(
                    [PZERO, f32(-1.0), f32(-1000.0), f32(-1e10), f32(-1e-10), f32(-1e-30), f32(-(2.0**-130))]
                ),
                tau_bits=tau,
                checks=[any_row(has_value("z_bits", NINF), "z = -inf")],
            )
        )
    return out


def taus() -> list[Case]:
    out = []
    base = bell("tau-base", 48)
    for tau in (MIN_SUB, MIN_NORMAL, f32(1e-30)):
        out.append(case(f"bell row with tiny tau 0x{tau:08x}", ["tau_tiny"], row(base), tau_bits=tau))
    ladder = [0x00000010 - i for i in range(16)]
    out.append(
        case(
            "logits k * 2^-149, tau = 2^-149: z = 0, -1, -2, ... exactly",
            ["tau_tiny", "subnormal_logit"],
            row(ladder),
            tau_bits=MIN_SUB,
        )
    )
    for tau in (MAXF, f32(1e30), f32(2.0**100)):
        out.append(
            case(f"bell row with huge tau 0x{tau:08x}: e near 1", ["tau_huge"], row(base), tau_bits=tau)
        )
    out.append(
        case(
            "l = -3e38 with tau = MAX: z = -0.88",
            ["tau_huge"],
            row([PZERO, f32(-3e38), f32(-1e38)]),
            tau_bits=MAXF,
        )
    )
    for n in range(3):
        out.append(
            case(f"bell row {n} with tau = 1", ["tau_one"], row(bell(f"tau-one-{n}", 40)), tau_bits=ONE)
        )
    for tau in (f32(0.5), f32(2.0), f32(1.3), f32(1 / 3)):
        out.append(case(f"bell row with tau = 0x{tau:08x}", ["tau_other"], row(base), tau_bits=tau))
    return out


def variants() -> list[Case]:
    out = []
    table: tuple[tuple[str, list[list[int]], Variant, str], ...] = (
        ("tau_division", found().rows["variant_tau_division"], _v_reciprocal, "d * RN32(1 / tau)"),
        (
            "difference_rounding",
            found().rows["variant_difference_rounding"],
            _v_unrounded_difference,
            "RN32((l - m) / tau)",
        ),
        ("exp_via_exp2", found().rows["variant_exp_via_exp2"], _v_exp2, "exp2(RN32(z * log2 e))"),
    )
    for flag, rows, variant, what in table:
        for n, bits in enumerate(rows):
            c = case(
                f"{what} instead of clause 5 changes the tickets (row {n})",
                [flag],
                row(np.array(bits, dtype=np.uint32)),
            )
            out.append(case(c.comment, c.flags, c.rows, checks=[variant_changes_tickets(c, variant)]))
    return out


def masked_overflow() -> list[Case]:
    bits = uniform("ovf-mask", 40, -3e38, 3e38)
    bits[[1, 5, 6]] = NINF
    return [
        case(
            "huge logits of both signs with -inf",
            ["difference_overflow"],
            row(bits),
            checks=[any_row(has_value("d_bits", NINF), "d = -inf")],
        )
    ]


def ftz_ties() -> list[Case]:
    """A subnormal e that decides two chained binary64 ties of the tree (vectors/search_edges.py, record
    ftzExpTie): flushing it to zero changes S and the tickets, not only the trace."""
    out = []
    for n, rec in enumerate(found().extra["ftzExpTie"]):
        bits = [int(w, 16) for w in rec["row"]]
        top = int(rec["top"])
        ones = sum(1 for b in bits if b == PZERO)
        what = f"{ones} logits 0 (e = 1)" if ones == top else "1 + e_b + e_c = 2"
        out.append(
            case(
                f"slots 0-6 hold e summing to {top} * 2^-53 and {top} * 2^-106 plus a subnormal e; slots 16+ "
                f"hold {what}: the subnormal decides two ties, S = {top} + ulp({top}), not {top} (row {n})",
                ["ftz_exp_decides_tie", "subnormal_exp", "tau_one", "neg_inf_interleaved"]
                + (["argmax_tie"] if ones > 1 else []),
                row(np.array(bits, dtype=np.uint32)),
                tau_bits=ONE,
                checks=[any_row(ftz_exp_changes_tickets, "FTZ of e changes S and the tickets")],
            )
        )
    return out


def cases() -> list[Case]:
    return subnormals() + overflow() + masked_overflow() + taus() + variants() + ftz_ties()

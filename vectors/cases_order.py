"""golden_order.json: the candidate order and set (clauses 3.1-3.3), small V, masks, greedy rows (4.1-4.2)."""

from __future__ import annotations

import numpy as np

from dyadic24.api import RowTrace
from dyadic24.vectors.case import MIN_SUB, NINF, NZERO, ONE, PZERO, Case, case, f32, neg, row
from dyadic24.vectors.checks import every_row, path_is
from dyadic24.vectors.rows import bell, order_key, quantized, uniform, words

U32 = np.ndarray


def _tie_crosses_boundary(case_: Case, traces: list[RowTrace]) -> None:
    """The 32nd candidate ties with a token left out of C (clause 3.2 decides by ID)."""
    for r, t in zip(case_.rows, traces, strict=True):
        if t.path == "failed" or len(t.order) < 32:
            continue
        key = order_key(r.logits)
        last = key[t.order[-1]]
        left_out = np.setdiff1d(np.arange(r.vocab), np.array(t.order))
        if np.any(key[left_out] == last):
            return
    raise AssertionError(f"{case_.comment!r}: no tie across the top-32 boundary")


def _signed_zero_tie(case_: Case, traces: list[RowTrace]) -> None:
    for r, t in zip(case_.rows, traces, strict=True):
        if t.path == "failed":
            continue
        c = [int(r.logits[i]) for i in t.order]
        if PZERO in c and NZERO in c:
            return
        if (PZERO in c) != (NZERO in c) and {PZERO, NZERO} <= {int(v) for v in r.logits}:
            return  # the boundary splits a signed-zero tie
    raise AssertionError(f"{case_.comment!r}: no -0/+0 tie among the candidates")


def _boundary_row(name: str, vocab: int, tied: int, inside: int, tie_bits: int) -> U32:
    """``inside`` distinct values above ``tie_bits``, ``tied`` tokens at ``tie_bits``, the rest below."""
    w = words(name, vocab)
    ids = np.argsort(w, kind="stable")  # a fixed pseudo-random permutation of the IDs
    bits = uniform(name + "-low", vocab, -30.0, -20.0)
    bits[ids[:inside]] = uniform(name + "-high", inside, 1.0, 9.0)
    bits[ids[inside : inside + tied]] = tie_bits
    return bits


def ties() -> list[Case]:
    out = []
    for n, (vocab, tied, inside, tie) in enumerate(
        ((64, 9, 28, f32(0.5)), (40, 10, 25, f32(-3.25)), (100, 40, 0, f32(2.0)), (33, 2, 31, f32(-1.0)))
    ):
        bits = _boundary_row(f"tie-{n}", vocab, tied, inside, tie)
        for t_bits in (ONE, PZERO):
            out.append(
                case(
                    f"{tied} tokens tie at 0x{tie:08x} across the top-32 boundary "
                    f"(V = {vocab}, {inside} above)" + (", greedy" if t_bits == PZERO else ""),
                    ["tie_at_boundary"] + (["greedy_pos_zero"] if t_bits == PZERO else []),
                    row(bits, t_bits),
                    checks=[_tie_crosses_boundary],
                )
            )
    bits = np.full(33, f32(1.5), dtype=np.uint32)
    out.append(
        case(
            "33 equal logits: C = IDs 0..31, ID 32 left out",
            ["tie_at_boundary", "vocab_33"],
            row(bits),
            checks=[_tie_crosses_boundary],
        )
    )
    # Signed zeros: equal under IEEE, so only the ID decides (clause 3.1).
    zs = _boundary_row("tie-zero", 64, 12, 26, PZERO)
    zero_ids = np.flatnonzero(zs == PZERO)
    zs[zero_ids[::2]] = NZERO
    out.append(
        case(
            "-0 and +0 alternate across the top-32 boundary",
            ["tie_at_boundary", "signed_zero_tie"],
            row(zs),
            checks=[_tie_crosses_boundary, _signed_zero_tie],
        )
    )
    return out


def signed_zeros() -> list[Case]:
    out = []
    base = uniform("sz", 40, -6.0, -1.0)
    for layout in ([NZERO, PZERO], [PZERO, NZERO], [NZERO, NZERO, PZERO, NZERO]):
        bits = base.copy()
        ids = [3 + 7 * i for i in range(len(layout))]
        bits[ids] = layout
        for t_bits in (ONE, NZERO):
            out.append(
                case(
                    f"maximum 0 with signs {['-' if v == NZERO else '+' for v in layout]} at IDs {ids}"
                    + (", greedy T = -0" if t_bits == NZERO else ""),
                    ["signed_zero_tie", "argmax_tie"] + (["greedy_neg_zero"] if t_bits == NZERO else []),
                    row(bits, t_bits),
                    checks=[_signed_zero_tie],
                )
            )
    bits = np.array([NZERO, MIN_SUB, PZERO, neg(MIN_SUB), NZERO, PZERO], dtype=np.uint32)
    out.append(
        case(
            "zeros of both signs around the least subnormals",
            ["signed_zero_tie", "vocab_lt_32", "subnormal_logit"],
            row(bits),
            checks=[_signed_zero_tie],
        )
    )
    return out


def argmax_ties() -> list[Case]:
    out = []
    bits = uniform("amt", 64, -8.0, 3.0)
    bits[[40, 3, 17]] = f32(4.0)
    out.append(case("maximum 4.0 at IDs 3, 17, 40: a* = 3 takes the remainder", ["argmax_tie"], row(bits)))
    out.append(
        case(
            "32 equal logits: S = 32, 2^19 tickets each",
            ["argmax_tie", "vocab_32", "remainder_zero"],
            row(np.full(32, f32(-7.0), dtype=np.uint32)),
        )
    )
    out.append(
        case(
            "three equal logits: S = 3, R = 1 to ID 0",
            ["argmax_tie", "vocab_lt_32"],
            row(np.full(3, f32(0.25), dtype=np.uint32)),
        )
    )
    for t_bits, flag in ((PZERO, "greedy_pos_zero"), (NZERO, "greedy_neg_zero")):
        out.append(
            case(
                f"greedy with maximum at IDs 3, 17, 40 (T = 0x{t_bits:08x})",
                ["argmax_tie", flag],
                row(bits, t_bits),
            )
        )
    return out


def masks() -> list[Case]:
    out = []
    for vocab, finite in ((64, 5), (40, 31), (33, 32), (1000, 12)):
        w = words(f"mask-{vocab}", vocab)
        ids = np.sort(np.argsort(w, kind="stable")[:finite])
        bits = np.full(vocab, NINF, dtype=np.uint32)
        bits[ids] = bell(f"mask-vals-{vocab}", finite)
        flags = ["few_finite", "neg_inf_interleaved"] if finite < 32 else ["neg_inf_interleaved"]
        if vocab == 33:
            flags.append("vocab_33")
        for t_bits in (ONE, NZERO):
            out.append(
                case(
                    f"{finite} finite logits at IDs {ids.tolist()[:12]}{'...' if finite > 12 else ''}, "
                    f"the rest -inf (V = {vocab})" + (", greedy T = -0" if t_bits == NZERO else ""),
                    flags + (["greedy_neg_zero"] if t_bits == NZERO else []),
                    row(bits, t_bits),
                )
            )
    for vocab, at in ((64, 63), (5, 2), (1000, 517)):
        bits = np.full(vocab, NINF, dtype=np.uint32)
        bits[at] = f32(-100.0)
        out.append(
            case(
                f"one finite logit (-100) at ID {at} of V = {vocab}: one token, 2^24 tickets",
                ["one_finite", "few_finite"] + (["vocab_lt_32"] if vocab < 32 else []),
                row(bits),
            )
        )
    return out


def vocab_sizes() -> list[Case]:
    out = []
    out.append(case("V = 1, sampled: S = 1", ["vocab_1"], row([f32(-5.5)])))
    out.append(case("V = 1, greedy T = +0", ["vocab_1", "greedy_pos_zero"], row([f32(12.0)], PZERO)))
    out.append(case("V = 1, logit -0", ["vocab_1", "signed_zero_tie"], row([NZERO], f32(0.9))))
    for vocab in (2, 5, 17, 31):
        out.append(
            case(
                f"V = {vocab} < 32: K = V, slots V..31 are +0", ["vocab_lt_32"], row(bell(f"v{vocab}", vocab))
            )
        )
    out.append(case("V = 32 from a bell", ["vocab_32"], row(bell("v32", 32))))
    bits = bell("v32m", 32)
    bits[[0, 5, 31]] = NINF
    out.append(case("V = 32 with -inf at IDs 0, 5, 31", ["vocab_32", "neg_inf_interleaved"], row(bits)))
    b33 = bell("v33", 33, scale=1.0)
    b33[32] = f32(9.0)
    out.append(case("V = 33, the last ID is the maximum", ["vocab_33"], row(b33)))
    b33b = bell("v33b", 33, scale=1.0)
    b33b[0] = f32(-50.0)
    out.append(case("V = 33, ID 0 is the one left out", ["vocab_33"], row(b33b)))
    return out


def negatives() -> list[Case]:
    out = []
    bits = uniform("negs", 64, -20.0, -0.5)
    out.append(
        case(
            "all logits negative: sign-magnitude order, not unsigned bit order",
            ["negative_logits"],
            row(bits),
        )
    )
    mixed = uniform("negpos", 48, -2.0, 2.0)
    mixed[5] = NZERO
    out.append(case("negative and positive logits with -0", ["negative_logits"], row(mixed)))
    out.append(
        case(
            "the least negative values win: -1e-30 > -1e30",
            ["negative_logits"],
            row([f32(-1e30), f32(-1e-30), f32(-1.0), f32(-3e38), f32(-1e-44)], f32(2.0)),
        )
    )
    q = quantized("negq", 80, 12, 0.5, top=-1.0)
    out.append(
        case(
            "negative quantized values, many ties",
            ["negative_logits", "tie_at_boundary"],
            row(q),
            checks=[_tie_crosses_boundary],
        )
    )
    return out


def greedy() -> list[Case]:
    out = []
    for t_bits, flag in ((PZERO, "greedy_pos_zero"), (NZERO, "greedy_neg_zero")):
        for n, vocab in enumerate((64, 2, 300)):
            out.append(
                case(
                    f"greedy (T = 0x{t_bits:08x}) on a bell of V = {vocab}: no Philox, 2^24 tickets",
                    [flag],
                    row(bell(f"greedy-{n}", vocab), t_bits),
                    checks=[every_row(path_is("greedy"), "greedy")],
                )
            )
    return out


def cases() -> list[Case]:
    out = ties() + signed_zeros() + argmax_ties() + masks() + vocab_sizes() + negatives() + greedy()
    return out

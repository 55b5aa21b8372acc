"""golden_widening.json: logits exactly representable in binary16 / bfloat16 (clause 1.2).

The widening to binary32 is exact and is the caller's; the vectors give the widened binary32 logits
(which every implementation consumes) and, in ``narrow``, the 16-bit patterns, so that an
implementation taking 16-bit input can be fed those and must produce the same outputs.
"""

from __future__ import annotations

import numpy as np

from dyadic24.api import RowTrace
from dyadic24.vectors.case import NINF, NZERO, ONE, PZERO, Case, Check, case, row
from dyadic24.vectors.rows import bell, words

U32 = np.ndarray


def binary16_row(name: str, vocab: int, scale: float) -> U32:
    vals = bell(name, vocab, scale=scale).view(np.float32).astype(np.float16)
    return vals.astype(np.float32).view(np.uint32).copy()


def bfloat16_row(name: str, vocab: int, scale: float) -> U32:
    return bell(name, vocab, scale=scale) & np.uint32(0xFFFF0000)


def sub16(k: int) -> int:
    """The binary32 pattern of k * 2^-24, a binary16 subnormal for 0 < |k| < 1024."""
    return int(np.float32(k * 2.0**-24).view(np.uint32))


def argmax_is(want: tuple[int, ...], what: str) -> Check:
    def check(c: Case, traces: list[RowTrace]) -> None:
        got = tuple(t.argmax for t in traces)
        if got != want:
            raise AssertionError(f"{c.comment!r}: argmax {got}, meant {want} ({what})")

    return check


def cases() -> list[Case]:
    out = []
    for n, (vocab, scale) in enumerate(((64, 2.0), (32, 4.0), (200, 1.0))):
        bits = binary16_row(f"f16-{n}", vocab, scale)
        out.append(
            case(
                f"binary16 bell (V = {vocab}, scale {scale})",
                ["binary16_representable"],
                row(bits, ONE, narrow="binary16"),
            )
        )
    # binary16 specials: subnormals (2^-24 = binary32 0x33800000), the largest value 65504, -inf, -0.
    specials = [0x33800000, 0xB3800000, 0x387FC000, 0x477FE000, 0xC77FE000, NINF, NZERO, PZERO, 0x3C000000]
    out.append(
        case(
            "binary16 subnormals, +-65504, -inf and signed zeros",
            ["binary16_representable", "signed_zero_tie", "vocab_lt_32"],
            row(specials, ONE, narrow="binary16"),
        )
    )
    out.append(
        case(
            "binary16 row, greedy",
            ["binary16_representable", "greedy_pos_zero"],
            row(binary16_row("f16-g", 64, 3.0), PZERO, narrow="binary16"),
        )
    )
    for n, (vocab, scale) in enumerate(((64, 2.0), (33, 8.0), (256, 1.5))):
        bits = bfloat16_row(f"bf16-{n}", vocab, scale)
        out.append(
            case(
                f"bfloat16 bell (V = {vocab}, scale {scale})",
                ["bfloat16_representable"],
                row(bits, ONE, narrow="bfloat16"),
            )
        )
    wide = (words("bf16-wide", 48) & np.uint32(0xFFFF0000)) | np.uint32(0x80000000)  # every magnitude
    wide = np.where((wide & np.uint32(0x7F800000)) == np.uint32(0x7F800000), np.uint32(NINF), wide)
    wide[5] = PZERO
    out.append(
        case(
            "bfloat16 negatives over the whole exponent range (NaN patterns replaced by -inf)",
            ["bfloat16_representable", "negative_logits"],
            row(wide.astype(np.uint32), ONE, narrow="bfloat16"),
        )
    )
    # binary16 subnormals (k * 2^-24): the largest logit is a subnormal. A binary16 input flushed to
    # zero (FTZ/DAZ conversion) makes the positives +0 ties and the negatives -0: the argmax moves to a
    # lower ID, so the outputs alone differ (greedy token; sampled remainder and tickets).
    sub = [sub16(3), sub16(1000), sub16(-5), sub16(7), NINF, sub16(512), sub16(-1023), sub16(2)]
    negzero_tie = [sub16(-5), PZERO, NINF, sub16(-1)]  # -2^-24 * 5 < +0: a* = 1; flushed: -0 ties +0, a* = 0
    for temp, what in ((PZERO, "greedy"), (ONE, "sampled")):
        out.append(
            case(
                f"binary16 subnormals, the largest logit a subnormal, {what}",
                ["binary16_representable", "binary16_subnormal_max"],
                [row(sub, temp, narrow="binary16"), row(negzero_tie + [NINF] * 4, temp, narrow="binary16")],
                checks=[argmax_is((1, 1), "a* the largest subnormal")],
            )
        )
    # the same at V = 200 among negative binary16 normals, greedy and sampled rows in one call: the
    # largest two (1023 and 1000 x 2^-24) at high IDs, equal after a flush to zero with every other
    # non-negative subnormal below them
    wide_row = [int(np.float16(-1.0 - i / 256).astype(np.float32).view(np.uint32)) for i in range(200)]
    for at, k in ((17, 7), (150, 1000), (199, 1023), (3, 1)):
        wide_row[at] = sub16(k)
    out.append(
        case(
            "binary16 subnormal maxima among negative binary16 normals (V = 200), greedy and sampled",
            ["binary16_representable", "binary16_subnormal_max"],
            [row(wide_row, PZERO, narrow="binary16"), row(wide_row, ONE, narrow="binary16")],
            checks=[argmax_is((199, 199), "a* the largest subnormal")],
        )
    )
    ties = np.full(40, 0x40400000, dtype=np.uint32)
    ties[::3] = 0x40410000
    out.append(
        case(
            "bfloat16 values one bf16 ulp apart with ties across the boundary",
            ["bfloat16_representable", "tie_at_boundary"],
            row(ties, ONE, narrow="bfloat16"),
        )
    )
    return out

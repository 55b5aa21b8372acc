"""golden_widening.json: logits exactly representable in binary16 / bfloat16 (clause 1.2).

The widening to binary32 is exact and is the caller's; the vectors give the widened binary32 logits
(which every implementation consumes) and, in ``narrow``, the 16-bit patterns, so that an
implementation taking 16-bit input can be fed those and must produce the same outputs.
"""

from __future__ import annotations

import numpy as np

from dyadic24.vectors.case import NINF, NZERO, ONE, PZERO, Case, case, row
from dyadic24.vectors.rows import bell, words

U32 = np.ndarray


def binary16_row(name: str, vocab: int, scale: float) -> U32:
    vals = bell(name, vocab, scale=scale).view(np.float32).astype(np.float16)
    return vals.astype(np.float32).view(np.uint32).copy()


def bfloat16_row(name: str, vocab: int, scale: float) -> U32:
    return bell(name, vocab, scale=scale) & np.uint32(0xFFFF0000)


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

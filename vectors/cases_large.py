"""golden_large_vocab.json.gz: rows with V = 163,840 (a language-model vocabulary), clauses 1.1 and 3.2.

Logit rows of this size are written as packed hex strings (vectors/README.md) and the file is gzip'd.
Most rows are bfloat16-representable (what a bf16 model hands over after widening), one row has full
binary32 mantissas.
"""

from __future__ import annotations

import numpy as np

from dyadic24.vectors.case import NINF, ONE, PZERO, QNAN, Case, case, f32, row
from dyadic24.vectors.checks import any_row
from dyadic24.vectors.rows import bell, words

V = 163_840


def lm_row(name: str, full: bool = False) -> np.ndarray:
    """A bell bulk with a few dozen peaks, some at IDs above 2^16 and 2^17."""
    bits = bell(name, V, center=-2.0, scale=2.5)
    w = words(name + "-peaks", 48)
    peaks = (w % np.uint32(V)).astype(np.int64)
    peaks[:6] = [65535, 65536, 131071, 131072, V - 2, V - 1]
    bits[peaks] = bell(name + "-peak-values", 48, center=9.0, scale=2.0)
    return bits if full else bits & np.uint32(0xFFFF0000)


def cases() -> list[Case]:
    out = []
    full = lm_row("lm-full", full=True)
    bf = lm_row("lm-bf16")
    out.append(
        case(
            "V = 163,840, full binary32 mantissas, sampled and greedy",
            ["vocab_large"],
            [
                row(full, ONE, seed=0xC0FFEE, round=1, position=70000),
                row(full, PZERO, seed=0xC0FFEE, round=1, position=70001),
            ],
        )
    )
    out.append(
        case(
            "V = 163,840, bfloat16-representable, two positions",
            ["vocab_large", "bfloat16_representable"],
            [row(bf, ONE, seed=42, round=0, position=p, narrow="bfloat16") for p in (5, 6)],
        )
    )
    ties = bf.copy()
    top = np.array([3, 70000, 70001, 100000, 131072, 150000, 163839, 163838, 99999, 65536], dtype=np.int64)
    ties[top] = f32(20.0)
    ties[np.arange(V - 40, V)] = f32(19.5)  # 40 tied values above 2^17, 22 of them fit
    ties[np.arange(1000, 1010)] = f32(19.5)
    out.append(
        case(
            "V = 163,840: ten maxima and a tie at the boundary among high IDs",
            ["vocab_large", "tie_at_boundary", "argmax_tie", "bfloat16_representable"],
            row(ties, ONE, seed=7, round=7, position=7, narrow="bfloat16"),
        )
    )
    masked = np.full(V, NINF, dtype=np.uint32)
    ids = np.array([0, 1, 2, 65535, 65536, 99999, 131071, 131072, 163838, 163839], dtype=np.int64)
    masked[ids] = bell("lm-masked", len(ids), scale=1.0) & np.uint32(0xFFFF0000)
    out.append(
        case(
            "V = 163,840 masked to 10 tokens: 22 -inf candidates of low ID",
            ["vocab_large", "few_finite", "neg_inf_interleaved", "bfloat16_representable"],
            row(masked, ONE, seed=1 << 40, round=3, position=12, narrow="bfloat16"),
        )
    )
    nan_last = bf.copy()
    nan_last[V - 1] = QNAN
    out.append(
        case(
            "V = 163,840 with NaN at the last ID",
            ["vocab_large", "nan_last", "nan_non_candidate"],
            row(nan_last),
            checks=[any_row(lambda t: t.status == 1, "NAN_LOGIT")],
        )
    )
    return out

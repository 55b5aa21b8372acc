"""golden_large_vocab.json.gz: rows with V = 163,840 (a language-model vocabulary), clauses 1.1 and 3.2.

Logit rows of this size are written as packed hex strings (vectors/README.md) and the file is gzip'd.
Most rows are bfloat16-representable (what a bf16 model hands over after widening), one row has full
binary32 mantissas.
"""

from __future__ import annotations

import numpy as np

from dyadic24.vectors.case import NINF, ONE, PZERO, QNAN, Case, case, derived_u64, f32, row
from dyadic24.vectors.checks import any_row, tiled_merge_changes_outputs, tiled_softmax_changes_tickets
from dyadic24.vectors.rows import bell, uniform, words

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
    return out + tiled()


TILE = 4096  # the tile width of the tiled mutants (conformance/mutants/tiled.py)


def peaked_row(name: str, vocab: int, peaks: int, center: float, scale: float) -> np.ndarray:
    """A low bell bulk (around -8) with ``peaks`` candidates at pseudo-random IDs of every tile."""
    bits = bell(name, vocab, center=-8.0, scale=1.5)
    ids = (words(name + "-ids", peaks) % np.uint32(vocab)).astype(np.int64)
    bits[ids] = bell(name + "-values", peaks, center=center, scale=scale)
    return bits


def tiled() -> list[Case]:
    """Rows with V > 4,096 whose outputs change under the tiled mistakes of clauses 3.1 and 5.3."""
    out = []
    for vocab, name in ((8192, "tiled-softmax-8192"), (3 * TILE + 1, "tiled-softmax-12289")):
        bits = peaked_row(name, vocab, 80, center=1.0, scale=0.4)
        bits[vocab - 1] = f32(2.5)  # a* at the last ID, alone in its tile when V = 3 * 4096 + 1
        out.append(
            case(
                f"V = {vocab:,}: a* at the last ID, candidates of substantial mass in every 4,096-ID tile; a "
                "tiled softmax (per-tile maximum, rescaled) gives other e and other tickets",
                ["tiled_softmax", "vocab_large"],
                row(bits, ONE, seed=derived_u64(name), round=2, position=vocab),
                checks=[tiled_softmax_changes_tickets],
            )
        )
    # bfloat16-representable, a* in the second of four tiles (the name's suffix picks a row whose
    # tickets change; the check re-verifies it on the exact trace)
    bf = peaked_row("tiled-softmax-16384-b", 4 * TILE, 80, center=1.0, scale=0.4) & np.uint32(0xFFFF0000)
    bf[6000] = f32(2.5)
    out.append(
        case(
            "V = 16,384, bfloat16-representable: a* = 6000 in the second of four tiles, candidates in every "
            "tile; a tiled softmax gives other e and other tickets",
            ["tiled_softmax", "vocab_large", "bfloat16_representable"],
            row(bf, ONE, seed=derived_u64("tiled-softmax-16384"), round=2, position=16384, narrow="bfloat16"),
            checks=[tiled_softmax_changes_tickets],
        )
    )
    tie = peaked_row("tiled-merge-max", 2 * TILE, 40, center=-1.0, scale=1.0)  # peaks below 2.5
    tie[[1000, 5000]] = f32(3.0)  # the maximum, once in each tile
    for t_bits, what in ((PZERO, "greedy: the token"), (ONE, "sampled: the remainder's owner")):
        out.append(
            case(
                f"V = 8,192, the maximum tied at IDs 1000 and 5000 (tiles 0 and 1), {what} depends on "
                "the tie rule across tiles",
                ["tile_merge_ties", "argmax_tie", "vocab_large"],
                row(tie, t_bits, seed=0x7113, round=5, position=8192),
                checks=[tiled_merge_changes_outputs],
            )
        )
    edge = peaked_row("tiled-merge-edge", 2 * TILE, 0, center=0.0, scale=1.0)
    top = 17 + 263 * np.arange(31, dtype=np.int64)  # 31 distinct IDs in both tiles, not 2000 or 6000
    edge[top] = uniform("tiled-merge-edge-top", 31, 2.0, 4.0)
    edge[[2000, 6000]] = f32(0.5)  # the 32nd value, once in each tile: C takes ID 2000
    out.append(
        case(
            "V = 8,192, 31 logits >= 2 and the 32nd value 0.5 tied at IDs 2000 and 6000 (tiles 0 and 1): "
            "C holds 2000, a merge with ties to the later tile holds 6000",
            ["tile_merge_ties", "tie_at_boundary", "vocab_large"],
            row(edge, ONE, seed=0x7114, round=5, position=8193),
            checks=[tiled_merge_changes_outputs],
        )
    )
    return out

"""golden_batch.json: larger batches (clause 2.4)."""

from __future__ import annotations

from dyadic24.vectors.case import NINF, NZERO, ONE, PINF, PZERO, QNAN, Case, Row, case, f32, row
from dyadic24.vectors.rows import bell, words

KINDS = ("sampled", "greedy", "nan", "pinf", "zero_mass", "bad_t", "masked")


def batch_rows(name: str, batch: int, vocab: int) -> list[Row]:
    w = words(name, batch)
    rows = []
    for i in range(batch):
        kind = KINDS[int(w[i]) % len(KINDS)] if i >= len(KINDS) else KINDS[i]
        bits = bell(f"{name}-{i}", vocab)
        t = ONE
        if kind == "greedy":
            t = NZERO if i % 2 else PZERO
        elif kind == "nan":
            bits[int(w[i] >> 8) % vocab] = QNAN
        elif kind == "pinf":
            bits[int(w[i] >> 8) % vocab] = PINF
        elif kind == "zero_mass":
            bits[:] = NINF
        elif kind == "bad_t":
            t = f32(-2.0)
        elif kind == "masked":
            bits[int(w[i] >> 8) % vocab :] = NINF
            bits[0] = f32(1.0)
        rows.append(row(bits, t, seed=int(w[i]) * 0x100000001, round=i, position=1000 + i))
    return rows


def cases() -> list[Case]:
    out = []
    for n, (batch, vocab) in enumerate(((64, 48), (33, 100), (17, 32))):
        rows = batch_rows(f"batch-{n}", batch, vocab)
        rows.append(rows[0])  # the first row again, at the end
        out.append(
            case(
                f"batch of {batch + 1} mixed rows (V = {vocab}); the last row repeats the first",
                ["mixed_status_batch", "row_isolation"],
                rows,
            )
        )
    return out

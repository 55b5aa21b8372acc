"""The accumulated check of clause 13.2: a seeded stream of rows whose outputs hash to one SHA-256 value.

The stream is defined by the recipe in ``vectors/README.md`` ("Accumulated check"), from
Philox4x32-10 words only, so that any language can rebuild it. Row r of the stream is a pure function
of r; rows are grouped in segments of ``SEGMENT`` rows that share tau and V (one call per segment, or
several calls of at most ``batch`` rows: by clause 2.4 the digest does not depend on the batching).
The digest is SHA-256 over, row by row in stream order, status, token, ids[32] and tickets[32] as
little-endian int32 (264 bytes per row).

    python -m dyadic24.vectors.accumulated --rows 10000 --impl fast
    python -m dyadic24.vectors.accumulated --rows 10000 --impl exact --write   # refresh accumulated.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dyadic24.api import SEMANTIC_ID, Proposal
from dyadic24.reference.philox import philox4x32_10_np

U32 = npt.NDArray[np.uint32]
U64 = npt.NDArray[np.uint64]
Impl = Callable[..., Proposal]

STREAM_KEY = (0x64796164, 0x69633234)  # Philox key (k0, k1) of the stream: "dyad", "ic24" (little-endian)
ROW_DOMAIN = 1  # counter word 3 of the per-row blocks
SEGMENT_DOMAIN = 2  # counter word 3 of the per-segment block
SEGMENT = 64  # rows per segment (shared tau and V)
LOGIT_BLOCK0 = 3  # counter word 2 of the first logit block of a row
V_SMALL, V_LARGE = 40, 300
ACCUMULATED_PATH = Path(__file__).resolve().parent / "data" / "accumulated.json"

NINF, PINF, QNAN_BASE = 0xFF800000, 0x7F800000, 0x7FC00000
SPECIAL_T = {
    0: 0x00000000,
    1: 0x80000000,
    2: 0x7FC00000,
    3: 0xBF800000,
    4: 0x7F800000,
    5: 0x80000001,
    6: 0xFF800000,
    7: 0x00000001,
}


def _words(c0: U32, c1: U32, c2: U32 | int, c3: int) -> tuple[U32, U32, U32, U32]:
    return philox4x32_10_np(c0, c1, c2, c3, STREAM_KEY[0], STREAM_KEY[1])


def _u64(lo: U32, hi: U32) -> U64:
    return lo.astype(np.uint64) | (hi.astype(np.uint64) << np.uint64(32))


def _split(v: U64) -> tuple[U32, U32]:
    return (v & np.uint64(0xFFFFFFFF)).astype(np.uint32), (v >> np.uint64(32)).astype(np.uint32)


def segment_params(g: int) -> tuple[int, int]:
    """(tau bits, V) of segment g: block y = W(lo32 g, hi32 g, 0, SEGMENT_DOMAIN)."""
    lo, hi = _split(np.array([g], dtype=np.uint64))
    y = [int(w[0]) for w in _words(lo, hi, 0, SEGMENT_DOMAIN)]
    sel = y[0] % 8
    if sel < 4:
        tau = 0x3F333333
    elif sel == 4:
        tau = 0x3F800000
    elif sel == 5:
        tau = ((123 + y[1] % 8) << 23) | (y[2] & 0x7FFFFF)
    elif sel == 6:
        tau = (y[2] & 0x7FFFFF) | 1 if y[1] & 1 else ((1 + (y[1] >> 1) % 64) << 23) | (y[2] & 0x7FFFFF)
    else:
        tau = ((190 + y[1] % 64) << 23) | (y[2] & 0x7FFFFF)
    vocab = 1 + (y[3] >> 3) % V_SMALL if y[3] % 8 == 0 else 1 + (y[3] >> 3) % V_LARGE
    return tau, vocab


@dataclass(frozen=True)
class StreamRows:
    logits: U32  # [n, V] binary32 bits
    t_bits: U32  # [n]
    seed: U64
    round: U64
    position: U64


def stream_rows(first: int, count: int, vocab: int) -> StreamRows:
    """Rows first .. first + count - 1 (all in one segment, so of one V)."""
    r = np.arange(first, first + count, dtype=np.uint64)
    lo, hi = _split(r)
    h = _words(lo, hi, 0, ROW_DOMAIN)
    g = _words(lo, hi, 1, ROW_DOMAIN)
    x = _words(lo, hi, 2, ROW_DOMAIN)

    # Target temperature T (only its status and greedy meaning matter; clause 2.1, 4.1).
    t_sel = h[0] % np.uint32(64)
    t_bits = ((np.uint32(120) + (h[0] >> np.uint32(6)) % np.uint32(16)) << np.uint32(23)) | (
        h[1] & np.uint32(0x7FFFFF)
    )
    for sel, special in SPECIAL_T.items():
        t_bits = np.where(t_sel == sel, np.uint32(special), t_bits)
    seed = _u64(h[2], h[3])
    rnd = _u64(g[0], g[1])
    pos = _u64(g[2], g[3])
    small = (x[3] % np.uint32(4)) == 0
    rnd = np.where(small, rnd >> np.uint64(48), rnd)
    pos = np.where(small, pos >> np.uint64(40), pos)

    # Logits: logit i uses words 2(i mod 2), 2(i mod 2) + 1 of block W(lo r, hi r, 3 + i // 2, 1).
    n_blocks = (vocab + 1) // 2
    blk = np.arange(n_blocks, dtype=np.uint32) + np.uint32(LOGIT_BLOCK0)
    lw = _words(lo[:, None], hi[:, None], blk[None, :], ROW_DOMAIN)  # each [count, n_blocks]
    a = np.stack([lw[0], lw[2]], axis=2).reshape(count, 2 * n_blocks)[:, :vocab]
    b = np.stack([lw[1], lw[3]], axis=2).reshape(count, 2 * n_blocks)[:, :vocab]
    c = a & np.uint32(0xFF)
    sign = ((a >> np.uint32(8)) & np.uint32(1)) << np.uint32(31)
    k = (a >> np.uint32(9)) & np.uint32(0xF)
    mant = b & np.uint32(0x7FFFFF)
    q = (b & np.uint32(63)).astype(np.int64)
    pool = ((q - 48).astype(np.float32) / np.float32(4.0)).view(np.uint32)  # exact quarters in [-12, 3.75]
    pool = np.where(q == 48, sign, pool)  # the zero of the pool takes the sign bit
    top = (np.float32(4.0) + (b & np.uint32(3)).astype(np.float32)).view(np.uint32)  # 4, 5, 6, 7
    heavy = ((x[0] >> np.uint32(8)) % np.uint32(8) == 0)[:, None]
    huge = ((x[0] >> np.uint32(11)) % np.uint32(8) == 0)[:, None]
    bits = np.select(
        [
            heavy & (c < 160),
            c < 112,
            c < 208,
            c < 232,
            c < 244,
            c < 252,
            (c < 255) | ~huge,
        ],
        [
            np.uint32(NINF),
            pool,
            sign | ((np.uint32(118) + k) << np.uint32(23)) | mant,
            np.uint32(NINF),
            sign | mant,
            sign | ((np.uint32(1) + k) << np.uint32(23)) | mant,
            top,
        ],
        default=sign | np.uint32(0x7F000000) | mant,
    ).astype(np.uint32)

    # Row-level injections: all -inf, then +inf, then NaN (so NaN wins a shared position).
    inj = x[0] % np.uint32(256)
    rows = np.arange(count)
    bits[(inj >= 20) & (inj < 24)] = NINF
    p_inf = (x[1] % np.uint32(vocab)).astype(np.int64)
    p_nan = np.where(inj < 8, x[1] % np.uint32(vocab), (x[1] >> np.uint32(8)) % np.uint32(vocab)).astype(
        np.int64
    )
    want_inf = (inj >= 8) & (inj < 20)
    want_nan = (inj < 8) | ((inj >= 16) & (inj < 20))
    bits[rows[want_inf], p_inf[want_inf]] = PINF
    nan_bits = np.uint32(0x7FC00000) | (x[2] & np.uint32(0x803FFFFF))
    bits[rows[want_nan], p_nan[want_nan]] = nan_bits[want_nan]
    return StreamRows(bits, t_bits.astype(np.uint32), seed, rnd.astype(np.uint64), pos.astype(np.uint64))


def row_bytes(out: Proposal) -> bytes:
    """status, token, ids[32], tickets[32] per row as little-endian int32 (264 bytes a row)."""
    parts = [
        np.asarray(out.status, dtype="<i4")[:, None],
        np.asarray(out.token, dtype="<i4")[:, None],
        np.asarray(out.ids, dtype="<i4"),
        np.asarray(out.tickets, dtype="<i4"),
    ]
    return np.ascontiguousarray(np.concatenate(parts, axis=1)).tobytes()


def run_call(impl: Impl, tau_bits: int, rows: StreamRows) -> Proposal:
    tau = np.array([tau_bits], dtype=np.uint32).view(np.float32)[0]
    return impl(
        rows.logits.view(np.float32),
        rows.t_bits.view(np.float32),
        rows.seed,
        rows.round,
        rows.position,
        tau=tau,
    )


def segment_bytes(impl: Impl, g: int, n_rows: int, batch: int = SEGMENT) -> bytes:
    """The hashed bytes of segment g's rows (those below n_rows), in calls of at most ``batch`` rows."""
    tau, vocab = segment_params(g)
    end = min(n_rows, (g + 1) * SEGMENT)
    out = []
    for first in range(g * SEGMENT, end, batch):
        out.append(row_bytes(run_call(impl, tau, stream_rows(first, min(batch, end - first), vocab))))
    return b"".join(out)


def segments(n_rows: int) -> int:
    return (n_rows + SEGMENT - 1) // SEGMENT


def accumulate(
    impl: Impl,
    n_rows: int,
    batch: int = SEGMENT,
    progress: bool = False,
    report: Callable[[int], None] | None = None,
) -> str:
    """SHA-256 (hex) of the outputs of the first ``n_rows`` stream rows under ``impl`` (clause 13.2).
    ``report(rows done)`` is called after every segment."""
    if n_rows < 0 or batch < 1:
        raise ValueError("n_rows >= 0 and batch >= 1 required")
    digest = hashlib.sha256()
    start = time.monotonic()
    for g in range(segments(n_rows)):
        digest.update(segment_bytes(impl, g, n_rows, batch))
        done = min(n_rows, (g + 1) * SEGMENT)
        if report is not None:
            report(done)
        if progress and done % 100_000 == 0:
            print(f"  {done} rows, {time.monotonic() - start:.0f} s", file=sys.stderr)
    return digest.hexdigest()


def stream_sample(n: int = 3) -> list[dict[str, Any]]:
    """The first rows' inputs, for checking another language's stream generator."""
    out = []
    tau, vocab = segment_params(0)
    rows = stream_rows(0, n, vocab)
    for i in range(n):
        out.append(
            {
                "row": i,
                "tauBits": f"{tau:08x}",
                "vocab": vocab,
                "temperature": f"{int(rows.t_bits[i]):08x}",
                "seed": str(int(rows.seed[i])),
                "round": str(int(rows.round[i])),
                "position": str(int(rows.position[i])),
                "logits": "".join(f"{int(v):08x}" for v in rows.logits[i]),
            }
        )
    return out


PREFIXES_EXACT = (1, 10, 100, 1000, 10_000, 100_000)  # computed with both references
PREFIXES_FAST = (1_000_000,)  # fast reference only (the deep profile checks it)


def build_expected() -> dict[str, Any]:
    """The content of accumulated.json (about 3 minutes: 10^5 rows exact, 10^6 rows fast)."""
    exact, fast = _impl("exact"), _impl("fast")
    digests = []
    for n in PREFIXES_EXACT:
        a, b = accumulate(exact, n), accumulate(fast, n)
        if a != b:
            raise AssertionError(f"exact and fast references disagree on {n} rows: {a} != {b}")
        digests.append({"rows": n, "sha256": a, "computedWith": ["exact", "fast"]})
    for n in PREFIXES_FAST:
        digests.append({"rows": n, "sha256": accumulate(fast, n), "computedWith": ["fast"]})
    return {
        "algorithm": SEMANTIC_ID,
        "schema": "dyadic24-accumulated-v1",
        "recipe": "vectors/README.md, section 'Accumulated check'",
        "streamKey": [f"{STREAM_KEY[0]:08x}", f"{STREAM_KEY[1]:08x}"],
        "segmentRows": SEGMENT,
        "rowBytes": 264,
        "digests": digests,
        "segmentSample": [
            {"segment": g, "tauBits": f"{segment_params(g)[0]:08x}", "vocab": segment_params(g)[1]}
            for g in range(8)
        ],
        "streamSample": stream_sample(),
    }


def write_expected() -> None:
    from dyadic24.vectors import jsonfmt

    ACCUMULATED_PATH.write_bytes(jsonfmt.document(build_expected()))


def expected() -> dict[int, str]:
    """rows -> expected digest, from vectors/data/accumulated.json as the release check read it (a
    changed or corrupt file is a VectorDataError naming it)."""
    from dyadic24.vectors import store

    path = store.DATA_DIR / store.ACCUMULATED_NAME
    text = store.load_release().texts[store.ACCUMULATED_NAME]
    try:
        data = json.loads(text)
        return {int(d["rows"]): str(d["sha256"]) for d in data["digests"]}
    except (ValueError, KeyError, TypeError) as exc:
        raise store.VectorDataError(path, f"does not hold the digests of clause 13.2 ({exc})") from exc


def _impl(name: str) -> Impl:
    if name == "exact":
        from dyadic24.reference.exact import propose_exact

        return propose_exact
    from dyadic24.reference.fast import propose_fast

    return propose_fast


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dyadic24.vectors.accumulated")
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--impl", choices=("exact", "fast"), default="fast")
    parser.add_argument("--batch", type=int, default=SEGMENT)
    parser.add_argument("--write", action="store_true", help="recompute and write accumulated.json (~3 min)")
    args = parser.parse_args(argv)
    if args.write:
        write_expected()
        print(f"wrote {ACCUMULATED_PATH}")
        return 0
    start = time.monotonic()
    value = accumulate(_impl(args.impl), args.rows, args.batch, progress=True)
    print(f"{args.rows} rows, {args.impl}, batch {args.batch}: {value} ({time.monotonic() - start:.1f} s)")
    want = expected().get(args.rows) if ACCUMULATED_PATH.is_file() else None
    if want is not None:
        print("matches accumulated.json" if want == value else f"DIFFERS from accumulated.json ({want})")
        return 0 if want == value else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

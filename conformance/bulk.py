"""``conform --bulk N``: N rows of seeded batched calls against the fast reference.

The generator is named dyadic24-bulk-2 (bulk-1 before 2026-12-06: without the half_subnormal family
and with every golden replay in binary32).

The generator (one definition, here). Call i of seed s draws its structure from numpy's
``default_rng([s, i, 0])`` and its content from ``default_rng([s, i, 1])``, so any call can be
regenerated alone (``generate(s, i)``):

- Vocabulary band, then V: 45 % small (V in 1..64, a third of them 1, 2, 31, 32 or 33), 25 % medium
  (log-uniform 65..4,096), 18 % large (log-uniform 4,097..32,768 or a tile edge: 4,097, 8,192, 8,193,
  16,384, 16,385) and 12 % vocabulary-sized (log-uniform 32,769..262,144 or a common vocabulary:
  32,000, 50,257, 65,536, 131,072, 131,073, 151,936, 163,840, 262,144). Every GPU implementation tiles
  the vocabulary, so about 9 % of the rows have V > 4,096.
- Rows per call B: up to 64 / 32 / 16 / 4 by band.
- tau: 45 % the default RN32(0.7), 15 % 1.0, 25 % log-uniform in [2^-4, 2^4), 10 % an edge value of
  dyadic24.conformance.strategies.EDGE_TAUS, 5 % any finite positive pattern.
- Logit format: 60 % binary32, 20 % binary16, 20 % bfloat16 (rows are generated in the format; a
  subject that does not take it gets the exact binary32 widening, with the same expected outputs).
- Every 12th call replays the next golden vector in order (all of them within about 80,000 rows): its
  rows with their own seeds, rounds and positions, shuffled among up to four fresh rows of its V and
  tau (the hard inputs the vectors were searched for, now at other row positions of other batches,
  clause 2.4), in the vector's 16-bit format where it has one.
- Each row's family: gauss (normal x a scale from 1e-3 to 1e4), lm (language-model-like: a
  heavy-tailed decay over IDs, the likely tokens at low IDs, as BPE vocabularies have them), ties (a
  small pool of values with both zeros and -inf: many exact ties, greedy rows with tied maxima), top
  ties (a tie group straddling the 32nd place, clause 3.1), tile edges (the row's top values and ties
  placed at both sides of tile boundaries 256..8,192), masked (fewer than 33 finite logits, clause 3.2),
  zeros (+0, -0, -inf), subnormal, huge (opposite-signed magnitudes near 2^128, l - m overflows), spread
  (e across many binades, clause 6.2), midpoint (with tau = 1 and m = 0: the z of
  vectors/data/exp_near_midpoints.json exactly, clause 5.3), bits (raw patterns: NaNs of every kind),
  half_subnormal (binary16 subnormals of both signs, some -inf: the largest logits are distinct
  values that a binary16 input flushed to zero would make ties, clause 1.2).
  Then, independently: 3 % get a NaN, 3 % a +inf, 2 % are all -inf, 10 % get a random share of -inf.
- T: 60 % sampled (a random positive normal, or 1, 0.7, 2^-149, max), 15 % greedy (+0 or -0), 7 % bad
  (NaN, +inf, -inf, negative, -2^-149), the rest positive subnormal or tiny normal.
- seed, round, position: a third word-boundary values (clause 0.4 edges), the rest uniform uint64 or small.

The fast reference computes the expected outputs in worker processes; the main process sends each call
to the subject and compares the four output arrays row by row. Only outputs are compared (traces are
the golden vectors' and the fuzzing's job).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from dyadic24.api import TAU_DEFAULT_BITS, CallInputs, Proposal
from dyadic24.conformance.compare import RowOutput, compare_outputs
from dyadic24.conformance.impls import Implementation
from dyadic24.conformance.jsonl import Call
from dyadic24.conformance.report import BulkFailure, BulkResult
from dyadic24.conformance.runner import Progress, reproducer, row_output, single_row
from dyadic24.conformance.strategies import EDGE_TAUS, EDGE_U64, near_midpoint_z
from dyadic24.conformance.workers import ordered_map

GENERATOR = "dyadic24-bulk-2"
U32 = npt.NDArray[np.uint32]
NINF, PINF, NEG_ZERO = 0xFF800000, 0x7F800000, 0x80000000
BANDS = (("small", 0.45, 64), ("medium", 0.25, 32), ("large", 0.18, 16), ("vocab", 0.12, 4))
LARGE_EDGES = (4097, 8192, 8193, 16384, 16385)
VOCABS = (32000, 50257, 65536, 131072, 131073, 151936, 163840, 262144)
FAMILIES = (
    "gauss",
    "lm",
    "ties",
    "top_ties",
    "tile_edges",
    "masked",
    "zeros",
    "subnormal",
    "huge",
    "spread",
    "midpoint",
    "bits",
    "half_subnormal",
)
FAMILY_WEIGHTS = (0.19, 0.12, 0.10, 0.08, 0.06, 0.08, 0.04, 0.04, 0.04, 0.10, 0.06, 0.06, 0.03)
REPLAY_EVERY = 12  # every 12th call replays a golden vector
FORMATS = (("binary32", 0.6), ("binary16", 0.2), ("bfloat16", 0.2))


@dataclass(frozen=True)
class Plan:
    """The structure of one call (cheap to draw: the main process sizes the run from it)."""

    index: int
    band: str
    vocab: int
    batch: int
    tau_bits: int
    fmt: str
    replay: int  # index into golden_rows() groups, or -1


@dataclass(frozen=True)
class BulkCall:
    plan: Plan
    call: Call
    families: tuple[str, ...]


@cache
def golden() -> list[Any]:
    """The golden vectors a replay call draws from."""
    from dyadic24.vectors import store

    return list(store.iter_vectors())


def _log_uniform(rng: np.random.Generator, lo: int, hi: int) -> int:
    return int(min(hi, max(lo, round(float(np.exp(rng.uniform(np.log(lo), np.log(hi + 1))))))))


def plan(seed: int, index: int) -> Plan:
    """Call ``index``'s structure: band, V, B, tau, format, replay (generator dyadic24-bulk-1)."""
    rng = np.random.default_rng([seed, index, 0])
    if (
        index % REPLAY_EVERY == REPLAY_EVERY // 2
    ):  # the golden vectors in turn, all within REPLAY_EVERY x 310 calls
        vectors = golden()
        g = (index // REPLAY_EVERY + seed) % len(vectors)
        v = vectors[g]
        extra = int(rng.integers(0, 5))
        return Plan(
            index, "replay", v.vocab, v.batch + extra, int(v.tau_bits), v.narrow_format or "binary32", g
        )
    k = int(rng.choice(len(BANDS), p=[b[1] for b in BANDS]))
    band, _, max_rows = BANDS[k]
    if band == "small":
        vocab = int(rng.choice((1, 2, 31, 32, 33))) if rng.random() < 1 / 3 else int(rng.integers(1, 65))
    elif band == "medium":
        vocab = _log_uniform(rng, 65, 4096)
    elif band == "large":
        vocab = int(rng.choice(LARGE_EDGES)) if rng.random() < 0.25 else _log_uniform(rng, 4097, 32768)
    else:
        vocab = int(rng.choice(VOCABS)) if rng.random() < 0.4 else _log_uniform(rng, 32769, 262144)
    batch = int(rng.integers(1, max_rows + 1))
    r = rng.random()
    if r < 0.45:
        tau = TAU_DEFAULT_BITS
    elif r < 0.60:
        tau = 0x3F800000
    elif r < 0.85:
        tau = int(np.float32(2.0 ** rng.uniform(-4, 4)).view(np.uint32))
    elif r < 0.95:
        tau = int(rng.choice(EDGE_TAUS))
    else:
        tau = int(rng.integers(1, 0x7F7FFFFF + 1))
    fmt = FORMATS[int(rng.choice(len(FORMATS), p=[f[1] for f in FORMATS]))][0]
    return Plan(index, band, vocab, batch, tau, fmt, -1)


def _f32(values: npt.NDArray[np.float64]) -> U32:
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return np.asarray(values).astype(np.float32).view(np.uint32)


def _family_rows(family: str, n: int, v: int, tau: float, rng: np.random.Generator) -> U32:
    """n rows of V logits (binary32 bits) of one family."""
    if family == "gauss":
        scale = np.float32(rng.choice((1e-3, 0.3, 1.0, 3.0, 10.0, 1e4)))
        return (rng.standard_normal((n, v), dtype=np.float32) * scale).view(np.uint32)
    if family == "lm":
        # log-probabilities falling with the ID (frequent tokens first) plus noise: clustered top tokens
        ids = np.arange(v, dtype=np.float64)
        base = -float(rng.uniform(0.5, 2.0)) * np.log1p(ids / float(rng.uniform(1, 50)))
        return _f32(base[None, :] + rng.gumbel(size=(n, v)) * float(rng.uniform(0.1, 2.0)))
    if family == "ties":
        pool = np.array(
            [0x00000000, NEG_ZERO, 0x3F800000, 0xBF800000, 0x40000000, 0x3FC00000, NINF, 0x00000001],
            dtype=np.uint32,
        )
        take = pool[rng.choice(len(pool), size=int(rng.integers(1, 5)), replace=False)]
        return take[rng.integers(0, len(take), (n, v))]
    if family == "top_ties":
        out = np.empty((n, v), dtype=np.uint32)
        for r in range(n):
            top, tie, low = sorted(rng.integers(-200, 200, 3).tolist(), reverse=True)
            n_top = int(rng.integers(0, min(v, 40) + 1))
            n_tie = int(rng.integers(0, v - n_top + 1))
            vals = np.concatenate(
                [np.full(n_top, top / 8), np.full(n_tie, tie / 8), np.full(v - n_top - n_tie, low / 8)]
            )
            row = _f32(vals)
            if rng.random() < 0.5:
                row[n_top + n_tie :] = NINF
            row[(row == 0) & (rng.random(v) < 0.5)] = NEG_ZERO
            out[r] = row[rng.permutation(v)]
        return out
    if family == "tile_edges":
        out = _f32(rng.standard_normal((n, v)))
        edges = [t * k for t in (256, 512, 1024, 2048, 4096, 8192) for k in range(1, v // t + 1)] or [v // 2]
        for r in range(n):
            picks = rng.choice(edges, size=min(len(edges), int(rng.integers(1, 9))), replace=False)
            value = _f32(np.array([float(rng.uniform(5, 20))]))[0]
            for e in picks.tolist():
                for pos in range(max(0, e - 3), min(v, e + 3)):
                    out[r, pos] = value  # equal values on both sides of a tile boundary (clause 3.1)
        return out
    if family == "masked":
        out = np.full((n, v), NINF, dtype=np.uint32)
        for r in range(n):
            k = int(rng.integers(0, min(v, 33) + 1))
            where = rng.choice(v, size=k, replace=False)
            out[r, where] = _f32(rng.standard_normal(k) * float(rng.choice((0.01, 1.0, 100.0))))
        return out
    if family == "zeros":
        pool = np.array([0, NEG_ZERO, 0, NEG_ZERO, NEG_ZERO | 1, NINF], dtype=np.uint32)
        return pool[rng.integers(0, len(pool), (n, v))]
    if family == "subnormal":
        return rng.integers(0, 0x00800000, (n, v), dtype=np.uint32) | (
            rng.integers(0, 2, (n, v), dtype=np.uint32) << np.uint32(31)
        )
    if family == "huge":
        bits = (rng.integers(250, 255, (n, v), dtype=np.uint32) << np.uint32(23)) | rng.integers(
            0, 1 << 23, (n, v), dtype=np.uint32
        )
        bits |= rng.integers(0, 2, (n, v), dtype=np.uint32) << np.uint32(31)
        small = rng.random((n, v)) < 0.2
        bits[small] = _f32(rng.standard_normal(int(small.sum())))
        return bits
    if family == "spread":
        low = float(rng.integers(0, 40))
        vals = -rng.uniform(low, low + float(rng.integers(1, 40)), (n, v)) * min(tau, 1e30)
        vals[np.arange(n), rng.integers(0, v, n)] = 0.0
        return _f32(vals)
    if family == "midpoint":
        pool = np.array(near_midpoint_z() or (0xBF800000,), dtype=np.uint32)
        out = pool[rng.integers(0, len(pool), (n, v))]
        out[np.arange(n), rng.integers(0, v, n)] = np.where(rng.random(n) < 0.5, 0, NEG_ZERO).astype(
            np.uint32
        )
        return out
    if family == "half_subnormal":
        # binary16 subnormals k * 2^-24, k in 1..1023, as binary32 patterns (exact in every format)
        magnitude = rng.integers(1, 1024, (n, v)).astype(np.float64) * 2.0**-24
        out = _f32(np.where(rng.random((n, v)) < 0.3, -magnitude, magnitude))
        out[rng.random((n, v)) < 0.1] = NINF
        return out
    return rng.integers(0, 1 << 32, (n, v), dtype=np.uint32)  # "bits"


def _narrow(bits: U32, fmt: str) -> tuple[U32, npt.NDArray[np.uint16] | None]:
    """The rows rounded to a 16-bit format (the values the call carries) and their 16-bit patterns."""
    if fmt == "binary32":
        return bits, None
    if fmt == "bfloat16":
        nan = (bits & np.uint32(0x7FFFFFFF)) > np.uint32(PINF)
        up = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
        half = np.where(nan, (bits >> np.uint32(16)) | np.uint32(0x40), up).astype(np.uint16)
        return (half.astype(np.uint32) << np.uint32(16)), half
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        half = bits.view(np.float32).astype(np.float16)
    wide = half.astype(np.float32).view(np.uint32)
    return wide, half.view(np.uint16)


def _temperatures(rng: np.random.Generator, n: int) -> U32:
    r = rng.random(n)
    sampled = np.array([0x3F800000, 0x3F333333, 0x00000001, 0x7F7FFFFF], dtype=np.uint32)
    out = (rng.integers(100, 150, n, dtype=np.uint32) << np.uint32(23)) | rng.integers(
        0, 1 << 23, n, dtype=np.uint32
    )
    out = np.where(r < 0.15, sampled[rng.integers(0, 4, n)], out)
    greedy = np.where(rng.random(n) < 0.5, 0, NEG_ZERO).astype(np.uint32)
    bad = np.array([0x7FC00000, 0xFFC00001, PINF, NINF, 0xBF800000, NEG_ZERO | 1], dtype=np.uint32)[
        rng.integers(0, 6, n)
    ]
    tiny = np.where(
        rng.random(n) < 0.5, rng.integers(1, 0x00800000, n, dtype=np.uint32), np.uint32(0x00800000)
    )
    out = np.where((r >= 0.60) & (r < 0.75), greedy, out)
    out = np.where((r >= 0.75) & (r < 0.82), bad, out)
    return np.where(r >= 0.82, np.where(rng.random(n) < 0.5, tiny, out), out).astype(np.uint32)


def _u64s(rng: np.random.Generator, n: int) -> npt.NDArray[np.uint64]:
    r = rng.random(n)
    edge = np.array(EDGE_U64, dtype=np.uint64)[rng.integers(0, len(EDGE_U64), n)]
    wide = rng.integers(0, 1 << 63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(
        0, 2, n, dtype=np.uint64
    )
    small = rng.integers(0, 1 << 20, n, dtype=np.uint64)
    return np.where(r < 1 / 3, edge, np.where(r < 0.9, wide, small)).astype(np.uint64)


def generate(seed: int, index: int, rows: int | None = None) -> BulkCall:
    """Call ``index`` of the bulk stream of ``seed`` (its first ``rows`` rows, if given)."""
    p = plan(seed, index)
    rng = np.random.default_rng([seed, index, 1])
    n = p.batch
    tau = float(np.uint32(p.tau_bits).view(np.float32))
    families: list[str]
    if p.replay >= 0:
        v = golden()[p.replay]
        extra = n - v.batch
        fresh = (
            _family_rows("gauss", extra, p.vocab, tau, rng) if extra else np.zeros((0, p.vocab), np.uint32)
        )
        bits = np.concatenate([v.logits.view(np.uint32), fresh])
        temp = np.concatenate([v.temperature.view(np.uint32), _temperatures(rng, extra)])
        seeds = np.concatenate([v.seed, _u64s(rng, extra)])
        rounds = np.concatenate([v.round, _u64s(rng, extra)])
        positions = np.concatenate([v.position, _u64s(rng, extra)])
        families = ["golden"] * v.batch + ["gauss"] * extra
        order = rng.permutation(n)
        bits, temp, seeds, rounds, positions = (
            bits[order],
            temp[order],
            seeds[order],
            rounds[order],
            positions[order],
        )
        families = [families[i] for i in order.tolist()]
        narrow = None
        if v.narrow_format is not None:
            fresh_wide, fresh_narrow = _narrow(fresh, v.narrow_format)
            assert v.narrow_logits is not None and fresh_narrow is not None
            bits = np.concatenate([v.logits.view(np.uint32), fresh_wide])[order]
            narrow = np.concatenate([v.narrow_logits, fresh_narrow])[order]
    else:
        pick = rng.choice(len(FAMILIES), size=n, p=FAMILY_WEIGHTS)
        if p.tau_bits != 0x3F800000:  # midpoint rows need tau = 1 (z = l exactly)
            pick = np.where(pick == FAMILIES.index("midpoint"), FAMILIES.index("gauss"), pick)
        bits = np.empty((n, p.vocab), dtype=np.uint32)
        for f in np.unique(pick).tolist():
            where = np.flatnonzero(pick == f)
            bits[where] = _family_rows(FAMILIES[f], where.size, p.vocab, tau, rng)
        families = [FAMILIES[f] for f in pick.tolist()]
        # injections: NaN, +inf, all -inf, a share of -inf
        r = rng.random(n)
        cols = rng.integers(0, p.vocab, n)
        nan_bits = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF], dtype=np.uint32)[
            rng.integers(0, 4, n)
        ]
        bits[np.flatnonzero(r < 0.03), cols[r < 0.03]] = nan_bits[r < 0.03]
        hit = (r >= 0.03) & (r < 0.06)
        bits[np.flatnonzero(hit), cols[hit]] = PINF
        bits[(r >= 0.06) & (r < 0.08)] = NINF
        share = (r >= 0.08) & (r < 0.18)
        for row in np.flatnonzero(share).tolist():
            bits[row, rng.random(p.vocab) < rng.random()] = NINF
        bits, narrow = _narrow(bits, p.fmt)
        temp = _temperatures(rng, n)
        seeds, rounds, positions = _u64s(rng, n), _u64s(rng, n), _u64s(rng, n)
    k = n if rows is None else min(rows, n)
    inputs = CallInputs(
        logits=np.ascontiguousarray(bits[:k]).view(np.float32),
        temperature=np.ascontiguousarray(temp[:k]).view(np.float32),
        seed=seeds[:k].copy(),
        round=rounds[:k].copy(),
        position=positions[:k].copy(),
        tau_bits=p.tau_bits,
    )
    call = Call(
        inputs,
        p.fmt if narrow is not None else "binary32",
        None if narrow is None else np.ascontiguousarray(narrow[:k]),
    )
    return BulkCall(p, call, tuple(families[:k]))


def sizes(seed: int, rows: int) -> Iterator[int]:
    """Rows taken from each call (the last call cut) for a run of ``rows`` rows, drawn as the run goes
    (a run of 10^15 rows starts at once)."""
    total = 0
    index = 0
    while total < rows:
        b = min(plan(seed, index).batch, rows - total)
        yield b
        total += b
        index += 1


def _expected(task: tuple[int, int, int]) -> tuple[BulkCall, Proposal]:
    """(the call, the fast reference's outputs) for a worker."""
    from dyadic24.reference.fast import propose_fast

    seed, index, rows = task
    c = generate(seed, index, rows)
    i = c.call.inputs
    with np.errstate(all="ignore"):
        want = propose_fast(
            i.logits, i.temperature, i.seed, i.round, i.position, tau=np.uint32(i.tau_bits).view(np.float32)
        )
    return c, Proposal(want.status, want.token, want.ids, want.tickets)


def _stream(seed: int, counts: Iterable[int], workers: int) -> Generator[tuple[BulkCall, Proposal]]:
    tasks = ((seed, i, n) for i, n in enumerate(counts))
    yield from ordered_map(_expected, tasks, workers, chunk=4)


def _band(v: int) -> str:
    return "1-64" if v <= 64 else "65-4096" if v <= 4096 else "4097-32768" if v <= 32768 else "32769-262144"


def run_bulk(
    impl: Implementation,
    rows: int,
    *,
    seed: int = 0,
    workers: int = 1,
    progress: bool = True,
    max_failures: int = 20,
    stop_at_first: bool = False,
    result: BulkResult | None = None,
) -> BulkResult:
    """Run ``rows`` rows of the bulk stream of ``seed`` through the implementation (``stop_at_first``: up
    to the first call with a differing row, for the kill matrix). Counts go into ``result`` as the run
    goes (a stopped run keeps them)."""
    counts = sizes(seed, rows)
    result = BulkResult(seed=seed) if result is None else result
    families: Counter[str] = Counter()
    formats: Counter[str] = Counter()
    bands: Counter[str] = Counter()
    bar = Progress(f"[{impl.name}] bulk", rows, "rows", enabled=progress)
    began = time.monotonic()
    stream = _stream(seed, counts, workers)
    result.workers = workers
    try:
        _compare_stream(impl, stream, result, families, formats, bands, bar, max_failures, stop_at_first)
    finally:
        stream.close()  # now, not when garbage-collected: the workers' pool ends here
        result.seconds = time.monotonic() - began
        result.families = dict(sorted(families.items()))
        result.formats = dict(sorted(formats.items()))
        result.vocab_bands = dict(sorted(bands.items()))
    bar.finish(f"{result.differing_rows} differing rows")
    return result


def _compare_stream(
    impl: Implementation,
    stream: Iterable[tuple[BulkCall, Proposal]],
    result: BulkResult,
    families: Counter[str],
    formats: Counter[str],
    bands: Counter[str],
    bar: Progress,
    max_failures: int,
    stop_at_first: bool,
) -> None:
    for bc, want in stream:
        call = bc.call
        if call.fmt not in impl.formats:  # the exact binary32 widening, same expected outputs
            call = Call(call.inputs)
        got = impl.call(call, False)
        n = call.inputs.batch
        result.calls += 1
        result.rows += n
        families.update(bc.families)
        formats[call.fmt] += n
        bands[_band(call.inputs.vocab)] += n
        if got.proposal is None:
            result.failed_calls += 1
            result.differing_rows += n
            if len(result.call_errors) < max_failures:
                result.call_errors.append(
                    f"call {bc.plan.index}: {got.error} (reproduce: {reproducer(impl, call)[:300]}...)"
                )
        else:
            g = got.proposal
            bad = (
                (g.status != want.status)
                | (g.token != want.token)
                | (g.ids != want.ids).any(axis=1)
                | (g.tickets != want.tickets).any(axis=1)
            )
            rows_bad = np.flatnonzero(bad).tolist()
            result.differing_rows += len(rows_bad)
            for r in rows_bad:
                if len(result.failures) >= max_failures:
                    break
                div = compare_outputs(f"bulk call {bc.plan.index}", r, row_output(g, r), _row(want, r))
                assert div is not None
                result.failures.append(
                    BulkFailure(bc.plan.index, r, bc.families[r], div, reproducer(impl, single_row(call, r)))
                )
        bar.update(result.rows, f"{result.differing_rows} differing")
        if stop_at_first and not result.ok:
            break


def _row(p: Proposal, r: int) -> RowOutput:
    return row_output(p, r)

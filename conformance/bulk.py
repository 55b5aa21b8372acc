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

A deployment profile (``--shapes``, ``Profile``) restricts the stream to the vocabularies, logit
formats and batch sizes a deployment serves: every call takes its V, format and B from the profile
(uniformly), with every row family, status, edge value and tau as above; a replayed golden vector's
rows are placed at a profile V (at a random column offset among -inf padding, or cut to their first V
columns where the vector is wider), in a profile format (its own 16-bit form, or its logits rounded
to the format) and with a profile B. A JIT-compiling GPU subject then compiles a handful of variants.
The rows themselves come from conformance/bulk_rows.py.

Worker processes generate each call and compute the fast reference's outputs for it; the call's logits
travel to the main process, and to a Python subject's host, in a shared-memory segment (named
``d24-<runner pid>-<call>``, removed once compared), so a row of V = 163,840 is never pickled; the
main process sends each call to the subject and compares the four output arrays row by row. Only
outputs are compared (traces are the golden vectors' and the fuzzing's job).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from multiprocessing import shared_memory
from typing import Any

import numpy as np
import numpy.typing as npt

from dyadic24.api import TAU_DEFAULT_BITS, CallInputs, Proposal
from dyadic24.conformance.bulk_rows import NINF, PINF, family_rows, in_format, src, temperatures, u64s
from dyadic24.conformance.compare import compare_outputs
from dyadic24.conformance.impls import Implementation
from dyadic24.conformance.jsonl import Call
from dyadic24.conformance.report import BulkFailure, BulkResult
from dyadic24.conformance.runner import Progress, reproducer, row_output, single_row
from dyadic24.conformance.strategies import EDGE_TAUS
from dyadic24.conformance.workers import ordered_map

GENERATOR = "dyadic24-bulk-2"
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
FORMAT_NAMES = tuple(f for f, _ in FORMATS)


SHAPE_FORMATS = {"fp32": "binary32", "binary32": "binary32", "fp16": "binary16", "binary16": "binary16",
                 "bf16": "bfloat16", "bfloat16": "bfloat16"}  # fmt: skip
MAX_V, MAX_B = (1 << 31) - 1, 4096


class ProfileError(ValueError):
    """A --shapes text that does not parse; ``str()`` names the part and the rule."""


@dataclass(frozen=True)
class Profile:
    """The shapes a deployment serves: vocabularies, logit formats, batch sizes (each None: all)."""

    vocabs: tuple[int, ...] | None = None
    formats: tuple[str, ...] | None = None
    batches: tuple[int, int] | None = None  # B from .. to, inclusive

    @staticmethod
    def parse(text: str) -> Profile:
        """``V=151936,163840 formats=bf16,fp32 B=1..256`` (any of the three, in any order)."""
        vocabs: tuple[int, ...] | None = None
        formats: tuple[str, ...] | None = None
        batches: tuple[int, int] | None = None
        for part in text.split():
            key, sep, value = part.partition("=")
            items = [v for v in value.split(",") if v]
            if not sep or not items:
                raise ProfileError(f"{part!r}: write KEY=VALUES (V=..., formats=..., B=...)")
            if key == "V":
                if not all(v.isdigit() and 1 <= int(v) <= MAX_V for v in items):
                    raise ProfileError(f"{part!r}: V takes integers in [1, 2^31 - 1] (clause 1.1)")
                vocabs = tuple(sorted({int(v) for v in items}))
            elif key == "formats":
                unknown = [v for v in items if v not in SHAPE_FORMATS]
                if unknown:
                    raise ProfileError(f"{part!r}: unknown format(s) {unknown}; known: fp32, fp16, bf16")
                formats = tuple(dict.fromkeys(SHAPE_FORMATS[v] for v in items))
            elif key == "B":
                lo, dots, hi = value.partition("..")
                hi = hi if dots else lo
                if not (lo.isdigit() and hi.isdigit() and 1 <= int(lo) <= int(hi) <= MAX_B):
                    raise ProfileError(f"{part!r}: B takes N or LO..HI with 1 <= LO <= HI <= {MAX_B}")
                batches = (int(lo), int(hi))
            else:
                raise ProfileError(f"{part!r}: unknown key {key!r}; known: V, formats, B")
        if vocabs is None and formats is None and batches is None:
            raise ProfileError("no shape given (V=..., formats=..., B=...)")
        return Profile(vocabs, formats, batches)

    def text(self) -> str:
        parts = []
        if self.vocabs:
            parts.append("V=" + ",".join(map(str, self.vocabs)))
        if self.formats:
            parts.append("formats=" + ",".join(self.formats))
        if self.batches:
            parts.append(f"B={self.batches[0]}..{self.batches[1]}")
        return " ".join(parts)


ALL = Profile()


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
    # the shared memory holding the logits, if any: its name from a worker, the mapped segment once
    # the runner attached it (_attached)
    segment: Any = field(default=None, compare=False)


@cache
def golden() -> list[Any]:
    """The golden vectors a replay call draws from."""
    from dyadic24.vectors import store

    return list(store.iter_vectors())


def _log_uniform(rng: np.random.Generator, lo: int, hi: int) -> int:
    return int(min(hi, max(lo, round(float(np.exp(rng.uniform(np.log(lo), np.log(hi + 1))))))))


def plan(seed: int, index: int, profile: Profile = ALL) -> Plan:
    """Call ``index``'s structure: band, V, B, tau, format, replay (generator dyadic24-bulk-2)."""
    rng = np.random.default_rng([seed, index, 0])
    if index % REPLAY_EVERY == REPLAY_EVERY // 2:  # the golden vectors in turn
        vectors = golden()
        g = (index // REPLAY_EVERY + seed) % len(vectors)
        v = vectors[g]
        extra = int(rng.integers(0, 5))
        if profile is ALL:
            return Plan(
                index, "replay", v.vocab, v.batch + extra, int(v.tau_bits), v.narrow_format or "binary32", g
            )
        fits = [w for w in profile.vocabs or (v.vocab,) if w >= v.vocab]
        vocab = min(fits) if fits else max(profile.vocabs or (v.vocab,))
        formats = profile.formats or FORMAT_NAMES
        fmt = v.narrow_format if v.narrow_format in formats else "binary32"
        if fmt not in formats:
            fmt = formats[int(rng.integers(0, len(formats)))]
        lo, hi = profile.batches or (1, v.batch + extra)
        return Plan(index, "replay", vocab, min(hi, max(lo, v.batch + extra)), int(v.tau_bits), fmt, g)
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
    if profile.vocabs:
        band, vocab = "profile", int(profile.vocabs[int(rng.integers(0, len(profile.vocabs)))])
    if profile.batches:
        batch = int(rng.integers(profile.batches[0], profile.batches[1] + 1))
    if profile.formats:
        fmt = profile.formats[int(rng.integers(0, len(profile.formats)))]
    return Plan(index, band, vocab, batch, tau, fmt, -1)


def _placed(
    v: Any, p: Plan, rng: np.random.Generator
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint16] | None]:
    """A golden vector's rows at the plan's V and format: its logits at a random column offset among
    -inf (or its first V columns), in its own 16-bit form or rounded to the plan's format."""
    bits = v.logits.view(np.uint32)
    narrow = v.narrow_logits if p.fmt == v.narrow_format else None
    if p.vocab != v.vocab:
        out = np.full((bits.shape[0], p.vocab), NINF, dtype=np.uint32)
        at = int(rng.integers(0, p.vocab - v.vocab + 1)) if p.vocab > v.vocab else 0
        width = min(v.vocab, p.vocab)
        out[:, at : at + width] = bits[:, :width]
        bits = out
        if narrow is not None:
            wide = np.full(
                (bits.shape[0], p.vocab), NINF >> 16 if p.fmt == "bfloat16" else 0xFC00, dtype=np.uint16
            )
            wide[:, at : at + width] = narrow[:, :width]
            narrow = wide
    if p.fmt != "binary32" and narrow is None:
        bits, narrow = in_format(bits, p.fmt)
    return bits, narrow


def generate(seed: int, index: int, rows: int | None = None, profile: Profile = ALL) -> BulkCall:
    """Call ``index`` of the bulk stream of ``seed`` (its first ``rows`` rows, if given)."""
    p = plan(seed, index, profile)
    rng = np.random.default_rng([seed, index, 1])
    n = p.batch
    tau = float(np.uint32(p.tau_bits).view(np.float32))
    families: list[str]
    if p.replay >= 0:
        v = golden()[p.replay]
        keep = min(v.batch, n)
        extra = n - keep
        g_bits, g_narrow = _placed(v, p, rng)
        fresh = family_rows("gauss", extra, p.vocab, tau, rng) if extra else np.zeros((0, p.vocab), np.uint32)
        fresh_wide, fresh_narrow = in_format(fresh, p.fmt)
        order = rng.permutation(n)
        bits = np.concatenate([g_bits[:keep], fresh_wide])[order]
        narrow = None
        if g_narrow is not None and fresh_narrow is not None:
            narrow = np.concatenate([g_narrow[:keep], fresh_narrow])[order]
        temp = np.concatenate([v.temperature.view(np.uint32)[:keep], temperatures(rng, extra)])[order]
        seeds = np.concatenate([v.seed[:keep], u64s(rng, extra)])[order]
        rounds = np.concatenate([v.round[:keep], u64s(rng, extra)])[order]
        positions = np.concatenate([v.position[:keep], u64s(rng, extra)])[order]
        families = [(["golden"] * keep + ["gauss"] * extra)[i] for i in order.tolist()]
    else:
        pick = rng.choice(len(FAMILIES), size=n, p=FAMILY_WEIGHTS)
        if p.tau_bits != 0x3F800000:  # midpoint rows need tau = 1 (z = l exactly)
            pick = np.where(pick == FAMILIES.index("midpoint"), FAMILIES.index("gauss"), pick)
        bits = np.empty((n, p.vocab), dtype=np.uint32)
        for f in np.unique(pick).tolist():
            where = np.flatnonzero(pick == f)
            bits[where] = family_rows(FAMILIES[f], where.size, p.vocab, tau, rng)
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
            bits[row, src.unit(rng, 1, p.vocab)[0] < rng.random()] = NINF
        bits, narrow = in_format(bits, p.fmt)
        temp = temperatures(rng, n)
        seeds, rounds, positions = u64s(rng, n), u64s(rng, n), u64s(rng, n)
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


def sizes(seed: int, rows: int, profile: Profile = ALL) -> Iterator[int]:
    """Rows taken from each call (the last call cut) for a run of ``rows`` rows, drawn as the run goes
    (a run of 10^15 rows starts at once)."""
    total = 0
    index = 0
    while total < rows:
        b = min(plan(seed, index, profile).batch, rows - total)
        yield b
        total += b
        index += 1


def segment_name(owner: int, index: int) -> str:
    """The shared-memory segment of call ``index`` of the run of process ``owner``."""
    return f"d24-{owner}-{index}"


Task = tuple[int, int, int, Profile, int]  # seed, call index, rows, profile, owner pid (0: no segment)


def _expected(task: Task) -> tuple[BulkCall, Proposal]:
    """(the call, the fast reference's outputs) for a worker; with an owner, the call's logits go into a
    shared-memory segment (the 16-bit words first, then the binary32 widening) and the returned call
    holds none."""
    from dyadic24.reference.fast import propose_fast

    seed, index, rows, profile, owner = task
    c = generate(seed, index, rows, profile)
    i = c.call.inputs
    with np.errstate(all="ignore"):
        want = propose_fast(
            i.logits, i.temperature, i.seed, i.round, i.position, tau=np.uint32(i.tau_bits).view(np.float32)
        )
    expected = Proposal(want.status, want.token, want.ids, want.tickets)
    if not owner:
        return c, expected
    parts = ([] if c.call.narrow is None else [c.call.narrow]) + [i.logits]
    seg = shared_memory.SharedMemory(
        name=segment_name(owner, index), create=True, size=max(1, sum(a.nbytes for a in parts))
    )
    at = 0
    for a in parts:
        np.ndarray(a.shape, a.dtype, buffer=seg.buf, offset=at)[...] = a
        at += a.nbytes
    seg.close()
    empty = CallInputs(
        np.zeros((i.batch, 0), np.float32), i.temperature, i.seed, i.round, i.position, i.tau_bits
    )
    return BulkCall(c.plan, Call(empty, c.call.fmt), c.families, seg.name), expected


def _attached(bc: BulkCall) -> BulkCall:
    """The call of a worker's segment, its arrays views of the segment (``segment`` keeps it open)."""
    if bc.segment is None:
        return bc
    seg = shared_memory.SharedMemory(name=bc.segment)
    i = bc.call.inputs
    shape = (i.batch, bc.plan.vocab)
    narrow = None if bc.call.fmt == "binary32" else np.ndarray(shape, np.uint16, buffer=seg.buf)
    wide = np.ndarray(shape, np.float32, buffer=seg.buf, offset=0 if narrow is None else narrow.nbytes)
    inputs = CallInputs(wide, i.temperature, i.seed, i.round, i.position, i.tau_bits)
    # the call's own words lead the segment, whatever its format
    call = Call(inputs, bc.call.fmt, narrow, (bc.segment, 0))
    return BulkCall(bc.plan, call, bc.families, seg)


def _release(bc: BulkCall) -> None:
    seg = bc.segment
    if isinstance(seg, shared_memory.SharedMemory):
        seg.unlink()
        # numpy views of it hold no buffer export, so this unmaps under them: nothing reads the call
        # after its release. (BufferError: some other object's export; the mapping goes with it.)
        with contextlib.suppress(BufferError):
            seg.close()


def _unlink(owner: int, indices: Iterable[int]) -> None:
    """Remove the segments of calls issued but not compared (a stopped run)."""
    for index in indices:
        try:
            seg = shared_memory.SharedMemory(name=segment_name(owner, index))
        except (FileNotFoundError, OSError):
            continue
        seg.close()
        seg.unlink()


class _Stream:
    """The expected outputs of the bulk calls from the workers, in order; the segments of the calls
    issued are tracked so that a stopped run leaves none behind."""

    def __init__(self, seed: int, counts: Iterable[int], workers: int, profile: Profile) -> None:
        self.owner = os.getpid() if workers > 1 else 0
        self.issued: set[int] = set()
        self.done: set[int] = set()
        tasks = self._tasks(seed, counts, profile)
        # calls of a profile's vocabulary are large: one a message, two queued a worker
        big = profile.vocabs is not None
        self.calls = ordered_map(_expected, tasks, workers, chunk=1 if big else 4, depth=2 if big else 4)

    def _tasks(self, seed: int, counts: Iterable[int], profile: Profile) -> Iterator[Task]:
        for index, n in enumerate(counts):
            self.issued.add(index)
            yield (seed, index, n, profile, self.owner)

    def __iter__(self) -> Iterator[tuple[BulkCall, Proposal]]:
        for bc, want in self.calls:
            self.done.add(bc.plan.index)
            yield _attached(bc), want

    def close(self) -> None:
        self.calls.close()  # the workers end first: no segment is made after this
        if self.owner:
            _unlink(self.owner, self.issued - self.done)


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
    profile: Profile = ALL,
) -> BulkResult:
    """Run ``rows`` rows of the bulk stream of ``seed`` through the implementation (``stop_at_first``: up
    to the first call with a differing row, for the kill matrix). Counts go into ``result`` as the run
    goes (a stopped run keeps them)."""
    counts = sizes(seed, rows, profile)
    result = BulkResult(seed=seed) if result is None else result
    families: Counter[str] = Counter()
    formats: Counter[str] = Counter()
    bands: Counter[str] = Counter()
    bar = Progress(f"[{impl.name}] bulk", rows, "rows", enabled=progress)
    began = time.monotonic()
    stream = _Stream(seed, counts, workers, profile)
    result.workers = workers
    result.profile = profile.text()
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
        try:
            _compare_call(impl, bc, want, result, families, formats, bands, max_failures)
        finally:
            _release(bc)
        bar.update(result.rows, f"{result.differing_rows} differing")
        if stop_at_first and not result.ok:
            break


def _compare_call(
    impl: Implementation,
    bc: BulkCall,
    want: Proposal,
    result: BulkResult,
    families: Counter[str],
    formats: Counter[str],
    bands: Counter[str],
    max_failures: int,
) -> None:
    call = bc.call
    if call.fmt not in impl.formats:  # the exact binary32 widening, same expected outputs
        wide_at = (
            None if call.shm is None else (call.shm[0], 0 if call.narrow is None else call.narrow.nbytes)
        )
        call = Call(call.inputs, shm=wide_at)
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
            div = compare_outputs(f"bulk call {bc.plan.index}", r, row_output(g, r), row_output(want, r))
            assert div is not None
            result.failures.append(
                BulkFailure(bc.plan.index, r, bc.families[r], div, reproducer(impl, single_row(call, r)))
            )

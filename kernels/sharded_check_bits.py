"""The sharded check's bit-exactness sections (dyadic24.kernels.sharded_check): every golden vector
split across the ranks, targeted status rows whose deciding logit lies in one shard, and fuzzed rows,
each rank's outputs against the expected outputs, the fast reference and the unsharded kernel."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from dyadic24.kernels.backend import select_backend

select_backend()

from dyadic24.kernels import fuzz  # noqa: E402
from dyadic24.kernels.sharded_check_rows import (  # noqa: E402
    TORCH_DTYPES,
    Ctx,
    Rows,
    Tally,
    any_rank,
    check_rows,
    make_split,
    pack_np,
    row_details,
    run_sharded,
)

SPLITS = ("even", "uneven", "reversed", "empty", "shuffled", "tile")
GOLDEN_SPLITS = ("even", "uneven", "reversed", "empty", "shuffled")
# Fuzz vocabularies: K = 32 edges, the tile (4096) edges, one reduction chunk (32 tiles), large rows.
SMALL_VOCABS = (1, 2, 3, 5, 17, 31, 32, 33, 64, 100, 255, 1000, 4095, 4096, 4097, 8191, 8193, 12289)
LARGE_VOCABS = (50000, 131072, 131073, 163840, 262144)
MAX_ELEMENTS = 1 << 22  # logits per fuzz batch


def check_golden(ctx: Ctx) -> dict[str, Any]:
    """clause 13.1: every golden vector, split across the ranks."""
    from dyadic24.vectors.store import iter_vectors

    groups: dict[tuple[int, int, str | None], list[Any]] = {}
    skipped = 0
    for vec in iter_vectors():
        group = groups.setdefault((vec.vocab, vec.tau_bits, vec.narrow_format), [])
        cap = ctx.args.golden_rows_per_group
        if not cap or not group or sum(v.batch for v in group) + vec.batch <= cap:
            group.append(vec)
        else:
            skipped += 1
    # row isolation (clause 2.4): vectors sharing V and tau run as one call
    modes = GOLDEN_SPLITS if ctx.args.golden_splits == "all" else None
    tally = Tally()
    splits: Counter[str] = Counter()
    calls = empty_ranks = 0
    for gi, ((vocab, tau_bits, narrow), vecs) in enumerate(groups.items()):
        rows = Rows(
            logits=np.concatenate([v.logits for v in vecs]),
            temperature=np.concatenate([v.temperature for v in vecs]),
            seed=np.concatenate([v.seed for v in vecs]),
            round=np.concatenate([v.round for v in vecs]),
            position=np.concatenate([v.position for v in vecs]),
            tau=np.uint32(tau_bits).view(np.float32),
            dtype={"bfloat16": "bfloat16", "binary16": "float16"}.get(narrow or "", "float32"),
            narrow=_narrow_bits(vecs) if narrow else None,
        )
        expected = np.concatenate([pack_np(v.expected) for v in vecs])
        where = [(v.file, v.tc_id, r) for v in vecs for r in range(v.batch)]
        for mode in modes or (GOLDEN_SPLITS[gi % len(GOLDEN_SPLITS)],):
            offsets, sizes = make_split(np.random.default_rng([gi, len(mode)]), vocab, ctx.world, mode)
            packed = run_sharded(ctx, rows, offsets, sizes)
            check_rows(
                ctx,
                tally,
                rows,
                offsets,
                sizes,
                packed,
                expected=expected,
                unsharded_too=ctx.cuda,
                fast_select="all",
                extra=row_details(
                    file=[w[0] for w in where], tc_id=[w[1] for w in where], split=[mode] * rows.batch
                ),
            )
            splits[mode] += 1
            calls += 1
            empty_ranks += sum(1 for s in sizes if s == 0)
    return {
        "passed": tally.passed,
        "vectors": sum(len(v) for v in groups.values()),
        "vectors_left_out": skipped,
        "rows": tally.rows,
        "calls": calls,
        "splits": dict(splits),
        "empty_rank_shards": empty_ranks,
        "failing_rows": dict(tally.failing),
        "failures": tally.examples,
    }


def _narrow_bits(vecs: Sequence[Any]) -> npt.NDArray[np.uint16]:
    parts = [v.narrow_logits for v in vecs]
    if any(p is None for p in parts):
        raise ValueError("golden vectors of one group disagree on their 16-bit form")
    return np.concatenate(parts)


def _status_rows(
    rng: np.random.Generator, offsets: Sequence[int], sizes: Sequence[int], vocab: int, full: bool
) -> tuple[list[npt.NDArray[np.float32]], list[float], list[str]]:
    """Rows whose special values sit in chosen ranks' shards (clause 2.1) and, when ``full``, value and
    signed-zero ties across shard boundaries (3.1) and bad temperatures (2.1)."""
    nan_p, nan_n = np.uint32(0x7FC00000).view(np.float32), np.uint32(0xFFC00000).view(np.float32)
    inf, ninf = np.float32(np.inf), np.float32(-np.inf)
    logits: list[npt.NDArray[np.float32]] = []
    temps: list[float] = []
    names: list[str] = []

    def normal() -> npt.NDArray[np.float32]:
        return (rng.standard_normal(vocab) * 3).astype(np.float32)

    def at(r: int) -> int:
        return int(offsets[r] + rng.integers(sizes[r]))

    def add(name: str, row: npt.NDArray[np.float32], temp: float = 1.0) -> None:
        logits.append(row)
        temps.append(temp)
        names.append(name)

    live = [r for r in range(len(sizes)) if sizes[r] > 0]
    for r in live:
        others = [q for q in live if q != r]
        row = normal()
        row[at(r)] = nan_p
        add(f"nan in rank {r}", row)
        row = normal()
        row[at(r)] = nan_n  # sorts below every key: only the flag can report it
        if others:
            row[at(others[0])] = inf
        add(f"negative nan in rank {r}, +inf elsewhere", row)
        row = normal()
        row[at(r)] = inf
        add(f"+inf in rank {r}", row)
        row = np.full(vocab, ninf, dtype=np.float32)
        row[at(r)] = inf
        add(f"+inf in rank {r}, -inf elsewhere", row)
        row = np.full(vocab, ninf, dtype=np.float32)
        row[at(r)] = np.float32(-3.5)
        add(f"one finite logit, in rank {r}", row)
        row = normal()
        row[offsets[r] : offsets[r] + sizes[r]] = ninf
        add(f"rank {r} all -inf", row)
        row = normal()
        row[at(r)] = nan_p
        add(f"nan in rank {r}, bad temperature", row, float("nan"))
    add("all -inf", np.full(vocab, ninf, dtype=np.float32))
    if not full:
        return logits, temps, names
    add("all -inf, bad temperature", np.full(vocab, ninf, dtype=np.float32), float("nan"))
    add("bad temperature", normal(), -1.0)
    add("+inf temperature", normal(), float("inf"))
    zeros = np.where(rng.random(vocab) < 0.5, np.float32(-0.0), np.float32(0.0)).astype(np.float32)
    zeros[rng.random(vocab) < 0.2] = ninf
    for temp in (0.0, -0.0, 1.0, 1e-45):
        add(f"signed zero ties, T={temp}", zeros.copy(), temp)
    add("all equal", np.full(vocab, np.float32(1.5), dtype=np.float32))
    add("all equal, greedy", np.full(vocab, np.float32(1.5), dtype=np.float32), 0.0)
    for r in live:
        # the maximum tied at the last ID of one shard and the first ID of the next (lowest ID wins)
        row = normal()
        last = offsets[r] + sizes[r] - 1
        row[last] = np.float32(50.0)
        if last + 1 < vocab:
            row[last + 1] = np.float32(50.0)
        add(f"max tie across the end of rank {r}", row, 0.0)
        add(f"max tie across the end of rank {r}, sampled", row.copy(), 0.5)
    tiny = np.full(vocab, np.float32(-1e-45), dtype=np.float32)
    tiny[rng.random(vocab) < 0.5] = np.float32(1e-45)
    add("subnormal ties", tiny, 1e-45)
    return logits, temps, names


def check_statuses(ctx: Ctx) -> dict[str, Any]:
    """clauses 2.1, 2.3, 3.1: special values in one shard decide the row on every rank."""
    rng = np.random.default_rng(11)
    tally = Tally()
    calls = 0
    world = ctx.world
    layouts: list[tuple[int, list[int], list[int], bool]] = []
    sizes = [8 + 5 * r for r in range(world)]
    vocab = sum(sizes)
    perm = [int(i) for i in rng.permutation(world)]
    starts = np.cumsum([0] + [sizes[p] for p in perm])[:-1]
    offsets = [0] * world
    for slot, p in enumerate(perm):
        offsets[p] = int(starts[slot])
    layouts.append((vocab, offsets, sizes, True))
    if world > 1:  # vocab_total < world: some ranks hold nothing
        small = world - 1
        layouts.append(
            (small, [min(r, small) for r in range(world)], [int(r < small) for r in range(world)], False)
        )
    for vocab_, offs, szs, full in layouts:
        logits, temps, names = _status_rows(rng, offs, szs, vocab_, full)
        batch = len(logits)
        rows = Rows(
            logits=np.stack(logits),
            temperature=np.array(temps, dtype=np.float32),
            seed=rng.integers(0, 2**64 - 1, batch, dtype=np.uint64, endpoint=True),
            round=rng.integers(0, 2**64 - 1, batch, dtype=np.uint64, endpoint=True),
            position=rng.integers(0, 2**64 - 1, batch, dtype=np.uint64, endpoint=True),
            tau=np.float32(0.7),
        )
        packed = run_sharded(ctx, rows, offs, szs)
        check_rows(
            ctx,
            tally,
            rows,
            offs,
            szs,
            packed,
            unsharded_too=ctx.cuda,
            extra=row_details(case=names),
        )
        calls += 1
    return {
        "passed": tally.passed,
        "rows": tally.rows,
        "calls": calls,
        "failing_rows": dict(tally.failing),
        "failures": tally.examples,
    }


def fuzz_shapes(rng: np.random.Generator, rows: int, max_vocab: int, max_batch: int) -> list[tuple[int, int]]:
    small = [v for v in SMALL_VOCABS if v <= max_vocab] or [max_vocab]
    large = [v for v in LARGE_VOCABS if v <= max_vocab]
    shapes: list[tuple[int, int]] = []
    total = 0
    while total < rows:
        if large and rng.random() < 0.1:
            vocab = int(rng.choice(large))
            batch = int(rng.integers(1, 17))
        else:
            vocab = int(rng.choice(small))
            batch = int(rng.integers(1, max_batch + 1))
        batch = max(1, min(batch, MAX_ELEMENTS // vocab, rows - total))
        shapes.append((batch, vocab))
        total += batch
    return shapes


def check_fuzz(ctx: Ctx) -> dict[str, Any]:
    """Fuzzed rows of every status and hard case, every split pattern and logits dtype."""
    a = ctx.args
    rng = np.random.default_rng(a.seed)
    shapes = fuzz_shapes(rng, a.rows, a.max_vocab, a.max_batch)
    p_fast = min(1.0, a.reference_rows / max(1, a.rows))
    tally = Tally()
    statuses = np.zeros(5, dtype=np.int64)
    splits: Counter[str] = Counter()
    dtypes: Counter[str] = Counter()
    families: Counter[str] = Counter()
    fast_rows = unsharded_rows = empty_batches = 0
    began = time.perf_counter()
    stopped_early = False
    for i, (batch, vocab) in enumerate(shapes):
        dtype = str(rng.choice(list(TORCH_DTYPES), p=[0.6, 0.2, 0.2]))
        call = fuzz.make_call(rng, batch, vocab, dtype, ctx.table_z)
        mode = str(rng.choice(SPLITS))
        offsets, sizes = make_split(rng, vocab, ctx.world, mode)
        rows = Rows.of(call)
        packed = run_sharded(ctx, rows, offsets, sizes)
        ref_rng = np.random.default_rng([a.seed, i])  # rank 0 only: must not touch the shared stream
        select = np.nonzero(ref_rng.random(batch) < p_fast)[0] if ctx.lead else None
        with_unsharded = ctx.cuda or bool(a.unsharded_every and i % a.unsharded_every == 0)
        check_rows(
            ctx,
            tally,
            rows,
            offsets,
            sizes,
            packed,
            unsharded_too=with_unsharded,
            fast_select=select,
            extra=row_details(family=call.families, split=[mode] * batch),
        )
        if ctx.lead:
            fast_rows += 0 if select is None else int(select.size)
            unsharded_rows += batch if with_unsharded else 0
            statuses += np.bincount(packed[:, 0].cpu().numpy(), minlength=5)[:5]
            splits[mode] += 1
            dtypes[dtype] += 1
            families.update(call.families)
            empty_batches += int(any(s == 0 for s in sizes))
        over = a.fuzz_seconds > 0 and time.perf_counter() - began > a.fuzz_seconds
        if any_rank(ctx, over):
            stopped_early = i + 1 < len(shapes)
            break
    names = ("OK", "NAN_LOGIT", "POS_INF_LOGIT", "ZERO_MASS", "BAD_TEMPERATURE")
    return {
        "passed": tally.passed,
        "rows": tally.rows,
        "rows_requested": a.rows,
        "stopped_early_by_time_limit": stopped_early,
        "batches": len(shapes),
        "rows_vs_unsharded_kernel": unsharded_rows,
        "rows_vs_fast_reference": fast_rows,
        "status_counts": {n: int(c) for n, c in zip(names, statuses, strict=True)},
        "splits": dict(splits),
        "batches_with_an_empty_rank": empty_batches,
        "dtypes": dict(dtypes),
        "families": dict(families),
        "max_vocab": max(v for _, v in shapes) if shapes else 0,
        "failing_rows": dict(tally.failing),
        "failures": tally.examples,
        "seconds": round(time.perf_counter() - began, 2),
    }

"""The vocabulary-sharded proposal across ranks: bit-exactness, bytes exchanged and latency, with reports.

    torchrun --nproc_per_node 2 -m dyadic24.kernels.sharded_check --out DIR
    python -m dyadic24.kernels.sharded_check --out DIR [--world 2]       (starts the ranks itself)
    TRITON_INTERPRET=0 python -m dyadic24.kernels.sharded_check --aot    (compile for sm_90, no GPU)

NCCL on GPUs (one GPU per rank), gloo on CPUs with the Triton interpreter (the tests use small sizes).
NVLink multicast stays off: NCCL_NVLS_ENABLE=0 and TORCH_SYMM_MEM_DISABLE_MULTICAST=1 are set before
the process group is created. Sections (DIR/sharded_check.json, DIR/sharded_check.md, written by rank 0;
exit status 0 iff all pass):
  environment  torch, triton, CUDA, NCCL, driver versions; every rank's device; backend
  golden       every golden vector split across the ranks (the split pattern rotates: even, uneven,
               reversed rank order, one rank holding everything, shuffled), every rank's outputs
               against the expected outputs, the fast reference and (GPU) the unsharded kernel
  statuses     targeted rows: NaN / +inf / -inf in one rank's shard only, signed-zero and value ties
               across shard boundaries, bad temperatures, vocab_total < world (empty ranks)
  fuzz         N fuzzed rows (dyadic24.kernels.fuzz: every status and hard case; V up to 262,144; even,
               uneven, reversed, empty-rank, shuffled and tile-boundary splits; float32 / bfloat16 /
               float16) -- every rank's outputs against the unsharded kernel on rank 0 over the full
               rows and, on a sample, the fast reference
  validation   argument errors raise the same ArgumentError on every rank (clause 1.5)
  reuse        workspace and out reused across calls, check_replicated
  exchange     bytes per row of the exchange (from the tensor sizes) against gathering the logit shards
  graph        CUDA graph of a sharded call: replays, fresh inputs (CUDA only)
  perf         latency of one position at B = 1, 2, 4, V = 163,840 split evenly: sharded, against
               all_gather of the logit shards + the unsharded kernel, and one GPU alone (CUDA only)
Every rank's outputs are gathered to rank 0 (an extra all_gather of the checker, not of the method)
and compared there; the result is the same on every rank or the row counts as a mismatch.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
import torch.distributed as dist

from dyadic24.api import ArgumentError, Proposal
from dyadic24.kernels.backend import interpreting, select_backend

select_backend()

from dyadic24.kernels import fuzz, sharded  # noqa: E402
from dyadic24.kernels import propose as unsharded  # noqa: E402

NCCL_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}  # never NVLink multicast
TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
FIELDS = ("status", "token", "ids", "tickets")
PACKED = 66  # status, token, 32 ids, 32 tickets (int32)
SPLITS = ("even", "uneven", "reversed", "empty", "shuffled", "tile")
GOLDEN_SPLITS = ("even", "uneven", "reversed", "empty", "shuffled")
# Fuzz vocabularies: K = 32 edges, the tile (4096) edges, one reduction chunk (32 tiles), large rows.
SMALL_VOCABS = (1, 2, 3, 5, 17, 31, 32, 33, 64, 100, 255, 1000, 4095, 4096, 4097, 8191, 8193, 12289)
LARGE_VOCABS = (50000, 131072, 131073, 163840, 262144)
MAX_ELEMENTS = 1 << 22  # logits per fuzz batch
MAX_EXAMPLES = 20
I32 = npt.NDArray[np.int32]


@dataclass
class Ctx:
    """One rank's view of the run."""

    rank: int
    world: int
    device: torch.device
    args: argparse.Namespace
    table_z: list[int]

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def lead(self) -> bool:
        return self.rank == 0


# ---------------------------------------------------------------- shards, inputs, outputs


def make_split(rng: np.random.Generator, vocab: int, world: int, mode: str) -> tuple[list[int], list[int]]:
    """Per-rank (offsets, sizes) partitioning [0, vocab) in the given pattern (ranks may be empty)."""
    if mode == "empty":
        holder = int(rng.integers(world))
        offsets = [int(rng.choice([0, vocab])) for _ in range(world)]
        sizes = [0] * world
        offsets[holder], sizes[holder] = 0, vocab
        return offsets, sizes
    if mode in ("even", "reversed"):
        cuts = [k * vocab // world for k in range(1, world)]
    elif mode == "tile" and vocab > unsharded.TILE:
        near = [k * unsharded.TILE + int(rng.integers(-1, 2)) for k in range(1, vocab // unsharded.TILE + 1)]
        pick = rng.choice(len(near), min(world - 1, len(near)), replace=False)
        cuts = sorted(min(max(near[int(i)], 0), vocab) for i in pick)
        cuts += [vocab] * (world - 1 - len(cuts))
    else:  # uneven, shuffled (and tile for small vocabularies)
        cuts = sorted(int(c) for c in rng.integers(0, vocab + 1, world - 1))
    bounds = [0, *cuts, vocab]
    pieces = [(bounds[i], bounds[i + 1] - bounds[i]) for i in range(world)]
    if mode == "reversed":
        pieces = pieces[::-1]
    elif mode == "shuffled":
        pieces = [pieces[int(i)] for i in rng.permutation(world)]
    return [p[0] for p in pieces], [p[1] for p in pieces]


@dataclass(frozen=True)
class Rows:
    """A call's full inputs as numpy (every rank holds the same), optionally with a 16-bit form."""

    logits: npt.NDArray[np.float32]  # [B, V], the exact widening of the 16-bit form when there is one
    temperature: npt.NDArray[np.float32]
    seed: npt.NDArray[np.uint64]
    round: npt.NDArray[np.uint64]
    position: npt.NDArray[np.uint64]
    tau: np.float32
    dtype: str = "float32"
    narrow: npt.NDArray[np.uint16] | None = None  # bf16 / fp16 bit patterns when given as such

    @property
    def batch(self) -> int:
        return int(self.logits.shape[0])

    @property
    def vocab(self) -> int:
        return int(self.logits.shape[1])

    @staticmethod
    def of(call: fuzz.Call) -> Rows:
        return Rows(call.logits, call.temperature, call.seed, call.round, call.position, call.tau, call.dtype)


def _u64_tensor(a: npt.NDArray[np.uint64], device: torch.device) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a).view(np.int64).copy()).to(device)


def row_tensors(rows: Rows, device: torch.device) -> tuple[torch.Tensor, ...]:
    """temperature, seed, round, position on the device."""
    return (
        torch.from_numpy(np.ascontiguousarray(rows.temperature).copy()).to(device),
        _u64_tensor(rows.seed, device),
        _u64_tensor(rows.round, device),
        _u64_tensor(rows.position, device),
    )


def shard_tensor(rows: Rows, offset: int, size: int, device: torch.device) -> torch.Tensor:
    """This rank's [B, size] slice in the call's dtype (16-bit forms are exact: built from their bits)."""
    if rows.narrow is not None:
        part = np.ascontiguousarray(rows.narrow[:, offset : offset + size]).view(np.int16)
        return torch.from_numpy(part.copy()).to(device).view(TORCH_DTYPES[rows.dtype])
    part32 = np.ascontiguousarray(rows.logits[:, offset : offset + size])
    return torch.from_numpy(part32.copy()).to(TORCH_DTYPES[rows.dtype]).to(device)


def pack(outs: Sequence[torch.Tensor]) -> torch.Tensor:
    status, token, ids, tickets = outs
    return torch.cat([status[:, None], token[:, None], ids, tickets], dim=1).contiguous()


def pack_np(p: Proposal) -> I32:
    return np.concatenate([p.status[:, None], p.token[:, None], p.ids, p.tickets], axis=1).astype(np.int32)


def run_sharded(ctx: Ctx, rows: Rows, offsets: Sequence[int], sizes: Sequence[int]) -> torch.Tensor:
    """This rank's sharded outputs, packed [B, 66] int32 (the call without a workspace: it validates)."""
    off, size = offsets[ctx.rank], sizes[ctx.rank]
    local = shard_tensor(rows, off, size, ctx.device)
    outs = sharded.propose_sharded(local, off, rows.vocab, *row_tensors(rows, ctx.device), tau=rows.tau)
    return pack(outs)


def gather_packed(ctx: Ctx, packed: torch.Tensor) -> npt.NDArray[np.int32]:
    """Every rank's packed outputs, [world, B, 66] (on every rank)."""
    every = torch.empty((ctx.world * packed.shape[0], PACKED), dtype=torch.int32, device=packed.device)
    sharded.all_gather_tensor(every, packed.contiguous(), group=None)
    return every.cpu().numpy().reshape(ctx.world, packed.shape[0], PACKED)


def unsharded_packed(ctx: Ctx, rows: Rows) -> I32:
    """The unsharded kernel over the full float32 rows (the exact widening of any 16-bit logits, so
    clause 1.2 makes the result the same) on this rank's device."""
    full = torch.from_numpy(np.ascontiguousarray(rows.logits).copy()).to(ctx.device)
    outs = unsharded.propose(full, *row_tensors(rows, ctx.device), tau=rows.tau)
    return np.asarray(pack(outs).cpu().numpy(), dtype=np.int32)


def fast_packed(rows: Rows, select: npt.NDArray[np.intp] | None = None) -> I32:
    from dyadic24.reference.fast import propose_fast

    s = select if select is not None else np.arange(rows.batch)
    p = propose_fast(
        rows.logits[s], rows.temperature[s], rows.seed[s], rows.round[s], rows.position[s], tau=rows.tau
    )
    return pack_np(p)


def mismatches(got: npt.NDArray[np.int32], want: I32) -> list[tuple[int, int, list[str]]]:
    """(row, rank, differing fields) for every rank whose outputs (got [world, B, 66]) differ from
    ``want`` [B, 66] on a row."""
    out: list[tuple[int, int, list[str]]] = []
    bad = (got != want[None]).any(axis=2)
    spans = {"status": (0, 1), "token": (1, 2), "ids": (2, 34), "tickets": (34, 66)}
    for rank, i in zip(*np.nonzero(bad), strict=True):
        fields = [f for f, (a, b) in spans.items() if not np.array_equal(got[rank, i, a:b], want[i, a:b])]
        out.append((int(i), int(rank), fields))
    return out


def _describe(
    rows: Rows, row: int, offsets: Sequence[int], sizes: Sequence[int], extra: dict[str, Any]
) -> dict[str, Any]:
    return {
        "vocab": rows.vocab,
        "dtype": rows.dtype,
        "offsets": list(offsets),
        "sizes": list(sizes),
        "tau": f"{int(np.float32(rows.tau).view(np.uint32)):08x}",
        "temperature": f"{int(rows.temperature[row : row + 1].view(np.uint32)[0]):08x}",
        "seed": int(rows.seed[row]),
        "round": int(rows.round[row]),
        "position": int(rows.position[row]),
        "logits_head": [f"{int(v):08x}" for v in rows.logits[row, :8].view(np.uint32)],
        **extra,
    }


def _any_rank(ctx: Ctx, flag: bool) -> bool:
    dev = sharded.exchange_device(None, ctx.device)
    mine = torch.tensor([1 if flag else 0], dtype=torch.int64, device=dev)
    every = torch.empty(ctx.world, dtype=torch.int64, device=dev)
    sharded.all_gather_tensor(every, mine, group=None)
    return bool(every.any().item())


def _barrier(ctx: Ctx) -> None:
    _any_rank(ctx, False)
    if ctx.cuda:
        torch.cuda.synchronize()


def row_details(**columns: Sequence[Any]) -> Callable[[int], dict[str, Any]]:
    """Per-row details for failure reports."""

    def describe(r: int) -> dict[str, Any]:
        return {k: v[r] for k, v in columns.items()}

    return describe


class Tally:
    """Mismatch bookkeeping on rank 0."""

    def __init__(self) -> None:
        self.rows = 0
        self.failing: dict[str, int] = Counter()
        self.examples: list[dict[str, Any]] = []

    def add(
        self, what: str, found: list[tuple[int, int, list[str]]], describe: Callable[[int], dict[str, Any]]
    ) -> None:
        rows_bad = sorted({r for r, _, _ in found})
        self.failing[what] += len(rows_bad)
        for r in rows_bad:
            if len(self.examples) < MAX_EXAMPLES:
                ranks = {k: f for rr, k, f in found if rr == r}
                self.examples.append({"against": what, "row": r, "ranks_fields": ranks, **describe(r)})

    @property
    def passed(self) -> bool:
        return not any(self.failing.values())


def check_rows(
    ctx: Ctx,
    tally: Tally,
    rows: Rows,
    offsets: Sequence[int],
    sizes: Sequence[int],
    packed: torch.Tensor,
    *,
    expected: I32 | None = None,
    unsharded_too: bool = True,
    fast_select: npt.NDArray[np.intp] | str | None = "all",
    extra: Callable[[int], dict[str, Any]] | None = None,
) -> None:
    """Gather every rank's outputs; on rank 0 compare them with the references."""
    every = gather_packed(ctx, packed)
    if not ctx.lead:
        return
    tally.rows += rows.batch

    def describe(r: int) -> dict[str, Any]:
        return _describe(rows, r, offsets, sizes, extra(r) if extra else {})

    tally.add("across_ranks", mismatches(every, every[0]), describe)
    if expected is not None:
        tally.add("expected", mismatches(every, expected), describe)
    if unsharded_too:
        tally.add("unsharded_kernel", mismatches(every, unsharded_packed(ctx, rows)), describe)
    if isinstance(fast_select, str):
        tally.add("fast_reference", mismatches(every, fast_packed(rows)), describe)
    elif fast_select is not None and fast_select.size:
        want = fast_packed(rows, fast_select)
        found = mismatches(every[:, fast_select], want)
        tally.add("fast_reference", [(int(fast_select[r]), k, f) for r, k, f in found], describe)


# ---------------------------------------------------------------- sections


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
        if _any_rank(ctx, over):
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


def _expect_error(ctx: Ctx, fn: Callable[[], object]) -> str:
    try:
        fn()
    except ArgumentError as exc:
        return exc.argument
    return "none"


def check_validation(ctx: Ctx) -> dict[str, Any]:
    """clause 1.5: a bad argument on one rank raises an ArgumentError naming it on EVERY rank."""
    rank, world, dev = ctx.rank, ctx.world, ctx.device
    rng = np.random.default_rng(5)
    rows = Rows.of(fuzz.make_call(rng, 3, 40, "float32", [], families=("normal",)))
    offsets, sizes = make_split(rng, 40, world, "even")
    off, size = offsets[rank], sizes[rank]
    last = world - 1
    local = shard_tensor(rows, off, size, dev)
    per_row = row_tensors(rows, dev)

    def call(lg: Any = local, o: Any = off, total: Any = 40, tau: Any = rows.tau, **kw: Any) -> object:
        return sharded.propose_sharded(lg, o, total, *kw.pop("per_row", per_row), tau=tau, **kw)

    def shifted(delta: int) -> object:
        return call(o=off + delta if rank == last and size > 1 else off)

    cases: dict[str, tuple[Callable[[], object], str]] = {
        "valid call": (call, "none"),
        "overlapping shards (last rank starts one token early)": (lambda: shifted(-1), "vocab_offset"),
        "vocab_total differs on the last rank": (
            lambda: call(total=41 if rank == last else 40),
            "vocab_total",
        ),
        "shards cover less than vocab_total": (lambda: call(total=41), "vocab_total"),
        "shard beyond vocab_total on rank 0": (
            lambda: call(total=40 if rank else size - 1 + off),
            "vocab_offset",
        ),
        "int32 logits on the last rank": (
            lambda: call(lg=local.view(torch.int32) if rank == last else local),
            "local_logits",
        ),
        "tau differs on rank 0": (lambda: call(tau=np.float32(0.5) if rank == 0 else rows.tau), "tau"),
        "tau not finite everywhere": (lambda: call(tau=float("inf")), "tau"),
        "B differs on the last rank": (
            lambda: call(
                lg=local[:2] if rank == last else local,
                per_row=[t[:2] for t in per_row] if rank == last else per_row,
            ),
            "local_logits",
        ),
        "temperature float64 on rank 0": (
            lambda: call(per_row=[per_row[0].double(), *per_row[1:]] if rank == 0 else per_row),
            "temperature",
        ),
        "seed of the wrong length on the last rank": (
            lambda: call(per_row=[per_row[0], per_row[1][:1], *per_row[2:]] if rank == last else per_row),
            "seed",
        ),
        "vocab_offset not an integer on rank 0": (
            lambda: call(o=float(off) if rank == 0 else off),
            "vocab_offset",
        ),
        "workspace with a partition gap": (
            lambda: sharded.make_sharded_workspace(3, size, off + (1 if rank == last and size else 0), 40),
            "vocab_offset",
        ),
        "workspace for another B (every rank)": (
            lambda: _ws_mismatch(local, off, per_row, rows.tau),
            "workspace",
        ),
        "check_replicated with another seed on the last rank": (
            lambda: sharded.check_replicated(
                per_row[0], per_row[1] + (1 if rank == last else 0), per_row[2], per_row[3], tau=rows.tau
            ),
            "seed",
        ),
    }
    results: dict[str, dict[str, Any]] = {}
    for name, (fn, want) in cases.items():
        got = _expect_error(ctx, fn)
        _barrier(ctx)  # every rank left the case (a hang here would be a failed consistency)
        every: list[Any] = [None] * world
        dist.all_gather_object(every, got)
        results[name] = {"expected": want, "ranks": every, "passed": all(g == want for g in every)}
    return {"passed": all(r["passed"] for r in results.values()), "cases": results}


def _ws_mismatch(local: torch.Tensor, off: int, per_row: Sequence[torch.Tensor], tau: Any) -> object:
    """A workspace made for B = 2 used with B = 3 rows: raises locally, before any collective."""
    ws = sharded.make_sharded_workspace(2, int(local.shape[1]), off, 40)
    return sharded.propose_sharded(local, off, 40, *per_row, tau=tau, workspace=ws)


def check_reuse(ctx: Ctx) -> dict[str, Any]:
    """Workspace and out reused across calls (the capturable form), check_replicated."""
    rng = np.random.default_rng(9)
    tally = Tally()
    vocab = 20000 if not interpreting() else 300
    offsets, sizes = make_split(rng, vocab, ctx.world, "uneven")
    off, size = offsets[ctx.rank], sizes[ctx.rank]
    batch = 4
    ws = sharded.make_sharded_workspace(batch, size, off, vocab, tile=64 if interpreting() else 1024)
    outs = sharded.make_outputs(batch, ctx.device)
    for k in range(2):
        call = fuzz.make_call(rng, batch, vocab, "float32", ctx.table_z)
        rows = Rows.of(call)
        call_tau = np.float32(0.7) if k == 0 else call.tau
        rows = Rows(rows.logits, rows.temperature, rows.seed, rows.round, rows.position, call_tau)
        per_row = row_tensors(rows, ctx.device)
        sharded.check_replicated(*per_row, tau=rows.tau)
        res = sharded.propose_sharded(
            shard_tensor(rows, off, size, ctx.device),
            off,
            vocab,
            *per_row,
            tau=rows.tau,
            out=outs,
            workspace=ws,
        )
        same_out = all(a is b for a, b in zip(res, outs, strict=True))
        check_rows(
            ctx,
            tally,
            rows,
            offsets,
            sizes,
            pack(outs),
            unsharded_too=ctx.cuda,
            extra=row_details(call=[k] * batch, returned_out=[same_out] * batch),
        )
        if not same_out:
            tally.failing["returned_tensors_are_not_out"] += 1
    return {
        "passed": tally.passed,
        "rows": tally.rows,
        "tile": ws.tile,
        "n_tiles": ws.n_tiles,
        "failing_rows": dict(tally.failing),
        "failures": tally.examples,
    }


def check_exchange(ctx: Ctx) -> dict[str, Any]:
    """Bytes per row, counted from the exchanged tensors, against gathering the logit shards."""
    vocab, batch = 163840, 4
    offsets, sizes = make_split(np.random.default_rng(0), vocab, ctx.world, "even")
    ws = sharded.make_sharded_workspace(batch, sizes[ctx.rank], offsets[ctx.rank], vocab)
    sent = ws.send.numel() * ws.send.element_size() // batch
    received = ws.gathered.numel() * ws.gathered.element_size() // batch
    assert sent == ws.bytes_sent_per_row and received == ws.bytes_received_per_row
    shard_f32 = max(sizes) * 4
    return {
        "passed": True,
        "world": ctx.world,
        "vocab": vocab,
        "record": "32 int64 keys + 1 int64 flags word",
        "bytes_sent_per_row_per_rank": sent,
        "bytes_received_per_row_per_rank": received,
        "collectives_per_call": 1,
        "descriptor_bytes_per_call_without_workspace": sharded.DESCRIPTOR_WORDS * 8,
        "logit_shard_gather_bytes_sent_per_row_per_rank": {"float32": shard_f32, "bf16/fp16": shard_f32 // 2},
        "logit_shard_gather_bytes_received_per_row_per_rank": {"float32": vocab * 4, "bf16/fp16": vocab * 2},
        "ratio_float32": round(vocab * 4 / received, 1),
    }


def _capture(fn: Callable[[], object]) -> tuple[torch.cuda.CUDAGraph | None, str | None]:
    try:
        side = torch.cuda.Stream()  # type: ignore[no-untyped-call]
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        time.sleep(0.2)  # let the NCCL watchdog retire the warm-up's work before capture starts
        graph = torch.cuda.CUDAGraph()
        # thread_local: the NCCL watchdog thread queries CUDA events while this thread captures
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            fn()
        torch.cuda.synchronize()
        return graph, None
    except Exception as exc:  # reported; the caller falls back to eager
        torch.cuda.synchronize()
        return None, repr(exc)[:2000]


def check_graph(ctx: Ctx) -> dict[str, Any]:
    """A captured sharded call: identical bits on every replay, fresh inputs through the static buffers."""
    if not ctx.cuda:
        return {"passed": True, "skipped": "CUDA graphs need CUDA devices"}
    rng = np.random.default_rng(21)
    batch, vocab = 8, 50000
    offsets, sizes = make_split(rng, vocab, ctx.world, "uneven")
    off, size = offsets[ctx.rank], sizes[ctx.rank]
    tau = np.float32(0.7)
    first = Rows.of(fuzz.make_call(rng, batch, vocab, "float32", ctx.table_z))
    first = Rows(first.logits, first.temperature, first.seed, first.round, first.position, tau)
    unsharded.prepare(ctx.device)
    ws = sharded.make_sharded_workspace(batch, size, off, vocab)
    outs = sharded.make_outputs(batch, ctx.device)
    static = [shard_tensor(first, off, size, ctx.device), *row_tensors(first, ctx.device)]

    def fn() -> object:
        return sharded.propose_sharded(static[0], off, vocab, *static[1:], tau=tau, out=outs, workspace=ws)

    graph, error = _capture(fn)
    captured = not _any_rank(ctx, graph is None)
    if not captured:
        return {"passed": False, "captured": False, "capture_error": error}
    tally = Tally()
    assert graph is not None
    graph.replay()
    base = pack(outs).clone()
    check_rows(ctx, tally, first, offsets, sizes, base, fast_select="all")
    differing = 0
    for _ in range(ctx.args.replays):
        for t in outs:
            t.fill_(-7)
        graph.replay()
        differing += int(not torch.equal(pack(outs), base))
    for _ in range(5):
        fresh = Rows.of(fuzz.make_call(rng, batch, vocab, "float32", ctx.table_z))
        fresh = Rows(fresh.logits, fresh.temperature, fresh.seed, fresh.round, fresh.position, tau)
        for dst, src in zip(
            static, [shard_tensor(fresh, off, size, ctx.device), *row_tensors(fresh, ctx.device)], strict=True
        ):
            dst.copy_(src)
        graph.replay()
        check_rows(ctx, tally, fresh, offsets, sizes, pack(outs), fast_select="all")
    return {
        "passed": tally.passed and differing == 0,
        "captured": True,
        "shape": [batch, vocab],
        "sizes": sizes,
        "replays": ctx.args.replays,
        "replays_with_different_bits": differing,
        "rows_checked": tally.rows,
        "failing_rows": dict(tally.failing),
        "failures": tally.examples,
    }


def _timed(ctx: Ctx, fn: Callable[[], object], replays: int, graphs: bool) -> dict[str, Any]:
    graph, error = _capture(fn) if graphs else (None, "not requested")
    use_graph = not _any_rank(ctx, graph is None)
    run: Callable[[], object] = graph.replay if use_graph and graph is not None else fn
    for _ in range(10):
        run()
    samples: list[float] = []
    start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    stop = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    for _ in range(replays):
        _barrier(ctx)
        start.record()
        run()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop))
    _barrier(ctx)
    burst = 100
    start.record()
    for _ in range(burst):
        run()
    stop.record()
    stop.synchronize()
    result: dict[str, Any] = {
        "mode": "cuda_graph" if use_graph else "eager",
        "median_ms": round(float(np.median(samples)), 4),
        "p10_ms": round(float(np.percentile(samples, 10)), 4),
        "p90_ms": round(float(np.percentile(samples, 90)), 4),
        "back_to_back_ms": round(start.elapsed_time(stop) / burst, 4),
        "samples": replays,
    }
    if graphs and not use_graph:
        result["capture_error"] = error or "another rank failed to capture"
    return result


def _perf_batch(ctx: Ctx, rows: Rows, off: int, size: int) -> dict[str, Any]:
    """Timings of one batch size: the sharded call, the logit-gather alternative, one GPU alone."""
    batch, vocab, world = rows.batch, rows.vocab, ctx.world
    local = shard_tensor(rows, off, size, ctx.device)
    per_row = row_tensors(rows, ctx.device)
    ws = sharded.make_sharded_workspace(batch, size, off, vocab)
    souts = sharded.make_outputs(batch, ctx.device)
    uws = unsharded.make_workspace(batch, vocab, ctx.device)
    uouts = unsharded.make_outputs(batch, ctx.device)
    gathered = torch.empty((world * batch, size), dtype=torch.float32, device=ctx.device)
    full = torch.empty((batch, vocab), dtype=torch.float32, device=ctx.device)
    whole = torch.from_numpy(rows.logits.copy()).to(ctx.device)
    full_in = gathered.view(1, vocab) if batch == 1 else full  # rank-major is ID order for one row

    def run_sharded_() -> object:
        return sharded.propose_sharded(local, off, vocab, *per_row, tau=rows.tau, out=souts, workspace=ws)

    def run_gather() -> object:
        sharded.all_gather_tensor(gathered, local, group=None)
        if batch > 1:
            full.view(batch, world, size).copy_(gathered.view(world, batch, size).transpose(0, 1))
        return unsharded.propose(full_in, *per_row, tau=rows.tau, out=uouts, workspace=uws)

    def run_single() -> object:
        return unsharded.propose(whole, *per_row, tau=rows.tau, out=uouts, workspace=uws)

    entry: dict[str, Any] = {
        "sharded": _timed(ctx, run_sharded_, ctx.args.replays, True),
        "gather_logits_then_unsharded": _timed(ctx, run_gather, ctx.args.replays, True),
        "one_gpu_unsharded_full_row": _timed(ctx, run_single, ctx.args.replays, True),
    }
    entry["sharded_equals_gather_path"] = bool(torch.equal(pack(souts), pack(uouts)))
    return entry


def check_perf(ctx: Ctx) -> dict[str, Any]:
    """Latency of one position (information): sharded, vs gather the shards + unsharded, vs one GPU."""
    if not ctx.cuda:
        return {"passed": True, "skipped": "timing needs CUDA devices"}
    vocab = 163840
    world, rank = ctx.world, ctx.rank
    rng = np.random.default_rng(31)
    unsharded.prepare(ctx.device)
    offsets, sizes = make_split(rng, vocab, world, "even")
    off, size = offsets[rank], sizes[rank]
    out: dict[str, Any] = {"vocab": vocab, "sizes": sizes, "replays": ctx.args.replays, "by_batch": {}}
    for batch in (1, 2, 4):
        rows = Rows.of(fuzz.make_call(rng, batch, vocab, "float32", [], families=("normal",)))
        rows = Rows(rows.logits, rows.temperature, rows.seed, rows.round, rows.position, np.float32(0.7))
        entry = _perf_batch(ctx, rows, off, size)
        every: list[Any] = [None] * world
        dist.all_gather_object(every, entry)
        out["by_batch"][str(batch)] = {f"rank{r}": e for r, e in enumerate(every)}
    out["passed"] = all(e["sharded_equals_gather_path"] for b in out["by_batch"].values() for e in b.values())
    return out


# ---------------------------------------------------------------- environment, reports, driver


def _driver_version() -> str:
    try:
        proc = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        return (
            proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else "unknown"
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def environment(ctx: Ctx) -> dict[str, Any]:
    import triton

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "numpy": np.__version__,
        "interpreter": interpreting(),
        "backend": str(dist.get_backend()),
        "world": ctx.world,
        "nccl_env": {k: os.environ.get(k) for k in NCCL_ENV},
    }
    mine = str(ctx.device)
    if ctx.cuda:
        mine = f"{ctx.device}: {torch.cuda.get_device_name(ctx.device)}"
        env["cuda_runtime"] = torch.version.cuda
        env["driver"] = _driver_version()
        try:
            env["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())  # type: ignore[no-untyped-call]
        except Exception as exc:  # pragma: no cover - depends on the build
            env["nccl"] = f"unknown ({exc!r})"
        env["capability"] = list(torch.cuda.get_device_capability(ctx.device))
    every: list[Any] = [None] * ctx.world
    dist.all_gather_object(every, mine)
    env["devices"] = every
    return env


def _markdown(report: dict[str, Any]) -> str:
    lines = [
        "# dyadic24 sharded proposal check",
        "",
        f"overall: **{'PASS' if report['passed'] else 'FAIL'}**",
        "",
    ]
    lines += ["| section | result | details |", "|---|---|---|"]
    for name, sec in report["sections"].items():
        state = "skipped" if "skipped" in sec else ("PASS" if sec.get("passed") else "FAIL")
        keys = [k for k in sec if k not in ("passed", "failures", "cases", "by_batch", "error")]
        detail = ", ".join(f"{k}={json.dumps(sec[k])}" for k in keys)
        lines.append(f"| {name} | {state} | {detail.replace('|', '/')} |")
    perf = report["sections"].get("perf", {})
    if perf.get("by_batch"):
        lines += [
            "",
            f"## latency of one position, V = {perf['vocab']} split {perf['sizes']} (median ms per "
            "rank; mode; back-to-back ms)",
            "",
            "| B | sharded | all_gather logits + unsharded | one GPU, unsharded |",
            "|---|---|---|---|",
        ]
        for batch, ranks in perf["by_batch"].items():
            cells = []
            for what in ("sharded", "gather_logits_then_unsharded", "one_gpu_unsharded_full_row"):
                per = [ranks[r][what] for r in sorted(ranks)]
                cells.append(
                    " / ".join(f"{p['median_ms']}" for p in per) + f" ({per[0]['mode']}; "
                    f"{per[0]['back_to_back_ms']})"
                )
            lines.append(f"| {batch} | " + " | ".join(cells) + " |")
    exch = report["sections"].get("exchange", {})
    if "bytes_sent_per_row_per_rank" in exch:
        lines += [
            "",
            "## bytes per row",
            "",
            f"- sharded: {exch['bytes_sent_per_row_per_rank']} B sent, "
            f"{exch['bytes_received_per_row_per_rank']} B received per rank ({exch['record']})",
            f"- gathering the float32 logit shards instead: "
            f"{exch['logit_shard_gather_bytes_sent_per_row_per_rank']['float32']} B sent, "
            f"{exch['logit_shard_gather_bytes_received_per_row_per_rank']['float32']} B received per rank",
        ]
    val = report["sections"].get("validation", {})
    if val.get("cases"):
        lines += ["", "## validation", "", "| case | expected | every rank |", "|---|---|---|"]
        for name, c in val["cases"].items():
            lines.append(f"| {name} | {c['expected']} | {', '.join(c['ranks'])} |")
    lines += ["", "## environment", "", "```", json.dumps(report["environment"], indent=1), "```"]
    for name, sec in report["sections"].items():
        if sec.get("failures") or sec.get("error"):
            lines += ["", f"## {name}: failures", "", "```"]
            lines.append(json.dumps(sec.get("failures") or sec.get("error"), indent=1)[:20000])
            lines.append("```")
    return "\n".join(lines) + "\n"


SECTIONS: dict[str, Callable[[Ctx], dict[str, Any]]] = {
    "golden": check_golden,
    "statuses": check_statuses,
    "validation": check_validation,
    "reuse": check_reuse,
    "exchange": check_exchange,
    "fuzz": check_fuzz,
    "graph": check_graph,
    "perf": check_perf,
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default=None, help="directory for sharded_check.json / sharded_check.md")
    parser.add_argument("--world", type=int, default=2, help="ranks to start when not under torchrun")
    parser.add_argument("--backend", choices=("auto", "nccl", "gloo"), default="auto")
    parser.add_argument("--rows", type=int, default=100000, help="fuzzed rows (default 100000)")
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--max-vocab", type=int, default=262144)
    parser.add_argument("--max-batch", type=int, default=256)
    parser.add_argument(
        "--reference-rows",
        type=int,
        default=20000,
        help="about this many fuzzed rows are also compared with the fast reference",
    )
    parser.add_argument(
        "--unsharded-every",
        type=int,
        default=0,
        help="without CUDA: compare every k-th fuzz batch with the unsharded kernel (0: never)",
    )
    parser.add_argument(
        "--fuzz-seconds", type=float, default=210.0, help="stop the fuzz after this long (0: never)"
    )
    parser.add_argument("--golden-splits", choices=("rotate", "all"), default="rotate")
    parser.add_argument(
        "--golden-rows-per-group",
        type=int,
        default=0,
        help="golden: per (V, tau, format) group, only the vectors up to this many rows (0: every vector)",
    )
    parser.add_argument("--replays", type=int, default=300)
    parser.add_argument("--only", default="", help="comma-separated sections to run")
    parser.add_argument("--timeout", type=float, default=300.0, help="collective timeout in seconds")
    parser.add_argument("--aot", action="store_true", help="compile the sharded kernels for --arch and audit")
    parser.add_argument("--arch", type=int, default=90)
    parser.add_argument("--json", default=None, help="with --aot: write the report here")
    return parser.parse_args(argv)


def run_rank(rank: int, world: int, init_method: str, backend: str, args: argparse.Namespace) -> bool:
    """One rank of the check: create the process group, run the sections, rank 0 writes the reports."""
    os.environ.update(NCCL_ENV)
    use_nccl = backend == "nccl" or (backend == "auto" and torch.cuda.is_available() and not interpreting())
    if use_nccl:
        local = int(os.environ.get("LOCAL_RANK", rank % max(1, torch.cuda.device_count())))
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
        try:
            dist.init_process_group(
                "nccl",
                init_method=init_method,
                rank=rank,
                world_size=world,
                timeout=timedelta(seconds=args.timeout),
                device_id=device,
            )
        except TypeError:  # torch without device_id
            dist.init_process_group(
                "nccl",
                init_method=init_method,
                rank=rank,
                world_size=world,
                timeout=timedelta(seconds=args.timeout),
            )
    else:
        device = torch.device("cpu")
        dist.init_process_group(
            "gloo",
            init_method=init_method,
            rank=rank,
            world_size=world,
            timeout=timedelta(seconds=args.timeout),
        )
    try:
        return _run_sections(rank, world, device, args)
    finally:
        dist.destroy_process_group()


def _run_sections(rank: int, world: int, device: torch.device, args: argparse.Namespace) -> bool:
    from dyadic24.kernels.exp_table import load_table

    table = load_table(device)
    ctx = Ctx(rank, world, device, args, [int(v) for v in table.z.cpu().tolist()] if table.size else [])
    out_dir = Path(args.out) if args.out else None
    if out_dir is not None and ctx.lead:
        out_dir.mkdir(parents=True, exist_ok=True)
    try:
        env = environment(ctx)
    except Exception:
        env = {"error": traceback.format_exc()}
    report: dict[str, Any] = {"environment": env, "sections": {}}
    wanted = [s for s in args.only.split(",") if s] or list(SECTIONS)
    for name in wanted:
        began = time.perf_counter()
        if ctx.lead:
            print(f"[sharded_check] {name} ...", file=sys.stderr, flush=True)
        try:
            result = SECTIONS[name](ctx)
        except Exception:
            result = {"passed": False, "error": traceback.format_exc()}
        # every rank's verdict (a section can fail on a rank other than 0)
        verdicts: list[Any] = [None] * world
        dist.all_gather_object(verdicts, bool(result.get("passed")))
        if not all(verdicts):
            result["passed"] = False
            result["rank_verdicts"] = verdicts
        result["section_seconds"] = round(time.perf_counter() - began, 2)
        report["sections"][name] = result
        if ctx.lead:
            print(
                f"[sharded_check] {name}: {'PASS' if result.get('passed') else 'FAIL'} "
                f"({result['section_seconds']} s)",
                file=sys.stderr,
                flush=True,
            )
            if out_dir is not None:
                partial = {**report, "passed": False, "complete": False}
                (out_dir / "sharded_check.json").write_text(json.dumps(partial, indent=1, default=str) + "\n")
    report["passed"] = all(sec.get("passed") for sec in report["sections"].values())
    report["complete"] = True
    if ctx.lead:
        text = _markdown(report)
        if out_dir is not None:
            (out_dir / "sharded_check.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
            (out_dir / "sharded_check.md").write_text(text)
        print(text, flush=True)
    return bool(report["passed"])


def _spawned(rank: int, world: int, init_method: str, backend: str, argv: list[str]) -> None:
    ok = run_rank(rank, world, init_method, backend, parse_args(argv))
    if not ok and rank == 0:
        raise SystemExit(1)


def spawn(world: int, argv: Sequence[str], backend: str = "auto") -> int:
    """Start ``world`` ranks on this machine (start method spawn, FileStore rendezvous); 0 iff all pass."""
    from torch.multiprocessing.spawn import ProcessExitedException, start_processes

    with tempfile.TemporaryDirectory(prefix="dyadic24-sharded-") as tmp:
        init = f"file://{Path(tmp) / 'store'}"
        try:
            start_processes(  # type: ignore[no-untyped-call]
                _spawned,
                args=(world, init, backend, list(argv)),
                nprocs=world,
                start_method="spawn",
                join=True,
            )
        except ProcessExitedException:
            return 1
    return 0


# ---------------------------------------------------------------- ahead-of-time compilation


def aot(arch: int = 90) -> dict[str, Any]:
    """Compile the sharded kernels for sm_<arch> on the CPU and audit their float instructions: the tile
    and reduce kernels have none; the merge kernel obeys dyadic24.kernels.aot_check's merge rules."""
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        raise RuntimeError("--aot needs TRITON_INTERPRET unset or 0 in a fresh process")
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from dyadic24.kernels import sharded_jit
    from dyadic24.kernels.aot_check import APPROX, audit_merge, float_ops

    variants: list[tuple[Any, str, dict[str, str], dict[str, Any]]] = []
    ints = {
        "V_local": "i32",
        "vocab_offset": "i32",
        "n_tiles": "i32",
        "cand_stride": "i32",
        "flag_base": "i32",
        "flag_stride": "i32",
    }
    for src, ptr in ((0, "*i32"), (1, "*i16"), (2, "*i16")):
        sig = {"logits_ptr": ptr, "cand_ptr": "*i64", "flags_ptr": "*i64", **ints}
        variants.append(
            (
                sharded_jit.shard_tile_kernel,
                f"tile/src{src}",
                sig,
                {"TILE": 4096, "SRC": src},
            )
        )
    variants.append(
        (
            sharded_jit.shard_reduce_kernel,
            "reduce",
            {"cand_ptr": "*i64", "flags_ptr": "*i64", "send_ptr": "*i64", "n_tiles": "i32"},
            {"CHUNK": 1024, "FCHUNK": 64},
        )
    )
    merge_sig = {
        "gath_ptr": "*i64",
        "temp_ptr": "*i32",
        "seed_ptr": "*i64",
        "round_ptr": "*i64",
        "pos_ptr": "*i64",
        "tab_z_ptr": "*i64",
        "tab_e_ptr": "*i64",
        "status_ptr": "*i32",
        "token_ptr": "*i32",
        "ids_ptr": "*i32",
        "tickets_ptr": "*i32",
        "batch": "i32",
        "world": "i32",
        "tau_bits": "i32",
        "tab_n": "i32",
    }
    for wblock in (2, 32):
        variants.append(
            (
                sharded_jit.shard_merge_kernel,
                f"merge/wblock{wblock}",
                merge_sig,
                {"WBLOCK": wblock, "TAB_ITERS": 6},
            )
        )
    target = GPUTarget("cuda", arch, 32)
    results: dict[str, Any] = {}
    problems: list[str] = []
    for fn, name, sig, consts in variants:
        began = time.perf_counter()
        try:
            compiled = triton.compile(
                ASTSource(fn=fn, signature={**sig, **{k: "constexpr" for k in consts}}, constexprs=consts),
                target=target,
            )
        except Exception as exc:
            results[name] = {"compiled": False, "error": repr(exc)[:4000]}
            problems.append(f"{name}: does not compile")
            continue
        ops = float_ops(compiled.asm["ptx"])
        results[name] = {
            "compiled": True,
            "seconds": round(time.perf_counter() - began, 2),
            "float_ops": dict(ops),
        }
        if any(op.startswith(APPROX) for op in ops):
            problems.append(f"{name}: approximate instructions")
        if not name.startswith("merge") and ops:
            problems.append(f"{name}: floating-point instructions {dict(ops)}")
        if name.startswith("merge"):
            problems += audit_merge(name, ops, exact_counts=True)
    return {
        "arch": arch,
        "triton": triton.__version__,
        "variants": results,
        "problems": problems,
        "passed": not problems,
    }


def _under_torchrun() -> bool:
    return all(k in os.environ for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.aot:
        report = aot(args.arch)
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
        print(json.dumps(report, indent=1))
        return 0 if report["passed"] else 1
    os.environ.update(NCCL_ENV)
    if _under_torchrun():
        ok = run_rank(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), "env://", args.backend, args)
        return 0 if ok else 1
    return spawn(args.world, list(argv) if argv is not None else sys.argv[1:], args.backend)


if __name__ == "__main__":
    raise SystemExit(main())

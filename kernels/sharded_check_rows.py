"""What the sections of dyadic24.kernels.sharded_check share: one rank's context, the split patterns
of a vocabulary across ranks, a call's rows and their tensors, the sharded call, and the comparison
of every rank's outputs with the references on rank 0."""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from dyadic24.api import Proposal
from dyadic24.kernels.backend import select_backend

select_backend()

from dyadic24.kernels import fuzz, sharded  # noqa: E402
from dyadic24.kernels import propose as unsharded  # noqa: E402

TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
FIELDS = ("status", "token", "ids", "tickets")
PACKED = 66  # status, token, 32 ids, 32 tickets (int32)
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


def any_rank(ctx: Ctx, flag: bool) -> bool:
    dev = sharded.exchange_device(None, ctx.device)
    mine = torch.tensor([1 if flag else 0], dtype=torch.int64, device=dev)
    every = torch.empty(ctx.world, dtype=torch.int64, device=dev)
    sharded.all_gather_tensor(every, mine, group=None)
    return bool(every.any().item())


def barrier(ctx: Ctx) -> None:
    any_rank(ctx, False)
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

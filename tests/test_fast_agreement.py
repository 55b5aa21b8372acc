"""The fast reference agrees bit for bit with the exact reference (clauses 2-9), row isolation (clause 2.4).

Default run: >= 10^5 random and adversarial rows (small and moderate V so the exact reference stays
affordable), traces compared on a sample. DYADIC24_DEEP=1 raises it to >= 10^6 rows.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np
import numpy.typing as npt
import pytest

from dyadic24.api import TAU_DEFAULT_BITS, TICKETS, Proposal, Status
from dyadic24.reference.exact import propose_exact
from dyadic24.reference.fast import propose_fast

DEEP = os.environ.get("DYADIC24_DEEP", "") not in ("", "0")
F32 = npt.NDArray[np.float32]
U64 = npt.NDArray[np.uint64]
Rng = np.random.Generator

# binary32 z in [-104, 0] whose exp lies within 2^-47 of a rounding midpoint (tests/test_fast_exp.py):
# with m = 0 and tau = 1 a logit equal to one of them reaches exp as that z (clauses 5.1-5.3).
NEAR_MIDPOINT_Z = np.array(
    [0xB2FFFFFD, 0xB3000000, 0xB3000001, 0xB3C00000, 0xB4600002, 0xB616000B, 0xB7C9C09F, 0xB9584DB6,
     0xBA525799, 0xBB8D98F5, 0xBC2A461A, 0xBDB393EB, 0xBE5F667D, 0xBF76FD92, 0xBFBFA14B, 0xC03359CB,
     0xC13D6631, 0xC159FA1E, 0xC236E4B4, 0xC2B2E798],
    dtype=np.uint32,
).view(np.float32)  # fmt: skip
TAUS = np.array(
    [1e-45, 1e-38, 1e-7, 0.25, 0.5, 1.0, 1.0, 1.0, 2.0, 3.0, 1e3, 1e30, 3.4028235e38], dtype=np.float32
)


def f32(values: npt.ArrayLike) -> F32:
    return np.asarray(values, dtype=np.float32)


def bits_to_f32(bits: npt.ArrayLike) -> F32:
    return np.asarray(bits, dtype=np.uint64).astype(np.uint32).view(np.float32)


# --- row families: each returns one row of V binary32 logits --------------------------------------


def row_normal(rng: Rng, v: int) -> F32:
    scale = rng.choice([1e-6, 1e-3, 0.1, 1.0, 3.0, 10.0, 100.0, 1e4, 1e30])
    return f32(rng.standard_normal(v) * scale)


def row_ties(rng: Rng, v: int) -> F32:
    """Few distinct values: ties everywhere, also across the top-32 boundary (clause 3.1)."""
    pool = f32(rng.standard_normal(int(rng.integers(1, 5))) * rng.choice([0.01, 1.0, 30.0]))
    return f32(rng.choice(pool, v))


def row_boundary_tie(rng: Rng, v: int) -> F32:
    """Exactly K - j values above a tie group of several equal values that straddles position K."""
    row = f32(rng.uniform(-30, -20, v))
    if v < 3:
        return row
    above = int(rng.integers(0, min(v, 32)))
    ids = rng.permutation(v)
    row[ids[:above]] = f32(rng.uniform(0, 5, above))
    tie_value = rng.choice(f32([-1.5, 0.0, -0.0, -np.inf]))
    row[ids[above : above + int(rng.integers(2, 10))]] = tie_value
    return row


def row_signed_zeros(rng: Rng, v: int) -> F32:
    pool = f32([-0.0, 0.0, -1e-45, 1e-45, -2.0, -np.inf])
    return f32(rng.choice(pool, v, p=[0.3, 0.3, 0.1, 0.1, 0.1, 0.1]))


def row_masked(rng: Rng, v: int) -> F32:
    """Mostly -inf: fewer than 32 finite logits, -inf between finite ones (C holds -inf tokens)."""
    row = np.full(v, -np.inf, dtype=np.float32)
    finite = int(rng.integers(1, min(v, 40) + 1))
    row[rng.choice(v, finite, replace=False)] = f32(
        rng.standard_normal(finite) * rng.choice([0.1, 1.0, 50.0])
    )
    return row


def row_subnormal(rng: Rng, v: int) -> F32:
    """Subnormal logits and subnormal differences l - m."""
    frac = rng.integers(0, 1 << 23, v)
    sign = rng.integers(0, 2, v) << 31
    row = bits_to_f32(frac | sign)
    if rng.random() < 0.3:
        row[rng.integers(0, v)] = np.float32(1.1754944e-38)  # the least normal as the maximum
    return row


def row_huge(rng: Rng, v: int) -> F32:
    """Magnitudes near the binary32 maximum: l - m overflows to -inf (clause 5.1)."""
    mags = f32(rng.uniform(1e37, 3.4028235e38, v))
    signs = rng.choice(f32([-1.0, 1.0]), v)
    row = f32(mags * signs)
    pick = rng.random(v)
    row[pick < 0.15] = f32(rng.standard_normal(int((pick < 0.15).sum())))
    row[pick > 0.92] = -np.inf
    return row


def row_midpoint(rng: Rng, v: int) -> F32:
    """m = 0 and logits at near-midpoint z (with tau = 1, z = l): the exact-exp fallback (clause 5.3)."""
    row = f32(rng.choice(NEAR_MIDPOINT_Z, v))
    row[rng.integers(0, v)] = rng.choice(f32([0.0, -0.0]))
    return row


def row_quantized(rng: Rng, v: int) -> F32:
    """Logits on a coarse dyadic grid: many equal e values and exact p values (clauses 6-7)."""
    return f32(rng.integers(-24, 1, v) * rng.choice([0.125, 0.5, 1.0, 4.0]))


def row_equal(rng: Rng, v: int) -> F32:
    return np.full(v, rng.standard_normal(), dtype=np.float32)


def row_spike(rng: Rng, v: int) -> F32:
    """One dominant logit: the other e underflow to 0 or subnormal, the remainder goes to a*."""
    row = f32(rng.uniform(-120, -60, v) * rng.choice([0.7, 1.0, 1e3]))
    row[rng.integers(0, v)] = f32(rng.standard_normal())
    return row


def row_failing(rng: Rng, v: int) -> F32:
    """NaN (any payload, either sign), +inf, all -inf, and combinations for the precedence (clause 2.1)."""
    row = row_normal(rng, v)
    kind = int(rng.integers(0, 5))
    where = rng.integers(0, v, int(rng.integers(1, 3)))
    nan = bits_to_f32([int(rng.choice([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF]))])[0]
    if kind == 0:
        row[where] = nan
    elif kind == 1:
        row[where] = np.inf
    elif kind == 2:
        row[:] = -np.inf
    elif kind == 3:
        row[where] = np.inf
        row[rng.integers(0, v)] = nan
    else:
        row[:] = -np.inf
        row[rng.integers(0, v)] = rng.choice(f32([np.inf, np.nan]))
    return row


FAMILIES: tuple[Callable[[Rng, int], F32], ...] = (
    row_normal, row_normal, row_normal, row_ties, row_boundary_tie, row_signed_zeros, row_masked,
    row_subnormal, row_huge, row_midpoint, row_quantized, row_equal, row_spike, row_failing,
)  # fmt: skip


def temperatures(rng: Rng, b: int) -> F32:
    """Mostly positive T; greedy T = +-0 (clause 4.1); every bad T (clause 2.1)."""
    good = f32([1.0, 0.7, 1e-45, 3.4028235e38, 2.5])
    greedy = f32([0.0, -0.0])
    bad = bits_to_f32([0x7FC00000, 0xFFC00001, 0xBF800000, 0xFF800000, 0x7F800000, 0x80000001])
    t = f32(rng.choice(good, b))
    roll = rng.random(b)
    t[roll < 0.1] = rng.choice(greedy, int((roll < 0.1).sum()))
    t[roll > 0.95] = rng.choice(bad, int((roll > 0.95).sum()))
    return t


def u64s(rng: Rng, b: int) -> U64:
    """Seeds / rounds / positions with high bits set, and the edges 0, 2^32 - 1, 2^32, 2^64 - 1."""
    values = rng.integers(0, 2**64, b, dtype=np.uint64)
    edges = np.array([0, 2**32 - 1, 2**32, 2**63, 2**64 - 1], dtype=np.uint64)
    roll = rng.random(b)
    values[roll < 0.05] = rng.choice(edges, int((roll < 0.05).sum()))
    return values


@dataclass(frozen=True)
class Call:
    logits: F32
    temperature: F32
    seed: U64
    round: U64
    position: U64
    tau: np.float32


def random_vocab(rng: Rng) -> int:
    roll = rng.random()
    if roll < 0.25:
        return int(rng.choice([1, 2, 31, 32, 33]))
    if roll < 0.9:
        return int(rng.integers(1, 81))
    return int(rng.integers(81, 300))


def random_call(rng: Rng, batch: int) -> Call:
    """One call: one V and one tau (clause 1.3), rows of mixed families (mixed batches)."""
    v = random_vocab(rng)
    tau = np.uint32(TAU_DEFAULT_BITS).view(np.float32) if rng.random() < 0.6 else rng.choice(TAUS)
    families = rng.integers(0, len(FAMILIES), batch)
    if rng.random() < 0.1:  # sometimes a whole batch of near-midpoint rows with tau = 1
        families[:] = FAMILIES.index(row_midpoint)
        tau = np.float32(1.0)
    logits = np.stack([FAMILIES[f](rng, v) for f in families.tolist()])
    return Call(logits, temperatures(rng, batch), u64s(rng, batch), u64s(rng, batch), u64s(rng, batch), tau)


def run(impl: Callable[..., Proposal], call: Call, trace: bool = False) -> Proposal:
    return impl(
        call.logits, call.temperature, call.seed, call.round, call.position, tau=call.tau, trace=trace
    )


def assert_same(fast: Proposal, exact: Proposal, call: Call, traces: bool = False) -> None:
    for name in ("status", "token", "ids", "tickets"):
        a, b = getattr(fast, name), getattr(exact, name)
        assert a.dtype == b.dtype == np.int32 and a.shape == b.shape, name
        bad = np.flatnonzero((a != b).reshape(a.shape[0], -1).any(axis=1))
        assert bad.size == 0, (
            f"{name} differs in rows {bad[:5].tolist()}: logits {call.logits[bad[0]].tolist()}"
        )
    if traces:
        assert fast.trace is not None and exact.trace is not None
        for r, (x, y) in enumerate(zip(fast.trace, exact.trace, strict=True)):
            for f in fields(x):
                assert getattr(x, f.name) == getattr(y, f.name), (r, f.name, call.logits[r].tolist())
            assert x.as_json() == y.as_json()


def check_invariants(p: Proposal) -> None:
    """Clauses 2.3, 7.4 and 8.1 on the fast outputs."""
    ok = p.status == Status.OK
    assert (p.tickets[ok].sum(axis=1) == TICKETS).all()
    assert (p.token[~ok] == -1).all() and (p.ids[~ok] == -1).all() and (p.tickets[~ok] == 0).all()
    live = p.ids >= 0
    assert ((p.tickets > 0) == live).all()
    for r in np.flatnonzero(ok).tolist():
        n = int(live[r].sum())
        assert live[r, :n].all() and np.all(np.diff(p.ids[r, :n]) > 0)
        assert p.token[r] in p.ids[r, :n]


def agreement(seed: int, calls: int, batch: int, trace_every: int) -> int:
    rng = np.random.default_rng(seed)
    rows = 0
    for i in range(calls):
        call = random_call(rng, batch)
        traces = i % trace_every == 0
        fast = run(propose_fast, call, traces)
        check_invariants(fast)
        assert_same(fast, run(propose_exact, call, traces), call, traces)
        rows += batch
    return rows


def test_agreement_on_a_hundred_thousand_rows() -> None:
    """>= 10^5 random and adversarial rows, mixed batches, traces on every 25th call (clauses 2-9)."""
    assert agreement(seed=1, calls=1000, batch=100, trace_every=25) >= 100_000


@pytest.mark.deep
@pytest.mark.skipif(not DEEP, reason="deep profile only (DYADIC24_DEEP=1)")
def test_agreement_on_a_million_rows() -> None:
    assert agreement(seed=2, calls=10_000, batch=100, trace_every=100) >= 1_000_000


# --- hand-made adversarial calls ----------------------------------------------------------------

NEG_INF = -np.inf


def handmade_calls() -> list[tuple[str, list[list[float]], list[float], float]]:
    """(name, rows, temperatures, tau) for the cases the brief lists, each against the exact reference."""
    tie33 = [5.0] * 31 + [1.0, 2.0] + [2.0] * 7  # the 32nd place is a tie of 8 tokens with value 2.0
    zeros_boundary = [1.0] * 31 + [-0.0, 0.0, -0.0, 0.0]  # +-0 tie across the boundary, lowest ID wins
    return [
        ("top-32 boundary tie", [tie33, tie33[::-1]], [1.0, 1.0], 0.7),
        ("+-0 tie at the boundary", [zeros_boundary, zeros_boundary[::-1]], [1.0, 1.0], 0.7),
        ("-0 is the max, lower ID than +0", [[-1.0, -0.0, 0.0, -0.0, -3.0]] * 2, [1.0, 0.0], 0.7),
        ("+0 is the max, lower ID than -0", [[0.0, -0.0, -1e-45, 1e-45]], [1.0], 0.7),
        ("one finite among -inf", [[NEG_INF, NEG_INF, -7.5, NEG_INF]], [1.0], 0.7),
        ("-inf between finite", [[NEG_INF, 1.0, NEG_INF, 0.5, NEG_INF, 2.0]], [1.0], 0.7),
        ("V = 1", [[0.0], [-3e38], [NEG_INF], [np.nan], [np.inf]], [1.0, 1.0, 1.0, 1.0, 1.0], 0.7),
        ("V = 2", [[1.0, 1.0], [0.0, -0.0], [NEG_INF, 5.0]], [1.0, 1.0, 0.0], 0.7),
        ("l - m overflows", [[3e38, -3e38, -3.4028235e38, 1.0, 3e38]], [1.0], 0.7),
        ("tau = least subnormal", [[1.0, 0.999999, 1e-45, 0.0, -0.0, 1.0]], [1.0], 1e-45),
        ("tau = max", [[1.0, -3e38, 0.0, -1e-45, NEG_INF]], [1.0], 3.4028235e38),
        ("tau = 1", [[0.0, -1.0, -2.0, -103.97, -104.0, -87.33655]], [1.0], 1.0),
        (
            "every status",
            [
                [1.0, np.nan, np.inf],
                [1.0, np.inf, 2.0],
                [NEG_INF, NEG_INF, NEG_INF],
                [1.0, 2.0, 3.0],
                [1.0, 2.0, 3.0],
                [1.0, 2.0, 3.0],
                [1.0, 2.0, 3.0],
                [NEG_INF, np.nan, NEG_INF],
            ],
            [1.0, 1.0, np.nan, np.nan, -1.0, np.inf, -np.inf, -0.0],
            0.7,
        ),
        ("greedy signs", [[1.0, 3.0, 3.0, 2.0]] * 2, [0.0, -0.0], 0.7),
        ("subnormal T is sampled", [[1.0, 3.0, 3.0, 2.0]], [1e-45], 0.7),
        ("all equal, K = 32", [[0.25] * 32], [1.0], 0.7),
        ("all equal, K = 31", [[0.25] * 31], [1.0], 0.7),
        ("all equal, V = 33", [[-0.0] * 33], [1.0], 0.7),
    ]


@pytest.mark.parametrize("case", handmade_calls(), ids=lambda c: c[0])
def test_handmade_adversarial_calls(case: tuple[str, list[list[float]], list[float], float]) -> None:
    _, rows, temps, tau = case
    b = len(rows)
    rng = np.random.default_rng(len(rows[0]))
    for ids in (u64s(rng, b), np.full(b, 2**64 - 1, dtype=np.uint64), np.zeros(b, dtype=np.uint64)):
        call = Call(f32(rows), f32(temps), ids, ids[::-1].copy(), u64s(rng, b), np.float32(tau))
        fast = run(propose_fast, call, True)
        check_invariants(fast)
        assert_same(fast, run(propose_exact, call, True), call, traces=True)


# --- clause 2.4: row isolation ---------------------------------------------------------------------


def take(call: Call, rows: npt.NDArray[np.int64]) -> Call:
    return Call(
        call.logits[rows],
        call.temperature[rows],
        call.seed[rows],
        call.round[rows],
        call.position[rows],
        call.tau,
    )


def rows_equal(a: Proposal, i: int, b: Proposal, j: int) -> bool:
    same = all(
        np.array_equal(getattr(a, n)[i], getattr(b, n)[j]) for n in ("status", "token", "ids", "tickets")
    )
    assert a.trace is not None and b.trace is not None
    return same and a.trace[i] == b.trace[j]


@pytest.mark.parametrize("v", [1, 2, 31, 33, 80])
def test_row_isolation(v: int) -> None:
    """A row's outputs and trace are the same alone, at any batch position and any batch size (clause 2.4)."""
    rng = np.random.default_rng(100 + v)
    call = random_call(rng, 60)
    call = Call(
        np.stack([FAMILIES[i % len(FAMILIES)](rng, v) for i in range(60)]),
        call.temperature, call.seed, call.round, call.position, call.tau,
    )  # fmt: skip
    full = run(propose_fast, call, True)
    everything = np.arange(60)
    for r in range(60):
        assert rows_equal(full, r, run(propose_fast, take(call, np.array([r])), True), 0)
    perm = rng.permutation(60)
    shuffled = run(propose_fast, take(call, perm), True)
    assert all(rows_equal(full, int(perm[j]), shuffled, j) for j in range(60))
    # Larger batches: every row repeated, and the batch embedded among all-failing and all-OK rows.
    tripled = run(propose_fast, take(call, np.concatenate([everything, perm, everything[::-1]])), True)
    assert all(rows_equal(full, r, tripled, r) and rows_equal(full, r, tripled, 179 - r) for r in range(60))
    statuses = full.status
    for keep in (statuses == Status.OK, statuses != Status.OK, full.token >= 0):
        sub = np.flatnonzero(keep)
        if sub.size:
            part = run(propose_fast, take(call, sub), True)
            assert all(rows_equal(full, int(r), part, j) for j, r in enumerate(sub.tolist()))


@pytest.mark.parametrize("v", [1000, 4097, 20_000])
def test_agreement_at_larger_vocabularies(v: int) -> None:
    """The partial selection over long rows (clauses 3.1-3.2) with every row family, traces compared."""
    rng = np.random.default_rng(v)
    call = random_call(rng, len(FAMILIES))
    call = Call(
        np.stack([family(rng, v) for family in FAMILIES]),
        call.temperature, call.seed, call.round, call.position, call.tau,
    )  # fmt: skip
    fast = run(propose_fast, call, True)
    check_invariants(fast)
    assert_same(fast, run(propose_exact, call, True), call, traces=True)

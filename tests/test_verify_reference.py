"""q to the verifier (reference.handoff) and the standard verification over it (reference.verify; spec
Appendix F, informative; issue 44).

The composed draft-and-verify step is integrated exactly in rational arithmetic: the draft token over
the rule's own draw (clause 9.5: the ticket index u in [0, 2^24), whose pick is constant on each
support entry's ticket interval), and the verification over its explicit uniforms (piecewise constant
between the breakpoints p(x) / q(x) and the cumulative sums of the residual and of p, each piece
evaluated at its left end and at its middle, which must agree). The output distribution must equal the
target's p exactly, for q from the exact reference on sampled, greedy and failed rows.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from dyadic24.api import K_MAX, TICKETS, Proposal
from dyadic24.reference import handoff, verify
from dyadic24.reference.exact import pick, propose_exact
from dyadic24.reference.fast import propose_fast

F32 = npt.NDArray[np.float32]
ONE = Fraction(1)
ZERO = Fraction(0)


# ---------------------------------------------------------------- exact integration helpers


def pieces(breakpoints: Sequence[Fraction]) -> list[tuple[Fraction, Fraction]]:
    """The pieces [a, b) of [0, 1) cut at the given points (those outside (0, 1) ignored)."""
    cuts = sorted({ZERO, ONE, *(b for b in breakpoints if 0 < b < 1)})
    return list(itertools.pairwise(cuts))


def cumulative(weights: Sequence[Fraction]) -> list[Fraction]:
    """The breakpoints of an inverse-CDF draw over ``weights``: each prefix sum over the total."""
    total = sum(weights, ZERO)
    if total == 0:
        return []
    return [s / total for s in itertools.accumulate(weights)]


def draft_paths(ids: Sequence[int], tickets: Sequence[int]) -> list[tuple[int, Fraction]]:
    """The drafted token and its probability, by the rule's draw (clause 9.5) integrated over the
    ticket index u: pick() is checked constant on each support entry's interval [lo, lo + t)."""
    support = [(i, t) for i, t in zip(ids, tickets, strict=True) if i >= 0]
    if not support:
        return [(-1, ONE)]  # a failed row: no draw (clause 2.3), the verifier sees q = 0
    s_ids = [i for i, _ in support]
    s_t = [t for _, t in support]
    out, lo = [], 0
    for i, t in support:
        assert pick(s_ids, s_t, lo) == i and pick(s_ids, s_t, lo + t - 1) == i
        out.append((i, Fraction(t, TICKETS)))
        lo += t
    assert lo == TICKETS
    return out


def integrate(
    fn: Callable[[list[Fraction]], object], axes: Sequence[Sequence[Fraction]]
) -> dict[object, Fraction]:
    """The distribution of fn(u) for independent uniforms u[k] on [0, 1), fn piecewise constant on the
    grid cut at axes[k]: each cell's value at its lower corner and at its centre must agree."""
    dist: dict[object, Fraction] = {}
    for cell in itertools.product(*(pieces(a) for a in axes)):
        low = fn([a for a, _ in cell])
        assert fn([(a + b) / 2 for a, b in cell]) == low, f"not constant on {cell}"
        weight = ONE
        for a, b in cell:
            weight *= b - a
        dist[low] = dist.get(low, ZERO) + weight
    return dist


def rational_dist(
    rng: np.random.Generator, vocab: int, zeros: Sequence[int] = (), only: Sequence[int] = ()
) -> list[Fraction]:
    """A target distribution of small-denominator weights: 0 at ``zeros``, support ``only`` if given."""
    w = [int(v) for v in rng.integers(1, 20, size=vocab)]
    for i in zeros:
        w[i] = 0
    if only:
        w = [w[i] if i in only else 0 for i in range(vocab)]
    total = sum(w)
    return [Fraction(v, total) for v in w]


def proposal_row(logits: Sequence[float], temperature: float, seed: int = 5) -> tuple[list[int], list[int]]:
    """The exact reference's support (ids, tickets) for one row (clause 12.1)."""
    out = propose_exact(
        np.asarray([logits], dtype=np.float32),
        np.asarray([temperature], dtype=np.float32),
        np.asarray([seed], dtype=np.uint64),
        np.asarray([2], dtype=np.uint64),
        np.asarray([40], dtype=np.uint64),
    )
    return out.ids[0].tolist(), out.tickets[0].tolist()


# ---------------------------------------------------------------- q is exact in binary32


def test_the_hand_off_and_the_verification_import_neither_torch_nor_triton() -> None:
    check = "bad = [m for m in ('torch', 'triton') if m in sys.modules]; assert not bad, bad"
    code = (
        "import sys, dyadic24.reference.handoff, dyadic24.reference.verify; from dyadic24.reference import"
        f" q_dense, q_sparse; assert q_dense is dyadic24.reference.handoff.q_dense; {check}"
    )
    subprocess.run(
        [sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1], check=True, timeout=120
    )


def test_every_ticket_count_times_2_pow_minus_24_is_a_binary32_value() -> None:
    """Appendix F: t * 2^-24 is exact in binary32 for every integer 0 <= t <= 2^24 (all of them)."""
    t = np.arange(TICKETS + 1, dtype=np.int64)
    q = t.astype(np.float32) * handoff.TICKET_SCALE
    assert q.dtype == np.float32
    assert np.array_equal(q.astype(np.float64) * TICKETS, t.astype(np.float64))
    assert np.float32(2.0**-24) == handoff.TICKET_SCALE


def _mixed_call(rng: np.random.Generator, batch: int, vocab: int) -> tuple[F32, F32]:
    logits = (rng.standard_normal((batch, vocab)) * 3).astype(np.float32)
    logits[1, 7] = np.nan  # NAN_LOGIT
    logits[2, 3] = np.inf  # POS_INF_LOGIT
    logits[3, :] = -np.inf  # ZERO_MASS
    logits[4, 100:] = -1e4  # a support of fewer than 32 (zero-ticket candidates)
    temperature = np.ones(batch, dtype=np.float32)
    temperature[5] = 0.0  # greedy
    temperature[6] = -0.0  # greedy
    temperature[0] = -1.0  # BAD_TEMPERATURE
    return logits, temperature


def _fast(logits: F32, temperature: F32) -> Proposal:
    b = len(temperature)
    seeds = np.arange(b, dtype=np.uint64) * np.uint64(7919)
    return propose_fast(logits, temperature, seeds, np.full(b, 3, np.uint64), np.full(b, 2048, np.uint64))


def test_dense_and_sparse_q_are_the_tickets() -> None:
    rng = np.random.default_rng(44)
    vocab = 1000
    logits, temperature = _mixed_call(rng, 12, vocab)
    prop = _fast(logits, temperature)
    _, q = handoff.q_sparse(prop.ids, prop.tickets)
    dense = handoff.q_dense(prop.ids, prop.tickets, vocab)
    assert dense.dtype == np.float32 and dense.shape == (12, vocab) and q.dtype == np.float32
    ok = prop.status == 0
    assert ok.sum() == 8 and (~ok).sum() == 4
    for r in range(12):
        exact = handoff.q_exact(prop.ids[r].tolist(), prop.tickets[r].tolist(), vocab)
        assert [Fraction(float(v)) for v in dense[r]] == exact  # float32 q is q itself
        support = prop.ids[r] >= 0
        assert np.array_equal(dense[r, prop.ids[r][support]], q[r][support])
        assert np.count_nonzero(dense[r]) == support.sum()
        # every order of summation gives exactly 1 (or 0 for a failed row) in float32
        for order in (np.arange(vocab), np.arange(vocab)[::-1], rng.permutation(vocab)):
            acc = np.float32(0)
            for v in dense[r][order]:
                acc = np.float32(acc + v)
            assert acc == (1.0 if ok[r] else 0.0)
    assert not dense[~ok].any() and not q[~ok].any()
    assert dense[5, prop.token[5]] == 1.0  # a greedy row: q(a*) = 1 (clause 4.1)


def test_dense_q_of_a_draft_is_request_major() -> None:
    """ids stacked [B, depth, 32] -> [B, depth, V] -> [B * depth, V]: vLLM's num_tokens layout."""
    rng = np.random.default_rng(7)
    vocab, depth = 300, 3
    props = [_fast(*_mixed_call(rng, 8, vocab)) for _ in range(depth)]
    ids = np.stack([p.ids for p in props], axis=1)
    tickets = np.stack([p.tickets for p in props], axis=1)
    out = np.full((8, depth, vocab), 7.0, dtype=np.float32)  # a reused buffer: overwritten
    dense = handoff.q_dense(ids, tickets, vocab, out=out)
    assert dense is out
    flat = dense.reshape(8 * depth, vocab)
    for b, j in itertools.product(range(8), range(depth)):
        assert np.array_equal(
            flat[b * depth + j], handoff.q_dense(props[j].ids[b], props[j].tickets[b], vocab)
        )


@pytest.mark.parametrize(
    ("ids", "tickets", "message"),
    [
        ([3, 1] + [-1] * 30, [TICKETS // 2] * 2 + [0] * 30, "support list"),  # not ascending
        ([1, 1] + [-1] * 30, [TICKETS // 2] * 2 + [0] * 30, "support list"),  # repeated
        ([1] + [-1] * 31, [TICKETS - 1] + [0] * 31, "sum"),  # tickets short of 2^24
        ([1, -1, 2] + [-1] * 29, [TICKETS // 2, 0, TICKETS // 2] + [0] * 29, "support list"),  # a gap
        ([-1] * 32, [1] + [0] * 31, "support list"),  # tickets on padding
        ([10] + [-1] * 31, [TICKETS] + [0] * 31, "V = 10"),  # an ID outside the vocabulary
        ([1] * 31, [0] * 31, "shape"),
    ],
)
def test_q_dense_refuses_what_is_not_a_support_list(ids: list[int], tickets: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        handoff.q_dense(np.asarray(ids, dtype=np.int32), np.asarray(tickets, dtype=np.int32), 10)


def test_q_dense_refuses_a_float_or_misshapen_buffer() -> None:
    ids = np.asarray([[1] + [-1] * 31], dtype=np.int32)
    tickets = np.asarray([[TICKETS] + [0] * 31], dtype=np.int32)
    with pytest.raises(ValueError, match="integer"):
        handoff.q_sparse(ids.astype(np.float32), tickets)
    with pytest.raises(ValueError, match="C-contiguous float32"):
        handoff.q_dense(ids, tickets, 10, out=np.zeros((1, 10), dtype=np.float64))
    with pytest.raises(ValueError, match="C-contiguous float32"):
        handoff.q_dense(ids, tickets, 10, out=np.zeros((1, 20), dtype=np.float32)[:, ::2])


# ---------------------------------------------------------------- the verification's own cases


def test_verify_position_accepts_with_probability_min_1_p_over_q() -> None:
    p = [Fraction(1, 4), Fraction(3, 4), ZERO]
    q = [Fraction(1, 2), ZERO, Fraction(1, 2)]
    assert verify.verify_position(p, q, 0, Fraction(1, 2) - Fraction(1, 10**9), Fraction(0)) == (True, 0)
    assert verify.verify_position(p, q, 0, Fraction(1, 2), Fraction(0)) == (False, 1)  # residual (0, 3/4, 0)
    assert verify.verify_position(p, q, 2, Fraction(0), Fraction(99, 100)) == (False, 1)  # p(x) = 0: never
    assert verify.verify_position(p, q, 1, Fraction(0), Fraction(0)) == (False, 1)  # q(x) = 0: never drafted
    zero = [ZERO] * 3  # a failed row: reject, draw from p itself
    assert verify.verify_position(p, zero, -1, Fraction(0), Fraction(1, 4)) == (False, 1)
    assert verify.verify_position(p, zero, -1, Fraction(0), Fraction(1, 4) - Fraction(1, 10**9)) == (False, 0)


def test_verify_refuses_bad_arguments() -> None:
    p = [Fraction(1, 2)] * 2
    with pytest.raises(ValueError, match="sums to"):
        verify.verify_position(p, [Fraction(1, 3)] * 2, 0, 0, 0)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        verify.verify_position(p, p, 0, 1, 0)
    with pytest.raises(ValueError, match="empty residual"):
        verify.verify_position(p, p, -1, 0, 0)
    with pytest.raises(TypeError, match="Fraction"):
        verify.verify_position(p, p, 0, "0.5", 0)
    with pytest.raises(ValueError, match="3 p rows"):
        verify.verify_chain([p], [p, p], [0, 1], [0, 0], 0)


# ---------------------------------------------------------------- one position, exactly integrated

V1 = 40  # above K = 32: tokens outside the 32 candidates have q = 0 while p may not


def _one_position_rows() -> list[tuple[str, list[int], list[int], list[Fraction]]]:
    rng = np.random.default_rng(2026_12_06)
    spread = [float(v) for v in rng.standard_normal(V1) * 2]
    rows = []
    ids, t = proposal_row(spread, 1.0)
    sup = [i for i in ids if i >= 0]
    rows.append(("sampled, p mass off q's support", ids, t, rational_dist(rng, V1)))
    rows.append(("sampled, p zero on part of q's support", ids, t, rational_dist(rng, V1, zeros=sup[::2])))
    off = [i for i in range(V1) if i not in sup]
    rows.append(("sampled, p only off q's support", ids, t, rational_dist(rng, V1, only=off[:3])))
    q_as_p = handoff.q_exact(ids, t, V1)
    rows.append(("sampled, p == q", ids, t, q_as_p))
    peaked = [0.0] * V1
    peaked[11], peaked[12], peaked[30] = 9.0, 8.0, -90.0  # zero-ticket candidates beside tiny ones
    for k in range(13, 30):
        peaked[k] = -12.0 - k
    ids2, t2 = proposal_row(peaked, 0.5)
    assert min(x for x in t2 if x > 0) < 64  # a support entry of a few tickets
    rows.append(("sampled, peaked q with tiny entries", ids2, t2, rational_dist(rng, V1, zeros=[11])))
    ids3, t3 = proposal_row(spread, 0.0)
    rows.append(("greedy", ids3, t3, rational_dist(rng, V1)))
    rows.append(("greedy, p(a*) = 0", ids3, t3, rational_dist(rng, V1, zeros=[ids3[0]])))
    nan_row = list(spread)
    nan_row[4] = float("nan")
    ids4, t4 = proposal_row(nan_row, 1.0)
    assert ids4 == [-1] * K_MAX
    rows.append(("failed (NaN logit)", ids4, t4, rational_dist(rng, V1)))
    return rows


@pytest.mark.parametrize("row", _one_position_rows(), ids=lambda r: r[0])
def test_draft_then_verify_outputs_p_exactly(row: tuple[str, list[int], list[int], list[Fraction]]) -> None:
    _, ids, tickets, p = row
    q = handoff.q_exact(ids, tickets, V1)
    total: dict[object, Fraction] = {}
    for x, weight in draft_paths(ids, tickets):
        axes = [[p[x] / q[x]] if x >= 0 else [], cumulative(verify.residual(p, q))]

        def step(u: list[Fraction], x: int = x) -> object:
            return verify.verify_position(p, q, x, u[0], u[1])[1]

        for token, w in integrate(step, axes).items():
            total[token] = total.get(token, ZERO) + weight * w
    assert {y: total.get(y, ZERO) for y in range(V1)} == dict(enumerate(p))


# ---------------------------------------------------------------- a chain of two positions

V2 = 10


def test_two_position_chain_emits_the_targets_sequence_distribution() -> None:
    """Depth 2 with the drafter's second row depending on the first draft (greedy after token 3, failed
    after token 5, else sampled), and the target's second row on the emitted first token: the first two
    emitted tokens, completed by the target's own draw where the chain stopped after one, are
    distributed as p1(a) p2(b | a)."""
    rng = np.random.default_rng(44)
    base = [float(v) for v in rng.standard_normal(V2) * 2]
    base[9] = -1e4  # zero tickets: off q1's support, while p1 has mass there
    ids1, t1 = proposal_row(base, 1.0)
    q1 = handoff.q_exact(ids1, t1, V2)
    p1 = rational_dist(rng, V2, zeros=[0])
    p2 = {a: rational_dist(rng, V2, zeros=[(a + 1) % V2]) for a in range(V2)}
    p3 = [Fraction(1, V2)] * V2  # the bonus row (after two accepted drafts): not part of the pair
    q2 = {}
    for a in range(V2):
        row = list(np.roll(base, a))
        if a == 5:
            row[2] = float("inf")
        q2[a] = handoff.q_exact(*proposal_row(row, 0.0 if a == 3 else 1.0, seed=a), V2)

    pair: dict[tuple[int, int], Fraction] = {}
    for x1, w1 in draft_paths(ids1, t1):
        s2 = [(i, int(v * TICKETS)) for i, v in enumerate(q2[x1]) if v > 0]
        paths2 = draft_paths(
            [i for i, _ in s2] + [-1] * (K_MAX - len(s2)), [t for _, t in s2] + [0] * (K_MAX - len(s2))
        )
        for x2, w2 in paths2:
            axes = [
                [p1[x1] / q1[x1]],
                [p2[x1][x2] / q2[x1][x2]] if x2 >= 0 else [],
                cumulative(verify.residual(p1, q1))
                + cumulative(verify.residual(p2[x1], q2[x1]))
                + cumulative(p3),
            ]

            def chain(u: list[Fraction], x1: int = x1, x2: int = x2) -> object:
                return tuple(verify.verify_chain([p1, p2[x1], p3], [q1, q2[x1]], [x1, x2], u[:2], u[2]))

            for emitted, w in integrate(chain, axes).items():
                assert isinstance(emitted, tuple)
                if len(emitted) >= 2:
                    key = (emitted[0], emitted[1])
                    pair[key] = pair.get(key, ZERO) + w1 * w2 * w
                else:  # stopped after one: the next round starts from the target's p2(. | a)
                    a = emitted[0]
                    for b in range(V2):
                        pair[(a, b)] = pair.get((a, b), ZERO) + w1 * w2 * w * p2[a][b]
    want = {(a, b): p1[a] * p2[a][b] for a in range(V2) for b in range(V2)}
    assert {k: pair.get(k, ZERO) for k in want} == want


def test_the_proposals_own_draw_is_the_integrated_pick() -> None:
    """The token the rule drew is pick() at its traced ticket index (clause 9.5): the draft side of the
    integration above is the rule's draw, not another sampler."""
    rng = np.random.default_rng(3)
    logits = (rng.standard_normal((6, V1)) * 2).astype(np.float32)
    temperature = np.ones(6, dtype=np.float32)
    out = propose_exact(
        logits,
        temperature,
        np.arange(6, dtype=np.uint64),
        np.full(6, 1, np.uint64),
        np.arange(6, dtype=np.uint64),
        trace=True,
    )
    assert out.trace is not None
    for r, tr in enumerate(out.trace):
        assert tr.u is not None
        assert pick(tr.support_ids, tr.support_tickets, tr.u) == out.token[r]

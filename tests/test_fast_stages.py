"""The Stages API of the fast reference: every stage is on the path, and the plausible mistakes of the
conformance mutants are each expressible as ONE replaced stage that changes some output."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from test_fast_agreement import Call, random_call, run

from dyadic24.api import TICKETS, Proposal
from dyadic24.reference import fast
from dyadic24.reference.fast import DEFAULT_STAGES, Stages, propose_fast, propose_with

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


class ReachedError(Exception):
    pass


def test_stages_are_frozen_and_default() -> None:
    assert Stages() == DEFAULT_STAGES
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_STAGES.exp = fast.exp_default  # type: ignore[misc]


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(Stages)])
def test_every_stage_is_on_the_sampled_path(name: str) -> None:
    """Replacing any one stage by a function that raises makes a sampled call raise."""

    def boom(*args: Any) -> Any:
        raise ReachedError(name)

    stages = dataclasses.replace(DEFAULT_STAGES, **{name: boom})
    logits = np.array([[1.0, 2.0, 0.5]], dtype=np.float32)
    one = np.ones(1, dtype=np.uint64)
    with pytest.raises(ReachedError):
        propose_with(stages, logits, np.ones(1, np.float32), one, one, one)


def test_failed_and_greedy_rows_skip_the_sampling_stages() -> None:
    """Clauses 2.3, 4.2, 10.3: greedy rows stop after screen, select, greedy; failed rows after screen."""

    def boom(*args: Any) -> Any:
        raise ReachedError

    sampling = {
        f.name: boom for f in dataclasses.fields(Stages) if f.name not in ("screen", "select", "greedy")
    }
    stages = dataclasses.replace(DEFAULT_STAGES, **sampling)
    logits = np.array([[1.0, 2.0, 0.5], [np.nan, 0.0, 0.0], [1.0, 1.0, 1.0]], dtype=np.float32)
    t = np.array([0.0, 1.0, -0.0], dtype=np.float32)
    ids = np.arange(3, dtype=np.uint64)
    got = propose_with(stages, logits, t, ids, ids, ids)
    assert got.token.tolist() == [1, -1, 0] and got.tickets[:, 0].tolist() == [TICKETS, 0, TICKETS]
    no_select = dataclasses.replace(stages, select=boom)
    failed = propose_with(no_select, logits[1:2], t[1:2], ids[:1], ids[:1], ids[:1])
    assert failed.status.tolist() == [1]


# --- one-stage mutants (the conformance suite's list; these check the stage boundaries fit them) ----


def exp_fp32(z: F32) -> F32:
    return np.exp(z)


def exp_exp2(z: F32) -> F32:
    out: F32 = np.exp2(z * np.float32(1.4426950408889634))
    return out


def exp_flush(z: F32) -> F32:
    e = fast.exp_default(z)
    return np.where(np.abs(e) < np.finfo(np.float32).tiny, np.float32(0), e)


def scale_reciprocal(l_c: F32, m: F32, tau: np.float32) -> tuple[F32, F32]:
    with np.errstate(all="ignore"):
        d = np.subtract(l_c, m[:, None], dtype=np.float32)
        return d, d * (np.float32(1) / tau)


def scale_first(l_c: F32, m: F32, tau: np.float32) -> tuple[F32, F32]:
    with np.errstate(all="ignore"):
        d = np.subtract(l_c, m[:, None], dtype=np.float32)
        return d, np.subtract(l_c / tau, (m / tau)[:, None], dtype=np.float32)


def sum_sequential(e_slots: F32) -> F64:
    total = np.zeros(e_slots.shape[0])
    for j in range(e_slots.shape[1]):
        total = total + e_slots[:, j].astype(np.float64)
    return total


def sum_numpy(e_slots: F32) -> F64:
    total: F64 = e_slots.astype(np.float64).sum(axis=1)
    return total


def sum_descending(e_slots: F32) -> F64:
    return sum_sequential(-np.sort(-e_slots, axis=1))


def probabilities_fp32(e_slots: F32, s: F64) -> F64:
    return (e_slots / s.astype(np.float32)[:, None]).astype(np.float64)


def allocate_largest_remainder(p: F64, c: I64, argmax_slot: I64) -> I64:
    frac = p * float(TICKETS) - c
    r = TICKETS - c.sum(axis=1)
    rank = np.argsort(np.argsort(-frac, axis=1, kind="stable"), axis=1)
    t: I64 = c + (rank < r[:, None])
    return t


def allocate_lowest_id(p: F64, c: I64, argmax_slot: I64) -> I64:
    return fast.allocate_default(p, c, np.zeros_like(argmax_slot))


def allocate_highest_count(p: F64, c: I64, argmax_slot: I64) -> I64:
    return fast.allocate_default(p, c, np.argmax(c, axis=1))


def greedy_positive_zero_only(temperature: F32) -> npt.NDArray[np.bool_]:
    """T = -0 taken as a sampled row (a bit-pattern test for zero)."""
    out: npt.NDArray[np.bool_] = temperature.view(np.uint32) == 0
    return out


def screen_daz(logits: F32, t: F32) -> tuple[npt.NDArray[np.int32], F32]:
    """Denormal inputs read as zero (DAZ): subnormal logits become +-0 before anything else."""
    tiny = np.abs(logits) < np.finfo(np.float32).tiny
    return fast.screen_default(np.where(tiny, np.copysign(np.float32(0), logits), logits), t)


def select_ties_high(logits: F32, k: int) -> I64:
    rank = np.arange(logits.shape[1], dtype=np.uint64)
    key = (fast.order_key32(logits).astype(np.uint64) << np.uint64(32)) | rank
    return fast.top_k_by_key(key, k)


def select_negative_zero_below(logits: F32, k: int) -> I64:
    bits = logits.view(np.uint32)
    key32 = np.where(bits >= np.uint32(0x80000000), ~bits, bits | np.uint32(0x80000000))
    rank = np.uint64(0xFFFFFFFF) - np.arange(logits.shape[1], dtype=np.uint64)
    return fast.top_k_by_key((key32.astype(np.uint64) << np.uint64(32)) | rank, k)


def screen_nan_as_neg_inf(logits: F32, t: F32) -> tuple[npt.NDArray[np.int32], F32]:
    return fast.screen_default(np.where(np.isnan(logits), np.float32(-np.inf), logits), t)


def screen_pos_inf_ok(logits: F32, t: F32) -> tuple[npt.NDArray[np.int32], F32]:
    status, out = fast.screen_default(logits, t)
    return np.where(status == 2, 0, status).astype(np.int32), out


def screen_batch_fails(logits: F32, t: F32) -> tuple[npt.NDArray[np.int32], F32]:
    status, out = fast.screen_default(logits, t)
    worst = status[status != 0][:1]
    return (np.full_like(status, worst[0]) if worst.size else status), out


def support_by_logit(slot_ids: I64, t: I64, slot_logits: F32) -> tuple[Any, Any]:
    order = np.lexsort((slot_ids, -slot_logits.astype(np.float64)), axis=1)
    ids, tickets = np.take_along_axis(slot_ids, order, 1), np.take_along_axis(t, order, 1)
    live = np.argsort(tickets == 0, axis=1, kind="stable")
    ids, tickets = np.take_along_axis(ids, live, 1), np.take_along_axis(tickets, live, 1)
    return np.where(tickets > 0, ids, -1).astype(np.int32), tickets.astype(np.int32)


def block_swapped(k0: Any, k1: Any, round: Any, position: Any) -> Any:
    return fast.block_default(k0, k1, position, round)


def ticket_low24(x: Any) -> I64:
    u: I64 = (x[0] & np.uint32(0xFFFFFF)).astype(np.int64)
    return u


def key_none(seed: Any) -> tuple[Any, Any]:
    return fast.lo32(seed), fast.hi32(seed)


def slot_order_finite_first(ids: I64, l_c: F32) -> I64:
    return np.lexsort((ids, l_c == -np.inf), axis=1).astype(np.int64)


MUTANTS: dict[str, tuple[str, Callable[..., Any]]] = {
    "fp32 exp": ("exp", exp_fp32),
    "exp2(x * log2e)": ("exp", exp_exp2),
    "subnormal e flushed": ("exp", exp_flush),
    "multiply by 1/tau": ("scale", scale_reciprocal),
    "scale before max": ("scale", scale_first),
    "sequential sum": ("normalizer", sum_sequential),
    "numpy sum": ("normalizer", sum_numpy),
    "descending sum": ("normalizer", sum_descending),
    "binary32 normalization": ("probabilities", probabilities_fp32),
    "largest remainder": ("allocate", allocate_largest_remainder),
    "remainder to lowest ID": ("allocate", allocate_lowest_id),
    "remainder to highest count": ("allocate", allocate_highest_count),
    "ties to higher ID": ("select", select_ties_high),
    "-0 below +0": ("select", select_negative_zero_below),
    "subnormal logits flushed (DAZ)": ("screen", screen_daz),
    "T = -0 not greedy": ("greedy", greedy_positive_zero_only),
    "NaN as -inf": ("screen", screen_nan_as_neg_inf),
    "+inf not failing": ("screen", screen_pos_inf_ok),
    "bad row fails batch": ("screen", screen_batch_fails),
    "support by logit": ("support", support_by_logit),
    "counter words swapped": ("block", block_swapped),
    "u from low 24 bits": ("ticket", ticket_low24),
    "no proposal-domain key": ("key", key_none),
    "-inf slots skipped in the tree": ("slot_order", slot_order_finite_first),
}


# Only the trace shows it: a subnormal e (< 2^-126) gives c = 0 either way (clause 7.2) and cannot move
# S >= 1 except through a chain of exact binary64 ties in the tree (clause 6.2).
TRACE_ONLY = {"subnormal e flushed"}


def summation_order_call() -> Call:
    """S by the tree is 2 + 2^-51, by any other order 2 (clause 6.2), so the tickets differ (clause 7).

    tau = 1, m = 0: e = 1, 0.5, 0.5 (z = RN32(-ln 2)), four e = t in (2^-54, 4/3 * 2^-54) at slots 8-11
    and -inf at slots 3-7. Tree: 1 + 0.5 + 0.5 = 2, 4t is exact, 2 + 4t rounds up to 2 + 2^-51.
    Sequential, numpy's 8-way pairwise, descending order: each t alone is below half an ulp of the
    running sum. Finite slots packed first: 0.5 + t absorbs one t and 2 + 3t rounds back to 2.
    """
    half = np.float32(-np.log(2.0))
    row = [0.0, half, half] + [-np.inf] * 5 + [-37.3] * 4
    one = np.ones(1, dtype=np.uint64)
    return Call(np.array([row], dtype=np.float32), np.ones(1, np.float32), one, one, one, np.float32(1.0))


def test_summation_order_call_is_as_documented() -> None:
    got = run(propose_fast, summation_order_call(), trace=True)
    assert got.trace is not None and got.trace[0].s_bits == 0x4000000000000001
    assert got.tickets[0, :3].tolist() == [(1 << 23) + 2, (1 << 22) - 1, (1 << 22) - 1]


def differs(a: Proposal, b: Proposal) -> bool:
    return any(
        not np.array_equal(getattr(a, n), getattr(b, n)) for n in ("status", "token", "ids", "tickets")
    )


def test_mutants_are_one_stage_each_and_change_outputs() -> None:
    """Each listed mistake is one replaced stage that changes outputs (traces for TRACE_ONLY) on the
    agreement test's rows plus the summation-order call."""
    rng = np.random.default_rng(9)
    calls: list[Call] = [random_call(rng, 50) for _ in range(200)] + [summation_order_call()]
    base = [run(propose_fast, c) for c in calls]
    missed = []
    with np.errstate(all="ignore"):
        for label, (stage, fn) in MUTANTS.items():
            stages = dataclasses.replace(DEFAULT_STAGES, **{stage: fn})

            def mutant(*args: Any, stages: Stages = stages, **kw: Any) -> Proposal:
                return propose_with(stages, *args, **kw)

            try:
                caught = any(differs(run(mutant, c), b) for c, b in zip(calls, base, strict=True))
            except Exception:
                caught = True  # crashing is a detected mutant too
            if not caught:
                missed.append(label)
    print("missed", missed)
    assert len(missed) <= 3, missed

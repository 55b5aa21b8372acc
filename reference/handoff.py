"""q for the verifier: the draft probabilities of a dyadic24-floor-first-v1 proposal (spec Appendix F,
informative), in the forms speculative-sampling verifiers take. numpy only; the torch form that runs
inside a CUDA graph is ``dyadic24.kernels.handoff``.

A proposal's q is its support list (clauses 7.3, 8.1, 12.1): ``ids`` int32 [..., 32] (ascending token
IDs, then -1) and ``tickets`` int32 [..., 32] (positive counts summing to 2^24, then 0), so
q(ids[j]) = tickets[j] * 2^-24 and q = 0 on every other token. Every such value is a binary32 number:
tickets[j] is an integer in [0, 2^24], which has at most 24 significant bits (2^24 itself is a power of
two), and scaling by 2^-24 only moves the exponent (the smallest nonzero value, 2^-24, is normal). So
the float32 q below IS q, not an approximation of it; a verifier that reads it sees what the draw
used (clauses 9.4, 9.5: P(token = ids[j]) = tickets[j] / 2^24 exactly). Every partial sum of a row's q is a
multiple of 2^-24 in [0, 1], again a binary32 value, so a row sums to exactly 1.0 in float32 in any
order.

Forms:

- :func:`q_dense`: float32 [..., V], q at every token of the vocabulary: the ``draft_probs`` that
  vLLM's ``RejectionSampler`` takes (``vllm/v1/sample/rejection_sampler.py``: [num_tokens,
  vocab_size], contiguous, float32 like its target_probs; num_tokens is the requests' draft positions
  flattened request-major, so ids stacked [B, depth, 32] give [B, depth, V], viewed [B * depth, V])
  and that SGLang's speculative verify takes (``draft_probs`` [bs, num_draft_tokens or num_steps,
  vocab] float32 beside target_probs of the same vocabulary: ``tree_speculative_sampling_target_only``
  and the classic chain sampler of ``python/sglang/kernels/ops/speculative/reject_sampling.py``).
  B x depth x V x 4 bytes: 0.84 GB at B = 256, depth 5, V = 163,840.
- :func:`q_sparse`: (ids int32 [..., 32], q float32 [..., 32]), for verifiers that gather q at the
  drafted token and form max(0, p - q) only on the support: 256 bytes per row and position.
- :func:`q_exact`: one row as a list of V Fractions, for the rational-arithmetic verification
  reference (``dyadic24.reference.verify``).

Failed rows (status != 0; clause 2.3: token -1, ids all -1, tickets all 0) give an all-zero q row. The
row has no proposal (its logits were NaN or +inf, or it had no mass, or its temperature was invalid;
clause 2.1), and a zero row is the only q that claims none: it is what the outputs give without a
special case, and under the standard verification (``dyadic24.reference.verify``) a position with
q(x) = 0 rejects and draws from normalise(max(0, p - 0)) = p, the target's own distribution, so a
failed position can only fall back to sampling the target. A NaN row would poison max(0, p - q); a
uniform or one-hot row would state a distribution no draw came from. The drafted token is -1, not an
ID: a verifier that must be given one gets a placeholder, and then rejects it only if its test needs
q(x) > 0 (vLLM's does); SGLang's classic chain kernel accepts when ``coin * q < p``, so with q = 0 it
would accept a placeholder of positive target probability. A serving stack therefore ends a draft
at its first failed position: it verifies the positions before it, and the target samples that
position itself (the bonus or recovered token), as it does after a rejection.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dyadic24.api import K_MAX, TICKETS

F32 = npt.NDArray[np.float32]
I32 = npt.NDArray[np.int32]

# 2^-24 as a binary32 value: tickets * TICKET_SCALE is exact for every ticket count (module docstring)
TICKET_SCALE = np.float32(1.0 / TICKETS)

__all__ = ["TICKET_SCALE", "check_support", "q_dense", "q_exact", "q_sparse"]


def check_support(ids: Any, tickets: Any, vocab: int | None = None) -> tuple[I32, I32]:
    """``ids`` and ``tickets`` as int32 arrays [..., 32] if they are support lists of clause 8.1 (as
    clause 12.1 outputs them), else ValueError naming the first broken row.

    Checked per row: ids in [-1, V) (V when given), padding (-1) only after the support and with 0
    tickets, support IDs strictly ascending with positive tickets, and the tickets summing to 2^24
    (an OK row) or 0 (a failed row, clause 2.3)."""
    id_arr = np.asarray(ids)
    t_arr = np.asarray(tickets)
    for name, arr in (("ids", id_arr), ("tickets", t_arr)):
        if arr.dtype.kind not in "iu":
            raise ValueError(f"{name} must be an integer array, got dtype {arr.dtype}")
        if arr.ndim < 1 or arr.shape[-1] != K_MAX:
            raise ValueError(f"{name} must have shape [..., {K_MAX}], got {list(arr.shape)}")
    if id_arr.shape != t_arr.shape:
        raise ValueError(f"ids {list(id_arr.shape)} and tickets {list(t_arr.shape)} differ in shape")
    id64 = id_arr.astype(np.int64).reshape(-1, K_MAX)
    t64 = t_arr.astype(np.int64).reshape(-1, K_MAX)
    support = id64 >= 0
    top = vocab if vocab is not None else np.iinfo(np.int32).max
    bad = (id64 < -1) | (id64 >= top)
    bad |= support & (t64 <= 0)  # clause 8.1: a listed token has tickets
    bad |= ~support & (t64 != 0)  # clause 8.1: padding is (-1, 0)
    bad[:, 1:] |= support[:, 1:] & ~support[:, :-1]  # padding only after the support
    bad[:, 1:] |= support[:, 1:] & (id64[:, 1:] <= id64[:, :-1])  # ascending IDs, none repeated
    rows = bad.any(axis=1)
    sums = t64.sum(axis=1)
    rows |= (sums != TICKETS) & (sums != 0)  # clause 7.4 (OK rows) or clause 2.3 (failed rows)
    if rows.any():
        r = int(np.flatnonzero(rows)[0])
        where = np.unravel_index(r, id_arr.shape[:-1]) if id_arr.ndim > 1 else ()
        raise ValueError(
            f"row {tuple(int(i) for i in where)} is not a clause-8.1 support list"
            f"{f' for V = {vocab}' if vocab is not None else ''}: ids {id64[r].tolist()},"
            f" tickets {t64[r].tolist()} (sum {int(sums[r])})"
        )
    return id_arr.astype(np.int32, copy=False), t_arr.astype(np.int32, copy=False)


def q_sparse(ids: Any, tickets: Any) -> tuple[I32, F32]:
    """(ids, q): the support's token IDs as given (int32 [..., 32], -1 padding) and q = tickets * 2^-24
    (float32 [..., 32], exact; 0 on padding and on failed rows)."""
    id_arr, t_arr = check_support(ids, tickets)
    return id_arr, t_arr.astype(np.float32) * TICKET_SCALE


def q_dense(ids: Any, tickets: Any, vocab: int, *, out: F32 | None = None) -> F32:
    """q at every token: float32 [..., V], tickets * 2^-24 at the support's IDs and 0 elsewhere (an
    all-zero row for a failed row). ``out``: a float32 [..., V] array to fill (overwritten)."""
    id_arr, t_arr = check_support(ids, tickets, vocab)
    shape = (*id_arr.shape[:-1], vocab)
    if out is None:
        out = np.zeros(shape, dtype=np.float32)
    else:
        if out.dtype != np.float32 or out.shape != shape or not out.flags.c_contiguous:
            raise ValueError(
                f"out must be a C-contiguous float32 {list(shape)} array, got {out.dtype} {list(out.shape)}"
            )
        out[...] = 0
    flat = out.reshape(-1, vocab)  # a view (C-contiguous)
    rows, cols = np.nonzero(id_arr.reshape(-1, K_MAX) >= 0)
    q = t_arr.reshape(-1, K_MAX).astype(np.float32) * TICKET_SCALE
    flat[rows, id_arr.reshape(-1, K_MAX)[rows, cols]] = q[rows, cols]
    return out


def q_exact(ids: Sequence[int], tickets: Sequence[int], vocab: int) -> list[Fraction]:
    """One row's q as V exact fractions tickets / 2^24 (0 off the support; all 0 for a failed row)."""
    id_arr, t_arr = check_support(np.asarray([ids]), np.asarray([tickets]), vocab)
    q = [Fraction(0)] * vocab
    for i, t in zip(id_arr[0].tolist(), t_arr[0].tolist(), strict=True):
        if i >= 0:
            q[i] = Fraction(t, TICKETS)
    return q

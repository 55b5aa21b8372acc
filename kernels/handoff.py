"""q for the verifier, on the device (spec Appendix F, informative; issue 44): the torch form of
``dyadic24.reference.handoff``, usable inside a CUDA graph and under torch.compile.

The proposal's outputs (clause 12.1) already hold q exactly: q(ids[j]) = tickets[j] * 2^-24, a
binary32 value for every ticket count (the reference module says why). These functions only place
it where a verifier reads it:

- :func:`q_sparse`: (ids int32 [..., 32], q float32 [..., 32]) for verifiers that gather;
- :func:`q_dense`: float32 [..., V], the ``draft_probs`` vLLM's ``RejectionSampler`` ([num_tokens,
  vocab_size]: stack the positions' outputs as [B, depth, 32] and view the result [B * depth, V])
  and SGLang's speculative verify ([bs, num_draft_tokens or num_steps, vocab]) take.

Both read only tensor metadata on the host and allocate nothing when ``out`` is given (q_dense also
writes the [..., 32] scale of the tickets into its own temporaries, which capture puts in the graph's
pool): no host sync, so the calls can sit in the drafter's CUDA graph after each position's proposal.
The values are not validated (that needs the data on the host: ``dyadic24.reference.handoff`` checks
them); they are the kernel's outputs. A failed row (status != 0: ids all -1, tickets all 0, clause
2.3) gives an all-zero row: the reference module's docstring says why and what a verifier does with it.
"""

from __future__ import annotations

import torch

from dyadic24.api import K_MAX, TICKETS

TICKET_SCALE = 1.0 / TICKETS  # 2^-24: exact as a float32 factor (reference.handoff.TICKET_SCALE)

__all__ = ["TICKET_SCALE", "q_dense", "q_sparse"]


def _check(ids: torch.Tensor, tickets: torch.Tensor) -> None:
    for name, t in (("ids", ids), ("tickets", tickets)):
        if not isinstance(t, torch.Tensor) or t.dtype != torch.int32:
            raise ValueError(f"{name} must be an int32 tensor (clause 12.1)")
        if t.dim() < 1 or t.shape[-1] != K_MAX:
            raise ValueError(f"{name} must have shape [..., {K_MAX}], got {list(t.shape)}")
    if ids.shape != tickets.shape or ids.device != tickets.device:
        shapes = f"ids {list(ids.shape)} on {ids.device}, tickets {list(tickets.shape)} on {tickets.device}"
        raise ValueError(f"{shapes}: they must match")


def q_sparse(
    ids: torch.Tensor, tickets: torch.Tensor, *, out: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, q): the support's IDs as given (-1 padding) and q = tickets * 2^-24 as float32 [..., 32]
    (exact; 0 on padding and on failed rows), into ``out`` when given."""
    _check(ids, tickets)
    if out is None:
        return ids, tickets.to(torch.float32).mul_(TICKET_SCALE)
    if out.dtype != torch.float32 or out.shape != ids.shape or out.device != ids.device:
        raise ValueError(f"out must be float32 {list(ids.shape)} on {ids.device}")
    out.copy_(tickets).mul_(TICKET_SCALE)  # (int32 -> float32 is exact below 2^24 + 1)
    return ids, out


def q_dense(
    ids: torch.Tensor, tickets: torch.Tensor, vocab: int | None = None, *, out: torch.Tensor | None = None
) -> torch.Tensor:
    """q at every token: float32 [..., V] (V = ``vocab``, or out's last dimension), tickets * 2^-24 at
    the support's IDs and 0 elsewhere; ``out`` is zeroed and filled (give it for capture: a buffer
    reused across replays)."""
    _check(ids, tickets)
    if out is None:
        if vocab is None:
            raise ValueError("q_dense needs vocab or out")
        out = torch.empty((*ids.shape[:-1], vocab), dtype=torch.float32, device=ids.device)
    elif (
        out.dtype != torch.float32
        or out.shape[:-1] != ids.shape[:-1]
        or (vocab is not None and out.shape[-1] != vocab)
        or out.device != ids.device
    ):
        raise ValueError(f"out must be float32 [{', '.join(map(str, ids.shape[:-1]))}, V] on {ids.device}")
    q = tickets.to(torch.float32).mul_(TICKET_SCALE)
    # Padding entries (-1, 0) write their row's first support entry again, with its own value: every
    # index a row writes twice gets the same value, so scatter's order among duplicates cannot matter.
    # A failed row has no support: its entries write 0 to column 0 of its zeroed row.
    valid = ids >= 0
    first_id = ids[..., :1].clamp(min=0)
    first_q = q[..., :1]
    index = torch.where(valid, ids, first_id).to(torch.int64)
    value = torch.where(valid, q, first_q)
    out.zero_()
    out.scatter_(-1, index, value)
    return out

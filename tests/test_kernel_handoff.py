"""kernels.handoff: the torch q hand-off equals the numpy reference's bit for bit, on the kernel's own
outputs (Triton's interpreter here), for stacked drafts and reused buffers, and traces into one
graph under torch.compile (no host sync; spec Appendix F, issue 44)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from dyadic24.api import TICKETS  # noqa: E402
from dyadic24.kernels import handoff  # noqa: E402
from dyadic24.kernels import propose as kp  # noqa: E402
from dyadic24.reference import handoff as ref  # noqa: E402

VOCAB = 700


def _outputs(depth: int = 2) -> tuple[Any, Any, Any]:
    """status, ids, tickets [6, depth(, 32)] of the kernel on sampled, greedy and failed rows."""
    gen = torch.Generator().manual_seed(44)
    dev = kp.kernel_device()
    temp = torch.tensor([1.0, 0.0, 1.0, 1.0, -0.0, 1.0], device=dev)
    rows = torch.arange(6, dtype=torch.int64, device=dev)
    outs = []
    for p in range(depth):
        logits = (torch.randn(6, VOCAB, generator=gen) * 3).to(dev)
        logits[2, 5] = float("nan")  # NAN_LOGIT
        logits[3, 100:] = -1e4  # zero-ticket candidates
        if p == 1:
            logits[0, :] = float("-inf")  # ZERO_MASS
        outs.append(kp.propose(logits, temp, rows * 31, rows, rows + 2048 + p))
    status = torch.stack([o[0] for o in outs], dim=1)
    ids = torch.stack([o[2] for o in outs], dim=1)
    tickets = torch.stack([o[3] for o in outs], dim=1)
    return status, ids, tickets


def test_torch_q_equals_the_reference_bit_for_bit() -> None:
    status, ids, tickets = _outputs()
    assert (status != 0).any() and (status == 0).any()
    want = ref.q_dense(ids.cpu().numpy(), tickets.cpu().numpy(), VOCAB)
    out = torch.full((6, 2, VOCAB), float("nan"), device=ids.device)  # a reused buffer: overwritten
    got = handoff.q_dense(ids, tickets, out=out)
    assert got is out
    assert np.array_equal(got.cpu().numpy().view(np.uint32), want.view(np.uint32))
    flat = got.view(12, VOCAB)  # vLLM's [num_tokens, vocab_size], request-major
    assert torch.equal(flat[3 * 2 + 1], got[3, 1])
    assert torch.equal(flat.sum(dim=-1), (status.view(12) == 0).to(torch.float32))  # exactly 1 or 0
    s_ids, s_q = handoff.q_sparse(ids, tickets)
    _, r_q = ref.q_sparse(ids.cpu().numpy(), tickets.cpu().numpy())
    assert s_ids is ids and np.array_equal(s_q.cpu().numpy().view(np.uint32), r_q.view(np.uint32))
    buf = torch.empty_like(s_q)
    assert torch.equal(handoff.q_sparse(ids, tickets, out=buf)[1], s_q)


def test_ticket_scale_is_exact_for_every_count_in_torch() -> None:
    t = torch.arange(TICKETS + 1, dtype=torch.int32)
    q = t.to(torch.float32).mul_(handoff.TICKET_SCALE)
    assert torch.equal(q.to(torch.float64) * TICKETS, t.to(torch.float64))


def test_q_dense_checks_metadata_only() -> None:
    ids = torch.full((2, 32), -1, dtype=torch.int32)
    tickets = torch.zeros((2, 32), dtype=torch.int32)
    with pytest.raises(ValueError, match="int32"):
        handoff.q_dense(ids.long(), tickets, 10)
    with pytest.raises(ValueError, match="vocab or out"):
        handoff.q_dense(ids, tickets)
    with pytest.raises(ValueError, match="float32"):
        handoff.q_dense(ids, tickets, out=torch.zeros(3, 10))
    assert not handoff.q_dense(ids, tickets, 10).any()  # failed rows: all zero


def test_q_dense_traces_as_one_graph() -> None:
    """fullgraph=True: no graph break, so nothing reads a value on the host."""
    _, ids, tickets = _outputs(depth=1)
    out = torch.empty((6, 1, VOCAB), device=ids.device)
    compiled = torch.compile(
        lambda i, t, o: handoff.q_dense(i, t, out=o), backend="aot_eager", fullgraph=True
    )
    got = compiled(ids, tickets, out)
    assert torch.equal(got, handoff.q_dense(ids, tickets, VOCAB))

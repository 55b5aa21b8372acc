"""The clause-12.2 numpy call protocol on top of the Triton kernels.

numpy in -> torch tensors on the kernel device -> kernels -> numpy Proposal out. The device is CUDA
when available; otherwise the kernels run under Triton's CPU interpreter, which must be chosen before
any kernel is defined: importing this module calls dyadic24.kernels.backend.select_backend(), which
sets TRITON_INTERPRET=1 when no CUDA device is usable (tests/conftest.py does the same earlier, for
test sessions). torch tensors are accepted too (bfloat16 logits only that way) and moved to the device.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from dyadic24.api import Proposal, validate_call
from dyadic24.kernels.backend import select_backend

select_backend()

from dyadic24.kernels import trace as trace_mod  # noqa: E402
from dyadic24.kernels.propose import TAU_DEFAULT, TRACE_WORDS, kernel_device  # noqa: E402
from dyadic24.kernels.propose import propose as propose_torch  # noqa: E402


def _to_device_u64(a: Any, device: torch.device) -> torch.Tensor:
    arr = np.ascontiguousarray(np.asarray(a, dtype=np.uint64)).view(np.int64)
    return torch.from_numpy(arr.copy()).to(device)


def propose(
    logits: Any,
    temperature: Any,
    seed: Any,
    round: Any,
    position: Any,
    *,
    tau: Any = TAU_DEFAULT,
    trace: bool = False,
) -> Proposal:
    """dyadic24-floor-first-v1 via the Triton kernels, numpy in and out (clause 12.2)."""
    device = kernel_device()
    if isinstance(logits, torch.Tensor) and logits.dtype == torch.bfloat16:
        # numpy has no bfloat16: validate the exactly widened copy, run the kernel on the bf16 tensor
        call = validate_call(
            logits.float().cpu().numpy(), _np(temperature), _np(seed), _np(round), _np(position), tau
        )
        lg = logits.detach().to(device).contiguous()
    else:
        call = validate_call(_np(logits), _np(temperature), _np(seed), _np(round), _np(position), tau)
        lg = torch.from_numpy(call.logits.copy()).to(device)
    temp = torch.from_numpy(call.temperature.copy()).to(device)
    batch = call.batch
    buf = torch.zeros((batch, TRACE_WORDS), dtype=torch.int64, device=device) if trace else None
    status, token, ids, tickets = propose_torch(
        lg,
        temp,
        _to_device_u64(call.seed, device),
        _to_device_u64(call.round, device),
        _to_device_u64(call.position, device),
        tau=np.uint32(call.tau_bits).view(np.float32),
        trace=buf,
    )
    out_status = status.cpu().numpy().astype(np.int32)
    out_token = token.cpu().numpy().astype(np.int32)
    out_ids = ids.cpu().numpy().astype(np.int32)
    out_tickets = tickets.cpu().numpy().astype(np.int32)
    rows = None
    if buf is not None:
        rows = trace_mod.decode(buf.cpu().numpy(), out_token, out_ids, out_tickets)
    return Proposal(status=out_status, token=out_token, ids=out_ids, tickets=out_tickets, trace=rows)


def _np(value: Any) -> Any:
    """torch tensors to numpy (uint64 via int64 bit patterns); anything else unchanged."""
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu()
        if hasattr(torch, "uint64") and t.dtype == torch.uint64:
            return t.view(torch.int64).numpy().view(np.uint64)
        return t.numpy()
    return value

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


def exp32(z_bits: Any) -> np.ndarray[Any, np.dtype[np.uint32]]:
    """The kernel's exp routine (exp_jit.exp_binary32, the one the proposal calls; clause 5.3) on binary32
    patterns: uint32 z in, uint32 RN32(exp z) out, on the kernel device (`conform --exp-sweep`)."""
    from dyadic24.kernels import exp_sweep_jit
    from dyadic24.kernels.propose import prepare

    device = kernel_device()
    tab = prepare(device)
    z = torch.from_numpy(np.ascontiguousarray(z_bits, dtype=np.uint32).view(np.int32)).to(device)
    out = torch.empty_like(z)
    n = int(z.numel())
    block = 1024
    if n:
        exp_sweep_jit.exp_kernel[(-(-n // block),)](
            z, out, n, tab.z, tab.e, tab.size, TAB_ITERS=tab.iterations, BLOCK=block
        )
    return out.cpu().numpy().view(np.uint32)


def _np(value: Any) -> Any:
    """torch tensors to numpy (uint64 via int64 bit patterns); anything else unchanged."""
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu()
        if hasattr(torch, "uint64") and t.dtype == torch.uint64:
            return t.view(torch.int64).numpy().view(np.uint64)
        return t.numpy()
    return value


# The adapter takes bfloat16 logits too (as torch tensors: numpy has none), so the runner sends the
# golden vectors' bfloat16 forms and bulk calls in bfloat16 to it (clause 12.2).
propose.logit_formats = ("binary32", "binary16", "bfloat16")  # type: ignore[attr-defined]

"""Choice between the GPU and Triton's CPU interpreter.

Triton decides per kernel, when the ``@triton.jit`` decorator runs (module import), whether the kernel
is compiled or interpreted, by reading ``TRITON_INTERPRET`` at that moment. Every kernel module of
this package therefore calls :func:`select_backend` before defining a kernel: without a usable CUDA
device it sets ``TRITON_INTERPRET=1`` (unless the caller already chose), so the same code runs on CPU
tensors with numpy semantics. A caller that wants the interpreter on a GPU machine sets
``TRITON_INTERPRET=1`` itself before importing any ``dyadic24.kernels`` submodule.
"""

from __future__ import annotations

import os


def select_backend() -> None:
    """Set TRITON_INTERPRET=1 when no CUDA device is usable and the caller has not chosen."""
    if "TRITON_INTERPRET" in os.environ:
        return
    import torch

    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"


def interpreting() -> bool:
    """True when kernels defined from now on run under the CPU interpreter."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")

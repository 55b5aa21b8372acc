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
from typing import Any


def select_backend() -> None:
    """Set TRITON_INTERPRET=1 when no CUDA device is usable and the caller has not chosen; under the
    interpreter, skip its redundant per-call patching (faster_interpreter)."""
    if "TRITON_INTERPRET" not in os.environ:
        import torch

        if not torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"
    if interpreting():
        faster_interpreter()


def faster_interpreter() -> bool:
    """Triton's interpreter patches triton.language again on every nested @triton.jit call (its
    ``_patch_lang`` scans every member of the language modules a function's globals hold), about 40 %
    of this package's interpreted time. A launch's own patch, made when the grid starts and undone when
    it ends, already covers a nested call whose language modules it patched, so such calls skip it
    here; a nested call that brings another module (triton.language.core, from the standard library's
    tl.sort or tl.topk) is patched as Triton does. Leaves Triton as it is (returns False) where its
    internals differ."""
    import inspect

    import triton.language as tl
    from triton.runtime import interpreter as it

    if getattr(it, "_dyadic24_fast_patch", False):
        return True
    if not (callable(getattr(it, "_patch_lang", None)) and hasattr(it, "_LangPatchScope")):
        return False
    original = it._patch_lang
    state: dict[str, Any] = {"active": 0, "patched": set()}

    def langs(fn: Any) -> set[int]:
        return {id(v) for v in fn.__globals__.values() if inspect.ismodule(v) and v in (tl, tl.core)}

    def patch_lang(fn: Any) -> Any:
        mine = langs(fn)
        if state["active"] and mine <= state["patched"]:
            return it._LangPatchScope()  # already patched by the running launch: nothing to undo
        scope = original(fn)
        state["patched"] |= mine
        if state["active"]:
            return scope  # a nested call's patch stays, as Triton leaves it
        state["active"] = 1
        restore = scope.restore

        def release() -> None:
            state["active"] = 0
            state["patched"] = set()
            restore()

        scope.restore = release
        return scope

    it._patch_lang = patch_lang
    it._dyadic24_fast_patch = True
    return True


def interpreting() -> bool:
    """True when kernels defined from now on run under the CPU interpreter."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")

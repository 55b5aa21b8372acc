"""Implementations under test, behind one calling convention for the runner.

Three kinds: a Python callable with the clause-12.2 protocol (numpy in; numpy or torch out), a
program speaking the JSON-lines protocol of clause 12.4 (PROTOCOL.md), and the bundled ones
(exact reference, fast reference, Triton kernel adapter). Nothing here imports torch or triton
unless the Triton kernel is asked for.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import queue
import shlex
import subprocess
import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dyadic24.api import K_MAX, SEMANTIC_ID, CallInputs, Proposal, RowTrace
from dyadic24.conformance import jsonl

KERNEL_TARGET = "dyadic24.kernels.adapter:propose"
BUNDLED_TARGETS = {
    "exact": "dyadic24.reference.exact:propose_exact",
    "fast": "dyadic24.reference.fast:propose_fast",
    "kernel": KERNEL_TARGET,
}


@dataclass(frozen=True)
class CallResult:
    """What one call gave back: outputs (and trace), or why there are none."""

    proposal: Proposal | None
    trace: list[dict[str, Any]] | None = None
    error: str | None = None  # the implementation raised or broke the protocol
    clause: str = "12.2"  # the clause an error breaks


class Implementation(ABC):
    """One implementation under test."""

    name: str
    mode: str = ""  # e.g. "Triton on GPU" or "TRITON_INTERPRET=1 (CPU interpreter)"
    traces: bool = False  # it can return the clause-12.3 trace

    @abstractmethod
    def call(self, inputs: CallInputs, trace: bool) -> CallResult: ...

    def close(self) -> None:  # noqa: B027 -- optional hook; most implementations hold nothing
        """Release processes or devices; the default holds none."""


def tau_scalar(bits: int) -> np.float32:
    """The binary32 tau of the given bits, as the numpy scalar the call protocol takes (clause 1.3)."""
    return np.float32(np.array([bits], dtype=np.uint32).view(np.float32)[0])


def _to_numpy(value: Any) -> np.ndarray[Any, Any]:
    if hasattr(value, "detach"):  # a torch tensor, converted without importing torch
        value = value.detach().cpu().numpy()
    return np.asarray(value)


_SHAPES = {"status": 1, "token": 1, "ids": 2, "tickets": 2}


def check_outputs(result: Any, batch: int) -> tuple[Proposal | None, str | None]:
    """Outputs as int32 numpy arrays of the clause-12.1 shapes, or the reason they are not."""
    arrays: dict[str, np.ndarray[Any, Any]] = {}
    for name, ndim in _SHAPES.items():
        if not hasattr(result, name):
            return None, f"the result has no field {name!r} (clause 12.1)"
        arr = _to_numpy(getattr(result, name))
        shape = (batch,) if ndim == 1 else (batch, K_MAX)
        if arr.shape != shape:
            return None, f"{name} has shape {list(arr.shape)}, expected {list(shape)} (clause 12.1)"
        if arr.dtype != np.int32:
            return None, f"{name} has dtype {arr.dtype}, expected int32 (clause 12.1)"
        arrays[name] = arr
    return Proposal(arrays["status"], arrays["token"], arrays["ids"], arrays["tickets"]), None


def trace_json(trace: Any, batch: int) -> list[dict[str, Any]] | None:
    """RowTrace objects (or their JSON forms) as a list of dicts, one per row (clause 12.3)."""
    if trace is None:
        return None
    rows = list(trace)
    if len(rows) != batch:
        return None
    return [r.as_json() if isinstance(r, RowTrace) else dict(r) for r in rows]


def load_target(target: str) -> Callable[..., Any]:
    """``package.module:callable`` (attribute path after the colon may be dotted)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--impl takes package.module:callable, got {target!r}")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{target} is not callable")
    return obj  # type: ignore[no-any-return]


def accepts_trace(func: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return "trace" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


class PythonImplementation(Implementation):
    """A callable with the clause-12.2 protocol; numpy arrays in, numpy or torch tensors out."""

    def __init__(self, func: Callable[..., Any], name: str, mode: str = "") -> None:
        self.func = func
        self.name = name
        self.mode = mode
        self.traces = accepts_trace(func)

    def call(self, inputs: CallInputs, trace: bool) -> CallResult:
        kwargs: dict[str, Any] = {"tau": tau_scalar(inputs.tau_bits)}
        want = trace and self.traces
        if want:
            kwargs["trace"] = True
        try:
            result = self.func(
                inputs.logits.copy(),
                inputs.temperature.copy(),
                inputs.seed.copy(),
                inputs.round.copy(),
                inputs.position.copy(),
                **kwargs,
            )
        except Exception as exc:  # an implementation's crash is a finding, not a runner error
            return CallResult(None, error=f"raised {type(exc).__name__}: {exc}")
        proposal, problem = check_outputs(result, inputs.batch)
        if proposal is None:
            return CallResult(None, error=problem, clause="12.1")
        rows = trace_json(getattr(result, "trace", None), inputs.batch) if want else None
        return CallResult(proposal, rows)


class CommandImplementation(Implementation):
    """A program speaking the JSON-lines protocol (PROTOCOL.md) on stdin/stdout."""

    def __init__(self, command: str | Sequence[str], timeout: float = 600.0) -> None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        self.argv = argv
        self.timeout = timeout
        self.name = " ".join(argv)
        self._next_id = 0
        self._proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1, encoding="utf-8"
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._silent = False
        line = self._line()
        if line is None:
            reason = self._gone()
            self.close()
            raise RuntimeError(f"{self.name}: no handshake line (PROTOCOL.md): {reason}")
        try:
            hello = jsonl.decode_handshake(line)
        except jsonl.ProtocolError as exc:
            self.close()
            raise RuntimeError(f"{self.name}: {exc}") from exc
        if hello.semantic_id != SEMANTIC_ID:
            self.close()
            raise RuntimeError(
                f"{self.name} implements {hello.semantic_id!r}, this runner checks {SEMANTIC_ID!r}"
                " (clause 11.1)"
            )
        self.traces = hello.trace
        self.mode = (
            f"JSON-lines, implementation {hello.implementation!r}" if hello.implementation else "JSON-lines"
        )
        self._dead: str | None = None

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _line(self) -> str | None:
        """The next line; None at end of output (the program exited) or after the timeout."""
        try:
            line = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            self._silent = True
            return None
        if line is None:
            self._lines.put(None)  # stays at end of output
        return line

    def _gone(self) -> str:
        if self._silent:
            return f"no response within {self.timeout:g} s"
        try:
            code: int | None = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        return (
            f"the implementation exited ({code})"
            if code is not None
            else "the implementation closed its output"
        )

    def call(self, inputs: CallInputs, trace: bool) -> CallResult:
        if self._dead is not None:
            return CallResult(None, error=self._dead, clause="12.4")
        self._next_id += 1
        request_id = self._next_id
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(jsonl.encode_request(request_id, inputs, trace and self.traces) + "\n")
            self._proc.stdin.flush()
        except OSError as exc:
            self._dead = f"the implementation closed its input: {exc}"
            return CallResult(None, error=self._dead, clause="12.4")
        line = self._line()
        if line is None:
            self._dead = self._gone()
            return CallResult(None, error=self._dead, clause="12.4")
        try:
            response = jsonl.decode_response(line, inputs.batch)
        except jsonl.ProtocolError as exc:
            return CallResult(None, error=str(exc), clause="12.4")
        if response.id != request_id:
            self._dead = f"response id {response.id} answers request {request_id}: out of step"
            return CallResult(None, error=self._dead, clause="12.4")
        if response.proposal is None:
            return CallResult(
                None, error=f"error on argument {response.error_argument!r}: {response.error_message}"
            )
        return CallResult(response.proposal, response.trace if trace else None)

    def close(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            with contextlib.suppress(OSError):  # the program may have exited already
                self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


def triton_mode() -> tuple[str | None, str]:
    """Prepare the Triton kernel: (skip reason or None, mode text).

    TRITON_INTERPRET is read when triton is first imported, so it is set here, before the import,
    when no CUDA device is available. If triton was already imported in the other mode, the caller
    re-runs the kernel in a child process (see cli.py).
    """
    try:
        import torch
    except ImportError as exc:
        return f"torch is not importable ({exc})", ""
    on_gpu = bool(torch.cuda.is_available())
    if not on_gpu and "triton" not in sys.modules:
        os.environ["TRITON_INTERPRET"] = "1"
    interpret = os.environ.get("TRITON_INTERPRET", "") not in ("", "0")
    if not on_gpu and not interpret:
        return "triton was imported before TRITON_INTERPRET=1 could be set and no GPU is present", ""
    try:
        import triton  # noqa: F401
    except ImportError as exc:
        return f"triton is not importable ({exc})", ""
    if on_gpu and not interpret:
        return None, f"Triton on GPU ({torch.cuda.get_device_name(0)})"
    return None, "TRITON_INTERPRET=1 (Triton interpreter on the CPU)"


def bundled(names: Sequence[str]) -> list[tuple[str, Implementation | None, str]]:
    """(name, implementation or None, mode or skip reason) for each bundled implementation asked for."""
    out: list[tuple[str, Implementation | None, str]] = []
    for name in names:
        target = BUNDLED_TARGETS[name]
        if name == "kernel":
            skip, mode = triton_mode()
            if skip is not None:
                out.append((name, None, skip))
                continue
        else:
            mode = "Python reference"
        try:
            func = load_target(target)
        except (ImportError, AttributeError) as exc:
            out.append((name, None, f"{target} is not importable ({exc})"))
            continue
        out.append((name, PythonImplementation(func, f"{name} ({target})", mode), mode))
    return out

"""Implementations under test ("subjects"), behind one calling convention for the runner.

Three kinds: a Python callable with the clause-12.2 protocol (numpy in; numpy or torch out), a
program speaking the JSON-lines protocol of clause 12.4 (PROTOCOL.md), and the bundled ones (exact
reference, fast reference, Triton kernel adapter). Each subject says what it can take beyond
binary32 calls: 16-bit logits (clause 1.2), invalid calls (clause 1.5), traces (12.3), an exp
routine (5.3). Nothing here imports torch or triton unless the Triton kernel is asked for, or a
Python subject declares bfloat16 input (which only torch carries).
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
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from dyadic24.api import K_MAX, SEMANTIC_ID, ArgumentError, Proposal, RowTrace
from dyadic24.conformance import jsonl
from dyadic24.conformance.jsonl import Call

KERNEL_TARGET = "dyadic24.kernels.adapter:propose"
BUNDLED_TARGETS = {
    "exact": "dyadic24.reference.exact:propose_exact",
    "fast": "dyadic24.reference.fast:propose_fast",
    "kernel": KERNEL_TARGET,
}
# exp routines of the bundled subjects for --exp-sweep (the fast reference's is the sweep's oracle, so
# sweeping it would compare it with itself; the exact one is the slow arbiter, not sweepable)
BUNDLED_EXP = {"kernel": "dyadic24.kernels.adapter:exp32"}
FORMATS_ATTRIBUTE = "logit_formats"  # a Python callable may list "bfloat16" here (torch input)
ACCEPTED = "accepted it and returned outputs"
STDERR_TAIL = 20  # lines of a command subject's standard error kept for crash reports


@dataclass(frozen=True)
class CallResult:
    """What one call gave back: outputs (and trace), or why there are none."""

    proposal: Proposal | None
    trace: list[dict[str, Any]] | None = None
    error: str | None = None  # the implementation raised or broke the protocol
    clause: str = "12.2"  # the clause an error breaks
    argument: str | None = None  # the argument an ArgumentError (clause 1.5) named


class Implementation(ABC):
    """One implementation under test."""

    name: str
    mode: str = ""  # e.g. "Triton on GPU" or "JSON-lines 1.1"
    traces: bool = False  # it can return the clause-12.3 trace
    formats: tuple[str, ...] = ("binary32",)  # logit formats it takes (clauses 1.1, 1.2)
    invalid_calls: bool = False  # it can be sent invalid calls (clause 1.5)
    frames: bool = False  # JSON-lines: binary frames

    @abstractmethod
    def call(self, call: Call, trace: bool) -> CallResult: ...

    def invalid(self, case: Any) -> CallResult:
        """Send one invalid call of dyadic24.conformance.invalid; the result says what came back."""
        raise NotImplementedError

    def exp(self, start: int, count: int) -> npt.NDArray[np.uint32]:
        """RN32(exp(z)) bit patterns for the binary32 patterns z = start .. start + count - 1 (clause 5.3)."""
        raise NotImplementedError

    @property
    def has_exp(self) -> bool:
        return False

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


def trace_json(trace: Any, batch: int) -> tuple[list[dict[str, Any]] | None, str | None]:
    """RowTrace objects (or their JSON forms) as one dict per row (clause 12.3), or why not."""
    if trace is None:
        return None, None
    try:
        rows = list(trace)
    except TypeError:
        return None, f"the trace is a {type(trace).__name__}, not a list of B row traces (clause 12.3)"
    if len(rows) != batch:
        return None, f"the trace has {len(rows)} rows for B = {batch} (clause 12.3)"
    out = []
    for r in rows:
        if isinstance(r, RowTrace):
            out.append(r.as_json())
        elif isinstance(r, dict):
            out.append(dict(r))
        else:
            return None, f"a trace row is a {type(r).__name__}, not a RowTrace or its JSON form (clause 12.3)"
    return out, None


def load_target(target: str) -> Callable[..., Any]:
    """``package.module:callable`` (the attribute path after the colon may be dotted). The current
    directory is searched first, as ``python -m`` does, so a module beside the user is found."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"takes package.module:callable, got {target!r}")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{target} is not callable")
    return obj  # type: ignore[no-any-return]


def accepts_trace(func: Callable[..., Any]) -> bool:
    """A callable announces traces by naming a ``trace`` parameter (clause 12.2); ``**kwargs`` alone
    does not announce them."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return "trace" in params


class PythonImplementation(Implementation):
    """A callable with the clause-12.2 protocol; numpy arrays in, numpy or torch tensors out.

    binary16 logits travel as numpy float16 arrays (clause 12.2 requires them); bfloat16 logits only
    to a callable whose ``logit_formats`` attribute lists "bfloat16", as torch.bfloat16 tensors."""

    invalid_calls = True

    def __init__(
        self,
        func: Callable[..., Any],
        name: str,
        mode: str = "",
        exp: Callable[..., Any] | None = None,
        origin: str | None = None,
    ) -> None:
        self.func = func
        self.origin = origin  # how a worker process rebuilds it: "target:mod:callable" or "mutant:NAME"
        self.name = name
        self.mode = mode
        self.traces = accepts_trace(func)
        declared = getattr(func, FORMATS_ATTRIBUTE, ())
        self.formats = ("binary32", "binary16") + (("bfloat16",) if "bfloat16" in declared else ())
        self._exp = exp

    def _logits(self, call: Call) -> Any:
        if call.fmt == "binary32":
            return call.inputs.logits.copy()
        assert call.narrow is not None
        if call.fmt == "binary16":
            return call.narrow.copy().view(np.float16)
        import torch  # bfloat16 exists only in torch (the callable declared it)

        return torch.from_numpy(call.narrow.copy().view(np.int16)).view(torch.bfloat16)

    def _invoke(self, args: Sequence[Any], kwargs: dict[str, Any], batch: int, want: bool) -> CallResult:
        try:
            result = self.func(*args, **kwargs)
        except ArgumentError as exc:
            return CallResult(None, error=f"raised ArgumentError: {exc}", clause="1.5", argument=exc.argument)
        except Exception as exc:  # an implementation's crash is a finding, not a runner error
            return CallResult(None, error=f"raised {type(exc).__name__}: {exc}")
        proposal, problem = check_outputs(result, batch)
        if proposal is None:
            return CallResult(None, error=problem, clause="12.1")
        if not want:
            return CallResult(proposal)
        rows, problem = trace_json(getattr(result, "trace", None), batch)
        if problem is not None:
            return CallResult(proposal, error=problem, clause="12.3")
        return CallResult(proposal, rows)

    def call(self, call: Call, trace: bool) -> CallResult:
        inputs = call.inputs
        kwargs: dict[str, Any] = {"tau": tau_scalar(inputs.tau_bits)}
        want = trace and self.traces
        if want:
            kwargs["trace"] = True
        args = (
            self._logits(call),
            inputs.temperature.copy(),
            inputs.seed.copy(),
            inputs.round.copy(),
            inputs.position.copy(),
        )
        return self._invoke(args, kwargs, inputs.batch, want)

    def invalid(self, case: Any) -> CallResult:
        args, kwargs = case.python()
        try:
            self.func(*args, **kwargs)
        except ArgumentError as exc:
            return CallResult(None, error=f"raised ArgumentError: {exc}", clause="1.5", argument=exc.argument)
        except Exception as exc:  # the wrong kind of error is a finding (clause 12.2: ArgumentError)
            return CallResult(
                None, error=f"raised {type(exc).__name__}, not ArgumentError: {exc}", clause="1.5"
            )
        return CallResult(None, error=ACCEPTED, clause="1.5")

    @property
    def has_exp(self) -> bool:
        return self._exp is not None

    def exp(self, start: int, count: int) -> npt.NDArray[np.uint32]:
        assert self._exp is not None
        z = np.arange(start, start + count, dtype=np.uint64).astype(np.uint32)
        out = np.asarray(_to_numpy(self._exp(z)))
        if out.dtype == np.float32:
            out = out.view(np.uint32)
        return out.astype(np.uint32, copy=False).reshape(-1)


class CommandImplementation(Implementation):
    """A program speaking the JSON-lines protocol (PROTOCOL.md) on stdin/stdout, in binary mode.

    Its standard error goes to the runner's, and the last lines are kept so that a crash is reported
    with them at the call where it happened."""

    def __init__(self, command: str | Sequence[str], timeout: float = 600.0) -> None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        self.argv = argv
        self.timeout = timeout
        self.name = " ".join(argv)
        self._next_id = 0
        self._proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self._lines: queue.Queue[tuple[bytes, bytes] | None] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL)
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._relay, daemon=True).start()
        self._silent = False
        self._dead: str | None = None
        got = self._line()
        if got is None:
            reason = self._gone()
            self.close()
            raise RuntimeError(f"{self.name}: no handshake line (PROTOCOL.md): {reason}")
        try:
            hello = jsonl.decode_handshake(got[0])
        except jsonl.ProtocolError as exc:
            self.close()
            raise RuntimeError(f"{self.name}: {exc}") from exc
        if hello.semantic_id != SEMANTIC_ID:
            self.close()
            raise RuntimeError(
                f"{self.name} implements {hello.semantic_id!r}, this runner checks {SEMANTIC_ID!r}"
                " (clause 11.1)"
            )
        self.hello = hello
        self.traces = hello.trace
        self.formats = hello.formats
        self.frames = hello.frames
        self.invalid_calls = hello.minor >= 1
        version = f"{jsonl.PROTOCOL}.{hello.minor}"
        self.mode = f"JSON-lines {version}" + (
            f", implementation {hello.implementation!r}" if hello.implementation else ""
        )

    def _read(self) -> None:
        out = self._proc.stdout
        assert out is not None
        while True:
            line = out.readline()
            if not line:
                break
            n = jsonl.frame_length(line)
            frame = out.read(n) if n else b""
            self._lines.put((line, frame))
        self._lines.put(None)

    def _relay(self) -> None:
        err: IO[bytes] | None = self._proc.stderr
        assert err is not None
        for raw in err:
            text = raw.decode("utf-8", "replace")
            self._stderr.append(text.rstrip("\n"))
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write(text)
                sys.stderr.flush()

    def _line(self) -> tuple[bytes, bytes] | None:
        """The next line and its frame; None at end of output (the program exited) or after the timeout."""
        try:
            got = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            self._silent = True
            return None
        if got is None:
            self._lines.put(None)  # stays at end of output
        return got

    def _gone(self) -> str:
        if self._silent:
            return f"no response within {self.timeout:g} s"
        try:
            code: int | None = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        text = (
            f"the implementation exited (exit status {code})"
            if code is not None
            else "the implementation closed its output"
        )
        tail = " | ".join(line for line in list(self._stderr)[-3:] if line.strip())
        return f"{text}; its last standard error: {tail}" if tail else text

    def _send(self, line: str, payload: bytes = b"") -> str | None:
        """Write one request; the reason it could not be written, if so."""
        stdin = self._proc.stdin
        assert stdin is not None
        try:
            stdin.write(line.encode() + b"\n")
            if payload:
                stdin.write(payload)
            stdin.flush()
        except OSError as exc:
            return f"the implementation closed its input ({exc}); {self._gone()}"
        return None

    def _exchange(
        self, line: str, payload: bytes, request_id: int, batch: int
    ) -> tuple[jsonl.Response | None, CallResult | None]:
        if self._dead is not None:
            return None, CallResult(None, error=self._dead, clause="12.4")
        problem = self._send(line, payload)
        if problem is not None:
            self._dead = problem
            return None, CallResult(None, error=problem, clause="12.4")
        got = self._line()
        if got is None:
            self._dead = self._gone()
            return None, CallResult(None, error=self._dead, clause="12.4")
        try:
            response = jsonl.decode_response(got[0], batch, got[1])
        except jsonl.ProtocolError as exc:
            return None, CallResult(None, error=str(exc), clause="12.4")
        if response.id != request_id:
            self._dead = (
                f"response id {response.id} answers request {request_id}: out of step ({jsonl.quote(got[0])})"
            )
            return None, CallResult(None, error=self._dead, clause="12.4")
        return response, None

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def call(self, call: Call, trace: bool) -> CallResult:
        request_id = self._new_id()
        want = trace and self.traces
        line, payload = jsonl.encode_request(request_id, call, want, frame=self.frames)
        response, failed = self._exchange(line, payload, request_id, call.inputs.batch)
        if failed is not None:
            return failed
        assert response is not None
        if response.proposal is None:
            return CallResult(
                None,
                error=f"error on argument {response.error_argument!r}: {response.error_message}",
                argument=response.error_argument,
            )
        if want and response.trace is None:
            return CallResult(
                response.proposal,
                error="the response carries no trace although the handshake announced traces",
                clause="12.3",
            )
        return CallResult(response.proposal, response.trace if want else None)

    def invalid(self, case: Any) -> CallResult:
        request_id = self._new_id()
        line, payload = case.wire(request_id, self.frames)
        response, failed = self._exchange(line, payload, request_id, case.batch)
        if failed is not None:
            return failed
        assert response is not None
        if response.proposal is not None:
            return CallResult(None, error=ACCEPTED, clause="1.5")
        return CallResult(
            None,
            error=f"error on argument {response.error_argument!r}: {response.error_message}",
            clause="1.5",
            argument=response.error_argument,
        )

    @property
    def has_exp(self) -> bool:
        return self.hello.exp

    def exp(self, start: int, count: int) -> npt.NDArray[np.uint32]:
        request_id = self._new_id()
        response, failed = self._exchange(
            jsonl.encode_exp_request(request_id, start, count), b"", request_id, 0
        )
        if failed is not None:
            raise RuntimeError(failed.error)
        assert response is not None
        if response.exp_bits is None:
            raise RuntimeError(
                f"exp request answered without a frame: error {response.error_argument!r}:"
                f" {response.error_message}"
            )
        return response.exp_bits

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
    when no CUDA device is available."""
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
        exp = None
        if name in BUNDLED_EXP:
            with contextlib.suppress(ImportError, AttributeError):
                exp = load_target(BUNDLED_EXP[name])
        out.append(
            (name, PythonImplementation(func, f"{name} ({target})", mode, exp, f"target:{target}"), mode)
        )
    return out

"""Implementations under test ("subjects"), behind one calling convention for the runner.

Three kinds: a Python callable with the clause-12.2 protocol (numpy in; numpy or torch out), a
program speaking the JSON-lines protocol of clause 12.4 (PROTOCOL.md), and the bundled ones (exact
reference, fast reference, Triton kernel adapter). Each subject says what it can take beyond
binary32 calls: 16-bit logits (clause 1.2), invalid calls (clause 1.5), traces (12.3), an exp
routine (5.3). Nothing here imports torch or triton unless the Triton kernel is asked for, or a
Python subject declares bfloat16 input (which only torch carries).
"""

from __future__ import annotations

import importlib
import inspect
import os
import shlex
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dyadic24.api import K_MAX, SEMANTIC_ID, ArgumentError, Proposal, RowTrace
from dyadic24.conformance import jsonl
from dyadic24.conformance.jsonl import Call
from dyadic24.conformance.process import SubjectGoneError, SubjectProcess, clip
from dyadic24.conformance.stop import Interrupted

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
DEFAULT_TIMEOUT = 600.0  # seconds a subject has for one response (--timeout)


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
    python_calls: bool = True  # invalid calls in their Python form (else their JSON-lines form)
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


def to_numpy(value: Any) -> np.ndarray[Any, Any]:
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
        arr = to_numpy(getattr(result, name))
        shape = (batch,) if ndim == 1 else (batch, K_MAX)
        if arr.shape != shape:
            return None, f"{name} has shape {list(arr.shape)}, expected {list(shape)} (clause 12.1)"
        if arr.dtype != np.int32:
            return None, f"{name} has dtype {arr.dtype}, expected int32 (clause 12.1)"
        arrays[name] = np.ascontiguousarray(arr)
    return Proposal(arrays["status"], arrays["token"], arrays["ids"], arrays["tickets"]), None


def trace_json(trace: Any, batch: int) -> tuple[list[dict[str, Any]] | None, str | None]:
    """RowTrace objects (or their JSON forms) as one dict per row (clause 12.3), or why not. The
    values' JSON types are checked by the runner (jsonl.trace_problem)."""
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
    """``package.module:callable`` (the attribute path after the colon may be dotted), imported by the
    process that calls it: a subject's host puts the current directory first on sys.path, as
    ``python -m`` does; the runner's own process never does (its ``dyadic24`` stays the installed one)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"takes package.module:callable, got {target!r}")
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


def declared_formats(func: Callable[..., Any]) -> tuple[str, ...]:
    """binary32 and binary16 (clause 12.2 requires both), and bfloat16 if ``logit_formats`` lists it."""
    declared = getattr(func, FORMATS_ATTRIBUTE, ())
    bf16 = isinstance(declared, list | tuple | set | frozenset) and "bfloat16" in declared
    return ("binary32", "binary16") + (("bfloat16",) if bf16 else ())


def _logits(call: Call) -> Any:
    """The logits as a Python callable takes them: binary32 and binary16 as numpy arrays, bfloat16
    as a torch tensor (numpy has none; only a callable that declared it gets one)."""
    if call.fmt == "binary32":
        return call.inputs.logits.copy()
    assert call.narrow is not None
    if call.fmt == "binary16":
        return call.narrow.copy().view(np.float16)
    import torch

    return torch.from_numpy(call.narrow.copy().view(np.int16)).view(torch.bfloat16)


def _argument(exc: ArgumentError) -> str | None:
    """The argument an ArgumentError names, if it names one as a string (a subject's may not)."""
    try:
        argument = getattr(exc, "argument", None)
    except Interrupted:
        raise
    except BaseException:
        return None
    return argument if isinstance(argument, str) else None


def invalid_result(func: Callable[..., Any], case: Any) -> CallResult:
    """One invalid call of dyadic24.conformance.invalid (its Python form) to ``func``: the error must be
    an ArgumentError naming the argument (clause 1.5); any other exception, SystemExit included, is the
    wrong answer; returning is accepting it. Only the runner's own stop signal passes through."""
    from dyadic24.conformance.host import describe

    args, kwargs = case.python()
    try:
        func(*args, **kwargs)
    except Interrupted:
        raise
    except ArgumentError as exc:
        return CallResult(None, error=f"raised {describe(exc)}", clause="1.5", argument=_argument(exc))
    except BaseException as exc:
        return CallResult(None, error=f"raised {describe(exc)}, not ArgumentError", clause="1.5")
    return CallResult(None, error=ACCEPTED, clause="1.5")


def exp_words(exp: Callable[..., Any], start: int, count: int) -> npt.NDArray[Any]:
    """An exp routine's answer for the binary32 patterns z = start .. start + count - 1, as numpy
    (binary32 results as their uint32 patterns); its dtype and shape are the caller's to check."""
    z = np.arange(start, start + count, dtype=np.uint64).astype(np.uint32)
    out = to_numpy(exp(z))
    return out.view(np.uint32) if out.dtype == np.float32 else out


def invoke(func: Callable[..., Any], call: Call, want_trace: bool) -> CallResult:
    """One clause-12.2 call of ``func``; whatever it raises or returns becomes a CallResult. Only the
    runner's own stop signal (Interrupted) passes through: a subject's KeyboardInterrupt, SystemExit
    or GeneratorExit is its failure."""
    from dyadic24.conformance.host import describe

    inputs = call.inputs
    kwargs: dict[str, Any] = {"tau": tau_scalar(inputs.tau_bits)}
    if want_trace:
        kwargs["trace"] = True
    try:
        args = (
            _logits(call),
            inputs.temperature.copy(),
            inputs.seed.copy(),
            inputs.round.copy(),
            inputs.position.copy(),
        )
        result = func(*args, **kwargs)
    except Interrupted:
        raise
    except ArgumentError as exc:
        return CallResult(None, error=f"raised {describe(exc)}", clause="1.5", argument=_argument(exc))
    except BaseException as exc:
        return CallResult(None, error=f"raised {describe(exc)}")
    try:
        proposal, problem = check_outputs(result, inputs.batch)
        if proposal is None:
            return CallResult(None, error=problem, clause="12.1")
        if not want_trace:
            return CallResult(proposal)
        rows, problem = trace_json(getattr(result, "trace", None), inputs.batch)
    except Interrupted:
        raise
    except BaseException as exc:
        return CallResult(None, error=f"reading its result raised {describe(exc)}", clause="12.1")
    if problem is not None:
        return CallResult(proposal, error=problem, clause="12.3")
    return CallResult(proposal, rows)


class PythonImplementation(Implementation):
    """A callable run in the runner's own process: the references the runner compares with (the
    fuzzing's oracle) and unit tests. A subject under test is a HostedImplementation instead.

    binary16 logits travel as numpy float16 arrays (clause 12.2 requires them); bfloat16 logits only
    to a callable whose ``logit_formats`` attribute lists "bfloat16", as torch.bfloat16 tensors."""

    invalid_calls = True
    python_calls = True

    def __init__(
        self,
        func: Callable[..., Any],
        name: str,
        mode: str = "",
        exp: Callable[..., Any] | None = None,
        origin: str | None = None,
    ) -> None:
        self.func = func
        self.origin = origin
        self.name = name
        self.mode = mode
        self.traces = accepts_trace(func)
        self.formats = declared_formats(func)
        self._exp = exp

    def call(self, call: Call, trace: bool) -> CallResult:
        return invoke(self.func, call, trace and self.traces)

    def invalid(self, case: Any) -> CallResult:
        return invalid_result(self.func, case)

    @property
    def has_exp(self) -> bool:
        return self._exp is not None

    def exp(self, start: int, count: int) -> npt.NDArray[np.uint32]:
        assert self._exp is not None
        return exp_words(self._exp, start, count).astype(np.uint32, copy=False).reshape(-1)


class SubjectError(Exception):
    """A subject that cannot be started; ``skip`` if it cannot run here (a bundled implementation
    without torch), else a setup error of the run (exit 2)."""

    def __init__(self, message: str, skip: bool = False) -> None:
        super().__init__(message)
        self.skip = skip


def package_env() -> dict[str, str]:
    """The environment of a host: PYTHONPATH led by the root of the runner's own ``dyadic24``."""
    import dyadic24

    root = str(Path(next(iter(dyadic24.__path__))).parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


Arrays = Sequence[tuple[str, npt.NDArray[Any]]]


class HostedImplementation(Implementation):
    """A Python subject run in a process of its own (conformance/host.py): ``origin`` is
    "target:module:callable" or "mutant:NAME"; ``exp`` an optional "module:callable" exp routine."""

    invalid_calls = True
    python_calls = True

    def __init__(
        self, origin: str, name: str, *, exp: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        from dyadic24.conformance import host

        self.origin = origin
        self.name = name
        argv = [sys.executable, "-P", "-m", "dyadic24.conformance.host", origin] + ([exp] if exp else [])
        self._proc = SubjectProcess(argv, host.read_message, timeout=timeout, name=name, env=package_env())
        try:
            hello, _ = self._receive()
        except (SubjectGoneError, host.MessageError) as exc:
            self.close()
            raise SubjectError(f"{name}: cannot be started: {exc}") from exc
        if not hello.get("ok"):
            self.close()
            raise SubjectError(f"{name}: {clip(str(hello.get('error')))}", skip=bool(hello.get("skip")))
        self.mode = clip(str(hello.get("mode", "")), 200)
        self.traces = bool(hello.get("traces"))
        formats = hello.get("formats")
        self.formats = tuple(f for f in jsonl.FORMATS if isinstance(formats, list) and f in formats)
        self._has_exp = bool(hello.get("exp"))

    def _receive(self) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
        from dyadic24.conformance import host

        head, body = self._proc.receive()
        return host.unpack(head, body)

    def _exchange(
        self, header: dict[str, Any], arrays: Arrays = ()
    ) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
        from dyadic24.conformance import host

        self._proc.send(host.pack(header, arrays))
        try:
            return self._receive()
        except host.MessageError as exc:
            self._proc.dead = f"{self.name}: {exc}"
            self._proc.kill()
            raise SubjectGoneError(self._proc.dead) from exc

    def call(self, call: Call, trace: bool) -> CallResult:
        inputs = call.inputs
        want = trace and self.traces
        header: dict[str, Any] = {"op": "call", "fmt": call.fmt, "trace": want, "tau_bits": inputs.tau_bits}
        arrays: list[tuple[str, npt.NDArray[Any]]] = []
        if call.shm is not None:  # the host maps the bulk worker's segment instead of a copy
            words = call.logit_words()
            header["shm"] = [call.shm[0], call.shm[1], words.dtype.str, list(words.shape)]
        else:
            arrays.append(("logits", call.logit_words()))
        arrays += [
            ("temperature", inputs.temperature.view(np.uint32)),
            ("seed", inputs.seed),
            ("round", inputs.round),
            ("position", inputs.position),
        ]
        try:
            reply, got = self._exchange(header, arrays)
        except SubjectGoneError as exc:
            return CallResult(None, error=str(exc))
        error = reply.get("error")
        clause = clip(str(reply.get("clause") or "12.2"), 8)
        argument = reply.get("argument") if isinstance(reply.get("argument"), str) else None
        b = inputs.batch
        shapes = {"status": (b,), "token": (b,), "ids": (b, K_MAX), "tickets": (b, K_MAX)}
        if not all(k in got and got[k].shape == v and got[k].dtype == np.int32 for k, v in shapes.items()):
            return CallResult(None, error=clip(str(error or "no outputs")), clause=clause, argument=argument)
        proposal = Proposal(got["status"], got["token"], got["ids"], got["tickets"])
        if error is not None:
            return CallResult(proposal, error=clip(str(error)), clause=clause)
        rows = reply.get("trace")
        if want and rows is not None:
            problem = jsonl.trace_problem(rows, b)
            if problem is not None:
                return CallResult(proposal, error=f"the trace {problem}", clause="12.3")
        return CallResult(proposal, rows if want else None)

    def invalid(self, case: Any) -> CallResult:
        try:
            reply, _ = self._exchange({"op": "invalid", "case": case.name})
        except SubjectGoneError as exc:
            return CallResult(None, error=str(exc), clause="1.5")
        argument = reply.get("argument")  # (the host's invalid_result, as sent)
        return CallResult(
            None,
            error=clip(str(reply.get("error"))),
            clause="1.5",
            argument=argument if isinstance(argument, str) else None,
        )

    @property
    def has_exp(self) -> bool:
        return self._has_exp

    def exp(self, start: int, count: int) -> npt.NDArray[np.uint32]:
        reply, got = self._exchange({"op": "exp", "start": start, "count": count})
        e = got.get("e")
        if reply.get("error") is not None or e is None or e.dtype != np.uint32 or e.shape != (count,):
            raise RuntimeError(clip(str(reply.get("error") or f"no {count} exp results")))
        return e

    def close(self) -> None:
        self._proc.close()


class CommandImplementation(Implementation):
    """A program speaking the JSON-lines protocol (PROTOCOL.md) on stdin/stdout, in binary mode, run
    as a SubjectProcess: in a session of its own, every read and write under ``timeout``, ended with
    its children. Its standard error is relayed; the last lines are quoted where it fails."""

    python_calls = False

    def __init__(self, command: str | Sequence[str], timeout: float = DEFAULT_TIMEOUT) -> None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise SubjectError("the command is empty")
        self.argv = argv
        self.name = " ".join(argv)
        self._next_id = 0
        try:
            self._proc = SubjectProcess(argv, jsonl.read_unit, timeout=timeout, name=self.name)
        except OSError as exc:
            raise SubjectError(f"{self.name}: cannot be started ({exc.strerror or exc})") from exc
        try:
            line, _ = self._proc.receive()
            hello = jsonl.decode_handshake(line)
        except SubjectGoneError as exc:
            self.close()
            raise SubjectError(f"no handshake line (PROTOCOL.md): {exc}") from exc
        except jsonl.ProtocolError as exc:
            self.close()
            raise SubjectError(f"{self.name}: {exc}") from exc
        if hello.semantic_id != SEMANTIC_ID:
            self.close()
            raise SubjectError(
                f"{self.name} implements {clip(repr(hello.semantic_id), 80)}, this runner checks"
                f" {SEMANTIC_ID!r} (clause 11.1)"
            )
        self.hello = hello
        self.traces = hello.trace
        self.formats = hello.formats
        self.frames = hello.frames
        self.invalid_calls = hello.minor >= 1
        version = f"{jsonl.PROTOCOL}.{hello.minor}"
        self.mode = f"JSON-lines {version}" + (
            f", implementation {clip(repr(hello.implementation), 200)}" if hello.implementation else ""
        )

    def _exchange(
        self, line: str, payload: bytes | memoryview, request_id: int, batch: int
    ) -> tuple[jsonl.Response | None, CallResult | None]:
        try:
            self._proc.send(line.encode() + b"\n", payload)
            got_line, got_frame = self._proc.receive()
        except SubjectGoneError as exc:
            return None, CallResult(None, error=str(exc), clause="12.4")
        try:
            response = jsonl.decode_response(got_line, batch, got_frame)
        except jsonl.ProtocolError as exc:
            return None, CallResult(None, error=str(exc), clause="12.4")
        if response.id != request_id:
            self._proc.dead = (
                f"response id {response.id} answers request {request_id}: out of step"
                f" ({jsonl.quote(got_line)})"
            )
            self._proc.kill()
            return None, CallResult(None, error=self._proc.dead, clause="12.4")
        return response, None

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def call(self, call: Call, trace: bool) -> CallResult:
        request_id = self._new_id()
        want = trace and self.traces
        line, payload = jsonl.request_parts(request_id, call, want, frame=self.frames)
        response, failed = self._exchange(line, payload, request_id, call.inputs.batch)
        if failed is not None:
            return failed
        assert response is not None
        if response.exp_bits is not None:
            return CallResult(None, error="a propose request answered with an exp frame", clause="12.4")
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
            return CallResult(None, error=failed.error, clause="1.5")
        assert response is not None
        if response.proposal is not None or response.exp_bits is not None:
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
        if response.exp_bits is None or response.exp_bits.shape != (count,):
            raise RuntimeError(
                f"exp request for {count} values answered without them: error {response.error_argument!r}:"
                f" {response.error_message}"
            )
        return response.exp_bits

    def close(self) -> None:
        self._proc.close()


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


def bundled(
    names: Sequence[str], timeout: float = DEFAULT_TIMEOUT
) -> list[tuple[str, Implementation | None, str]]:
    """(name, implementation or None, mode or the reason it cannot run) for each bundled
    implementation asked for, each in a host process of its own."""
    out: list[tuple[str, Implementation | None, str]] = []
    for name in names:
        target = BUNDLED_TARGETS[name]
        try:
            impl = HostedImplementation(
                f"target:{target}", f"{name} ({target})", exp=BUNDLED_EXP.get(name), timeout=timeout
            )
        except SubjectError as exc:
            out.append((name, None, str(exc)))
            continue
        out.append((name, impl, impl.mode))
    return out

"""The process that hosts a Python subject: ``python -P -m dyadic24.conformance.host ORIGIN [EXP]``.

A Python subject (``--impl``, ``--mutant``, a bundled implementation) never runs in the runner's
process: whatever it does (``sys.exit()``, ``os._exit``, an endless loop, a segmentation fault, a
fork, prints on standard output) ends or blocks only this process, which the runner times out and
kills with its session (conformance/process.py). The runner and this process exchange messages on
this process's standard input and output; the subject's own prints are sent to standard error, which
the runner relays.

A message is 16 bytes (little-endian uint64 lengths of the header and of the payload), a JSON header
(an object; ``arrays`` lists [name, numpy dtype string, shape] of each array) and the payload (those
arrays' bytes, C order). Nothing is pickled: the runner checks every header and array it receives.

``dyadic24`` itself is imported from the runner's package (PYTHONPATH names its root and ``-P`` keeps
the current directory out); the current directory is then put first on ``sys.path`` for the subject's
own modules, as ``python -m`` does.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from collections.abc import Callable, Sequence
from typing import IO, Any

import numpy as np
import numpy.typing as npt

LENGTHS = struct.Struct("<QQ")
MAX_HEADER = 64 << 20  # bytes of a header the runner reads from a host (traces of many rows)
MAX_PAYLOAD = 64 << 20  # bytes of arrays the runner reads from a host (an exp chunk is 16 MiB)
DTYPES = frozenset({"<u2", "<u4", "<u8", "<i4", "<f4"})  # the dtype strings messages carry
Arrays = dict[str, npt.NDArray[Any]]


class MessageError(Exception):
    """A message that breaks the framing above."""


def pack(header: dict[str, Any], arrays: Sequence[tuple[str, npt.NDArray[Any]]] = ()) -> bytes:
    parts = [np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")) for _, a in arrays]
    descr = [[name, p.dtype.str, list(p.shape)] for (name, _), p in zip(arrays, parts, strict=True)]
    head = json.dumps({**header, "arrays": descr}, separators=(",", ":"), default=_plain).encode()
    body = b"".join(p.tobytes() for p in parts)
    return LENGTHS.pack(len(head), len(body)) + head + body


def _plain(value: Any) -> Any:
    """numpy integers in a subject's trace dicts as JSON integers; anything else not JSON as its repr
    (which the runner's trace check then names: clause 12.3)."""
    if isinstance(value, np.integer):
        return int(value)
    return repr(value)


def read_message(
    stream: IO[bytes], max_header: int = MAX_HEADER, max_payload: int = MAX_PAYLOAD
) -> tuple[bytes, bytes] | None:
    """(header bytes, payload bytes) of the next message; None at end of stream. Lengths over the caps
    are refused before anything is allocated."""
    from dyadic24.conformance.process import OversizeError

    lengths = stream.read(LENGTHS.size)
    if not lengths:
        return None
    if len(lengths) < LENGTHS.size:
        raise OversizeError("a message ended inside its length prefix")
    n_head, n_body = LENGTHS.unpack(lengths)
    if n_head > max_header or n_body > max_payload:
        raise OversizeError(
            f"a message announces {n_head:,} header and {n_body:,} payload bytes"
            f" (caps {max_header:,}, {max_payload:,})"
        )
    head = stream.read(n_head)
    body = stream.read(n_body)
    if len(head) < n_head or len(body) < n_body:
        raise OversizeError("a message ended before the lengths it announced")
    return head, body


def unpack(head: bytes, body: bytes) -> tuple[dict[str, Any], Arrays]:
    """The header object and the arrays of a message; MessageError if they do not add up."""
    try:
        header = json.loads(head)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise MessageError(f"a header that is not JSON ({exc})") from exc
    if not isinstance(header, dict) or not isinstance(header.get("arrays"), list):
        raise MessageError("a header without its array list")
    arrays: Arrays = {}
    offset = 0
    for item in header["arrays"]:
        if (
            not isinstance(item, list)
            or len(item) != 3
            or not isinstance(item[0], str)
            or item[1] not in DTYPES
            or not isinstance(item[2], list)
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in item[2])
        ):
            raise MessageError(f"a bad array descriptor {str(item)[:80]}")
        dtype = np.dtype(item[1])
        count = int(np.prod(item[2], dtype=np.int64)) if item[2] else 1
        size = count * dtype.itemsize
        if offset + size > len(body):
            raise MessageError("arrays larger than the payload")
        arrays[item[0]] = np.frombuffer(body, dtype=dtype, count=count, offset=offset).reshape(item[2])
        offset += size
    if offset != len(body):
        raise MessageError("a payload larger than its arrays")
    return header, arrays


# ---- the host process


def describe(exc: BaseException) -> str:
    """``Type: message`` of any exception, even one whose ``__str__`` raises, cut to one line."""
    from dyadic24.conformance.process import clip

    name = type(exc).__name__
    try:
        text = str(exc)
    except BaseException:
        text = "(its message could not be formatted)"
    return clip(f"{name}: {text}" if text else name)


class _Subject:
    """The loaded subject: its callable, its exp routine, what it declared."""

    def __init__(self, origin: str, exp_target: str | None) -> None:
        from dyadic24.conformance.impls import (
            BUNDLED_TARGETS,
            KERNEL_TARGET,
            accepts_trace,
            declared_formats,
            load_target,
        )

        kind, _, rest = origin.partition(":")
        self.mode = "Python reference" if rest in BUNDLED_TARGETS.values() else "Python callable"
        if kind == "mutant":
            from dyadic24.conformance.mutants import MUTANTS

            func, clause, description = MUTANTS[rest]
            self.mode = f"mutant breaking clause {clause}: {description}"
        else:
            if rest == KERNEL_TARGET:
                from dyadic24.conformance.impls import triton_mode

                skip, self.mode = triton_mode()
                if skip is not None:
                    raise CannotRunHereError(skip)
            func = load_target(rest)
        self.func: Callable[..., Any] = func
        self.exp: Callable[..., Any] | None = load_target(exp_target) if exp_target else None
        self.traces = accepts_trace(func)
        self.formats = declared_formats(func)
        if "bfloat16" in self.formats:
            try:
                import torch  # noqa: F401 -- bfloat16 logits travel as torch tensors (clause 12.2)
            except ImportError as exc:
                raise CannotRunHereError(
                    f"it declares bfloat16 logits (logit_formats), which travel as torch.bfloat16 tensors,"
                    f" but torch cannot be imported ({exc})"
                ) from exc


class CannotRunHereError(Exception):
    """The subject cannot run here (a bundled kernel without torch, bfloat16 without torch)."""


def attach_segment(name: str) -> Any:
    """A shared-memory segment the runner's bulk worker made, mapped without registering it with this
    process's resource tracker (whose exit would remove it under the runner: the runner removes it)."""
    from multiprocessing import resource_tracker, shared_memory

    try:
        return shared_memory.SharedMemory(name=name, track=False)  # type: ignore[call-arg]
    except TypeError:  # Python < 3.13: no track argument
        register = resource_tracker.register
        resource_tracker.register = lambda *args, **kwargs: None
        try:
            return shared_memory.SharedMemory(name=name)
        finally:
            resource_tracker.register = register


def _call(subject: _Subject, header: dict[str, Any], arrays: Arrays) -> bytes:
    segment = attach_segment(str(header["shm"][0])) if "shm" in header else None
    try:
        if segment is not None:
            _, offset, dtype, shape = header["shm"]
            words = np.ndarray(tuple(shape), dtype=np.dtype(dtype), buffer=segment.buf, offset=int(offset))
        else:
            words = arrays["logits"]
        got = _invoke(subject, header, arrays, words)
        del words  # the segment's buffer is released before it is closed
    finally:
        if segment is not None:
            segment.close()
    reply: dict[str, Any] = {"error": got.error, "clause": got.clause, "argument": got.argument}
    if got.proposal is None:
        return pack(reply)
    reply["trace"] = got.trace
    p = got.proposal
    return pack(reply, [("status", p.status), ("token", p.token), ("ids", p.ids), ("tickets", p.tickets)])


def _invoke(subject: _Subject, header: dict[str, Any], arrays: Arrays, words: npt.NDArray[Any]) -> Any:
    """The call on the logit words (uint32 or uint16, maybe a view of a segment: invoke copies what it
    passes, so the subject never holds the runner's memory)."""
    from dyadic24.api import CallInputs
    from dyadic24.conformance.impls import invoke
    from dyadic24.conformance.jsonl import Call, widen16

    fmt = str(header["fmt"])
    narrow = None if fmt == "binary32" else words.view(np.uint16)
    wide = widen16(narrow, fmt) if narrow is not None else words.view(np.uint32).view(np.float32)
    inputs = CallInputs(
        logits=wide,
        temperature=arrays["temperature"].astype(np.uint32).view(np.float32),
        seed=arrays["seed"].astype(np.uint64),
        round=arrays["round"].astype(np.uint64),
        position=arrays["position"].astype(np.uint64),
        tau_bits=int(header["tau_bits"]),
    )
    return invoke(subject.func, Call(inputs, fmt, narrow), bool(header["trace"]) and subject.traces)


def _invalid(subject: _Subject, header: dict[str, Any]) -> bytes:
    from dyadic24.conformance.impls import invalid_result
    from dyadic24.conformance.invalid import CASES

    got = invalid_result(subject.func, next(c for c in CASES if c.name == header["case"]))
    return pack({"error": got.error, "argument": got.argument})


def _exp(subject: _Subject, header: dict[str, Any]) -> bytes:
    from dyadic24.conformance.impls import exp_words

    assert subject.exp is not None
    start, count = int(header["start"]), int(header["count"])
    out = exp_words(subject.exp, start, count)
    if out.dtype != np.uint32 or out.shape != (count,):
        return pack(
            {"error": f"the exp routine returned {out.dtype} {list(out.shape)}, expected uint32 [{count}]"}
        )
    return pack({"error": None}, [("e", out)])


def serve(origin: str, exp_target: str | None) -> int:
    ipc_in = os.fdopen(os.dup(0), "rb")
    ipc_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)  # the subject's prints go to standard error, never into the messages

    def send(data: bytes) -> None:
        ipc_out.write(data)
        ipc_out.flush()

    # after dyadic24 is loaded: the subject's modules, found from the current directory as python -m does
    sys.path.insert(0, os.getcwd())
    try:
        subject = _Subject(origin, exp_target)
    except CannotRunHereError as exc:
        send(pack({"ok": False, "skip": True, "error": str(exc)}))
        return 0
    except BaseException as exc:
        send(pack({"ok": False, "skip": False, "error": f"raised {describe(exc)}"}))
        return 0
    send(
        pack(
            {
                "ok": True,
                "mode": subject.mode,
                "traces": subject.traces,
                "formats": list(subject.formats),
                "exp": subject.exp is not None,
            }
        )
    )
    while True:
        got = read_message(ipc_in, max_header=1 << 20, max_payload=1 << 40)
        if got is None:
            return 0
        header, arrays = unpack(*got)
        op = header.get("op")
        try:
            if op == "call":
                reply = _call(subject, header, arrays)
            elif op == "invalid":
                reply = _invalid(subject, header)
            else:
                reply = _exp(subject, header)
        except BaseException as exc:
            reply = pack({"error": f"raised {describe(exc)}", "clause": "12.2", "argument": None})
        send(reply)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    return serve(args[0], args[1] if len(args) > 1 else None)


if __name__ == "__main__":
    sys.exit(main())

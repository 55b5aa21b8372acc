"""Hostile and careless subjects for tests/test_conformance_hostile.py: Python callables (imported by
the runner's host as ``hostile_subjects:NAME`` from the test's folder) and a JSON-lines program
(``python hostile_subjects.py MODE``) that wraps the fast reference and misbehaves in one way each.

Every subject here computes correct outputs except for its one misbehaviour, so each test shows that
that misbehaviour alone decides the verdict.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from dyadic24.api import ArgumentError, Proposal
from dyadic24.reference.fast import propose_fast

# ---- Python callables (clause 12.2)


def _fast(logits: Any, temperature: Any, seed: Any, round: Any, position: Any, tau: Any) -> Proposal:
    return propose_fast(logits, temperature, seed, round, position, tau=tau)


def exit_on_invalid(
    logits: Any, temperature: Any, seed: Any, round: Any, position: Any, *, tau: Any = 0.7
) -> Any:
    try:
        return _fast(logits, temperature, seed, round, position, tau)
    except ArgumentError:
        sys.exit()  # exit status 0: it used to become the runner's


def keyboard_interrupt(
    logits: Any, temperature: Any, seed: Any, round: Any, position: Any, *, tau: Any = 0.7
) -> Any:
    raise KeyboardInterrupt


def generator_exit(
    logits: Any, temperature: Any, seed: Any, round: Any, position: Any, *, tau: Any = 0.7
) -> Any:
    raise GeneratorExit


class _UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ raises")


def unprintable_error(
    logits: Any, temperature: Any, seed: Any, round: Any, position: Any, *, tau: Any = 0.7
) -> Any:
    raise _UnprintableError


def huge_error(logits: Any, temperature: Any, seed: Any, round: Any, position: Any, *, tau: Any = 0.7) -> Any:
    raise ValueError("x" * 50_000_000)


class _Raises:
    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise ValueError("__array__ raises")

    def detach(self) -> Any:
        raise ValueError("detach raises")


class _BadResult:
    status = token = ids = tickets = _Raises()


def bad_arrays(logits: Any, temperature: Any, seed: Any, round: Any, position: Any, *, tau: Any = 0.7) -> Any:
    return _BadResult()


class _Properties:
    @property
    def status(self) -> Any:
        raise RuntimeError("the property raises")


def bad_property(
    logits: Any, temperature: Any, seed: Any, round: Any, position: Any, *, tau: Any = 0.7
) -> Any:
    return _Properties()


def os_exit(logits: Any, temperature: Any, seed: Any, round: Any, position: Any, *, tau: Any = 0.7) -> Any:
    os._exit(0)


def hang(logits: Any, temperature: Any, seed: Any, round: Any, position: Any, *, tau: Any = 0.7) -> Any:
    time.sleep(10**6)


def slow(logits: Any, temperature: Any, seed: Any, round: Any, position: Any, *, tau: Any = 0.7) -> Any:
    time.sleep(0.05)  # right, but slow: a run that a signal stops midway
    return _fast(logits, temperature, seed, round, position, tau)


def prints(logits: Any, temperature: Any, seed: Any, round: Any, position: Any, *, tau: Any = 0.7) -> Any:
    print("CONFORMANT <- a subject's own print on standard output")
    return _fast(logits, temperature, seed, round, position, tau)


def floods_stderr(
    logits: Any, temperature: Any, seed: Any, round: Any, position: Any, *, tau: Any = 0.7
) -> Any:
    sys.stderr.write("e" * 3_000_000 + "\n")
    return _fast(logits, temperature, seed, round, position, tau)


def forks(logits: Any, temperature: Any, seed: Any, round: Any, position: Any, *, tau: Any = 0.7) -> Any:
    """Right outputs; the first call forks a child that sleeps with the pipes open (its pid in
    ./forked.pid): the runner must end it with the subject."""
    if not os.path.exists("forked.pid") and os.fork() == 0:
        with open("forked.pid", "w") as f:
            f.write(str(os.getpid()))
        time.sleep(10**6)
    return _fast(logits, temperature, seed, round, position, tau)


def escapes_briefly(
    logits: Any, temperature: Any, seed: Any, round: Any, position: Any, *, tau: Any = 0.7
) -> Any:
    """Right but slow; the first call forks a child that leaves the session (out of the runner's
    reach) and holds the host's pipes for 1.5 s after the host has ended, so the runner's threads end
    late."""
    host = os.getpid()
    if not os.path.exists("escaped.pid") and os.fork() == 0:
        os.setsid()
        with open("escaped.pid", "w") as f:
            f.write(str(os.getpid()))
        while os.getppid() == host:
            time.sleep(0.05)
        time.sleep(1.5)
        os._exit(0)
    return slow(logits, temperature, seed, round, position, tau=tau)


def wrong_on_binary16(
    logits: Any, temperature: Any, seed: Any, round: Any, position: Any, *, tau: Any = 0.7
) -> Any:
    """Right on binary32 logits; on binary16 logits the token is off by one."""
    out = _fast(logits, temperature, seed, round, position, tau)
    if np.asarray(logits).dtype == np.float16:
        out.token[out.status == 0] += 1
    return out


def _traced(edit: Callable[[dict[str, Any]], dict[str, Any]], doc: str) -> Callable[..., Any]:
    """The fast reference with each row trace's JSON form passed through ``edit`` (outputs right)."""

    def propose(
        logits: Any,
        temperature: Any,
        seed: Any,
        round: Any,
        position: Any,
        *,
        tau: Any = 0.7,
        trace: bool = False,
    ) -> Any:
        out = propose_fast(logits, temperature, seed, round, position, tau=tau, trace=trace)
        if trace and out.trace is not None:
            rows = [edit(r.as_json()) for r in out.trace]
            return Proposal(out.status, out.token, out.ids, out.tickets, rows)  # type: ignore[arg-type]
        return out

    propose.__doc__ = doc
    return propose


partial_trace = _traced(
    lambda r: {"status": r["status"], "path": r["path"]},
    "A trace of status and path only: allowed (clause 12.3), and counted as such.",
)
wrong_partial_trace = _traced(
    lambda r: {"path": "greedy" if r["path"] == "sampled" else r["path"]},
    "The one trace key it reports (path) is wrong on sampled rows.",
)
mistyped_trace = _traced(
    lambda r: {**r, "m": 5}, "The trace's m is a number, not 8 hex digits (clause 12.3)."
)


def bf16_declared(
    logits: Any, temperature: Any, seed: Any, round: Any, position: Any, *, tau: Any = 0.7
) -> Any:
    return _fast(logits, temperature, seed, round, position, tau)


bf16_declared.logit_formats = ["binary32", "binary16", "bfloat16"]  # type: ignore[attr-defined]


def exp_of(z: Any) -> Any:
    from dyadic24.reference.fast_exp import exp32_np

    return exp32_np(np.asarray(z, dtype=np.uint32).view(np.float32)).view(np.uint32)


# ---- a JSON-lines program: python hostile_subjects.py MODE


def _send(out: Any, obj: Any, payload: bytes = b"") -> None:
    out.write((obj if isinstance(obj, str) else json.dumps(obj)).encode() + b"\n" + payload)
    out.flush()


def serve(mode: str) -> int:
    from dyadic24.conformance import jsonl

    out, stdin = sys.stdout.buffer, sys.stdin.buffer
    hello = {"protocol": jsonl.PROTOCOL, "semanticId": "dyadic24-floor-first-v1", "implementation": mode,
             "trace": False, "minor": 1, "formats": ["binary32"], "frames": True, "exp": False}  # fmt: skip
    if mode == "no_handshake":
        sys.stderr.write("dying at start\n")
        return 3
    _send(out, hello)
    if mode == "exits":
        return 0
    if mode == "never_reads":
        time.sleep(10**6)
    if mode == "forks_and_exits":
        if os.fork() == 0:
            with open("forked.pid", "w") as f:
                f.write(str(os.getpid()))
            time.sleep(10**6)  # holds stdout open after its parent is gone
        return 0
    calls = 0
    while True:
        line = stdin.readline()
        if not line:
            return 0
        n = jsonl.frame_length(line)
        frame = stdin.read(n) if n else None
        try:
            req = jsonl.decode_request(line, frame)
        except ArgumentError as exc:
            _send(out, jsonl.encode_error(json.loads(line).get("id"), exc.argument, str(exc)))
            continue
        assert req.call is not None
        i = req.call.inputs
        p = propose_fast(
            i.logits, i.temperature, i.seed, i.round, i.position, tau=np.uint32(i.tau_bits).view(np.float32)
        )
        calls += 1
        response = json.loads(jsonl.encode_response(req.id, p))
        if mode == "float_token":
            response["token"] = [
                t + 0.5 if s == 0 else t for t, s in zip(response["token"], response["status"], strict=True)
            ]
        elif mode == "string_token":
            response["token"] = [str(t) for t in response["token"]]
        elif mode == "float_integral_token":
            response["token"] = [float(t) for t in response["token"]]
        elif mode == "duplicate_keys":
            body = json.dumps(response)
            _send(out, body[:-1] + ', "token": ' + json.dumps(response["token"]) + "}")
            continue
        elif mode == "giant_frame":
            _send(out, {"id": req.id, "frame": 10**15})
            continue
        elif mode == "giant_line":
            _send(out, '{"id": ' + str(req.id) + ', "pad": "' + "x" * 100_000_000 + '"}')
            continue
        elif mode == "stderr_flood":
            sys.stderr.write(("e" * 1_000_000 + "\n") * 3)
        elif mode == "bad_error_argument":
            _send(out, {"id": req.id, "error": {"argument": 7, "message": "no"}})
            continue
        _send(out, response)


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1]))

"""A JSON-lines implementation of dyadic24-floor-first-v1 (conformance/PROTOCOL.md, clause 12.4).

It wraps the fast reference and speaks protocol dyadic24-jsonl-1, minor version 1, with nothing but
``json`` and numpy for the wire (16-bit logits, binary frames, invalid calls, the exp method), as a
template for implementations in other languages:

    dyadic24 conform --cmd "python -m dyadic24.conformance.examples.jsonl_fast"
    dyadic24 conform --cmd "python -m dyadic24.conformance.examples.jsonl_fast --mutant u_low_bits"

``--no-trace`` announces no trace; ``--minor 0`` speaks the original protocol (binary32 JSON rows only);
``--mutant NAME`` serves one of the deliberately wrong implementations of dyadic24.conformance.mutants.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

SEMANTIC_ID = "dyadic24-floor-first-v1"
FORMATS = {"binary32": (8, 4), "binary16": (4, 2), "bfloat16": (4, 2)}  # hex digits, frame bytes per logit


class BadArgumentError(Exception):
    """A request that breaks clause 1: answered with an error naming the argument (clause 1.5)."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(message)
        self.argument = argument


def widen(words: np.ndarray[Any, Any], fmt: str) -> np.ndarray[Any, Any]:
    """Logit words of the wire format to binary32 values (clause 1.2: exact widening)."""
    if fmt == "binary32":
        return words.astype(np.uint32).view(np.float32)
    if fmt == "bfloat16":
        return (words.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return words.astype(np.uint16).view(np.float16).astype(np.float32)


def hex_words(text: Any, digits: int, argument: str) -> np.ndarray[Any, Any]:
    if not isinstance(text, str) or len(text) % digits or not text:
        raise BadArgumentError(argument, f"must be packed {digits}-hex-digit words")
    try:
        raw = bytes.fromhex(text)
    except ValueError as exc:
        raise BadArgumentError(argument, f"bad hex: {exc}") from exc
    return np.frombuffer(raw, dtype=">u4" if digits == 8 else ">u2")


def u64s(values: Any, argument: str, batch: int) -> np.ndarray[Any, Any]:
    if not isinstance(values, list) or len(values) != batch:
        raise BadArgumentError(argument, f"must be {batch} decimal strings")
    if not all(isinstance(v, str) and v.isdigit() and int(v) < 1 << 64 for v in values):
        raise BadArgumentError(argument, "must hold decimal uint64 strings")
    return np.array([int(v) for v in values], dtype=np.uint64)


def parse(req: dict[str, Any], frame: bytes | None) -> tuple[Any, ...]:
    fmt = req.get("format", "binary32")
    if fmt not in FORMATS:
        raise BadArgumentError("logits", f"unsupported format {fmt!r}")
    digits, width = FORMATS[fmt]
    vocab = req.get("vocab")
    if not isinstance(vocab, int) or not 1 <= vocab < 1 << 31:
        raise BadArgumentError("logits", "vocab must be in [1, 2^31 - 1]")
    if frame is not None:
        if not frame or len(frame) % (width * vocab):
            raise BadArgumentError("logits", "the frame is not whole rows of vocab logits")
        words = np.frombuffer(frame, dtype="<u4" if width == 4 else "<u2").reshape(-1, vocab)
    else:
        rows = req.get("logits")
        if not isinstance(rows, list) or not rows:
            raise BadArgumentError("logits", "must be a non-empty list of rows")
        parsed = [hex_words(r, digits, "logits") for r in rows]
        if any(p.shape[0] != vocab for p in parsed):
            raise BadArgumentError("logits", "a row does not hold vocab logits")
        words = np.stack(parsed)
    batch = words.shape[0]
    temps = req.get("temperature")
    if not isinstance(temps, list) or not all(isinstance(t, str) and len(t) == 8 for t in temps):
        raise BadArgumentError("temperature", "must be a list of 8-hex-digit binary32 words")
    temperature = hex_words("".join(temps), 8, "temperature")
    if temperature.shape[0] != batch:
        raise BadArgumentError("temperature", f"must have {batch} entries")
    tau_text = req.get("tauBits")
    if not isinstance(tau_text, str) or len(tau_text) != 8:
        raise BadArgumentError("tau", "tauBits must be 8 hex digits")
    tau = hex_words(tau_text, 8, "tau").astype(np.uint32).view(np.float32)[0]
    if not (np.isfinite(tau) and tau > 0):
        raise BadArgumentError("tau", "must be finite and > 0 (clause 1.3)")
    seed, rnd, pos = (u64s(req.get(k), k, batch) for k in ("seed", "round", "position"))
    return widen(words, fmt), temperature.astype(np.uint32).view(np.float32), seed, rnd, pos, tau


def serve(
    propose: Callable[..., Any], exp32: Callable[[Any], Any], name: str, trace_ok: bool, minor: int
) -> int:
    out = sys.stdout.buffer
    stdin = sys.stdin.buffer
    hello: dict[str, Any] = {
        "protocol": "dyadic24-jsonl-1",
        "semanticId": SEMANTIC_ID,
        "implementation": name,
        "trace": trace_ok,
    }
    if minor >= 1:
        hello.update(minor=1, formats=list(FORMATS), frames=True, exp=True)

    def send(obj: dict[str, Any], payload: bytes = b"") -> None:
        out.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n" + payload)
        out.flush()

    send(hello)
    for line in stdin:
        if not line.strip():
            continue
        request_id = None
        try:
            req = json.loads(line)
            request_id = req.get("id")
            size = req.get("frame")
            frame = stdin.read(size) if isinstance(size, int) and size > 0 else None  # always consume it
            if req.get("method") == "exp":
                z = np.arange(
                    int(req["start"], 16), int(req["start"], 16) + int(req["count"]), dtype=np.uint64
                )
                e = exp32(z.astype(np.uint32).view(np.float32)).view(np.uint32)
                payload = e.astype("<u4").tobytes()
                send({"id": request_id, "frame": len(payload)}, payload)
                continue
            logits, temperature, seed, rnd, pos, tau = parse(req, frame)
            want_trace = bool(req.get("trace")) and trace_ok
            result = propose(logits, temperature, seed, rnd, pos, tau=tau, trace=want_trace)
        except Exception as exc:  # every failure becomes an error response (PROTOCOL.md, "Errors")
            send(
                {
                    "id": request_id,
                    "error": {"argument": getattr(exc, "argument", None), "message": str(exc)},
                }
            )
            continue
        response: dict[str, Any] = {
            "id": request_id,
            "status": result.status.tolist(),
            "token": result.token.tolist(),
            "ids": result.ids.tolist(),
            "tickets": result.tickets.tolist(),
        }
        if want_trace:
            response["trace"] = [row.as_json() for row in result.trace]
        send(response)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--no-trace", action="store_true", help="announce and send no trace")
    parser.add_argument(
        "--minor", type=int, choices=(0, 1), default=1, help="protocol minor version to speak"
    )
    parser.add_argument("--mutant", help="serve this deliberately wrong implementation instead")
    args = parser.parse_args(argv)
    from dyadic24.reference.fast_exp import exp32_np

    if args.mutant:
        from dyadic24.conformance.mutants import MUTANTS

        propose, name = MUTANTS[args.mutant][0], f"mutant {args.mutant}"
    else:
        from dyadic24.reference.fast import propose_fast

        propose, name = propose_fast, "fast reference (jsonl_fast example)"
    return serve(propose, exp32_np, name, not args.no_trace, args.minor)


if __name__ == "__main__":
    sys.exit(main())

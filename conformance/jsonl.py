"""The JSON-lines stdin/stdout protocol for implementations in any language (clause 12.4).

Normative description: conformance/PROTOCOL.md. Inputs travel as bit patterns exactly as in the
golden vector files (logits and temperature as 8-hex-digit binary32 words, seed/round/position as
decimal uint64 strings, tau as ``tauBits``), so no float is ever printed or parsed in decimal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dyadic24.api import K_MAX, SEMANTIC_ID, CallInputs, Proposal

PROTOCOL = "dyadic24-jsonl-1"


class ProtocolError(ValueError):
    """A line that does not follow PROTOCOL.md."""


@dataclass(frozen=True)
class Handshake:
    """The implementation's first line."""

    semantic_id: str
    implementation: str
    trace: bool

    def encode(self) -> str:
        return json.dumps(
            {
                "protocol": PROTOCOL,
                "semanticId": self.semantic_id,
                "implementation": self.implementation,
                "trace": self.trace,
            },
            separators=(",", ":"),
        )


@dataclass(frozen=True)
class Request:
    """One call (clause 12.2) of B rows sharing V and tau."""

    id: int
    inputs: CallInputs
    trace: bool


@dataclass(frozen=True)
class Response:
    """Outputs of one call, or the argument error it raised (clause 1.5)."""

    id: int
    proposal: Proposal | None
    trace: list[dict[str, Any]] | None
    error_argument: str | None = None
    error_message: str | None = None


def _load(line: str, what: str) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"{what} is not JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise ProtocolError(f"{what} is not a JSON object")
    return obj


def words_hex(bits: npt.NDArray[np.uint32]) -> str:
    """uint32 words as one string of 8 hex digits each (the packed form of the vector files)."""
    return np.ascontiguousarray(bits, dtype=">u4").tobytes().hex()


def hex_words(text: str | list[str]) -> npt.NDArray[np.uint32]:
    """Packed or listed 8-hex-digit words to uint32."""
    joined = text if isinstance(text, str) else "".join(text)
    if len(joined) % 8:
        raise ProtocolError("a word string's length is not a multiple of 8 hex digits")
    try:
        return np.frombuffer(bytes.fromhex(joined), dtype=">u4").astype(np.uint32)
    except ValueError as exc:
        raise ProtocolError(f"bad hex word string: {exc}") from exc


def encode_handshake(implementation: str, trace: bool) -> str:
    return Handshake(SEMANTIC_ID, implementation, trace).encode()


def decode_handshake(line: str) -> Handshake:
    obj = _load(line, "handshake")
    if obj.get("protocol") != PROTOCOL:
        raise ProtocolError(f"handshake protocol is {obj.get('protocol')!r}, expected {PROTOCOL!r}")
    sid = obj.get("semanticId")
    if not isinstance(sid, str):
        raise ProtocolError("handshake has no semanticId string")
    return Handshake(sid, str(obj.get("implementation", "")), bool(obj.get("trace", False)))


def encode_request(request_id: int, inputs: CallInputs, trace: bool) -> str:
    logits_bits = np.ascontiguousarray(inputs.logits).view(np.uint32)
    obj = {
        "id": request_id,
        "tauBits": f"{inputs.tau_bits:08x}",
        "vocab": inputs.vocab,
        "logits": [words_hex(row) for row in logits_bits],
        "temperature": [f"{int(b):08x}" for b in inputs.temperature.view(np.uint32)],
        "seed": [str(int(v)) for v in inputs.seed],
        "round": [str(int(v)) for v in inputs.round],
        "position": [str(int(v)) for v in inputs.position],
        "trace": trace,
    }
    return json.dumps(obj, separators=(",", ":"))


def _u64(values: Any, name: str) -> npt.NDArray[np.uint64]:
    if not isinstance(values, list):
        raise ProtocolError(f"{name} must be a list of decimal strings")
    try:
        ints = [int(v) for v in values]
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"{name}: {exc}") from exc
    if any(not 0 <= v < 1 << 64 for v in ints):
        raise ProtocolError(f"{name} holds a value outside uint64")
    return np.array(ints, dtype=np.uint64)


def decode_request(line: str) -> Request:
    """Parse a request line. Shapes are checked here; argument rules are the implementation's (1.5)."""
    obj = _load(line, "request")
    try:
        request_id = int(obj["id"])
        vocab = int(obj["vocab"])
        rows = obj["logits"]
        if not isinstance(rows, list) or not rows:
            raise ProtocolError("logits must be a non-empty list of rows")
        logits = np.empty((len(rows), vocab), dtype=np.uint32)
        for r, row in enumerate(rows):
            bits = hex_words(row)
            if bits.shape != (vocab,):
                raise ProtocolError(f"logits row {r} has {bits.shape[0]} words, vocab is {vocab}")
            logits[r] = bits
        inputs = CallInputs(
            logits=logits.view(np.float32),
            temperature=hex_words(obj["temperature"]).view(np.float32),
            seed=_u64(obj["seed"], "seed"),
            round=_u64(obj["round"], "round"),
            position=_u64(obj["position"], "position"),
            tau_bits=int(str(obj["tauBits"]), 16),
        )
    except KeyError as exc:
        raise ProtocolError(f"request lacks {exc}") from exc
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ProtocolError):
            raise
        raise ProtocolError(f"bad request: {exc}") from exc
    return Request(request_id, inputs, bool(obj.get("trace", False)))


def encode_response(request_id: int, proposal: Proposal, trace: list[dict[str, Any]] | None = None) -> str:
    obj: dict[str, Any] = {
        "id": request_id,
        "status": [int(v) for v in proposal.status],
        "token": [int(v) for v in proposal.token],
        "ids": np.asarray(proposal.ids).astype(int).tolist(),
        "tickets": np.asarray(proposal.tickets).astype(int).tolist(),
    }
    if trace is not None:
        obj["trace"] = trace
    return json.dumps(obj, separators=(",", ":"))


def encode_error(request_id: int | None, argument: str, message: str) -> str:
    return json.dumps(
        {"id": request_id, "error": {"argument": argument, "message": message}}, separators=(",", ":")
    )


def _int32(values: Any, shape: tuple[int, ...], name: str) -> npt.NDArray[np.int32]:
    try:
        arr = np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"response {name}: {exc}") from exc
    if arr.size != int(np.prod(shape)):
        raise ProtocolError(f"response {name} has {arr.size} values, expected shape {list(shape)}")
    if arr.size and (arr.min() < -(1 << 31) or arr.max() >= 1 << 31):
        raise ProtocolError(f"response {name} holds a value outside int32")
    return arr.reshape(shape).astype(np.int32)


def decode_response(line: str, batch: int) -> Response:
    obj = _load(line, "response")
    if "id" not in obj:
        raise ProtocolError("response lacks id")
    request_id = int(obj["id"]) if obj["id"] is not None else -1
    if "error" in obj:
        err = obj["error"] if isinstance(obj["error"], dict) else {"message": str(obj["error"])}
        return Response(request_id, None, None, str(err.get("argument", "")), str(err.get("message", "")))
    try:
        proposal = Proposal(
            status=_int32(obj["status"], (batch,), "status"),
            token=_int32(obj["token"], (batch,), "token"),
            ids=_int32(obj["ids"], (batch, K_MAX), "ids"),
            tickets=_int32(obj["tickets"], (batch, K_MAX), "tickets"),
        )
    except KeyError as exc:
        raise ProtocolError(f"response lacks {exc}") from exc
    trace = obj.get("trace")
    if trace is not None and (not isinstance(trace, list) or len(trace) != batch):
        raise ProtocolError(f"response trace must be a list of {batch} row traces")
    return Response(request_id, proposal, trace)

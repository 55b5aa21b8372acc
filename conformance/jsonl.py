"""The JSON-lines stdin/stdout protocol for implementations in any language (clause 12.4).

Normative description: conformance/PROTOCOL.md. Inputs travel as bit patterns exactly as in the
golden vector files (logits and temperature as hex words, seed/round/position as decimal uint64
strings, tau as ``tauBits``), so no float is ever printed or parsed in decimal. Minor version 1 adds,
for subjects that announce it in their handshake: 16-bit logits (clause 1.2), binary frames for large
rows, invalid calls (clause 1.5) and the ``exp`` method (clause 5.3). A subject without ``minor`` is
minor version 0 and is sent only what version 0 defined.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from dyadic24.api import K_MAX, SEMANTIC_ID, ArgumentError, CallInputs, Proposal, tau_to_bits

PROTOCOL = "dyadic24-jsonl-1"
MINOR = 1  # the newest minor version this runner speaks
FORMATS = ("binary32", "binary16", "bfloat16")  # logit formats (clauses 1.1, 1.2)
WIDTH = {"binary32": 4, "binary16": 2, "bfloat16": 2}  # bytes per logit in a binary frame
HEX = {"binary32": 8, "binary16": 4, "bfloat16": 4}  # hex digits per logit in a packed row
TRACE_KEYS = (
    "status",
    "path",
    "token",
    "order",
    "argmax",
    "m",
    "support_ids",
    "support_tickets",
    "slot_ids",
    "d",
    "z",
    "e",
    "tree",
    "S",
    "p",
    "counts",
    "R",
    "tickets",
    "key",
    "block",
    "u",
)  # (clause 12.3; no other key may appear)
QUOTE = 300  # characters of an offending line quoted in a message


class ProtocolError(ValueError):
    """A line that does not follow PROTOCOL.md."""


def quote(line: str | bytes) -> str:
    """The start of an offending line, for one-line messages."""
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    text = text.rstrip("\n")
    return repr(text if len(text) <= QUOTE else f"{text[:QUOTE]}... ({len(text)} characters)")


@dataclass(frozen=True)
class Handshake:
    """The implementation's first line: who it is and which minor-version features it takes."""

    semantic_id: str
    implementation: str
    trace: bool
    minor: int = 0
    formats: tuple[str, ...] = ("binary32",)
    frames: bool = False  # binary frames for logits and exp results
    exp: bool = False  # the exp method (clause 5.3)

    def encode(self) -> str:
        obj: dict[str, Any] = {
            "protocol": PROTOCOL,
            "semanticId": self.semantic_id,
            "implementation": self.implementation,
            "trace": self.trace,
        }
        if self.minor:
            obj.update(minor=self.minor, formats=list(self.formats), frames=self.frames, exp=self.exp)
        return json.dumps(obj, separators=(",", ":"))


@dataclass(frozen=True)
class Call:
    """One propose call as the runner sends it: canonical inputs plus the logit format on the wire.
    For a 16-bit format ``narrow`` holds the uint16 bit patterns whose exact widening is ``inputs.logits``."""

    inputs: CallInputs
    fmt: str = "binary32"
    narrow: npt.NDArray[np.uint16] | None = None

    def logit_words(self) -> npt.NDArray[Any]:
        """The logits as the wire carries them: uint32 (binary32) or uint16 bit patterns, [B, V]."""
        if self.fmt == "binary32":
            return np.ascontiguousarray(self.inputs.logits).view(np.uint32)
        assert self.narrow is not None
        return self.narrow


@dataclass(frozen=True)
class Request:
    """One decoded request: a propose call or an exp range."""

    id: int
    call: Call | None = None
    trace: bool = False
    exp_start: int = 0
    exp_count: int = 0

    @property
    def method(self) -> str:
        return "propose" if self.call is not None else "exp"


@dataclass(frozen=True)
class Response:
    """Outputs of one call, the argument error it raised (clause 1.5), or exp results."""

    id: int
    proposal: Proposal | None
    trace: list[dict[str, Any]] | None
    error_argument: str | None = None
    error_message: str | None = None
    exp_bits: npt.NDArray[np.uint32] | None = None
    frame: int = 0  # bytes of binary frame that follow the line
    extra: dict[str, Any] = field(default_factory=dict)


def _load(line: str | bytes, what: str) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"{what} is not JSON ({exc}): {quote(line)}") from exc
    if not isinstance(obj, dict):
        raise ProtocolError(f"{what} is not a JSON object: {quote(line)}")
    return obj


def words_hex(bits: npt.NDArray[Any]) -> str:
    """uint32 or uint16 words as one string of 8 or 4 hex digits each (the packed form of the files)."""
    dtype = ">u4" if bits.dtype.itemsize == 4 else ">u2"
    return np.ascontiguousarray(bits, dtype=dtype).tobytes().hex()


def hex_words(text: str | list[str], digits: int = 8) -> npt.NDArray[Any]:
    """Packed or listed hex words (8 digits: uint32, 4 digits: uint16)."""
    if isinstance(text, list):
        if not all(isinstance(t, str) and len(t) == digits for t in text):
            raise ValueError(f"words must be {digits}-hex-digit strings")
        text = "".join(text)
    if not isinstance(text, str) or len(text) % digits:
        raise ValueError(f"a word string's length is not a multiple of {digits} hex digits")
    try:
        raw = bytes.fromhex(text)
    except ValueError as exc:
        raise ValueError(f"bad hex word string: {exc}") from exc
    return np.frombuffer(raw, dtype=">u4" if digits == 8 else ">u2").astype(
        np.uint32 if digits == 8 else np.uint16
    )


def encode_handshake(implementation: str, trace: bool, **features: Any) -> str:
    return Handshake(SEMANTIC_ID, implementation, trace, **features).encode()


def decode_handshake(line: str | bytes) -> Handshake:
    obj = _load(line, "handshake")
    if obj.get("protocol") != PROTOCOL:
        raise ProtocolError(
            f"handshake protocol is {obj.get('protocol')!r}, expected {PROTOCOL!r}: {quote(line)}"
        )
    sid = obj.get("semanticId")
    if not isinstance(sid, str):
        raise ProtocolError(f"handshake has no semanticId string: {quote(line)}")
    minor = obj.get("minor", 0)
    if not isinstance(minor, int) or isinstance(minor, bool) or minor < 0:
        raise ProtocolError(f"handshake minor must be a non-negative integer: {quote(line)}")
    if minor == 0:
        return Handshake(sid, str(obj.get("implementation", "")), bool(obj.get("trace", False)))
    formats = obj.get("formats", ["binary32"])
    if not isinstance(formats, list) or "binary32" not in formats or not set(formats) <= set(FORMATS):
        raise ProtocolError(f"handshake formats must list binary32 and only {list(FORMATS)}: {quote(line)}")
    frames, exp = bool(obj.get("frames", False)), bool(obj.get("exp", False))
    if exp and not frames:
        raise ProtocolError(
            f"handshake announces exp without frames (exp results travel in frames): {quote(line)}"
        )
    return Handshake(
        sid,
        str(obj.get("implementation", "")),
        bool(obj.get("trace", False)),
        min(minor, MINOR),
        tuple(f for f in FORMATS if f in formats),
        frames,
        exp,
    )


def encode_request(
    request_id: int, call: Call | CallInputs, trace: bool, *, frame: bool = False
) -> tuple[str, bytes]:
    """The request line (without its newline) and the binary frame that follows it (b"" without one)."""
    if isinstance(call, CallInputs):
        call = Call(call)
    inputs = call.inputs
    obj: dict[str, Any] = {"id": request_id, "tauBits": f"{inputs.tau_bits:08x}", "vocab": inputs.vocab}
    if call.fmt != "binary32":
        obj["format"] = call.fmt
    words = call.logit_words()
    payload = b""
    if frame:
        payload = np.ascontiguousarray(words, dtype="<u4" if words.dtype.itemsize == 4 else "<u2").tobytes()
        obj["frame"] = len(payload)
    else:
        obj["logits"] = [words_hex(row) for row in words]
    obj.update(
        temperature=[f"{int(b):08x}" for b in inputs.temperature.view(np.uint32)],
        seed=[str(int(v)) for v in inputs.seed],
        round=[str(int(v)) for v in inputs.round],
        position=[str(int(v)) for v in inputs.position],
        trace=trace,
    )
    return json.dumps(obj, separators=(",", ":")), payload


def encode_exp_request(request_id: int, start: int, count: int) -> str:
    return json.dumps(
        {"id": request_id, "method": "exp", "start": f"{start:08x}", "count": count}, separators=(",", ":")
    )


def _u64(values: Any, name: str, batch: int) -> npt.NDArray[np.uint64]:
    if not isinstance(values, list) or len(values) != batch:
        raise ArgumentError(name, f"must be a list of B = {batch} decimal strings (clause 1.4)")
    out = []
    for v in values:
        if not isinstance(v, str) or not v.isdigit() or (len(v) > 1 and v[0] == "0"):
            raise ArgumentError(name, f"must hold decimal uint64 strings (clause 0.4), got {v!r:.40}")
        if int(v) >= 1 << 64:
            raise ArgumentError(name, f"must be below 2^64 (clause 0.4), got {v}")
        out.append(int(v))
    return np.array(out, dtype=np.uint64)


def decode_request(line: str | bytes, frame: bytes | None = None) -> Request:
    """Parse a request line (and the frame that followed it, if its ``frame`` key announced one).

    A line that is not a JSON object, or lacks ``id``, is a ProtocolError; a call that breaks clause 1
    raises ArgumentError naming the argument (``logits`` for anything about the logit rows, their
    format, frame or vocab). Use ``frame_length(line)`` first to know how many bytes to read."""
    obj = _load(line, "request")
    request_id = obj.get("id")
    if not isinstance(request_id, int) or isinstance(request_id, bool) or request_id < 1:
        raise ProtocolError(f"request id must be a positive integer: {quote(line)}")
    if obj.get("method", "propose") == "exp":
        try:
            start, count = int(str(obj["start"]), 16), int(obj["count"])
        except (KeyError, ValueError, TypeError) as exc:
            raise ProtocolError(f"exp request needs start (8 hex digits) and count: {quote(line)}") from exc
        if not 0 <= start <= 0xFFFFFFFF or count < 1 or start + count > 1 << 32:
            raise ProtocolError(f"exp request range outside the binary32 patterns: {quote(line)}")
        return Request(request_id, exp_start=start, exp_count=count)
    if obj.get("method", "propose") != "propose":
        raise ProtocolError(f"unknown method {obj.get('method')!r}: {quote(line)}")
    fmt = obj.get("format", "binary32")
    if fmt not in FORMATS:
        raise ArgumentError(
            "logits", f"unsupported format {fmt!r:.40} (clause 1.2: binary32, binary16, bfloat16)"
        )
    vocab = obj.get("vocab")
    if not isinstance(vocab, int) or isinstance(vocab, bool) or not 1 <= vocab <= (1 << 31) - 1:
        raise ArgumentError(
            "logits", f"vocab must be an integer in [1, 2^31 - 1] (clause 1.1), got {vocab!r:.40}"
        )
    if "frame" in obj:
        if frame is None or len(frame) != obj["frame"]:
            raise ArgumentError("logits", "the binary frame is missing or of another length than announced")
        width = WIDTH[fmt]
        if len(frame) % (width * vocab) or not frame:
            raise ArgumentError(
                "logits", f"the frame of {len(frame)} bytes is not B >= 1 rows of V = {vocab} (clause 1.1)"
            )
        words = np.frombuffer(frame, dtype="<u4" if width == 4 else "<u2").reshape(-1, vocab)
    else:
        rows = obj.get("logits")
        if not isinstance(rows, list) or not rows:
            raise ArgumentError("logits", "must be a non-empty list of rows: B >= 1 (clause 1.1)")
        try:
            words = np.stack([hex_words(row, HEX[fmt]) for row in rows])
        except ValueError as exc:
            raise ArgumentError(
                "logits", f"rows must be packed {HEX[fmt]}-hex-digit words of equal length ({exc})"
            ) from exc
        if words.shape[1] != vocab:
            raise ArgumentError("logits", f"rows hold {words.shape[1]} words, vocab is {vocab} (clause 1.1)")
    batch = int(words.shape[0])
    if fmt == "binary32":
        logits, narrow = words.astype(np.uint32).view(np.float32), None
    else:
        narrow = np.ascontiguousarray(words, dtype=np.uint16)
        logits = widen16(narrow, fmt)
    try:
        temperature = hex_words(obj.get("temperature"), 8)  # type: ignore[arg-type]
    except ValueError as exc:
        raise ArgumentError("temperature", f"must be B 8-hex-digit binary32 words ({exc})") from exc
    if temperature.shape != (batch,):
        raise ArgumentError(
            "temperature", f"must have B = {batch} entries (clause 1.4), got {temperature.shape[0]}"
        )
    if "tauBits" not in obj:
        raise ArgumentError("tau", "tauBits is required (PROTOCOL.md)")
    tau_text = obj["tauBits"]
    if not isinstance(tau_text, str) or len(tau_text) != 8:
        raise ArgumentError("tau", f"tauBits must be 8 hex digits, got {tau_text!r:.40}")
    try:
        tau_bits = int(tau_text, 16)
    except ValueError as exc:
        raise ArgumentError("tau", f"tauBits must be 8 hex digits, got {tau_text!r:.40}") from exc
    tau_to_bits(np.uint32(tau_bits).view(np.float32))  # clause 1.3: finite and > 0
    inputs = CallInputs(
        logits=np.ascontiguousarray(logits),
        temperature=temperature.view(np.float32),
        seed=_u64(obj.get("seed"), "seed", batch),
        round=_u64(obj.get("round"), "round", batch),
        position=_u64(obj.get("position"), "position", batch),
        tau_bits=tau_bits,
    )
    return Request(request_id, Call(inputs, fmt, narrow), bool(obj.get("trace", False)))


def frame_length(line: str | bytes) -> int:
    """Bytes of binary frame that follow a request or response line (0 if it announces none)."""
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return 0
    n = obj.get("frame", 0) if isinstance(obj, dict) else 0
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0


def widen16(bits: npt.NDArray[np.uint16], fmt: str) -> npt.NDArray[np.float32]:
    """Exact widening of binary16 / bfloat16 bit patterns to binary32 (clause 1.2)."""
    if fmt == "bfloat16":
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return bits.view(np.float16).astype(np.float32)


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


def encode_exp_response(request_id: int, e_bits: npt.NDArray[np.uint32]) -> tuple[str, bytes]:
    payload = np.ascontiguousarray(e_bits, dtype="<u4").tobytes()
    return json.dumps({"id": request_id, "frame": len(payload)}, separators=(",", ":")), payload


def encode_error(request_id: int | None, argument: str, message: str) -> str:
    return json.dumps(
        {"id": request_id, "error": {"argument": argument, "message": message}}, separators=(",", ":")
    )


def _int32(values: Any, shape: tuple[int, ...], name: str, line: str | bytes) -> npt.NDArray[np.int32]:
    try:
        arr = np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"response {name} is not a list of integers ({exc}): {quote(line)}") from exc
    if arr.size != int(np.prod(shape)):
        raise ProtocolError(
            f"response {name} has {arr.size} values, expected shape {list(shape)}: {quote(line)}"
        )
    if arr.size and (arr.min() < -(1 << 31) or arr.max() >= 1 << 31):
        raise ProtocolError(f"response {name} holds a value outside int32: {quote(line)}")
    return arr.reshape(shape).astype(np.int32)


def decode_response(line: str | bytes, batch: int, frame: bytes | None = None) -> Response:
    """A response line (and its frame, for an exp response); a malformed line raises ProtocolError
    quoting it."""
    obj = _load(line, "response")
    if "id" not in obj:
        raise ProtocolError(f"response lacks id: {quote(line)}")
    raw_id = obj["id"]
    request_id = raw_id if isinstance(raw_id, int) and not isinstance(raw_id, bool) else -1
    if "error" in obj:
        err = obj["error"] if isinstance(obj["error"], dict) else {"message": str(obj["error"])}
        return Response(request_id, None, None, str(err.get("argument", "")), str(err.get("message", "")))
    if "frame" in obj:
        if frame is None or len(frame) != obj["frame"] or len(frame) % 4:
            raise ProtocolError(f"exp response frame missing or of a wrong length: {quote(line)}")
        return Response(request_id, None, None, exp_bits=np.frombuffer(frame, dtype="<u4").astype(np.uint32))
    try:
        proposal = Proposal(
            status=_int32(obj["status"], (batch,), "status", line),
            token=_int32(obj["token"], (batch,), "token", line),
            ids=_int32(obj["ids"], (batch, K_MAX), "ids", line),
            tickets=_int32(obj["tickets"], (batch, K_MAX), "tickets", line),
        )
    except KeyError as exc:
        raise ProtocolError(f"response lacks {exc}: {quote(line)}") from exc
    trace = obj.get("trace")
    if trace is not None and (
        not isinstance(trace, list) or len(trace) != batch or not all(isinstance(t, dict) for t in trace)
    ):
        raise ProtocolError(f"response trace must be a list of {batch} row-trace objects: {quote(line)}")
    return Response(request_id, proposal, trace)

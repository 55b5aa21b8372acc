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
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from dyadic24.api import K_MAX, SEMANTIC_ID, ArgumentError, CallInputs, Proposal, tau_to_bits
from dyadic24.conformance.process import OversizeError, clip

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
    # (shared-memory segment, byte offset) where the bulk stream's worker left these logit words: a
    # Python subject's host maps them instead of receiving a copy (conformance/bulk.py)
    shm: tuple[str, int] | None = None

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


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key {key!r}")
        obj[key] = value
    return obj


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _load(line: str | bytes, what: str) -> dict[str, Any]:
    """A JSON object with unique keys (RFC 8259 leaves duplicates undefined; PROTOCOL.md forbids them),
    without the non-JSON constants NaN and Infinity that Python's parser would take."""
    try:
        obj = json.loads(line, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ProtocolError(f"{what} is not valid JSON ({clip(str(exc), 200)}): {quote(line)}") from exc
    if not isinstance(obj, dict):
        raise ProtocolError(f"{what} is not a JSON object: {quote(line)}")
    return obj


def is_int(value: Any) -> bool:
    """A JSON integer: an int that is not a bool (3.0, "3" and true are not integers)."""
    return isinstance(value, int) and not isinstance(value, bool)


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


HANDSHAKE_KEYS = {"protocol", "semanticId", "implementation", "trace", "minor", "formats", "frames", "exp"}


def decode_handshake(line: str | bytes) -> Handshake:
    """The subject's first line, every key checked for its JSON type (PROTOCOL.md, "Handshake")."""
    obj = _load(line, "handshake")
    if obj.get("protocol") != PROTOCOL:
        raise ProtocolError(
            f"handshake protocol is {clip(repr(obj.get('protocol')), 80)}, expected {PROTOCOL!r}:"
            f" {quote(line)}"
        )
    minor = obj.get("minor", 0)
    if not is_int(minor) or minor < 0:
        raise ProtocolError(f"handshake minor must be a non-negative integer: {quote(line)}")
    unknown = sorted(set(obj) - HANDSHAKE_KEYS)
    if unknown and minor <= MINOR:
        raise ProtocolError(
            f"handshake has key(s) {unknown} that minor version {minor} does not define: {quote(line)}"
        )
    sid = obj.get("semanticId")
    if not isinstance(sid, str):
        raise ProtocolError(f"handshake has no semanticId string: {quote(line)}")
    name = obj.get("implementation", "")
    if not isinstance(name, str):
        raise ProtocolError(f"handshake implementation must be a string: {quote(line)}")
    for key in ("trace", "frames", "exp"):
        if key in obj and not isinstance(obj[key], bool):
            raise ProtocolError(f"handshake {key} must be true or false: {quote(line)}")
    trace = bool(obj.get("trace", False))
    if minor == 0:
        extra = sorted({"formats", "frames", "exp"} & set(obj))
        if extra:
            raise ProtocolError(
                f"handshake of minor version 0 announces {extra} (minor 1 features): {quote(line)}"
            )
        return Handshake(sid, name, trace)
    formats = obj.get("formats", ["binary32"])
    if (
        not isinstance(formats, list)
        or not all(isinstance(f, str) for f in formats)
        or len(set(formats)) != len(formats)
        or "binary32" not in formats
        or not set(formats) <= set(FORMATS)
    ):
        raise ProtocolError(
            f"handshake formats must list binary32 and only {list(FORMATS)}, each once: {quote(line)}"
        )
    frames, exp = bool(obj.get("frames", False)), bool(obj.get("exp", False))
    if exp and not frames:
        raise ProtocolError(
            f"handshake announces exp without frames (exp results travel in frames): {quote(line)}"
        )
    return Handshake(
        sid, name, trace, min(minor, MINOR), tuple(f for f in FORMATS if f in formats), frames, exp
    )


def encode_request(
    request_id: int, call: Call | CallInputs, trace: bool, *, frame: bool = False
) -> tuple[str, bytes]:
    """The request line (without its newline) and the binary frame that follows it (b"" without one)."""
    line, payload = request_parts(request_id, call, trace, frame=frame)
    return line, bytes(payload)


def request_parts(
    request_id: int, call: Call | CallInputs, trace: bool, *, frame: bool = False
) -> tuple[str, memoryview | bytes]:
    """encode_request's line and its frame as a view of the call's words (no copy of a large row)."""
    if isinstance(call, CallInputs):
        call = Call(call)
    inputs = call.inputs
    obj: dict[str, Any] = {"id": request_id, "tauBits": f"{inputs.tau_bits:08x}", "vocab": inputs.vocab}
    if call.fmt != "binary32":
        obj["format"] = call.fmt
    words = call.logit_words()
    payload: memoryview | bytes = b""
    if frame:
        contiguous: Any = np.ascontiguousarray(words, dtype="<u4" if words.dtype.itemsize == 4 else "<u2")
        payload = memoryview(contiguous).cast("B")
        obj["frame"] = payload.nbytes
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


MAX_LINE = 64 << 20  # bytes of one response line the runner reads (a longer one is refused)
MAX_FRAME = 64 << 20  # bytes of one response frame (an exp answer of 2^22 words is 16 MiB)


def frame_length(line: str | bytes) -> int:
    """Bytes of binary frame that follow a request or response line (0 if it announces none)."""
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return 0
    n = obj.get("frame", 0) if isinstance(obj, dict) else 0
    return n if is_int(n) and n > 0 else 0


def read_unit(stream: IO[bytes]) -> tuple[bytes, bytes] | None:
    """The next response line and the frame it announces, read from a subject's output; None at end of
    output. A line over MAX_LINE or a frame over MAX_FRAME is refused before it is read whole
    (OversizeError), since the stream cannot be followed past it."""
    line = stream.readline(MAX_LINE + 1)
    if not line:
        return None
    if len(line) > MAX_LINE:
        raise OversizeError(f"a response line longer than {MAX_LINE >> 20} MiB: {quote(line[:QUOTE])}")
    n = frame_length(line)
    if n > MAX_FRAME:
        raise OversizeError(
            f"a response announces a frame of {n:,} bytes (at most {MAX_FRAME:,}): {quote(line)}"
        )
    frame = stream.read(n) if n else b""
    if len(frame) < n:
        raise OversizeError(f"a response frame ended after {len(frame):,} of {n:,} bytes")
    return line, frame


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


def encode_error(request_id: int | None, argument: str | None, message: str) -> str:
    return json.dumps(
        {"id": request_id, "error": {"argument": argument, "message": message}}, separators=(",", ":")
    )


ARGUMENTS = ("logits", "temperature", "seed", "round", "position", "tau")  # clause 1.5
RESPONSE_KEYS = {"id", "status", "token", "ids", "tickets", "trace"}
I32 = (-(1 << 31), (1 << 31) - 1)


def _ints(values: Any, count: int, name: str, line: str | bytes) -> list[int]:
    if not isinstance(values, list) or len(values) != count:
        have = f"{len(values)} entries" if isinstance(values, list) else f"a {type(values).__name__}"
        raise ProtocolError(f"response {name} must be a list of {count} integers, got {have}: {quote(line)}")
    for v in values:
        if not is_int(v):
            raise ProtocolError(
                f"response {name} holds {clip(json.dumps(v), 40)}, not a JSON integer (PROTOCOL.md):"
                f" {quote(line)}"
            )
        if not I32[0] <= v <= I32[1]:
            raise ProtocolError(f"response {name} holds {v}, outside int32: {quote(line)}")
    return values


def _matrix(values: Any, batch: int, name: str, line: str | bytes) -> npt.NDArray[np.int32]:
    if isinstance(values, list) and len(values) == batch and all(isinstance(r, list) for r in values):
        flat = [v for r in values for v in _ints(r, K_MAX, f"{name} row", line)]
    else:
        flat = _ints(values, batch * K_MAX, name, line)  # the flat form of B x 32 integers
    return np.array(flat, dtype=np.int32).reshape(batch, K_MAX)


def decode_response(line: str | bytes, batch: int, frame: bytes | None = None) -> Response:
    """A response line (and its frame, for an exp response). Every key and value is checked for its
    JSON type and range (PROTOCOL.md, "Response"); a malformed line raises ProtocolError quoting it."""
    obj = _load(line, "response")
    if "id" not in obj:
        raise ProtocolError(f"response lacks id: {quote(line)}")
    raw_id = obj["id"]
    if raw_id is not None and not is_int(raw_id):
        raise ProtocolError(f"response id must be an integer (or null in an error line): {quote(line)}")
    request_id = raw_id if is_int(raw_id) else -1
    if "error" in obj:
        err = obj["error"]
        if set(obj) != {"id", "error"} or not isinstance(err, dict) or set(err) - {"argument", "message"}:
            raise ProtocolError(
                f'an error line is {{"id": ..., "error": {{"argument": ..., "message": ...}}}}: {quote(line)}'
            )
        argument, message = err.get("argument"), err.get("message", "")
        if argument is not None and argument not in ARGUMENTS:
            raise ProtocolError(f"error argument must be null or one of {list(ARGUMENTS)}: {quote(line)}")
        if not isinstance(message, str):
            raise ProtocolError(f"error message must be a string: {quote(line)}")
        return Response(request_id, None, None, argument, clip(message, 500))
    if raw_id is None:
        raise ProtocolError(f"response id is null outside an error line: {quote(line)}")
    if "frame" in obj:
        if set(obj) != {"id", "frame"} or not is_int(obj["frame"]):
            raise ProtocolError(f'an exp response is {{"id": ..., "frame": bytes}}: {quote(line)}')
        if frame is None or len(frame) != obj["frame"] or len(frame) % 4:
            raise ProtocolError(f"exp response frame missing or of a wrong length: {quote(line)}")
        return Response(request_id, None, None, exp_bits=np.frombuffer(frame, dtype="<u4").astype(np.uint32))
    unknown = sorted(set(obj) - RESPONSE_KEYS)
    if unknown:
        raise ProtocolError(f"response has key(s) {unknown} that PROTOCOL.md does not define: {quote(line)}")
    missing = [k for k in ("status", "token", "ids", "tickets") if k not in obj]
    if missing:
        raise ProtocolError(f"response lacks {missing}: {quote(line)}")
    proposal = Proposal(
        status=np.array(_ints(obj["status"], batch, "status", line), dtype=np.int32),
        token=np.array(_ints(obj["token"], batch, "token", line), dtype=np.int32),
        ids=_matrix(obj["ids"], batch, "ids", line),
        tickets=_matrix(obj["tickets"], batch, "tickets", line),
    )
    trace = obj.get("trace")
    if trace is not None:
        problem = trace_problem(trace, batch)
        if problem is not None:
            raise ProtocolError(f"response trace: {problem}: {quote(line)}")
    return Response(request_id, proposal, trace)


# ---- trace values (clause 12.3): the JSON type each key's value must have

_HEX_DIGITS = frozenset("0123456789abcdef")


def _hex(value: Any, digits: int) -> bool:
    return isinstance(value, str) and len(value) == digits and set(value) <= _HEX_DIGITS


def _int_list(value: Any, most: int = K_MAX) -> bool:
    return isinstance(value, list) and len(value) <= most and all(is_int(v) for v in value)


def _hex_list(value: Any, digits: int, count: int | None = None, most: int = K_MAX) -> bool:
    return (
        isinstance(value, list)
        and (len(value) == count if count is not None else len(value) <= most)
        and all(_hex(v, digits) for v in value)
    )


def _tree(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 5
        and all(_hex_list(level, 16, 16 >> i) for i, level in enumerate(value))
    )


TRACE_TYPES: dict[str, tuple[str, Any]] = {
    "status": ("an integer", is_int),
    "path": ('"failed", "greedy" or "sampled"', lambda v: v in ("failed", "greedy", "sampled")),
    "token": ("an integer", is_int),
    "order": ("a list of at most 32 integers", _int_list),
    "argmax": ("an integer", is_int),
    "m": ("8 lower-case hex digits", lambda v: _hex(v, 8)),
    "support_ids": ("a list of at most 32 integers", _int_list),
    "support_tickets": ("a list of at most 32 integers", _int_list),
    "slot_ids": ("a list of at most 32 integers", _int_list),
    "d": ("a list of at most 32 hex8 strings", lambda v: _hex_list(v, 8)),
    "z": ("a list of at most 32 hex8 strings", lambda v: _hex_list(v, 8)),
    "e": ("a list of at most 32 hex8 strings", lambda v: _hex_list(v, 8)),
    "tree": ("5 levels of 16, 8, 4, 2 and 1 hex16 strings", _tree),
    "S": ("16 lower-case hex digits", lambda v: _hex(v, 16)),
    "p": ("a list of at most 32 hex16 strings", lambda v: _hex_list(v, 16)),
    "counts": ("a list of at most 32 integers", _int_list),
    "R": ("an integer", is_int),
    "tickets": ("a list of at most 32 integers", _int_list),
    "key": ("2 hex8 strings", lambda v: _hex_list(v, 8, 2)),
    "block": ("4 hex8 strings", lambda v: _hex_list(v, 8, 4)),
    "u": ("an integer", is_int),
}
assert tuple(TRACE_TYPES) == TRACE_KEYS


def trace_problem(trace: Any, batch: int) -> str | None:
    """Why a trace is not B row objects of clause 12.3 (keys of its table only, each value of its
    JSON type, null meaning absent); None if it is one."""
    if not isinstance(trace, list) or len(trace) != batch:
        have = f"{len(trace)} rows" if isinstance(trace, list) else f"a {type(trace).__name__}"
        return f"must be a list of B = {batch} row objects (clause 12.3), got {have}"
    for r, row in enumerate(trace):
        if not isinstance(row, dict):
            return f"row {r} is a {type(row).__name__}, not an object (clause 12.3)"
        extra = sorted(k for k in row if k not in TRACE_TYPES)
        if extra:
            return f"row {r} has key(s) {clip(str(extra), 200)} that clause 12.3 does not define"
        for key, value in row.items():
            what, ok = TRACE_TYPES[key]
            if value is not None and not ok(value):
                shown = clip(json.dumps(value, default=repr), 60)
                return f"row {r} key {key!r} is {shown}, not {what} (clause 12.3)"
    return None

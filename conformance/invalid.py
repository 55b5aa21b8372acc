"""Invalid calls (clause 1.5): what the runner sends and which argument the error must name.

Clause 1.5: an implementation MUST reject a call whose arguments violate clause 1 with an error that
names the argument and produces no outputs. Each case below breaks one rule of clause 1 in a call that
is otherwise valid. A Python callable must raise ``dyadic24.api.ArgumentError`` whose ``argument`` is
the named one (clause 12.2); a JSON-lines subject of minor version >= 1 must answer with an error
line naming it (PROTOCOL.md, "Invalid calls"). Everything about the logit rows (shape, dtype, their
wire format, frame or vocab) names ``logits``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dyadic24.api import CallInputs
from dyadic24.conformance.jsonl import Call, encode_request

B, V = 2, 5  # the base call
_LOGITS = np.array([[0.5, -1.0, 2.0, 0.0, -3.25], [1.0, 1.0, -0.5, 4.0, -2.0]], dtype=np.float32)
_TEMP = np.array([1.0, 0.0], dtype=np.float32)
_U64 = np.array([7, 1 << 63], dtype=np.uint64)
TAU = np.float32(0.7)


def base_inputs() -> CallInputs:
    return CallInputs(_LOGITS.copy(), _TEMP.copy(), _U64.copy(), _U64.copy(), _U64.copy(), 0x3F333333)


PyArgs = tuple[tuple[Any, ...], dict[str, Any]]


def _py(
    logits: Any = None,
    temperature: Any = None,
    seed: Any = None,
    round: Any = None,
    position: Any = None,
    tau: Any = TAU,
) -> PyArgs:
    args = (
        _LOGITS.copy() if logits is None else logits,
        _TEMP.copy() if temperature is None else temperature,
        _U64.copy() if seed is None else seed,
        _U64.copy() if round is None else round,
        _U64.copy() if position is None else position,
    )
    return args, {"tau": tau}


@dataclass(frozen=True)
class InvalidCall:
    """One invalid call: its name, the argument the error must name, the rule it breaks, and its Python
    and wire forms (None where the form cannot express it)."""

    name: str
    argument: str
    rule: str
    py: Callable[[], PyArgs] | None = None
    edit: Callable[[dict[str, Any]], None] | None = None  # edits the JSON request of the base call
    frame_edit: Callable[[dict[str, Any], bytes], bytes] | None = None  # edits a framed request
    batch: int = B

    def python(self) -> PyArgs:
        assert self.py is not None
        return self.py()

    def wire(self, request_id: int, frames: bool) -> tuple[str, bytes]:
        """The request line and frame of this case (a JSON-lines subject announcing frames gets the
        framed form where the case has one)."""
        framed = frames and self.frame_edit is not None
        line, payload = encode_request(request_id, Call(base_inputs()), False, frame=framed)
        obj = json.loads(line)
        if framed:
            assert self.frame_edit is not None
            payload = self.frame_edit(obj, payload)
            obj["frame"] = len(payload)
        else:
            assert self.edit is not None
            self.edit(obj)
        return json.dumps(obj, separators=(",", ":")), payload

    @property
    def on_wire(self) -> bool:
        return self.edit is not None


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(obj: dict[str, Any]) -> None:
        obj[key] = value

    return edit


def _drop(key: str) -> Callable[[dict[str, Any]], None]:
    def edit(obj: dict[str, Any]) -> None:
        del obj[key]

    return edit


def _short_row(obj: dict[str, Any]) -> None:
    obj["logits"][1] = obj["logits"][1][:-8]  # one word fewer than vocab


def _frame_short(obj: dict[str, Any], payload: bytes) -> bytes:
    return payload[:-4]  # one word fewer than B x V


def _frame_binary64(obj: dict[str, Any], payload: bytes) -> bytes:
    obj["format"] = "binary64"
    return payload


def _neg(values: list[int]) -> Any:
    return np.array(values, dtype=np.int64)


CASES: tuple[InvalidCall, ...] = (
    # ---- logits (clauses 1.1, 1.2)
    InvalidCall("logits_1d", "logits", "logits not a matrix", lambda: _py(logits=_LOGITS[0].copy())),
    InvalidCall("logits_3d", "logits", "logits not a matrix", lambda: _py(logits=_LOGITS[None].copy())),
    InvalidCall(
        "logits_binary64",
        "logits",
        "binary64 logits must be rejected, not rounded (clause 1.2)",
        lambda: _py(logits=_LOGITS.astype(np.float64)),
        _set("format", "binary64"),
        _frame_binary64,
    ),
    InvalidCall(
        "logits_int32",
        "logits",
        "integer logits must be rejected (clause 1.2)",
        lambda: _py(logits=_LOGITS.view(np.int32).copy()),
    ),
    InvalidCall(
        "logits_no_rows",
        "logits",
        "B >= 1 (clause 1.1)",
        lambda: _py(
            logits=np.zeros((0, V), np.float32),
            temperature=np.zeros(0, np.float32),
            seed=np.zeros(0, np.uint64),
            round=np.zeros(0, np.uint64),
            position=np.zeros(0, np.uint64),
        ),
        _set("logits", []),
    ),
    InvalidCall(
        "logits_no_columns",
        "logits",
        "V >= 1 (clause 1.1)",
        lambda: _py(logits=np.zeros((B, 0), np.float32)),
        _set("vocab", 0),
    ),
    InvalidCall(
        "logits_row_length", "logits", "every row has V logits (clause 1.1)", None, _short_row, _frame_short
    ),
    # ---- temperature (clause 1.4)
    InvalidCall(
        "temperature_short",
        "temperature",
        "shape [B] (clause 1.4)",
        lambda: _py(temperature=_TEMP[:1].copy()),
        _set("temperature", ["3f800000"]),
    ),
    InvalidCall(
        "temperature_long",
        "temperature",
        "shape [B] (clause 1.4)",
        lambda: _py(temperature=np.ones(B + 1, np.float32)),
        _set("temperature", ["3f800000", "00000000", "3f800000"]),
    ),
    InvalidCall(
        "temperature_binary64",
        "temperature",
        "binary32 temperatures (clause 1.4)",
        lambda: _py(temperature=_TEMP.astype(np.float64)),
    ),
    InvalidCall(
        "temperature_malformed",
        "temperature",
        "8-hex-digit binary32 words (PROTOCOL.md)",
        None,
        _set("temperature", ["3f800000", "1.0"]),
    ),
    # ---- seed, round, position (clauses 0.4, 1.4)
    InvalidCall(
        "seed_short", "seed", "shape [B] (clause 1.4)", lambda: _py(seed=_U64[:1].copy()), _set("seed", ["7"])
    ),
    InvalidCall(
        "round_long",
        "round",
        "shape [B] (clause 1.4)",
        lambda: _py(round=np.zeros(B + 1, np.uint64)),
        _set("round", ["0", "1", "2"]),
    ),
    InvalidCall(
        "position_2d", "position", "shape [B] (clause 1.4)", lambda: _py(position=_U64[:, None].copy())
    ),
    InvalidCall(
        "seed_negative",
        "seed",
        "uint64: a negative number is invalid (clause 0.4)",
        lambda: _py(seed=_neg([-1, 5])),
        _set("seed", ["-1", "5"]),
    ),
    InvalidCall(
        "round_negative_int",
        "round",
        "uint64: a negative Python int is invalid (clause 0.4)",
        lambda: _py(round=[3, -4]),
    ),
    InvalidCall(
        "position_too_large",
        "position",
        "uint64: 2^64 is out of range (clause 0.4)",
        lambda: _py(position=[1 << 64, 1]),
        _set("position", ["18446744073709551616", "1"]),
    ),
    InvalidCall(
        "seed_binary64",
        "seed",
        "an unsigned 64-bit integer array (clause 1.4)",
        lambda: _py(seed=np.array([1.0, 2.0])),
    ),
    InvalidCall(
        "round_not_decimal",
        "round",
        "decimal uint64 strings (PROTOCOL.md)",
        None,
        _set("round", ["0x10", "1"]),
    ),
    # ---- tau (clause 1.3)
    InvalidCall(
        "tau_zero", "tau", "finite and > 0 (clause 1.3)", lambda: _py(tau=0.0), _set("tauBits", "00000000")
    ),
    InvalidCall(
        "tau_negative_zero",
        "tau",
        "finite and > 0 (clause 1.3)",
        lambda: _py(tau=np.float32(-0.0)),
        _set("tauBits", "80000000"),
    ),
    InvalidCall(
        "tau_negative",
        "tau",
        "finite and > 0 (clause 1.3)",
        lambda: _py(tau=-0.7),
        _set("tauBits", "bf333333"),
    ),
    InvalidCall(
        "tau_infinite",
        "tau",
        "finite and > 0 (clause 1.3)",
        lambda: _py(tau=float("inf")),
        _set("tauBits", "7f800000"),
    ),
    InvalidCall(
        "tau_nan",
        "tau",
        "finite and > 0 (clause 1.3)",
        lambda: _py(tau=float("nan")),
        _set("tauBits", "7fc00000"),
    ),
    InvalidCall(
        "tau_rounds_to_zero",
        "tau",
        "validity after RN32 (clause 1.3): 1e-46 rounds to +0",
        lambda: _py(tau=1e-46),
    ),
    InvalidCall(
        "tau_rounds_to_infinity",
        "tau",
        "validity after RN32 (clause 1.3): 3.5e38 rounds to +inf",
        lambda: _py(tau=3.5e38),
    ),
    InvalidCall("tau_bool", "tau", "bool is not a binary32 scalar (clause 12.2)", lambda: _py(tau=True)),
    InvalidCall(
        "tau_array",
        "tau",
        "one scalar per call (clause 1.3)",
        lambda: _py(tau=np.array([0.7, 0.7], dtype=np.float32)),
    ),
    InvalidCall("tau_missing", "tau", "tauBits is required (PROTOCOL.md)", None, _drop("tauBits")),
    InvalidCall(
        "tau_malformed", "tau", "tauBits is 8 hex digits (PROTOCOL.md)", None, _set("tauBits", "0.7")
    ),
)


def cases_for(python: bool) -> list[InvalidCall]:
    """The cases one kind of subject is sent: Python forms, or wire forms."""
    return [c for c in CASES if (c.py is not None if python else c.on_wire)]

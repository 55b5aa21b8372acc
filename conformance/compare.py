"""Row-by-row comparison of an implementation's outputs and trace with the expected ones.

The first diverging value is reported, walking the trace in clause order (clauses 2-9) and then
the output arrays (clause 12.1), so that a divergence names the clause whose step went wrong
first rather than a downstream symptom.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dyadic24.api import Status

# Clause of each output field by the row's path (clause 2.3 failed rows, clause 4.1 greedy rows).
_OUTPUT_CLAUSE = {
    "failed": {"ids": "2.3", "tickets": "2.3", "token": "2.3"},
    "greedy": {"ids": "4.1", "tickets": "4.1", "token": "4.1"},
    "sampled": {"ids": "8.1", "tickets": "8.1", "token": "9.5"},
}


@dataclass(frozen=True)
class RowOutput:
    """One row of the clause-12.1 output arrays."""

    status: int
    token: int
    ids: tuple[int, ...]
    tickets: tuple[int, ...]


@dataclass(frozen=True)
class Divergence:
    """The first value of one row that differs from the expected one."""

    case: str  # "tcId 17" or "fuzz example 5"
    row: int  # -1 when the whole call failed
    field: str  # e.g. "e of token 1234"
    got: str
    expected: str
    clause: str
    note: str = ""  # e.g. the clause-2.4 isolation finding

    def message(self) -> str:
        where = f"{self.case} row {self.row}" if self.row >= 0 else self.case  # row -1: the whole call
        text = f"{where}: {self.field}: got {self.got}, expected {self.expected}"
        text += f" (clause {self.clause})"
        return f"{text}; {self.note}" if self.note else text

    def as_json(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "row": self.row,
            "field": self.field,
            "got": self.got,
            "expected": self.expected,
            "clause": self.clause,
            "note": self.note,
            "message": self.message(),
        }


def _status_text(value: Any) -> str:
    try:
        return f"{int(value)} ({Status(int(value)).name})"
    except (ValueError, TypeError):
        return repr(value)


def _hex(value: Any) -> str:
    return f"0x{value}" if isinstance(value, str) else repr(value)


def _plain(value: Any) -> str:
    return str(value) if value is not None else "absent"


class _Walk:
    """Compares one row; ``first`` holds the first divergence found."""

    def __init__(self, case: str, row: int) -> None:
        self.case = case
        self.row = row
        self.first: Divergence | None = None

    def check(self, field: str, got: Any, expected: Any, clause: str, fmt: Callable[[Any], str]) -> bool:
        if self.first is None and got != expected:
            self.first = Divergence(self.case, self.row, field, fmt(got), fmt(expected), clause)
        return self.first is None

    def seq(
        self,
        name: str,
        got: Sequence[Any],
        expected: Sequence[Any],
        clause: str,
        fmt: Callable[[Any], str],
        *,
        labels: Sequence[str] | None = None,
    ) -> bool:
        for i, want in enumerate(expected):
            label = labels[i] if labels is not None and i < len(labels) else f"[{i}]"
            have = got[i] if i < len(got) else None
            if not self.check(f"{name}{label}", have, want, clause, fmt if have is not None else _plain):
                return False
        if len(got) > len(expected):
            return self.check(f"{name} length", len(got), len(expected), clause, str)
        return True


def _order_clause(got: Sequence[int], expected: Sequence[int]) -> str:
    # A C of the wrong size is clause 3.2 (K = min(32, V)); the same size in another order is a
    # comparison or tie-break mistake, clause 3.1.
    return "3.2" if len(got) != len(expected) else "3.1"


def _by_token(trace: Mapping[str, Any], key: str) -> dict[int, Any]:
    ids = trace.get("slot_ids") or []
    vals = trace.get(key) or []
    return {int(t): v for t, v in zip(ids, vals, strict=False)}


def compare_trace(
    case: str, row: int, got: Mapping[str, Any], expected: Mapping[str, Any]
) -> Divergence | None:
    """First divergence between two RowTrace.as_json() dicts, in clause order (clause 12.3).

    Keys the implementation's trace leaves out (absent or null) are not compared: a partial trace is
    allowed, and every key it holds must equal the reference's. The output arrays are still compared
    by compare_outputs.
    """
    w = _Walk(case, row)

    def has(key: str) -> bool:
        return key in got and got[key] is not None

    if has("status") and not w.check("status", got["status"], expected.get("status"), "2.1", _status_text):
        return w.first
    path = expected.get("path")
    if has("path") and got["path"] != path:
        clause = "4.1" if "greedy" in (got["path"], path) else "2.3"
        w.check("path", got["path"], path, clause, _plain)
        return w.first
    if path == "failed":
        if has("token"):
            w.check("token", got["token"], expected.get("token"), "2.3", _plain)
        return w.first

    if has("order"):
        g, e = list(got["order"]), list(expected.get("order", []))
        if g != e:
            w.seq("order", g, e, _order_clause(g, e), lambda t: f"token {t}")
            return w.first
    if has("argmax") and not w.check("argmax a*", got["argmax"], expected.get("argmax"), "3.3", _plain):
        return w.first
    if has("m") and not w.check("m", got["m"], expected.get("m"), "3.3", _hex):
        return w.first
    if path == "greedy":
        if has("support_ids"):
            w.seq(
                "support id", list(got["support_ids"]), list(expected.get("support_ids", [])), "4.1", _plain
            )
        if has("support_tickets"):
            w.seq(
                "support tickets",
                list(got["support_tickets"]),
                list(expected.get("support_tickets", [])),
                "4.1",
                _plain,
            )
        if w.first is None and has("token"):
            w.check("token", got["token"], expected.get("token"), "4.1", _plain)
        return w.first

    # Clause 5 values are compared per token, so a slot-order mistake (clause 6.1) is not
    # mistaken for a wrong d, z or e.
    exp_ids = [int(t) for t in expected.get("slot_ids", [])]
    for key, clause in (("d", "5.1"), ("z", "5.2"), ("e", "5.3")):
        if not has(key):
            continue
        want = _by_token(expected, key)
        # Without slot_ids in the implementation's trace, its values are taken in the expected slots.
        have = _by_token(got, key) if has("slot_ids") else dict(zip(exp_ids, got[key], strict=False))
        for tok in exp_ids:
            if tok in have and not w.check(f"{key} of token {tok}", have[tok], want.get(tok), clause, _hex):
                return w.first
    if has("slot_ids") and not w.seq(
        "slot", [int(t) for t in got["slot_ids"]], exp_ids, "6.1", lambda t: f"token {t}"
    ):
        return w.first
    if has("tree"):
        for level, (g_lvl, e_lvl) in enumerate(zip(got["tree"], expected.get("tree", []), strict=False), 1):
            if not w.seq(f"tree level {level} slot", list(g_lvl), list(e_lvl), "6.2", _hex):
                return w.first
        if len(got["tree"]) != len(expected.get("tree", [])):
            w.check("tree levels", len(got["tree"]), len(expected.get("tree", [])), "6.2", str)
            return w.first
    if has("S") and not w.check("S", got["S"], expected.get("S"), "6.2", _hex):
        return w.first
    labels = [f" of token {t}" for t in exp_ids]
    for key, name, clause, fmt in (
        ("p", "p", "7.1", _hex),
        ("counts", "c", "7.2", _plain),
    ):
        if has(key) and not w.seq(
            name, list(got[key]), list(expected.get(key, [])), clause, fmt, labels=labels
        ):
            return w.first
    if has("R") and not w.check("R", got["R"], expected.get("R"), "7.3", _plain):
        return w.first
    if has("tickets") and not w.seq(
        "t", list(got["tickets"]), list(expected.get("tickets", [])), "7.3", _plain, labels=labels
    ):
        return w.first
    if has("support_ids") and not w.seq(
        "support id", list(got["support_ids"]), list(expected.get("support_ids", [])), "8.1", _plain
    ):
        return w.first
    sup_labels = [f" of token {t}" for t in expected.get("support_ids", [])]
    if has("support_tickets") and not w.seq(
        "support tickets",
        list(got["support_tickets"]),
        list(expected.get("support_tickets", [])),
        "8.1",
        _plain,
        labels=sup_labels,
    ):
        return w.first
    if has("key") and not w.seq(
        "key word ", list(got["key"]), list(expected.get("key", [])), "9.2", _hex, labels=["0", "1"]
    ):
        return w.first
    if has("block") and not w.seq(
        "block word ",
        list(got["block"]),
        list(expected.get("block", [])),
        "9.3",
        _hex,
        labels=["0", "1", "2", "3"],
    ):
        return w.first
    if has("u") and not w.check("u", got["u"], expected.get("u"), "9.4", _plain):
        return w.first
    if has("token"):
        w.check("token", got["token"], expected.get("token"), "9.5", _plain)
    return w.first


def compare_outputs(
    case: str, row: int, got: RowOutput, expected: RowOutput, path: str | None = None
) -> Divergence | None:
    """First divergence between two output rows (clause 12.1), named by the clause of the row's path."""
    if path is None:
        if expected.status != int(Status.OK):
            path = "failed"
        elif sum(1 for i in expected.ids if i >= 0) == 1 and expected.tickets[0] == 1 << 24:
            path = "greedy" if got.status == expected.status else "sampled"
        else:
            path = "sampled"
    clauses = _OUTPUT_CLAUSE.get(path, _OUTPUT_CLAUSE["sampled"])
    w = _Walk(case, row)
    if not w.check("status", got.status, expected.status, "2.1", _status_text):
        return w.first
    if not w.seq("ids", list(got.ids), list(expected.ids), clauses["ids"], _plain):
        return w.first
    if not w.seq(
        "tickets",
        list(got.tickets),
        list(expected.tickets),
        clauses["tickets"],
        _plain,
        labels=[f"[{i}] (id {t})" for i, t in enumerate(expected.ids)],
    ):
        return w.first
    w.check("token", got.token, expected.token, clauses["token"], _plain)
    return w.first


def compare_row(
    case: str,
    row: int,
    got: RowOutput,
    expected: RowOutput,
    *,
    got_trace: Mapping[str, Any] | None,
    expected_trace: Mapping[str, Any] | None,
) -> Divergence | None:
    """The trace first (when both sides have one), then the output arrays."""
    if got_trace is not None and expected_trace is not None:
        found = compare_trace(case, row, got_trace, expected_trace)
        if found is not None:
            return found
    path = expected_trace.get("path") if expected_trace is not None else None
    return compare_outputs(case, row, got, expected, path)

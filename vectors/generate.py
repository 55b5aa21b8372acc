"""Writes the golden vector files (clause 13.1) from the exact reference, and only from it.

Every expected output and trace in ``vectors/data/golden_*.json[.gz]`` is what
``dyadic24.reference.exact.propose_exact`` returns for the vector's inputs. Inputs come from the case
modules (``cases_*.py``); inputs that needed a search were found once by ``vectors/search.py`` and are
committed in ``vectors/found.json``, so regeneration is deterministic and machine independent: the
same inputs, the same exact reference, the same JSON layout (``jsonfmt``) and gzip with mtime 0.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dyadic24.api import K_MAX, SEMANTIC_ID, TAU_DEFAULT_BITS, RowTrace
from dyadic24.vectors import jsonfmt
from dyadic24.vectors.case import Case
from dyadic24.vectors.notes import NOTES
from dyadic24.vectors.store import spec_sha256

GENERATOR_VERSION = "1.0.0"
SCHEMA_NAME = "dyadic24-vectors-v1"
PACK_ABOVE = 64  # rows with more logits are written as one packed hex string (vectors/README.md)


def _modules() -> dict[str, Callable[[], list[Case]]]:
    from dyadic24.vectors import (
        cases_allocation,
        cases_arithmetic,
        cases_batch,
        cases_draw,
        cases_large,
        cases_midpoints,
        cases_order,
        cases_status,
        cases_tree,
        cases_widening,
    )

    return {
        "golden_status.json": cases_status.cases,
        "golden_order.json": cases_order.cases,
        "golden_arithmetic.json": cases_arithmetic.cases,
        "golden_exp_midpoints.json": cases_midpoints.cases,
        "golden_tree.json": cases_tree.cases,
        "golden_allocation.json": cases_allocation.cases,
        "golden_draw.json": cases_draw.cases,
        "golden_widening.json": cases_widening.cases,
        "golden_batch.json": cases_batch.cases,
        "golden_large_vocab.json.gz": cases_large.cases,
    }


FILE_HEADERS = {
    "golden_status.json": "Row status and its precedence (clauses 2.1-2.3), failed rows, bad temperatures.",
    "golden_order.json": (
        "Candidate order and set (clause 3): ties, signed zeros, -inf masks, small V, greedy."
    ),
    "golden_arithmetic.json": (
        "Clause 5 arithmetic: subnormals, overflow of l - m, tau values, division, exp."
    ),
    "golden_exp_midpoints.json": (
        "Every z of exp_near_midpoints.json as the exact argument of exp (clause 5.3)."
    ),
    "golden_tree.json": "The clause-6.2 summation tree against other summation orders.",
    "golden_allocation.json": "Floor-first allocation (clause 7): remainders, near-integer counts, support.",
    "golden_draw.json": "Philox keying and the draw (clauses 9-10): 64-bit seeds, interval edges, depth.",
    "golden_widening.json": (
        "Rows representable in binary16 / bfloat16 (clause 1.2; widening is the caller's)."
    ),
    "golden_batch.json": "Larger batches mixing every status, with a repeated row (clause 2.4).",
    "golden_large_vocab.json.gz": "V > 4,096: V = 163,840 rows, and tiled-softmax and tiled-merge rows.",
}

FILE_NAMES = tuple(FILE_HEADERS)


def h8(v: int) -> str:
    return f"{v & 0xFFFFFFFF:08x}"


def f16_hex(bits: np.ndarray, fmt: str) -> list[str]:
    """The narrow form of binary32 bits that are exactly representable in binary16 / bfloat16."""
    f = bits.view(np.float32)
    if fmt == "bfloat16":
        if np.any(bits & np.uint32(0xFFFF)):
            raise ValueError("row is not bfloat16-representable")
        return [f"{int(v) >> 16:04x}" for v in bits]
    half = f.astype(np.float16)
    back = half.astype(np.float32).view(np.uint32)
    keep = ~np.isnan(f)
    if np.any(back[keep] != bits[keep]):
        raise ValueError("row is not binary16-representable")
    return [f"{int(v):04x}" for v in half.view(np.uint16)]


PATH_CLAUSES = {
    "failed": ("2.1", "2.2", "2.3", "10.3"),
    "greedy": ("2.1", "2.2", "3.1", "3.2", "3.3", "4.1", "4.2", "8.1", "10.3"),
    "sampled": (
        "0.3",
        "0.4",
        "2.1",
        "2.2",
        "3.1",
        "3.2",
        "3.3",
        "5.1",
        "5.2",
        "5.3",
        "5.4",
        "6.1",
        "6.2",
        "6.3",
        "7.1",
        "7.2",
        "7.3",
        "7.4",
        "8.1",
        "9.1",
        "9.2",
        "9.3",
        "9.4",
        "9.5",
        "10.1",
    ),
}
ALWAYS = ("0.2", "1.1", "1.3", "1.4", "12.1", "12.3")


def clause_key(c: str) -> tuple[int, ...]:
    return tuple(int(x) for x in c.split("."))


@dataclass
class Evaluated:
    case: Case
    seeds: tuple[list[int], list[int], list[int]]
    traces: list[RowTrace]
    expected: dict[str, Any]
    clauses: list[str]


def evaluate(case: Case) -> Evaluated:
    """Run the exact reference on one case and check what the case's flags claim."""
    from dyadic24.reference.exact import propose_exact

    logits = np.stack([r.logits for r in case.rows]).view(np.float32)
    temperature = np.array([r.t_bits for r in case.rows], dtype=np.uint32).view(np.float32)
    seed, rnd, pos = case.seeds()
    tau = np.array([case.tau_bits], dtype=np.uint32).view(np.float32)[0]
    out = propose_exact(
        logits,
        temperature,
        np.array(seed, dtype=np.uint64),
        np.array(rnd, dtype=np.uint64),
        np.array(pos, dtype=np.uint64),
        tau=tau,
        trace=True,
    )
    traces = list(out.trace or [])
    if len(traces) != len(case.rows):
        raise AssertionError(f"{case.comment!r}: the exact reference returned {len(traces)} traces")
    for i, t in enumerate(traces):
        ids = out.ids[i].tolist()
        tickets = out.tickets[i].tolist()
        n = len(t.support_ids)
        if (
            t.status != int(out.status[i])
            or t.token != int(out.token[i])
            or ids != list(t.support_ids) + [-1] * (K_MAX - n)
            or tickets != list(t.support_tickets) + [0] * (K_MAX - n)
        ):
            raise AssertionError(f"{case.comment!r}: row {i}: outputs and trace disagree")
    _check_isolation(case, seed, rnd, pos, traces)
    for check in case.checks:
        check(case, traces)
    clauses = set(ALWAYS) | set(case.clauses)
    for t in traces:
        clauses |= set(PATH_CLAUSES[t.path])
    if len(case.rows) > 1:
        clauses.add("2.4")
    if any(r.narrow for r in case.rows):
        clauses.add("1.2")
    expected = {
        "status": out.status.tolist(),
        "token": out.token.tolist(),
        "ids": out.ids.tolist(),
        "tickets": out.tickets.tolist(),
    }
    return Evaluated(case, (seed, rnd, pos), traces, expected, sorted(clauses, key=clause_key))


def _check_isolation(
    case: Case, seed: list[int], rnd: list[int], pos: list[int], traces: list[RowTrace]
) -> None:
    """Clause 2.4: equal rows of one call must give equal traces."""
    seen: dict[tuple[Any, ...], RowTrace] = {}
    for i, r in enumerate(case.rows):
        key = (r.logits.tobytes(), r.t_bits, seed[i], rnd[i], pos[i])
        if key in seen and seen[key] != traces[i]:
            raise AssertionError(f"{case.comment!r}: equal rows, different outputs (clause 2.4)")
        seen[key] = traces[i]


def test_json(ev: Evaluated, tc_id: int) -> dict[str, Any]:
    case = ev.case
    seed, rnd, pos = ev.seeds
    if case.vocab > PACK_ABOVE:
        logits: list[Any] = ["".join(h8(int(v)) for v in r.logits) for r in case.rows]
    else:
        logits = [[h8(int(v)) for v in r.logits] for r in case.rows]
    test: dict[str, Any] = {
        "tcId": tc_id,
        "comment": case.comment,
        "flags": sorted(set(case.flags)),
        "clauses": ev.clauses,
        "vocab": case.vocab,
        "logits": logits,
        "temperature": [h8(r.t_bits) for r in case.rows],
        "seed": [str(v) for v in seed],
        "round": [str(v) for v in rnd],
        "position": [str(v) for v in pos],
        "expected": ev.expected,
        "trace": [t.as_json() for t in ev.traces],
    }
    narrow = {r.narrow for r in case.rows}
    if len(narrow) == 1 and None not in narrow:
        fmt = narrow.pop()
        assert fmt is not None
        narrow_rows: list[Any] = [f16_hex(r.logits, fmt) for r in case.rows]
        if case.vocab > PACK_ABOVE:
            narrow_rows = ["".join(words) for words in narrow_rows]
        test["narrow"] = {"format": fmt, "logits": narrow_rows}
    return test


def _tau_comment(bits: int) -> str:
    value = float(np.array([bits], dtype=np.uint32).view(np.float32)[0])
    if bits == TAU_DEFAULT_BITS:
        return "tau = RN32(0.7), the default (clause 1.3)"
    return f"tau = {value!r} (binary32 0x{bits:08x})"


def build_document(name: str, cases: Sequence[Case], spec_hash: str) -> dict[str, Any]:
    groups: dict[int, list[Case]] = {}
    for c in cases:
        groups.setdefault(c.tau_bits, []).append(c)
    test_groups = []
    tc_id = 0
    flags_used: set[str] = set()
    rows = 0
    for tau_bits, group in groups.items():
        tests = []
        for c in group:
            tc_id += 1
            ev = evaluate(c)
            tests.append(test_json(ev, tc_id))
            flags_used |= set(c.flags)
            rows += len(c.rows)
        test_groups.append(
            {
                "type": "ProposalTest",
                "tauBits": h8(tau_bits),
                "comment": _tau_comment(tau_bits),
                "tests": tests,
            }
        )
    unknown = flags_used - set(NOTES)
    if unknown:
        raise KeyError(f"{name}: flags without a note: {sorted(unknown)}")
    return {
        "algorithm": SEMANTIC_ID,
        "schema": SCHEMA_NAME,
        "generatorVersion": GENERATOR_VERSION,
        "specSha256": spec_hash,
        "numberOfVectors": tc_id,
        "numberOfRows": rows,
        "header": [
            FILE_HEADERS[name],
            "Expected outputs and traces are those of the exact reference (reference/exact.py).",
            "Format: vectors/README.md and vectors/schema.json. Binary32 values are 8 hex digits of the bit "
            "pattern; seed, round and position are decimal uint64 strings.",
        ],
        "notes": {f: NOTES[f].as_json() for f in sorted(flags_used)},
        "testGroups": test_groups,
    }


def encode(name: str, text: bytes) -> bytes:
    """File bytes: the JSON text, gzip'd (level 9, mtime 0, no file name) for ``.json.gz``."""
    if name.endswith(".gz"):
        return gzip.compress(text, compresslevel=9, mtime=0)
    return text


def build(names: Sequence[str] | None = None) -> dict[str, bytes]:
    """JSON text of the selected vector files (all by default), keyed by file name."""
    spec_hash = spec_sha256()
    modules = _modules()
    selected = list(FILE_NAMES) if names is None else list(names)
    out = {}
    for name in selected:
        out[name] = jsonfmt.document(build_document(name, modules[name](), spec_hash))
    return out

"""The specification text against the code: the numbers the spec states must be the reference's.

A reader in another language implements from spec/dyadic24-floor-first-v1.md alone, so every constant
the text gives (status values, the default tau, Philox constants and known answers, exp thresholds,
trace keys) and the generated Appendix A are checked here against the exact reference.
"""

from __future__ import annotations

import dataclasses
import re
from fractions import Fraction

import numpy as np
import pytest

from dyadic24.api import TAU_DEFAULT_BITS, RowTrace, Status
from dyadic24.reference import philox
from dyadic24.reference.exact import exact_row
from dyadic24.reference.exp_exact import exp32
from dyadic24.reference.ieee import ONE32, div32, round_binary32, sub32
from dyadic24.spec import worked_example

TEXT = worked_example.SPEC.read_text(encoding="utf-8")

# The fixed clause numbers of the rule (clauses 0-13) that code, tests and vectors cite.
_CLAUSE_COUNTS = {0: 4, 1: 5, 2: 4, 3: 3, 4: 2, 5: 4, 6: 3, 7: 4, 8: 1, 9: 5, 10: 3, 11: 2, 12: 4, 13: 4}
CLAUSES = [f"{major}.{minor}" for major, count in _CLAUSE_COUNTS.items() for minor in range(1, count + 1)]


def section(number: str) -> str:
    """The text of clause ``number`` (up to the next heading)."""
    match = re.search(rf"^### {re.escape(number)} .*?(?=^##)", TEXT, flags=re.M | re.S)
    assert match, f"clause {number} has no heading"
    return match.group(0)


def table_rows(text: str) -> list[list[str]]:
    rows = [line.strip().strip("|").split("|") for line in text.splitlines() if line.startswith("|")]
    return [[c.strip() for c in row] for row in rows[2:]]  # skip the header and the rule


def test_every_fixed_clause_and_appendix_has_a_heading() -> None:
    headings = re.findall(r"^### (\d+\.\d+) ", TEXT, flags=re.M)
    assert headings == CLAUSES
    assert re.findall(r"^## Appendix ([A-E])\.", TEXT, flags=re.M) == list("ABCDE")


def test_status_table_is_the_api_enum() -> None:
    """Clause 2.2."""
    rows = {name: int(value) for name, value, _ in table_rows(section("2.2"))}
    assert rows == {s.name: s.value for s in Status}


def test_default_tau_is_rn32_of_0_7() -> None:
    """Clause 1.3."""
    assert "`3f333333` = RN32(0.7)" in section("1.3")
    assert round_binary32(Fraction("0.7")) == TAU_DEFAULT_BITS == 0x3F333333


def test_philox_constants_and_known_answers() -> None:
    """Clause 9.1: the pseudocode's constants and the known-answer table are the reference's."""
    text = section("9.1")
    for name in ("M0", "M1", "W0", "W1"):
        value = int(re.search(rf"{name} = 0x([0-9A-F]{{8}})", text).group(1), 16)  # type: ignore[union-attr]
        assert value == getattr(philox, name)
    kats = table_rows(text)
    assert len(kats) == 3
    for counter, key, output in kats:
        c = tuple(int(w, 16) for w in counter.split())
        k = tuple(int(w, 16) for w in key.split())
        assert philox.philox4x32_10(c, k) == tuple(int(w, 16) for w in output.split())  # type: ignore[arg-type]
    assert "0x70726F70" in section("9.2") and philox.DOMAIN_WORD == 0x70726F70


def test_exp_thresholds_stated_in_5_3() -> None:
    """Clause 5.3: the last z with e = 2^-149, the first with e = +0, and the range where e = 1."""
    text = section("5.3")
    assert "`c2cff1b5`" in text and "`c2cff1b4`" in text
    assert exp32(0xC2CFF1B5) == 0 and exp32(0xC2CFF1B4) == 1
    assert exp32(0xB3000000) == ONE32 and exp32(0xB3000001) != ONE32  # -2^-25 and the next below


def test_trace_table_lists_every_trace_key_and_field() -> None:
    """Clause 12.3: the table names every JSON key of a sampled trace and the RowTrace field behind it."""
    rows = table_rows(section("12.3"))
    keys = [r[0] for r in rows]
    fields = [r[1] for r in rows]
    row = exact_row([0x3F800000, 0x40000000, 0xFF800000], 0x3F800000, 1, 2, 3, TAU_DEFAULT_BITS)
    assert row.path == "sampled"
    assert keys == list(row.as_json())
    assert set(fields) == {f.name for f in dataclasses.fields(RowTrace)}


def test_appendix_a_is_generated_from_the_reference() -> None:
    """Appendix A equals what spec/worked_example.py prints now."""
    _, body, _ = worked_example._split(TEXT)
    assert body == worked_example.render(), "run python -m dyadic24.spec.worked_example --write"


def test_accumulated_hashes_match_the_vector_data() -> None:
    """Clause 13.2: the digests quoted in the spec are those of vectors/data/accumulated.json."""
    import json

    root = worked_example.SPEC.resolve().parent.parent
    data = json.loads((root / "vectors" / "data" / "accumulated.json").read_text())
    quoted = section("13.2")
    by_rows = {d["rows"]: d["sha256"] for d in data["digests"]}
    for rows in (10_000, 100_000, 1_000_000):
        assert f"| {rows:,} | `{by_rows[rows]}` |" in quoted


@pytest.mark.parametrize("op", ["sub", "div"])
def test_binary64_then_rn32_equals_rn32(op: str) -> None:
    """Appendix B.6: clauses 5.1 and 5.2 evaluated in binary64 and rounded once give the exact bits.

    Operands are drawn over the whole binary32 range, subnormals included, with mixed exponents; the
    binary64 route is numpy (no FTZ on the host), the exact route reference.ieee.
    """
    rng = np.random.default_rng(20240524)
    n = 3000
    a = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    b[: n // 3] = (a[: n // 3] & np.uint32(0xFF800000)) | (b[: n // 3] & np.uint32(0x007FFFFF))  # near a
    a[n // 3 : n // 2] &= np.uint32(0x807FFFFF)  # subnormal dividends / minuends
    finite = ((a & 0x7F800000) != 0x7F800000) & ((b & 0x7F800000) != 0x7F800000) & ((b & 0x7FFFFFFF) != 0)
    a, b = a[finite], b[finite]
    a64 = a.view(np.float32).astype(np.float64)
    b64 = b.view(np.float32).astype(np.float64)
    exact = sub32 if op == "sub" else div32
    with np.errstate(over="ignore"):
        via64 = ((a64 - b64) if op == "sub" else (a64 / b64)).astype(np.float32).view(np.uint32)
    mismatches = [
        (int(x), int(y)) for x, y, got in zip(a, b, via64, strict=True) if exact(int(x), int(y)) != int(got)
    ]
    assert not mismatches[:5]

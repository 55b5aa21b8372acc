"""Coverage of the golden vectors: flags, clauses and the near-midpoint list (clause 13.1)."""

from __future__ import annotations

from collections import Counter

from dyadic24.vectors import store
from dyadic24.vectors.cases_midpoints import listed_z
from dyadic24.vectors.notes import NOTES

MIN_PER_FLAG = 3
MIN_PER_CLAUSE = 3
# Clauses no single valid call can exercise: keywords (0.1), argument errors (1.5, raised, not
# returned), versioning (11.x), the Python and JSON-lines protocols (12.2, 12.4) and clause 13 itself.
TESTABLE = [
    "0.2", "0.3", "0.4", "1.1", "1.2", "1.3", "1.4", "2.1", "2.2", "2.3", "2.4", "3.1", "3.2", "3.3",
    "4.1", "4.2", "5.1", "5.2", "5.3", "5.4", "6.1", "6.2", "6.3", "7.1", "7.2", "7.3", "7.4", "8.1",
    "9.1", "9.2", "9.3", "9.4", "9.5", "10.1", "10.2", "10.3", "12.1", "12.3",
]  # fmt: skip


def _counts() -> tuple[Counter[str], Counter[str]]:
    flags: Counter[str] = Counter()
    clauses: Counter[str] = Counter()
    for v in store.iter_vectors():
        flags.update(v.flags)
        clauses.update(v.clauses)
    return flags, clauses


def test_every_flag_has_enough_vectors() -> None:
    flags, _ = _counts()
    assert set(flags) == set(NOTES), "every note is used and every flag has a note"
    thin = {f: n for f, n in flags.items() if n < MIN_PER_FLAG}
    assert not thin, thin


def test_every_testable_clause_has_enough_vectors() -> None:
    _, clauses = _counts()
    thin = {c: clauses[c] for c in TESTABLE if clauses[c] < MIN_PER_CLAUSE}
    assert not thin, thin


def test_every_near_midpoint_z_is_reached_exactly() -> None:
    """Clause 5.3: each listed z is the argument of exp in some row of golden_exp_midpoints.json."""
    reached = set()
    for v in store.iter_vectors(["exp_midpoints"]):
        for t in v.expected_trace:
            reached |= {int(z, 16) for z in t.get("z", [])}
    missing = [hex(z) for z in listed_z() if z not in reached]
    assert not missing, missing
    assert listed_z(), "the midpoint list is empty"


def test_several_large_vocabulary_rows() -> None:
    rows = sum(v.batch for v in store.iter_vectors(["large_vocab"]))
    assert rows >= 3

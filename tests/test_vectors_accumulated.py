"""The accumulated check (clause 13.2): the fast reference reproduces the expected digests.

Default run: 10^4 rows (fast reference), a short prefix with the exact reference and other batch
sizes; DYADIC24_DEEP=1: 10^6 rows.
"""

from __future__ import annotations

import os

import pytest

from dyadic24.reference.exact import propose_exact
from dyadic24.reference.fast import propose_fast
from dyadic24.vectors import accumulated

DEEP = os.environ.get("DYADIC24_DEEP", "") not in ("", "0")


def test_fast_reference_10k_rows() -> None:
    assert accumulated.accumulate(propose_fast, 10_000) == accumulated.expected()[10_000]


def test_exact_reference_prefix() -> None:
    assert accumulated.accumulate(propose_exact, 1000) == accumulated.expected()[1000]


@pytest.mark.parametrize("batch", [1, 7, 200])
def test_digest_does_not_depend_on_batching(batch: int) -> None:
    """Clause 2.4: calls of other sizes give the same digest."""
    assert accumulated.accumulate(propose_fast, 1000, batch=batch) == accumulated.expected()[1000]


def test_stream_sample_matches_the_recipe() -> None:
    """The first rows written in accumulated.json are what the generator produces."""
    import json

    data = json.loads(accumulated.ACCUMULATED_PATH.read_text())
    assert data["streamSample"] == accumulated.stream_sample()
    assert data["segmentRows"] == accumulated.SEGMENT


def test_stream_exercises_every_status() -> None:
    statuses = set()
    for g in range(accumulated.segments(2000)):
        tau, vocab = accumulated.segment_params(g)
        rows = accumulated.stream_rows(g * accumulated.SEGMENT, accumulated.SEGMENT, vocab)
        statuses |= set(accumulated.run_call(propose_fast, tau, rows).status.tolist())
    assert statuses == {0, 1, 2, 3, 4}


@pytest.mark.deep
@pytest.mark.skipif(not DEEP, reason="deep profile (DYADIC24_DEEP=1)")
def test_fast_reference_1m_rows() -> None:
    assert accumulated.accumulate(propose_fast, 1_000_000) == accumulated.expected()[1_000_000]

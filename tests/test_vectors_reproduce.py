"""The exact reference reproduces every golden vector, outputs and traces (clauses 12.1, 12.3, 13.1).

The V = 163,840 file is sampled (its first vector) in the default run and read whole under
DYADIC24_DEEP=1.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from dyadic24.reference.exact import propose_exact
from dyadic24.vectors import store

DEEP = os.environ.get("DYADIC24_DEEP", "") not in ("", "0")

LARGE = "golden_large_vocab.json.gz"
SMALL_FILES = [p.name for p in store.vector_files() if p.name != LARGE]


def _reproduce(v: store.GoldenVector) -> None:
    tau = np.array([v.tau_bits], dtype=np.uint32).view(np.float32)[0]
    out = propose_exact(v.logits, v.temperature, v.seed, v.round, v.position, tau=tau, trace=True)
    for field in ("status", "token", "ids", "tickets"):
        assert np.array_equal(getattr(out, field), getattr(v.expected, field)), (v.file, v.tc_id, field)
    assert [t.as_json() for t in out.trace or []] == v.expected_trace, (v.file, v.tc_id)


@pytest.mark.parametrize("name", SMALL_FILES)
def test_exact_reference_reproduces(name: str) -> None:
    for v in store.iter_vectors([name]):
        _reproduce(v)


@pytest.mark.slow
def test_exact_reference_reproduces_large_vocab() -> None:
    for n, v in enumerate(store.iter_vectors([LARGE])):
        if n and not DEEP:
            break
        assert v.vocab == 163_840
        _reproduce(v)

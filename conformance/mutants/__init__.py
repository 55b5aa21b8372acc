"""Deliberately wrong implementations of dyadic24-floor-first-v1, one broken clause each.

Each mutant is the fast reference with exactly one stage replaced (``dataclasses.replace`` on
``dyadic24.reference.fast.DEFAULT_STAGES``) or, for batch-level mistakes, the fast reference's
driver wrapped; each makes a mistake a real implementation plausibly makes. The golden vectors
must reject every one and name its clause (tests/test_conformance_mutants.py; the kill matrix in
conformance/KILL_MATRIX.md records which ones hypothesis fuzzing alone rejects).

``MUTANTS[name] = (callable, clause, description)``; the callable has the clause-12.2 protocol,
trace included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dyadic24.conformance.mutants import (
    batch,
    draw,
    exp,
    normalizer,
    order,
    scaling,
    status,
    support,
    tickets,
    tiled,
    widening,
)

Mutant = tuple[Callable[..., Any], str, str]

MUTANTS: dict[str, Mutant] = {}
for _family in (status, widening, batch, order, tiled, scaling, exp, normalizer, tickets, support, draw):
    for _name, _entry in _family.FAMILY.items():
        if _name in MUTANTS:
            raise RuntimeError(f"duplicate mutant name {_name}")
        MUTANTS[_name] = _entry

__all__ = ["MUTANTS", "Mutant"]

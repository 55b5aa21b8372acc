"""Building a mutant from the fast reference with one stage replaced."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from dyadic24.api import Proposal
from dyadic24.reference import fast


def with_stages(name: str, **replacement: Any) -> Callable[..., Proposal]:
    """The fast reference with the named stage(s) of ``Stages`` replaced, as a clause-12.2 callable.

    A mutant may compute NaN or out-of-range values downstream of its mistake; numpy's warnings for
    those are silenced (the runner judges the outputs).
    """
    stages = dataclasses.replace(fast.DEFAULT_STAGES, **replacement)

    def propose(
        logits: Any,
        temperature: Any,
        seed: Any,
        round: Any,
        position: Any,
        *,
        tau: Any = fast.TAU_DEFAULT,
        trace: bool = False,
    ) -> Proposal:
        with np.errstate(all="ignore"):
            return fast.propose_with(stages, logits, temperature, seed, round, position, tau=tau, trace=trace)

    propose.__name__ = propose.__qualname__ = f"mutant_{name}"
    return propose

"""Widening mistakes (clause 1.2)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dyadic24.api import Proposal
from dyadic24.reference import fast


def binary16_ftz(
    logits: Any,
    temperature: Any,
    seed: Any,
    round: Any,
    position: Any,
    *,
    tau: Any = fast.TAU_DEFAULT,
    trace: bool = False,
) -> Proposal:
    """binary16 logits converted with flush-to-zero: subnormal halves become signed zeros (what a
    half-to-float conversion under FTZ/DAZ, or a kernel's fast path, does). binary32 logits are right."""
    x = np.asarray(logits)
    if x.dtype == np.float16:
        bits = x.view(np.uint16)
        subnormal = (bits & np.uint16(0x7C00)) == 0
        x = np.where(subnormal, bits & np.uint16(0x8000), bits).astype(np.uint16).view(np.float16)
    with np.errstate(all="ignore"):
        return fast.propose_fast(x, temperature, seed, round, position, tau=tau, trace=trace)


binary16_ftz.__name__ = binary16_ftz.__qualname__ = "mutant_binary16_ftz"

FAMILY = {
    "binary16_ftz": (binary16_ftz, "1.2", "binary16 subnormal logits flushed to zero before widening"),
}

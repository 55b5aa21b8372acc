"""Scaling mistakes (clause 5.2); d = RN32(l - m) itself stays right."""

from __future__ import annotations

import numpy as np

from dyadic24.conformance.mutants._base import with_stages
from dyadic24.reference.fast import F32, scale_default

_MIN_NORMAL = np.float32(2.0**-126)


def scale_reciprocal(l_c: F32, m: F32, tau: np.float32) -> tuple[F32, F32]:
    """z = d * RN32(1 / tau): the multiply-by-reciprocal strength reduction of fast-math."""
    d, _ = scale_default(l_c, m, tau)
    inv = np.float32(np.float32(1.0) / tau)
    return d, np.multiply(d, inv, dtype=np.float32)


def scale_before_max(l_c: F32, m: F32, tau: np.float32) -> tuple[F32, F32]:
    """z = RN32(l / tau) - RN32(m / tau): logits divided by tau first, the max subtracted after."""
    d, _ = scale_default(l_c, m, tau)
    scaled = np.divide(l_c, tau, dtype=np.float32)
    top = np.divide(m, tau, dtype=np.float32)
    return d, np.subtract(scaled, top[:, None], dtype=np.float32)


def _flush(x: F32) -> F32:
    return np.where(np.abs(x) < _MIN_NORMAL, np.float32(0.0) * np.sign(x), x).astype(np.float32)


def scale_ftz(l_c: F32, m: F32, tau: np.float32) -> tuple[F32, F32]:
    """The division under flush-to-zero / denormals-are-zero (GPU fast-math): subnormal d, tau, z become 0."""
    d, _ = scale_default(l_c, m, tau)
    tau_f = _flush(np.asarray([tau], dtype=np.float32))[0]
    return d, _flush(np.divide(_flush(d), tau_f, dtype=np.float32))


FAMILY = {
    "reciprocal_tau": (
        with_stages("reciprocal_tau", scale=scale_reciprocal),
        "5.2",
        "z = d * RN32(1/tau) instead of the IEEE division d / tau",
    ),
    "scale_before_max": (
        with_stages("scale_before_max", scale=scale_before_max),
        "5.2",
        "logits scaled by 1/tau before the max is subtracted: z = RN32(l/tau) - RN32(m/tau)",
    ),
    "ftz_scale": (
        with_stages("ftz_scale", scale=scale_ftz),
        "5.2",
        "subnormal d, tau and z flushed to zero in the division (FTZ/DAZ)",
    ),
}

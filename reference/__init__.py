"""Exact and fast references for dyadic24-floor-first-v1.

``reference.ieee`` (exact binary32/binary64 arithmetic on bit patterns), ``reference.exp_exact``
(correctly rounded binary32 exp), ``reference.philox`` (Philox4x32-10), ``reference.exact`` (the exact
reference ``propose_exact`` with per-row traces); ``reference.handoff`` (q for a verifier: ``q_dense``,
``q_sparse``, ``q_exact``) and ``reference.verify`` (the standard speculative-sampling verification in
rational arithmetic, non-normative; spec Appendix F). Importing this package imports none of them, and
never torch: ``propose_exact``, ``q_dense`` and ``q_sparse`` are re-exported lazily.
"""

from __future__ import annotations

from typing import Any

__all__ = ["propose_exact", "q_dense", "q_sparse"]


def __getattr__(name: str) -> Any:
    if name == "propose_exact":
        from dyadic24.reference.exact import propose_exact

        return propose_exact
    if name in ("q_dense", "q_sparse"):
        from dyadic24.reference import handoff

        return getattr(handoff, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

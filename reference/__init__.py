"""Exact and fast references for dyadic24-floor-first-v1.

``reference.ieee`` (exact binary32/binary64 arithmetic on bit patterns), ``reference.exp_exact``
(correctly rounded binary32 exp), ``reference.philox`` (Philox4x32-10), ``reference.exact`` (the exact
reference ``propose_exact`` with per-row traces). Importing this package imports none of them, and
never torch: ``propose_exact`` is re-exported lazily.
"""

from __future__ import annotations

from typing import Any

__all__ = ["propose_exact"]


def __getattr__(name: str) -> Any:
    if name == "propose_exact":
        from dyadic24.reference.exact import propose_exact

        return propose_exact
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

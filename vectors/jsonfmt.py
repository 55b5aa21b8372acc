"""Stable JSON text for the vector files: sorted keys, two-space indent, short lists on one line.

The layout is part of the byte-for-byte regeneration promise (``dyadic24 vectors check``), so it is
defined here once and never depends on the Python version's ``json`` defaults beyond ``json.dumps``
of scalars (ASCII only, no NaN literals).
"""

from __future__ import annotations

import json
from typing import Any

INDENT = "  "


def _scalar(v: Any) -> str:
    if isinstance(v, float):
        raise TypeError("floats are not allowed in vector files; write bit patterns")
    return json.dumps(v, ensure_ascii=True, allow_nan=False)


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, bool))


def dumps(obj: Any, level: int = 0) -> str:
    """Lists of scalars on one line; lists of lists of scalars one inner list per line; dicts sorted."""
    pad = INDENT * (level + 1)
    end = INDENT * level
    if _is_scalar(obj):
        return _scalar(obj)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{pad}{_scalar(str(k))}: {dumps(obj[k], level + 1)}" for k in sorted(obj)]
        return "{\n" + ",\n".join(items) + "\n" + end + "}"
    if isinstance(obj, (list, tuple)):
        if not obj:
            return "[]"
        if all(_is_scalar(v) for v in obj):
            return "[" + ", ".join(_scalar(v) for v in obj) + "]"
        return "[\n" + ",\n".join(pad + dumps(v, level + 1) for v in obj) + "\n" + end + "]"
    raise TypeError(f"cannot write {type(obj).__name__} to a vector file")


def document(obj: Any) -> bytes:
    return (dumps(obj) + "\n").encode("ascii")

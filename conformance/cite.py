"""`dyadic24 cite`: the one-line citation of appendix E (semantic ID, spec and vector set SHA-256).

The spec and every vector file are checked against this release's pinned hashes first: a citation
names the data a verdict was earned on, so a changed file is refused (exit 2), never cited.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def citation_line() -> str:
    from dyadic24.conformance.report import citation
    from dyadic24.vectors import store

    spec, vectors = store.verify_release()
    return citation(spec, vectors)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(
            "usage: dyadic24 cite\n\nprints: dyadic24-floor-first-v1 spec-sha256:<hex> vectors-sha256:<hex>"
        )
        return 0
    if args:
        print(f"dyadic24 cite: takes no arguments, got {args}", file=sys.stderr)
        return 2
    from dyadic24.vectors.store import VectorDataError

    try:
        print(citation_line())
    except VectorDataError as exc:
        print(f"dyadic24 cite: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The `dyadic24` command: conform, vectors, cite (each sub-command lives with its sub-package)."""

from __future__ import annotations

import sys

USAGE = """usage: dyadic24 <command> [args]   (dyadic24 --version)

commands:
  conform   check an implementation: golden vectors, invalid calls, accumulated check, fuzzing (clause 13)
  vectors   regenerate or check the golden vectors (`dyadic24 vectors check|regen|list|hash`)
  cite      print the one-line citation: semantic ID, spec SHA-256, vector set SHA-256
"""


def version_line() -> str:
    from dyadic24 import __version__
    from dyadic24.api import SEMANTIC_ID
    from dyadic24.conformance.jsonl import MINOR, PROTOCOL

    return f"dyadic24 {__version__} ({SEMANTIC_ID}; JSON-lines protocol {PROTOCOL}.{MINOR})"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args else 2
    if args[0] in ("-V", "--version"):
        print(version_line())
        return 0
    command, rest = args[0], args[1:]
    if command == "conform":
        from dyadic24.conformance.cli import main as conform_main

        return conform_main(rest)
    if command == "vectors":
        from dyadic24.vectors.cli import main as vectors_main

        return vectors_main(rest)
    if command == "cite":
        from dyadic24.conformance.cite import main as cite_main

        return cite_main(rest)
    print(f"dyadic24: unknown command {command!r}\n{USAGE}", file=sys.stderr)
    return 2

"""The release's pinned hashes (vectors/pins.py): spec, vector set, and every vector file.

``dyadic24 conform``, ``dyadic24 cite`` and ``dyadic24 vectors check`` refuse a spec or vector file
whose bytes differ from these (``store.load_release``), so that a citation line always names the
data its verdict was earned on (Appendix E). The pins are a module of the package's code, not a data
file beside the vectors: whoever edits a vector file and a pin file next to it does not make the
edit this release's. Maintainers refresh them after a deliberate change of the spec or the vectors,
in a source checkout:

    python -m dyadic24.vectors.release --write     # rewrite vectors/pins.py from the files
    python -m dyadic24.vectors.release --check     # exit 1 if the files and the pins disagree
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dyadic24.vectors import store

PINS_PATH = Path(__file__).resolve().parent / "pins.py"


def current() -> dict[str, Any]:
    """The pins for the files as they are now (release()'s shape)."""
    from dyadic24 import __version__

    files = {p.name: store.file_sha256(p) for p in store.set_files()}
    return {
        "package": __version__,
        "specFile": store.SPEC_NAME,
        "specSha256": store.spec_sha256(),
        "vectorsSha256": store.set_sha256(files),
        "files": dict(sorted(files.items(), key=lambda kv: kv[0].encode())),
    }


def pins_source(pins: dict[str, Any]) -> str:
    files = "".join(f'    "{name}": "{sha}",\n' for name, sha in pins["files"].items())
    return (
        '"""The pins of this release (Appendix E): written by `python -m dyadic24.vectors.release --write`'
        ' from\nthe files; edit the spec or the vectors, regenerate, then rewrite this module."""\n\n'
        f'PACKAGE = "{pins["package"]}"\n'
        f'SPEC_FILE = "{pins["specFile"]}"\n'
        f'SPEC_SHA256 = "{pins["specSha256"]}"\n'
        f'VECTORS_SHA256 = "{pins["vectorsSha256"]}"\n'
        f"FILES = {{\n{files}}}\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dyadic24.vectors.release", description=__doc__)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--write", action="store_true", help="rewrite vectors/pins.py")
    what.add_argument("--check", action="store_true", help="compare the files with vectors/pins.py")
    args = parser.parse_args(argv)
    fresh = current()
    if args.write:
        PINS_PATH.write_text(pins_source(fresh))
        print(f"wrote {PINS_PATH}: spec {fresh['specSha256']}, vectors {fresh['vectorsSha256']}")
        return 0
    pinned = store.release()
    if pinned != fresh:
        differ = sorted(k for k in set(fresh["files"]) | set(pinned["files"])
                        if fresh["files"].get(k) != pinned["files"].get(k))  # fmt: skip
        if fresh["specSha256"] != pinned["specSha256"]:
            differ.insert(0, store.SPEC_NAME)
        print(f"vectors/pins.py differs from the files: {differ or 'package version'}", file=sys.stderr)
        return 1
    print(f"vectors/pins.py matches: spec {fresh['specSha256']}, vectors {fresh['vectorsSha256']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

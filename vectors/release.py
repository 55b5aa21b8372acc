"""The release's pinned hashes (vectors/release.json): spec, vector set, and every vector file.

``dyadic24 conform``, ``dyadic24 cite`` and ``dyadic24 vectors check`` refuse a spec or vector file
whose bytes differ from these (``store.verify_release``), so that a citation line always names the
data its verdict was earned on (Appendix E). Maintainers refresh the pins after a deliberate change of
the spec or the vectors, in a source checkout:

    python -m dyadic24.vectors.release --write     # rewrite vectors/release.json from the files
    python -m dyadic24.vectors.release --check     # exit 1 if the files and the pins disagree
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from dyadic24.vectors import jsonfmt, store


def current() -> dict[str, Any]:
    """release.json's content for the files as they are now."""
    from dyadic24 import __version__

    files = {p.name: store.file_sha256(p) for p in store.set_files()}
    return {
        "package": __version__,
        "specFile": store.SPEC_NAME,
        "specSha256": store.spec_sha256(),
        "vectorsSha256": store.set_sha256(files),
        "files": dict(sorted(files.items(), key=lambda kv: kv[0].encode())),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dyadic24.vectors.release", description=__doc__)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--write", action="store_true", help="rewrite vectors/release.json")
    what.add_argument("--check", action="store_true", help="compare the files with vectors/release.json")
    args = parser.parse_args(argv)
    fresh = current()
    if args.write:
        store.RELEASE_PATH.write_bytes(jsonfmt.document(fresh))
        print(f"wrote {store.RELEASE_PATH}: spec {fresh['specSha256']}, vectors {fresh['vectorsSha256']}")
        return 0
    pinned = store.load_file(store.RELEASE_PATH)
    if pinned != fresh:
        differ = sorted(k for k in set(fresh["files"]) | set(pinned.get("files", {}))
                        if fresh["files"].get(k) != pinned.get("files", {}).get(k))  # fmt: skip
        if fresh["specSha256"] != pinned.get("specSha256"):
            differ.insert(0, store.SPEC_NAME)
        print(f"release.json differs from the files: {differ or 'package version'}", file=sys.stderr)
        return 1
    print(f"release.json matches: spec {fresh['specSha256']}, vectors {fresh['vectorsSha256']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`dyadic24 vectors ...`: regenerate or check the golden vectors (clause 13.1).

dyadic24 vectors regen [FILE ...]       rewrite vectors/data/golden_*.json[.gz] from the exact reference
dyadic24 vectors check [--quick]        schema, header hashes and counts; without --quick also that a
                                        regeneration reproduces every file byte for byte
dyadic24 vectors list                   files, vector counts, flags
dyadic24 vectors hash                   the spec SHA-256 and the vector set SHA-256
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from dyadic24.api import SEMANTIC_ID
from dyadic24.vectors import store


def _schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(__file__).resolve().parent / "schema.json").read_text())
    return data


def validate(doc: dict[str, Any], name: str) -> list[str]:
    """JSON Schema validation (jsonschema, when installed) plus the checks a schema cannot express."""
    problems: list[str] = []
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - jsonschema is a test dependency
        jsonschema = None
    if jsonschema is not None:
        validator = jsonschema.Draft202012Validator(_schema())
        for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.path)):
            problems.append(f"{name}: schema: {'/'.join(str(p) for p in err.path)}: {err.message[:200]}")
        if problems:
            return problems
    tests = [t for g in doc["testGroups"] for t in g["tests"]]
    if doc["numberOfVectors"] != len(tests):
        problems.append(f"{name}: numberOfVectors {doc['numberOfVectors']} != {len(tests)}")
    rows = sum(len(t["logits"]) for t in tests)
    if doc["numberOfRows"] != rows:
        problems.append(f"{name}: numberOfRows {doc['numberOfRows']} != {rows}")
    ids = [t["tcId"] for t in tests]
    if ids != list(range(1, len(ids) + 1)):
        problems.append(f"{name}: tcIds are not 1..{len(ids)}")
    for t in tests:
        b = len(t["logits"])
        for key in ("temperature", "seed", "round", "position", "trace"):
            if len(t[key]) != b:
                problems.append(f"{name} tcId {t['tcId']}: {key} has {len(t[key])} entries for B = {b}")
        for key in ("status", "token", "ids", "tickets"):
            if len(t["expected"][key]) != b:
                problems.append(f"{name} tcId {t['tcId']}: expected.{key} has the wrong length")
        missing = set(t["flags"]) - set(doc["notes"])
        if missing:
            problems.append(f"{name} tcId {t['tcId']}: flags without a note: {sorted(missing)}")
    return problems


def _check_accumulated(data: dict[str, Any], quick: bool) -> list[str]:
    """accumulated.json: its recipe sample matches the generator; without --quick, the fast reference
    reproduces the 10^4-row digest (clause 13.2)."""
    from dyadic24.vectors import accumulated

    problems = []
    if data.get("algorithm") != SEMANTIC_ID or data.get("segmentRows") != accumulated.SEGMENT:
        problems.append("accumulated.json: wrong algorithm or segment size")
    if data.get("streamSample") != accumulated.stream_sample():
        problems.append("accumulated.json: streamSample differs from the stream generator")
    digests = {int(d["rows"]): d["sha256"] for d in data.get("digests", [])}
    for rows in (10_000, 1_000_000):
        if rows not in digests:
            problems.append(f"accumulated.json: no digest for {rows} rows")
    if not quick and 10_000 in digests:
        from dyadic24.reference.fast import propose_fast

        if accumulated.accumulate(propose_fast, 10_000) != digests[10_000]:
            problems.append("accumulated.json: the fast reference gives another 10^4-row digest")
    return problems


def _check(quick: bool) -> int:
    problems: list[str] = []
    spec_hash = store.spec_sha256()
    files = store.vector_files()
    from dyadic24.vectors.generate import FILE_NAMES

    present = {p.name for p in files}
    for name in FILE_NAMES:
        if name not in present:
            problems.append(f"missing vector file {name}")
    for extra in sorted(present - set(FILE_NAMES)):
        problems.append(f"unexpected vector file {extra}")
    total = 0
    for path in files:
        doc = store.load_file(path)
        problems += validate(doc, path.name)
        if doc.get("specSha256") != spec_hash:
            problems.append(
                f"{path.name}: specSha256 {doc.get('specSha256')} != spec file {spec_hash} (regen)"
            )
        total += int(doc.get("numberOfVectors", 0))
    acc = store.DATA_DIR / store.ACCUMULATED_NAME
    if not acc.is_file():
        problems.append("missing accumulated.json")
    else:
        problems += _check_accumulated(json.loads(acc.read_text()), quick)
    print(f"{len(files)} vector files, {total} vectors, spec {spec_hash[:16]}...")
    print(f"vector set {store.vector_set_sha256()}")
    if not quick:
        from dyadic24.vectors.generate import build, encode

        start = time.monotonic()
        fresh = build()
        for name, text in fresh.items():
            path = store.DATA_DIR / name
            if not path.is_file():
                continue
            if store.read_text(path) != text:
                problems.append(f"{name}: regeneration differs from the file (run `dyadic24 vectors regen`)")
            elif path.read_bytes() != encode(name, text):
                print(
                    f"note: {name}: same JSON text, other gzip bytes (zlib version); the content is identical"
                )
        print(f"regenerated {len(fresh)} files in {time.monotonic() - start:.1f} s")
    for p in problems:
        print("FAIL", p)
    print("vectors check:", "FAILED" if problems else "ok")
    return 1 if problems else 0


def _regen(names: list[str]) -> int:
    from dyadic24.vectors.generate import FILE_NAMES, build, encode

    unknown = [n for n in names if n not in FILE_NAMES]
    if unknown:
        print(f"unknown files {unknown}; known: {list(FILE_NAMES)}", file=sys.stderr)
        return 2
    start = time.monotonic()
    store.DATA_DIR.mkdir(parents=True, exist_ok=True)
    for name, text in build(names or None).items():
        (store.DATA_DIR / name).write_bytes(encode(name, text))
        print(f"wrote {name} ({len(text)} bytes of JSON)")
    print(f"done in {time.monotonic() - start:.1f} s; vector set {store.vector_set_sha256()}")
    return 0


def _list() -> int:
    flags: Counter[str] = Counter()
    clauses: Counter[str] = Counter()
    for path in store.vector_files():
        doc = store.load_file(path)
        tests = [t for g in doc["testGroups"] for t in g["tests"]]
        print(f"{path.name}: {len(tests)} vectors, {doc['numberOfRows']} rows")
        for t in tests:
            flags.update(t["flags"])
            clauses.update(t["clauses"])
    print("flags:", ", ".join(f"{k} {v}" for k, v in sorted(flags.items())))
    key = lambda c: tuple(int(x) for x in c.split("."))  # noqa: E731
    print("clauses:", ", ".join(f"{k} {clauses[k]}" for k in sorted(clauses, key=key)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="dyadic24 vectors", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_regen = sub.add_parser("regen", help="rewrite the vector files from the exact reference")
    p_regen.add_argument("files", nargs="*", help="only these files (default: all)")
    p_check = sub.add_parser("check", help="verify the vector files")
    p_check.add_argument("--quick", action="store_true", help="skip the byte-for-byte regeneration")
    sub.add_parser("list", help="vector counts per file, flag and clause")
    sub.add_parser("hash", help="spec SHA-256 and vector set SHA-256")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "regen":
        return _regen(list(args.files))
    if args.command == "check":
        return _check(bool(args.quick))
    if args.command == "list":
        return _list()
    print(f"spec {store.spec_sha256()}\nvectors {store.vector_set_sha256()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

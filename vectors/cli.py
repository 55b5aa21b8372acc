"""`dyadic24 vectors ...`: regenerate or check the golden vectors (clause 13.1).

dyadic24 vectors regen --out DIR [FILE ...]   write golden_*.json[.gz] from the exact reference into DIR
                                               and say, per file, whether it equals this release's
dyadic24 vectors check [--quick]               the spec and vector files are this release's (their pinned
                                               SHA-256), schema, header hashes and counts; without
                                               --quick also that a regeneration reproduces every file
                                               byte for byte
dyadic24 vectors list                          files, vector counts, flags
dyadic24 vectors hash                          the spec SHA-256 and the vector set SHA-256

Exit status: 0 ok, 1 a check failed, 2 a usage error or a spec / vector file that cannot be used
(unreadable, corrupt, not JSON, or not this release's bytes; one line names the file).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

from dyadic24.api import SEMANTIC_ID
from dyadic24.vectors import store
from dyadic24.vectors.schema_check import Validator

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


@cache
def _validator() -> Validator:
    data: dict[str, Any] = json.loads((Path(__file__).resolve().parent / "schema.json").read_text())
    return Validator(data)


def validate(doc: dict[str, Any], name: str) -> list[str]:
    """vectors/schema.json (vectors.schema_check; no optional package) plus the checks a schema cannot
    express."""
    problems = [f"{name}: schema: {path or '/'}: {msg[:200]}" for path, msg in _validator().errors(doc)]
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
        widths = {len(r) if isinstance(r, list) else len(r) // 8 for r in t["logits"]}
        if widths != {t["vocab"]}:
            problems.append(
                f"{name} tcId {t['tcId']}: logit rows of {sorted(widths)} words, vocab {t['vocab']}"
            )
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
    spec_hash, set_hash = store.verify_release()  # one line and exit 2 if a file is not the release's
    problems: list[str] = []
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
        total += int(doc.get("numberOfVectors", 0)) if isinstance(doc.get("numberOfVectors"), int) else 0
    problems += _check_accumulated(store.load_file(store.DATA_DIR / store.ACCUMULATED_NAME), quick)
    print(f"{len(files)} vector files, {total} vectors, spec {spec_hash[:16]}... (this release's)")
    print(f"vector set {set_hash} (this release's)")
    if not quick:
        from dyadic24.vectors.generate import build, encode

        start = time.monotonic()
        fresh = build()
        for name, text in fresh.items():
            path = store.DATA_DIR / name
            if store.read_text(path) != text:
                problems.append(f"{name}: regeneration differs from the file (`dyadic24 vectors regen`)")
            elif path.read_bytes() != encode(name, text):
                print(
                    f"note: {name}: same JSON text, other gzip bytes (zlib version); the content is identical"
                )
        print(f"regenerated {len(fresh)} files in {time.monotonic() - start:.1f} s")
    for p in problems:
        print("FAIL", p)
    print("vectors check:", "FAILED" if problems else "ok")
    return EXIT_FAIL if problems else EXIT_OK


def _regen(out: Path, names: list[str], overwrite: bool) -> int:
    from dyadic24.install import inside_package, source_checkout
    from dyadic24.vectors import accumulated, jsonfmt
    from dyadic24.vectors.generate import FILE_NAMES, build, encode

    known = (*FILE_NAMES, store.ACCUMULATED_NAME)
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"dyadic24 vectors regen: unknown file(s) {unknown}; known: {list(known)}", file=sys.stderr)
        return EXIT_USAGE
    inside = inside_package(out)
    if inside is not None and not source_checkout():
        print(
            f"dyadic24 vectors regen: --out {out} lies inside the dyadic24 package ({inside}); "
            "write the vectors to a folder of your own", file=sys.stderr,
        )  # fmt: skip
        return EXIT_USAGE
    if out.exists() and not out.is_dir():
        print(f"dyadic24 vectors regen: --out {out} exists and is not a directory", file=sys.stderr)
        return EXIT_USAGE
    selected = names or list(known)
    existing = [n for n in selected if (out / n).exists()]
    if existing and not overwrite:
        print(
            f"dyadic24 vectors regen: --out {out} already holds {', '.join(existing)}; "
            "pass --overwrite to replace them", file=sys.stderr,
        )  # fmt: skip
        return EXIT_USAGE
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"dyadic24 vectors regen: --out {out}: cannot create ({exc.strerror or exc})", file=sys.stderr)
        return EXIT_USAGE
    pins: dict[str, str] = store.release()["files"]
    start = time.monotonic()
    same = 0
    written: list[tuple[Path, bytes]] = []
    golden = [n for n in selected if n != store.ACCUMULATED_NAME]
    texts = build(golden) if golden else {}
    if store.ACCUMULATED_NAME in selected:
        print("computing accumulated.json (10^5 rows exact and fast, 10^6 rows fast: a few minutes)")
        texts[store.ACCUMULATED_NAME] = jsonfmt.document(accumulated.build_expected())
    for name in selected:
        text = texts[name]
        target = out.resolve() / name
        data = encode(name, text) if name != store.ACCUMULATED_NAME else text
        replaced = target.exists()
        target.write_bytes(data)
        written.append((target, data))
        digest = hashlib.sha256(text).hexdigest()
        match = digest == pins.get(name)
        same += match
        verdict = "equals this release's" if match else f"DIFFERS from this release's pin {pins.get(name)}"
        print(f"wrote {target}{' (replaced)' if replaced else ''}: JSON text sha256 {digest} {verdict}")
    print(f"{same}/{len(selected)} files equal this release's, in {time.monotonic() - start:.1f} s")
    print("the files' own bytes (`sha256sum -c` checks these lines):")
    for target, data in written:
        print(f"{hashlib.sha256(data).hexdigest()}  {target}")
    return EXIT_OK if same == len(selected) else EXIT_FAIL


def _list() -> int:
    flags: Counter[str] = Counter()
    clauses: Counter[str] = Counter()
    store.load_release()  # a changed or corrupt file: one line naming it (exit 2)
    for path in store.vector_files():
        vectors = list(store.iter_vectors([path.name]))
        print(f"{path.name}: {len(vectors)} vectors, {sum(v.batch for v in vectors)} rows")
        for v in vectors:
            flags.update(v.flags)
            clauses.update(v.clauses)
    print("flags:", ", ".join(f"{k} {v}" for k, v in sorted(flags.items())))
    key = lambda c: tuple(int(x) for x in c.split("."))  # noqa: E731
    print("clauses:", ", ".join(f"{k} {clauses[k]}" for k in sorted(clauses, key=key)))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="dyadic24 vectors", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_regen = sub.add_parser(
        "regen", help="write the vector files and accumulated.json from the references into --out DIR"
    )
    p_regen.add_argument("--out", type=Path, required=True, metavar="DIR", help="where to write (created)")
    p_regen.add_argument("--overwrite", action="store_true", help="replace files that --out already holds")
    p_regen.add_argument(
        "files", nargs="*", help="only these files (default: all, accumulated.json included)"
    )
    p_check = sub.add_parser("check", help="verify the vector files")
    p_check.add_argument("--quick", action="store_true", help="skip the byte-for-byte regeneration")
    sub.add_parser("list", help="vector counts per file, flag and clause")
    sub.add_parser("hash", help="spec SHA-256 and vector set SHA-256")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.command == "regen":
            return _regen(args.out, list(args.files), bool(args.overwrite))
        if args.command == "check":
            return _check(bool(args.quick))
        if args.command == "list":
            return _list()
        print(f"spec {store.spec_sha256()}\nvectors {store.vector_set_sha256()}")
        return EXIT_OK
    except KeyError as exc:
        print(f"dyadic24 vectors {args.command}: {exc.args[0]}", file=sys.stderr)
        return EXIT_USAGE
    except store.VectorDataError as exc:
        print(f"dyadic24 vectors {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())

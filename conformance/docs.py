"""The examples in README.md, conformance/README.md and conformance/PROTOCOL.md, produced by the code.

Each example lives between ``<!-- BEGIN GENERATED: name -->`` and ``<!-- END GENERATED: name -->``
and is rewritten from the code that defines it (the citation, a real conformance run, the argparse
help, the protocol's encoders, the invalid-call table), so that the documents cannot drift from the
runner (tests/test_conformance_docs.py compares them):

    python -m dyadic24.conformance.docs --write     # rewrite the generated blocks
    python -m dyadic24.conformance.docs --check     # exit 1 if a block differs

The one number a run prints that depends on the installed hypothesis version (how many rows its
fuzz examples drew) is compared as ``rows N``, and argparse's usage paragraph without its line
breaks (they move between Python versions).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
BLOCK = re.compile(
    r"(<!-- BEGIN GENERATED: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- END GENERATED: (?P=name) -->)", re.S
)
VOLATILE = re.compile(r"\b(fuzz \d+/\d+) rows \d+|\b\d+ rows, oracle|\d+(\.\d+)? s\b|[\d,]+ rows/s")


def _run(argv: Sequence[str]) -> str:
    from dyadic24.conformance import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        cli.main([*argv, "--no-progress"])
    return out.getvalue()


def citation() -> str:
    from dyadic24.conformance.cite import citation_line

    return f"```\n$ dyadic24 cite\n{citation_line()}\n```\n"


def conform_example() -> str:
    """A full run against the fast reference as a user's callable: its report and citation line."""
    text = _run(["--impl", "dyadic24.reference.fast:propose_fast", "--workers", "1"])
    lines = text.strip().splitlines()
    table = [ln for ln in lines if ln.startswith("  ") or ln.startswith("==")]
    return (
        "```\n$ dyadic24 conform --impl dyadic24.reference.fast:propose_fast\n"
        + "\n".join([*table, lines[-1]])
        + "\n```\n"
    )


def failure_example() -> str:
    """What a failing run reports: a mutant on one vector file, its first divergences."""
    text = _run(
        [
            "--mutant",
            "remainder_lowest_id",
            "--vectors",
            "allocation",
            "--no-fuzz",
            "--accumulated",
            "0",
            "--max-report",
            "3",
        ]
    )
    lines = [
        ln
        for ln in text.strip().splitlines()
        if not ln.startswith(
            ("CONFORMANT needs", "implementation offers", "rejected naming", "(13.2)", "a run that")
        )
    ]
    return (
        "```\n$ dyadic24 conform --mutant remainder_lowest_id --vectors allocation --no-fuzz --accumulated 0"
        " --max-report 3\n" + "\n".join(lines).strip() + "\n```\n"
    )


def options() -> str:
    from dyadic24.conformance.cli import build_parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        text = build_parser().format_help()
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return f"```\n{text.rstrip()}\n```\n"


def _example_call() -> object:
    from dyadic24.api import CallInputs

    return CallInputs(
        logits=np.array([[1.0, 0.0, -1.0], [-np.inf, -np.inf, 1.0]], dtype=np.float32),
        temperature=np.array([1.0, 0.0], dtype=np.float32),
        seed=np.array([42, (1 << 64) - 1], dtype=np.uint64),
        round=np.array([0, 1], dtype=np.uint64),
        position=np.array([5, 1 << 32], dtype=np.uint64),
        tau_bits=0x3F333333,
    )


def protocol_handshake() -> str:
    from dyadic24.conformance import jsonl

    line = jsonl.encode_handshake(
        "my-sampler 1.2 (CUDA)", False, minor=1, formats=jsonl.FORMATS, frames=True, exp=True
    )
    return f"```json\n{line}\n```\n"


def protocol_request() -> str:
    from dyadic24.conformance import jsonl

    line, _ = jsonl.encode_request(1, _example_call(), False)  # type: ignore[arg-type]
    framed, payload = jsonl.encode_request(2, _example_call(), False, frame=True)  # type: ignore[arg-type]
    return (
        f"```json\n{line}\n```\n\nThe same call to a program that announced frames (the line, then "
        f"{len(payload)} bytes: 2 rows x 3 words x 4 bytes, little-endian):\n\n```json\n{framed}\n```\n"
    )


def protocol_response() -> str:
    from dyadic24.conformance import jsonl
    from dyadic24.reference.fast import propose_fast

    c = _example_call()
    p = propose_fast(c.logits, c.temperature, c.seed, c.round, c.position, tau=np.float32(0.7))  # type: ignore[attr-defined]
    return f"```json\n{jsonl.encode_response(1, p)}\n```\n"


def error_lines() -> list[str]:
    """The error lines PROTOCOL.md shows: an argument error (clause 1.5) and one about no argument."""
    from dyadic24.conformance import jsonl

    return [
        jsonl.encode_error(1, "tau", "must be finite and > 0 (clause 1.3)"),
        jsonl.encode_error(None, None, "the line is not JSON"),
    ]


def protocol_errors() -> str:
    tau, unparsed = error_lines()
    return (
        f"A call rejected under clause 1.5:\n\n```json\n{tau}\n```\n\n"
        f"A line that could not be read far enough to find its id:\n\n```json\n{unparsed}\n```\n"
    )


def exp_exchange() -> tuple[str, str, bytes]:
    """An exp request for z = -0 .. and its answer (the line and its frame of 4 e words)."""
    from dyadic24.conformance import jsonl
    from dyadic24.reference.fast_exp import exp32_np

    z = np.arange(0x80000000, 0x80000004, dtype=np.uint64).astype(np.uint32)
    line, frame = jsonl.encode_exp_response(3, exp32_np(z.view(np.float32)).view(np.uint32))
    return jsonl.encode_exp_request(3, 0x80000000, 4), line, frame


def protocol_exp() -> str:
    request, line, frame = exp_exchange()
    return (
        f"```json\n{request}\n{line}\n```\n\nThe answer's line is followed by {len(frame)} bytes, "
        f"`{frame.hex()}`: RN32(exp(-0)) and the next three, 1.0 (`3f800000`) each.\n"
    )


def invalid_table() -> str:
    from dyadic24.conformance.invalid import CASES

    rows = ["| case | argument named | rule broken | sent to |", "| --- | --- | --- | --- |"]
    for c in CASES:
        to = ", ".join(k for k, on in (("Python", c.py is not None), ("JSON-lines", c.on_wire)) if on)
        rows.append(f"| `{c.name}` | `{c.argument}` | {c.rule} | {to} |")
    return "\n".join(rows) + "\n"


BLOCKS: dict[str, tuple[Path, Callable[[], str]]] = {
    "citation": (ROOT / "README.md", citation),
    "conform-example": (ROOT / "README.md", conform_example),
    "conform-options": (HERE / "README.md", options),
    "conform-failure": (HERE / "README.md", failure_example),
    "protocol-handshake": (HERE / "PROTOCOL.md", protocol_handshake),
    "protocol-request": (HERE / "PROTOCOL.md", protocol_request),
    "protocol-exp": (HERE / "PROTOCOL.md", protocol_exp),
    "protocol-response": (HERE / "PROTOCOL.md", protocol_response),
    "protocol-errors": (HERE / "PROTOCOL.md", protocol_errors),
    "invalid-calls": (HERE / "PROTOCOL.md", invalid_table),
}


USAGE = re.compile(r"usage: .*?\n\n", re.S)


def normalized(text: str) -> str:
    """The text as compared: run-dependent numbers out, and argparse's usage paragraph as one line
    (Python 3.13 wraps it at other places than 3.11 and 3.12)."""
    text = USAGE.sub(lambda m: " ".join(m.group(0).split()) + "\n\n", text)
    return VOLATILE.sub(lambda m: (m.group(1) + " rows N") if m.group(1) else "<n>", text)


def render(path: Path, fresh: dict[str, str]) -> str:
    """The document with every generated block of it replaced by ``fresh[name]``."""
    text = path.read_text(encoding="utf-8")
    found = {m.group("name") for m in BLOCK.finditer(text)}
    missing = {n for n, (p, _) in BLOCKS.items() if p == path} - found
    if missing:
        raise KeyError(f"{path}: no generated block(s) {sorted(missing)}")
    return BLOCK.sub(lambda m: m.group(1) + fresh[m.group("name")] + m.group(4), text)


def stale(only: Sequence[str] | None = None) -> list[str]:
    """The generated blocks whose document differs from the code's output."""
    names = list(only or BLOCKS)
    bad = []
    for name in names:
        path, make = BLOCKS[name]
        current = {m.group("name"): m.group("body") for m in BLOCK.finditer(path.read_text(encoding="utf-8"))}
        if normalized(current.get(name, "")) != normalized(make()):
            bad.append(f"{path.name}: {name}")
    return bad


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dyadic24.conformance.docs", description=__doc__)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--write", action="store_true")
    what.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    if args.check:
        bad = stale()
        for b in bad:
            print(
                f"stale generated block: {b} (python -m dyadic24.conformance.docs --write)", file=sys.stderr
            )
        return 1 if bad else 0
    fresh = {name: make() for name, (_, make) in BLOCKS.items()}
    for path in sorted({p for p, _ in BLOCKS.values()}):
        path.write_text(render(path, fresh), encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

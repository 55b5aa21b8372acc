"""Reading the golden vectors of dyadic24-floor-first-v1 (clause 13.1).

The files live in ``vectors/data``; their format is described in ``vectors/README.md`` and
``vectors/schema.json``. This module only reads: the generator (``vectors/generate.py``) writes them
from the exact reference.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dyadic24.api import K_MAX, Proposal

DATA_DIR = Path(__file__).resolve().parent / "data"
SPEC_NAME = "dyadic24-floor-first-v1.md"
VECTOR_GLOB = ("golden_*.json", "golden_*.json.gz")
ACCUMULATED_NAME = "accumulated.json"


@dataclass(frozen=True)
class GoldenVector:
    """One golden vector: one call with B >= 1 rows and its expected outputs (clauses 12.1, 13.1)."""

    file: str
    tc_id: int
    comment: str
    flags: tuple[str, ...]
    clauses: tuple[str, ...]
    logits: npt.NDArray[np.float32]  # [B, V]
    temperature: npt.NDArray[np.float32]  # [B]
    seed: npt.NDArray[np.uint64]  # [B]
    round: npt.NDArray[np.uint64]  # [B]
    position: npt.NDArray[np.uint64]  # [B]
    tau_bits: int
    expected: Proposal  # no trace
    expected_trace: list[dict[str, Any]]  # RowTrace.as_json() per row (clause 12.3)
    # Optional 16-bit form of the logits (clause 1.2): "binary16" / "bfloat16" and uint16 [B, V] bits.
    narrow_format: str | None = None
    narrow_logits: npt.NDArray[np.uint16] | None = None

    @property
    def batch(self) -> int:
        return int(self.logits.shape[0])

    @property
    def vocab(self) -> int:
        return int(self.logits.shape[1])


def spec_path() -> Path:
    """The normative spec: ``spec/`` next to the package (source tree) or package data (installed)."""
    here = Path(__file__).resolve().parent
    candidates = [
        here.parent / "spec" / SPEC_NAME,  # source tree (/repo/vectors -> /repo/spec) and installed wheel
        here.parent / "dyadic24" / "spec" / SPEC_NAME,
        Path(__file__).parent.parent / "spec" / SPEC_NAME,  # the unresolved dyadic24/vectors symlink
    ]
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(f"spec file {SPEC_NAME} not found (looked in {[str(p) for p in candidates]})")


def spec_sha256() -> str:
    """SHA-256 (lower-case hex) of the bytes of the spec file; every vector file header carries it."""
    return hashlib.sha256(spec_path().read_bytes()).hexdigest()


def vector_files() -> list[Path]:
    """The golden vector files, sorted by file name (bytewise)."""
    found = {p for pattern in VECTOR_GLOB for p in DATA_DIR.glob(pattern)}
    return sorted(found, key=lambda p: p.name.encode())


def read_text(path: Path) -> bytes:
    """The JSON text of a data file (gunzipped for ``.json.gz``): what hashes and checks compare."""
    raw = path.read_bytes()
    return gzip.decompress(raw) if path.name.endswith(".gz") else raw


def load_file(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(read_text(path))
    return data


def vector_set_sha256() -> str:
    """SHA-256 naming the vector set (clause 13, appendix E).

    Over the golden vector files and ``accumulated.json``, sorted by file name, the text
    ``"<sha256 of the file's JSON text>  <file name>\\n"`` per file (the ``sha256sum`` line format) is
    concatenated and hashed. The JSON text of a ``.json.gz`` file is its decompressed content, so the
    value does not depend on the gzip implementation.
    """
    files = vector_files()
    accumulated = DATA_DIR / ACCUMULATED_NAME
    if accumulated.is_file():
        files.append(accumulated)
    files.sort(key=lambda p: p.name.encode())
    lines = "".join(f"{hashlib.sha256(read_text(p)).hexdigest()}  {p.name}\n" for p in files)
    return hashlib.sha256(lines.encode()).hexdigest()


def decode_words(words: Sequence[str] | str) -> npt.NDArray[np.uint32]:
    """A list of 8-hex-digit words, or the same words concatenated into one string, to uint32."""
    text = words if isinstance(words, str) else "".join(words)
    if len(text) % 8:
        raise ValueError("packed word string length is not a multiple of 8")
    return np.frombuffer(bytes.fromhex(text), dtype=">u4").astype(np.uint32)


def _logit_rows(test: dict[str, Any]) -> npt.NDArray[np.float32]:
    rows = test["logits"]
    vocab = int(test["vocab"])
    out = np.empty((len(rows), vocab), dtype=np.uint32)
    for r, row in enumerate(rows):
        bits = decode_words(row)
        if bits.shape != (vocab,):
            raise ValueError(f"tcId {test['tcId']}: row {r} has {bits.shape[0]} logits, vocab is {vocab}")
        out[r] = bits
    return out.view(np.float32)


def _narrow(test: dict[str, Any]) -> tuple[str | None, npt.NDArray[np.uint16] | None]:
    narrow = test.get("narrow")
    if narrow is None:
        return None, None
    rows = ["".join(r) if isinstance(r, list) else r for r in narrow["logits"]]
    bits = np.stack([np.frombuffer(bytes.fromhex(r), dtype=">u2").astype(np.uint16) for r in rows])
    return str(narrow["format"]), bits


def _u64(values: Sequence[str]) -> npt.NDArray[np.uint64]:
    return np.array([int(v) for v in values], dtype=np.uint64)


def _expected(exp: dict[str, Any]) -> Proposal:
    status = np.array(exp["status"], dtype=np.int32)
    ids = np.array(exp["ids"], dtype=np.int32).reshape(len(status), K_MAX)
    tickets = np.array(exp["tickets"], dtype=np.int32).reshape(len(status), K_MAX)
    return Proposal(status=status, token=np.array(exp["token"], dtype=np.int32), ids=ids, tickets=tickets)


def vectors_of(name: str, data: dict[str, Any]) -> Iterator[GoldenVector]:
    """The vectors of one parsed file."""
    for group in data["testGroups"]:
        tau_bits = int(group["tauBits"], 16)
        for test in group["tests"]:
            narrow_format, narrow_logits = _narrow(test)
            yield GoldenVector(
                file=name,
                tc_id=int(test["tcId"]),
                comment=str(test["comment"]),
                flags=tuple(test["flags"]),
                clauses=tuple(test["clauses"]),
                logits=_logit_rows(test),
                temperature=decode_words(test["temperature"]).view(np.float32),
                seed=_u64(test["seed"]),
                round=_u64(test["round"]),
                position=_u64(test["position"]),
                tau_bits=tau_bits,
                expected=_expected(test["expected"]),
                expected_trace=list(test["trace"]),
                narrow_format=narrow_format,
                narrow_logits=narrow_logits,
            )


def _select(names: Sequence[str] | None) -> list[Path]:
    files = vector_files()
    if names is None:
        return files
    by_name: dict[str, Path] = {}
    for p in files:
        stem = p.name.removesuffix(".gz").removesuffix(".json")
        for key in (p.name, stem, stem.removeprefix("golden_")):
            by_name[key] = p
    missing = [n for n in names if n not in by_name]
    if missing:
        raise KeyError(f"unknown vector file(s) {missing}; known: {[p.name for p in files]}")
    return [by_name[n] for n in names]


def iter_vectors(names: Sequence[str] | None = None) -> Iterator[GoldenVector]:
    """Every golden vector, file by file (sorted by name) and in tcId order within a file.

    ``names`` selects files by file name (``golden_status.json``), stem (``golden_status``) or topic
    (``status``).
    """
    for path in _select(names):
        yield from vectors_of(path.name, load_file(path))


def _load_notes() -> dict[str, str]:
    notes: dict[str, str] = {}
    for path in vector_files():
        for flag, note in load_file(path).get("notes", {}).items():
            text = note["description"]
            if note.get("effect"):
                text = f"{text} Production effect: {note['effect']}"
            notes.setdefault(flag, text)
    return dict(sorted(notes.items()))


# flag -> which mistake the flagged vectors catch and what it would do in production.
FLAG_NOTES: dict[str, str] = _load_notes()

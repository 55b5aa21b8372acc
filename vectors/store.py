"""Reading the golden vectors of dyadic24-floor-first-v1 (clause 13.1) and checking them against the release.

The files live in ``vectors/data``; their format is described in ``vectors/README.md`` and
``vectors/schema.json``. This module only reads: the generator (``vectors/generate.py``) writes them
from the exact reference. Every problem with a data file (unreadable, corrupt gzip, not JSON, not the
bytes this release pins) is a ``VectorDataError`` naming the file, so that each command can report it
in one line instead of a traceback.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dyadic24.api import K_MAX, Proposal

DATA_DIR = Path(__file__).resolve().parent / "data"
SPEC_NAME = "dyadic24-floor-first-v1.md"
VECTOR_GLOB = ("golden_*.json", "golden_*.json.gz")
ACCUMULATED_NAME = "accumulated.json"
NARROW_FORMATS = ("binary16", "bfloat16")  # clause 1.2


class VectorDataError(Exception):
    """A spec or vector file that cannot be used; ``str()`` is one line naming the file and the rule."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem


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
    raise VectorDataError(SPEC_NAME, f"spec file not found (looked in {[str(p) for p in candidates]})")


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise VectorDataError(path, f"cannot be read ({exc.strerror or exc})") from exc


def spec_sha256() -> str:
    """SHA-256 (lower-case hex) of the bytes of the spec file; every vector file header carries it."""
    return hashlib.sha256(_read_bytes(spec_path())).hexdigest()


def vector_files(data_dir: Path = DATA_DIR) -> list[Path]:
    """The golden vector files, sorted by file name (bytewise)."""
    found = {p for pattern in VECTOR_GLOB for p in data_dir.glob(pattern)}
    return sorted(found, key=lambda p: p.name.encode())


def read_text(path: Path) -> bytes:
    """The JSON text of a data file (gunzipped for ``.json.gz``): what hashes and checks compare."""
    raw = _read_bytes(path)
    if not path.name.endswith(".gz"):
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise VectorDataError(path, f"is not a valid gzip file ({exc})") from exc


def load_file(path: Path) -> dict[str, Any]:
    """The parsed JSON object of a data file."""
    return _parse(path, read_text(path))


def _parse(path: Path, text: bytes) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise VectorDataError(path, f"is not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise VectorDataError(path, "is not a JSON object")
    return data


def file_sha256(path: Path) -> str:
    """SHA-256 of a data file's JSON text (decompressed for .json.gz): the value the release pins."""
    return hashlib.sha256(read_text(path)).hexdigest()


def set_sha256(file_hashes: dict[str, str]) -> str:
    """The vector-set hash over {file name: SHA-256 of its JSON text} (vector_set_sha256's formula)."""
    names = sorted(file_hashes, key=lambda n: n.encode())
    lines = "".join(f"{file_hashes[n]}  {n}\n" for n in names)
    return hashlib.sha256(lines.encode()).hexdigest()


def set_files(data_dir: Path = DATA_DIR) -> list[Path]:
    """The files the vector-set hash covers: the golden files and ``accumulated.json``."""
    files = vector_files(data_dir)
    accumulated = data_dir / ACCUMULATED_NAME
    if accumulated.is_file():
        files.append(accumulated)
    return sorted(files, key=lambda p: p.name.encode())


def vector_set_sha256(data_dir: Path = DATA_DIR) -> str:
    """SHA-256 naming the vector set (clause 13, appendix E).

    Over the golden vector files and ``accumulated.json``, sorted by file name, the text
    ``"<sha256 of the file's JSON text>  <file name>\\n"`` per file (the ``sha256sum`` line format) is
    concatenated and hashed. The JSON text of a ``.json.gz`` file is its decompressed content, so the
    value does not depend on the gzip implementation.
    """
    return set_sha256({p.name: file_sha256(p) for p in set_files(data_dir)})


# ---- the release's pins: vectors/pins.py, a module of the package's own code (written by
# python -m dyadic24.vectors.release --write), so that editing a data file next to the vectors cannot
# make it this release's


def release() -> dict[str, Any]:
    """The hashes this package was released with: spec, vector set, and every vector file."""
    from dyadic24.vectors import pins

    return {
        "package": pins.PACKAGE,
        "specFile": pins.SPEC_FILE,
        "specSha256": pins.SPEC_SHA256,
        "vectorsSha256": pins.VECTORS_SHA256,
        "files": dict(pins.FILES),
    }


def restore_advice(path: Path) -> str:
    """How to get a changed data or spec file back: from git in a source checkout, else by reinstalling."""
    import dyadic24

    root = Path(next(iter(dyadic24.__path__))).resolve().parent
    if (root / ".git").exists():
        try:
            rel = path.resolve().relative_to(root)
        except ValueError:
            rel = path
        return f"restore it with `git -C {root} checkout -- {rel}`"
    return (
        f"reinstall the package: `pip install --force-reinstall --no-deps dyadic24=={release()['package']}`"
    )


@dataclass(frozen=True)
class Release:
    """The spec and the vector set as read once from disk and checked against the pins: the hashes
    cited are those of these bytes, and the vectors are decoded from these same bytes."""

    spec_sha256: str
    vectors_sha256: str
    texts: dict[str, bytes]  # file name -> JSON text (decompressed for .json.gz)


def _check_pin(path: Path, got: str, want: str, what: str) -> None:
    if got != want:
        raise VectorDataError(
            path, f"sha256 {got} is not this release's {want} (dyadic24 {release()['package']}): "
            f"the {what} was changed; {restore_advice(path)}",
        )  # fmt: skip


@cache
def load_release() -> Release:
    """Read the spec and every file of the vector set once, check each against the pins, and keep
    the bytes read. VectorDataError on the first file that differs, is missing or is not the release's."""
    pins = release()
    spec_file = spec_path()
    spec = hashlib.sha256(_read_bytes(spec_file)).hexdigest()
    _check_pin(spec_file, spec, str(pins["specSha256"]), "spec file")
    files: dict[str, str] = pins["files"]
    present = {p.name: p for p in set_files()}
    for name in sorted(files):
        if name not in present:
            raise VectorDataError(DATA_DIR / name, "is missing (part of this release's vector set)")
    extra = sorted(set(present) - set(files))
    if extra:
        raise VectorDataError(
            present[extra[0]], f"is not a file of this release's vector set ({pins['package']})"
        )
    texts: dict[str, bytes] = {}
    hashes: dict[str, str] = {}
    for name, path in present.items():
        texts[name] = read_text(path)
        hashes[name] = hashlib.sha256(texts[name]).hexdigest()
        _check_pin(path, hashes[name], files[name], "vector file")
    return Release(spec, set_sha256(hashes), texts)


def verify_release(names: Sequence[str] | None = None) -> tuple[str, str]:
    """Check the spec and every vector file against the release (``names``, if given, must name
    files of it); returns (spec sha256, vector-set sha256) computed from the bytes read."""
    r = load_release()
    if names is not None:
        _select(names)
    return r.spec_sha256, r.vectors_sha256


# ---- decoding


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
    (``status``). A file whose content cannot be decoded raises VectorDataError naming it.
    """
    texts = load_release().texts
    for path in _select(names):
        data = _parse(path, texts[path.name])
        try:
            yield from list(vectors_of(path.name, data))
        except (KeyError, TypeError, ValueError) as exc:
            raise VectorDataError(
                path, f"does not follow vectors/schema.json ({type(exc).__name__}: {exc})"
            ) from exc


@cache
def flag_notes() -> dict[str, dict[str, Any]]:
    """flag -> {"text": the mistake its vectors catch and its production effect, "clauses": [...]}."""
    notes: dict[str, dict[str, Any]] = {}
    texts = load_release().texts
    for path in vector_files():
        try:
            for flag, note in _parse(path, texts[path.name]).get("notes", {}).items():
                text = note["description"]
                if note.get("effect"):
                    text = f"{text} Production effect: {note['effect']}"
                notes.setdefault(flag, {"text": text, "clauses": list(note.get("clauses", []))})
        except (KeyError, TypeError, AttributeError) as exc:
            raise VectorDataError(path, f"has malformed notes ({type(exc).__name__}: {exc})") from exc
    return dict(sorted(notes.items()))

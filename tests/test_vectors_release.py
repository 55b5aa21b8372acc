"""The vector set is the release's (Appendix E, clause 13.4): the package pins the spec's and every vector
file's SHA-256 in its code (vectors/pins.py), and `dyadic24 conform`, `cite` and `vectors check` refuse a
changed, corrupt or unreadable file with one line naming it (exit 2). Run against a copy of the package
laid out as an installed one (site-packages/dyadic24), through the real command."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dyadic24.vectors import release, store

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """An installed-like copy of the package: <tmp>/lib/site-packages/dyadic24 (symlinks resolved)."""
    root = tmp_path / "lib" / "site-packages"
    shutil.copytree(
        REPO / "dyadic24", root / "dyadic24", ignore=shutil.ignore_patterns("__pycache__", "reports")
    )
    return root


def run(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run(
        [PY, "-m", "dyadic24", *args],
        cwd=site.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def data(site: Path) -> Path:
    return site / "dyadic24" / "vectors" / "data"


COMMANDS = (
    ("cite",),
    ("vectors", "check", "--quick"),
    ("conform", "--impl", "dyadic24.reference.fast:propose_fast", "--no-progress"),
)


def test_the_committed_files_are_the_pinned_release() -> None:
    """The pins describe the files (after a deliberate change: python -m dyadic24.vectors.release --write)."""
    assert release.current() == store.release()
    spec, vectors = store.verify_release()
    assert (spec, vectors) == (store.spec_sha256(), store.vector_set_sha256())


def test_the_copy_runs(site: Path) -> None:
    proc = run(site, "cite")
    assert proc.returncode == 0 and proc.stdout.startswith("dyadic24-floor-first-v1 spec-sha256:"), (
        proc.stderr
    )


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_one_changed_ticket_is_refused(site: Path, command: tuple[str, ...]) -> None:
    path = data(site) / "golden_tree.json"
    text = path.read_text()
    i = text.index('"tickets": [') + len('"tickets": [')
    j = i + text[i:].index(",")
    changed = text[:i] + str(int(text[i:j].strip("[ \n")) + 1) + text[j:]
    path.write_text(changed)
    proc = run(site, *command)
    assert proc.returncode == 2, proc.stdout[-1000:] + proc.stderr
    pinned = store.release()["files"]["golden_tree.json"]
    got = store.file_sha256(path)
    assert proc.stderr.count("\n") == 1 and "golden_tree.json" in proc.stderr
    assert got in proc.stderr and pinned in proc.stderr, proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("command", [*COMMANDS, ("vectors", "list")], ids=lambda c: " ".join(c[:2]))
def test_a_corrupt_gzip_file_is_one_line_naming_it(site: Path, command: tuple[str, ...]) -> None:
    path = data(site) / "golden_large_vocab.json.gz"
    path.write_bytes(path.read_bytes()[:5000])
    proc = run(site, *command)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "golden_large_vocab.json.gz: is not a valid gzip file" in proc.stderr


@pytest.mark.parametrize("command", [*COMMANDS, ("vectors", "list")], ids=lambda c: " ".join(c[:2]))
def test_invalid_json_is_one_line_naming_the_file(site: Path, command: tuple[str, ...]) -> None:
    path = data(site) / "golden_order.json"
    path.write_text(path.read_text()[:-200])
    proc = run(site, *command)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "golden_order.json" in proc.stderr and "the vector file was changed" in proc.stderr


def test_a_changed_spec_is_refused(site: Path) -> None:
    spec = site / "dyadic24" / "spec" / "dyadic24-floor-first-v1.md"
    spec.write_text(spec.read_text().replace("MUST NOT contract", "MAY contract"))
    for command in COMMANDS:
        proc = run(site, *command)
        assert proc.returncode == 2 and "dyadic24-floor-first-v1.md: sha256" in proc.stderr, proc.stderr


def test_regen_never_writes_into_the_installed_package(site: Path) -> None:
    before = {p.name: p.read_bytes() for p in data(site).iterdir()}
    (site.parent / "link").symlink_to(site / "dyadic24" / "vectors")
    for out in (str(data(site)), str(site.parent / "link" / "data"), str(site / "dyadic24")):
        proc = run(site, "vectors", "regen", "--out", out, "golden_tree.json")
        assert proc.returncode == 2 and "lies inside the dyadic24 package" in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1
    assert {p.name: p.read_bytes() for p in data(site).iterdir()} == before
    assert run(site, "vectors", "regen").returncode == 2  # --out is required


def test_regen_writes_where_it_says_and_compares_with_the_release(site: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    proc = run(site, "vectors", "regen", "--out", str(out), "golden_tree.json")
    assert proc.returncode == 0, proc.stderr
    target = out / "golden_tree.json"
    assert f"wrote {target}: JSON text sha256 " in proc.stdout and "equals this release's" in proc.stdout
    assert target.read_bytes() == (store.DATA_DIR / "golden_tree.json").read_bytes()
    assert "1/1 files equal this release's" in proc.stdout
    # the printed lines are what sha256sum gives for the files written (the .gz file's own bytes)
    proc = run(site, "vectors", "regen", "--out", str(out), "golden_tree.json", "golden_large_vocab.json.gz")
    assert proc.returncode == 2 and "already holds golden_tree.json; pass --overwrite" in proc.stderr
    proc = run(
        site,
        "vectors",
        "regen",
        "--out",
        str(out),
        "--overwrite",
        "golden_tree.json",
        "golden_large_vocab.json.gz",
    )
    assert proc.returncode == 0 and f"wrote {target} (replaced)" in proc.stdout
    sums = [ln for ln in proc.stdout.splitlines() if re.fullmatch(r"[0-9a-f]{64}  \S+", ln)]
    assert len(sums) == 2
    check = subprocess.run(
        ["sha256sum", "-c"], input="\n".join(sums) + "\n", capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_vector_set_cut_down_with_a_matching_pin_file_is_refused(site: Path) -> None:
    """The pins are the package's code: dropping vectors from a file and writing a pin file of one's own
    beside the data (what release.json was) does not make the file this release's."""
    path = data(site) / "golden_tree.json"
    doc = json.loads(path.read_text())
    doc["testGroups"][0]["tests"] = doc["testGroups"][0]["tests"][:1]
    path.write_text(json.dumps(doc))
    fake = {
        **store.release(),
        "files": {**store.release()["files"], "golden_tree.json": store.file_sha256(path)},
    }
    (site / "dyadic24" / "vectors" / "release.json").write_text(json.dumps(fake))
    for command in COMMANDS:
        proc = run(site, *command)
        assert proc.returncode == 2 and "golden_tree.json: sha256" in proc.stderr, proc.stderr
        assert proc.stdout == ""


def test_a_changed_accumulated_file_is_one_line(site: Path) -> None:
    path = data(site) / "accumulated.json"
    path.write_text(path.read_text().replace('"rows": 10000', '"rows": 10001'))
    for command in COMMANDS:
        proc = run(site, *command)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "accumulated.json" in proc.stderr


def test_the_repair_advice_fits_where_the_package_is(site: Path) -> None:
    path = data(site) / "golden_tree.json"
    path.write_text(path.read_text() + " ")
    proc = run(site, "cite")
    assert "reinstall the package: `pip install --force-reinstall --no-deps dyadic24==" in proc.stderr
    # in this source checkout the advice is git's
    assert store.restore_advice(store.DATA_DIR / "golden_tree.json") == (
        f"restore it with `git -C {REPO} checkout -- vectors/data/golden_tree.json`"
    )


def test_schema_validation_needs_no_optional_package() -> None:
    """vectors/schema_check.py: the base install rejects what the schema rejects (jsonschema blocked)."""
    code = (
        "import sys; sys.modules['jsonschema'] = None\n"
        "from dyadic24.vectors import cli, store\n"
        "doc = store.load_file(store.DATA_DIR / 'golden_order.json')\n"
        "assert cli.validate(doc, 'ok') == []\n"
        "doc['testGroups'][0]['tauBits'] = 'xyz'\n"
        "print(cli.validate(doc, 'bad'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "bad: schema: /testGroups/0/tauBits: 'xyz' does not match" in proc.stdout


def test_schema_checker_agrees_with_jsonschema_on_broken_copies() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from dyadic24.vectors.cli import _validator

    schema = json.loads((REPO / "vectors" / "schema.json").read_text())
    reference: Any = jsonschema.Draft202012Validator(schema)
    doc = store.load_file(store.DATA_DIR / "golden_order.json")
    edits: list[Callable[[Any], Any]] = [
        lambda d: d["testGroups"][0].__setitem__("tauBits", "xyz"),
        lambda d: d["testGroups"][0]["tests"][0]["logits"][0].__setitem__(0, 1.5),
        lambda d: d["testGroups"][0]["tests"][0].__setitem__("extra", 1),
        lambda d: d["testGroups"][0]["tests"][0]["trace"][0].pop("path"),
        lambda d: d["testGroups"][0]["tests"][0]["expected"]["ids"][0].append(3),
        lambda d: d.__setitem__("numberOfVectors", 0),
        lambda d: d["testGroups"][0]["tests"][0]["trace"][0].__setitem__("u", 1 << 24),
        lambda d: None,
    ]
    for edit in edits:
        copy = json.loads(json.dumps(doc))
        edit(copy)
        assert bool(list(_validator().errors(copy))) == bool(list(reference.iter_errors(copy)))


def test_gzip_bytes_do_not_enter_the_hash(tmp_path: Path) -> None:
    """The set hash covers the decompressed JSON text, so another zlib gives the same citation."""
    path = store.DATA_DIR / "golden_large_vocab.json.gz"
    other = tmp_path / path.name
    other.write_bytes(gzip.compress(store.read_text(path), compresslevel=1, mtime=123))
    assert store.file_sha256(other) == store.file_sha256(path)

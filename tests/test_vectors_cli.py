"""`dyadic24 vectors` (clause 13.1): check --quick passes, regeneration is deterministic."""

from __future__ import annotations

from dyadic24.vectors import cli, store
from dyadic24.vectors.generate import build, encode


def test_check_quick_passes() -> None:
    assert cli.main(["check", "--quick"]) == 0


def test_regeneration_reproduces_small_files_byte_for_byte() -> None:
    names = ["golden_tree.json", "golden_allocation.json"]
    first = build(names)
    second = build(names)
    assert first == second
    for name in names:
        assert (store.DATA_DIR / name).read_bytes() == encode(name, first[name]), f"{name}: run regen"


def test_gzip_encoding_is_deterministic() -> None:
    text = b'{"a": 1}\n'
    assert encode("x.json.gz", text) == encode("x.json.gz", text)
    assert encode("x.json", text) == text


def test_list_and_hash_commands(capsys: object) -> None:
    assert cli.main(["list"]) == 0
    assert cli.main(["hash"]) == 0


def test_full_check_regenerates_every_file_byte_for_byte() -> None:
    """What CI promises: `dyadic24 vectors check` (schema, hashes, counts, full regeneration)."""
    assert cli.main(["check"]) == 0

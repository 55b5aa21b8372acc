"""Every vector file validates against vectors/schema.json and the generator's consistency rules."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from dyadic24.vectors import cli, store

FILES = [p.name for p in store.vector_files()]


def test_schema_is_a_valid_json_schema() -> None:
    schema = json.loads((Path(cli.__file__).resolve().parent / "schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("name", FILES)
def test_file_validates(name: str) -> None:
    doc = store.load_file(store.DATA_DIR / name)
    assert cli.validate(doc, name) == []
    assert doc["specSha256"] == store.spec_sha256(), "stale header: run `dyadic24 vectors regen`"


def test_schema_rejects_a_float_logit() -> None:
    doc = store.load_file(store.DATA_DIR / "golden_order.json")
    doc["testGroups"][0]["tests"][0]["logits"][0][0] = 1.5
    assert cli.validate(doc, "mutated")

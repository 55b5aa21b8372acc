"""A small JSON Schema (draft 2020-12) validator for vectors/schema.json: no package beyond the base install.

It implements exactly the keywords that schema uses (type, const, enum, pattern, minimum, maximum,
minItems, maxItems, uniqueItems, items, required, properties, additionalProperties, $ref to $defs,
oneOf, allOf, if/then) and fails loudly on any other keyword, so that the schema cannot grow a rule
that this validator silently ignores. tests/test_vectors_schema.py checks that it agrees with the
jsonschema package (a test dependency) on the committed files and on broken copies of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any

ANNOTATIONS = {"$schema", "$id", "title", "description", "$comment", "$defs"}
KEYWORDS = {
    "type", "const", "enum", "pattern", "minimum", "maximum", "minItems", "maxItems", "uniqueItems", "items",
    "required", "properties", "additionalProperties", "$ref", "oneOf", "allOf", "if", "then",
}  # fmt: skip


@cache
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _type_ok(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    raise ValueError(f"schema: unknown type {name!r}")


def _same(a: Any, b: Any) -> bool:
    """JSON equality (1 and True differ, as in JSON Schema)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


class Validator:
    """Validates documents against one schema; ``errors(doc)`` yields (path, message) pairs."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.root = schema

    def _resolve(self, ref: str) -> dict[str, Any]:
        if not ref.startswith("#/"):
            raise ValueError(f"schema: only local $ref is supported, got {ref!r}")
        node: Any = self.root
        for part in ref[2:].split("/"):
            node = node[part]
        return dict(node)

    def errors(self, doc: Any) -> Iterator[tuple[str, str]]:
        yield from self._check(doc, self.root, "")

    def _check(self, value: Any, schema: dict[str, Any], path: str) -> Iterator[tuple[str, str]]:
        unknown = set(schema) - KEYWORDS - ANNOTATIONS
        if unknown:
            raise ValueError(f"schema keyword(s) {sorted(unknown)} not supported by schema_check")
        if "$ref" in schema:
            yield from self._check(value, self._resolve(schema["$ref"]), path)
        if "type" in schema and not _type_ok(value, schema["type"]):
            yield path, f"{value!r:.60} is not of type {schema['type']!r}"
            return
        if "const" in schema and not _same(value, schema["const"]):
            yield path, f"{value!r:.60} is not {schema['const']!r}"
        if "enum" in schema and not any(_same(value, e) for e in schema["enum"]):
            yield path, f"{value!r:.60} is not one of {schema['enum']!r}"
        if isinstance(value, str) and "pattern" in schema and not _regex(schema["pattern"]).search(value):
            yield path, f"{value!r:.60} does not match {schema['pattern']!r}"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if "minimum" in schema and value < schema["minimum"]:
                yield path, f"{value} is less than the minimum {schema['minimum']}"
            if "maximum" in schema and value > schema["maximum"]:
                yield path, f"{value} is greater than the maximum {schema['maximum']}"
        if isinstance(value, list):
            yield from self._array(value, schema, path)
        if isinstance(value, dict):
            yield from self._object(value, schema, path)
        for sub in schema.get("allOf", []):
            yield from self._check(value, sub, path)
        if "oneOf" in schema:
            matching = sum(not any(True for _ in self._check(value, s, path)) for s in schema["oneOf"])
            if matching != 1:
                yield path, f"matches {matching} of the oneOf alternatives, not exactly 1"
        if "if" in schema and not any(True for _ in self._check(value, schema["if"], path)):
            yield from self._check(value, schema.get("then", {}), path)

    def _array(self, value: list[Any], schema: dict[str, Any], path: str) -> Iterator[tuple[str, str]]:
        if "minItems" in schema and len(value) < schema["minItems"]:
            yield path, f"has {len(value)} items, fewer than {schema['minItems']}"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            yield path, f"has {len(value)} items, more than {schema['maxItems']}"
        if schema.get("uniqueItems"):
            seen: list[Any] = []
            for item in value:
                if any(_same(item, s) for s in seen):
                    yield path, f"has non-unique item {item!r:.60}"
                    break
                seen.append(item)
        if "items" in schema:
            for i, item in enumerate(value):
                yield from self._check(item, schema["items"], f"{path}/{i}")

    def _object(self, value: dict[str, Any], schema: dict[str, Any], path: str) -> Iterator[tuple[str, str]]:
        for key in schema.get("required", []):
            if key not in value:
                yield path, f"{key!r} is a required property"
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                yield from self._check(item, props[key], f"{path}/{key}")
            elif extra is False:
                yield path, f"additional property {key!r} is not allowed"
            elif isinstance(extra, dict):
                yield from self._check(item, extra, f"{path}/{key}")

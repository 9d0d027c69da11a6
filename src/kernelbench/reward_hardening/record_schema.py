"""The record's JSON Schema, and a check of a record against it before it is handed out.

``verified_record.schema.json`` is the one description of a schema-1.1 record: the
type of every field and, in ``description`` and ``x-unit``, its meaning and unit (the
schema reference page is generated from it).  :func:`problems` validates a record the
way a JSON Schema (draft 2020-12) validator would validate the JSON text written from
it, for the keywords this schema uses; a keyword it does not know raises
:class:`UnsupportedSchema` instead of being skipped, so that a constraint added to the
schema can never go unchecked.  Keywords starting with ``x-`` are annotations.

Runs in the trusted parent (the record builder); imports only the standard library,
since ``jsonschema`` is a development dependency only.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

__all__ = ["SCHEMA_PATH", "UnsupportedSchema", "load_schema", "problems"]

SCHEMA_PATH = Path(__file__).resolve().parent / "verified_record.schema.json"


class UnsupportedSchema(ValueError):
    """The schema uses a keyword this validator does not implement."""


def load_schema() -> dict:
    """A fresh copy of the parsed schema."""
    return json.loads(SCHEMA_PATH.read_text())


@functools.lru_cache(maxsize=1)
def _cached_schema() -> dict:
    return load_schema()


def problems(instance: Any, ref: str = "record", schema: dict | None = None) -> list[str]:
    """Every way ``instance`` breaks ``$defs/<ref>`` of the schema (empty when it is valid)."""
    root = schema if schema is not None else _cached_schema()
    out: list[str] = []
    _check(instance, {"$ref": f"#/$defs/{ref}"}, root, "$", out)
    return out


# keywords that say something about the document or about the reader only
_ANNOTATIONS = {"$schema", "$id", "$defs", "title", "description"}


def _is_type(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, (list, tuple))  # a tuple is written as a JSON array
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    raise UnsupportedSchema(f"unknown type {name!r}")


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, arrays and objects compare element-wise."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if _is_number(a) and _is_number(b):
        return a == b
    return type(a) is type(b) and a == b


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _valid(instance: Any, schema: Any, root: dict) -> bool:
    found: list[str] = []
    _check(instance, schema, root, "$", found)
    return not found


def _resolve(ref: str, root: dict) -> Any:
    if not ref.startswith("#/$defs/"):
        raise UnsupportedSchema(f"unsupported $ref {ref!r}")
    return root["$defs"][ref[len("#/$defs/"):]]


def _check(value: Any, schema: Any, root: dict, path: str, out: list[str]) -> None:
    if schema is True:
        return
    if schema is False:
        out.append(f"{path}: not allowed")
        return
    for key in schema:
        if key not in _KEYWORDS and key not in _ANNOTATIONS and not key.startswith("x-"):
            raise UnsupportedSchema(f"schema keyword {key!r} is not implemented")
    if "$ref" in schema:
        _check(value, _resolve(schema["$ref"], root), root, path, out)
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(value, n) for n in names):
            out.append(f"{path}: {type(value).__name__} is not of type {' or '.join(names)}")
            return
    if "const" in schema and not _equal(value, schema["const"]):
        out.append(f"{path}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and not any(_equal(value, e) for e in schema["enum"]):
        out.append(f"{path}: {value!r} is not one of {schema['enum']!r}")
    if _is_number(value):
        if "minimum" in schema and value < schema["minimum"]:
            out.append(f"{path}: {value!r} is less than {schema['minimum']!r}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            out.append(f"{path}: {value!r} is not greater than {schema['exclusiveMinimum']!r}")
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            out.append(f"{path}: {value!r} is not less than {schema['exclusiveMaximum']!r}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            out.append(f"{path}: shorter than {schema['minLength']} characters")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            out.append(f"{path}: {value[:80]!r} does not match {schema['pattern']!r}")
    if isinstance(value, (list, tuple)) and "items" in schema:
        for i, item in enumerate(value):
            _check(item, schema["items"], root, f"{path}[{i}]", out)
    if isinstance(value, dict):
        _check_object(value, schema, root, path, out)
    for sub in schema.get("allOf", ()):
        _check(value, sub, root, path, out)
    if "if" in schema:
        branch = "then" if _valid(value, schema["if"], root) else "else"
        if branch in schema:
            _check(value, schema[branch], root, path, out)
    if "not" in schema and _valid(value, schema["not"], root):
        out.append(f"{path}: matches a schema it must not match")


def _check_object(value: dict, schema: dict, root: dict, path: str, out: list[str]) -> None:
    for name in schema.get("required", ()):
        if name not in value:
            out.append(f"{path}: required field {name!r} is missing")
    props = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        where = f"{path}.{key}"
        matched = False
        if key in props:
            matched = True
            _check(item, props[key], root, where, out)
        for pattern, sub in patterns.items():
            if isinstance(key, str) and re.search(pattern, key):
                matched = True
                _check(item, sub, root, where, out)
        if matched:
            continue
        if extra is False:
            out.append(f"{where}: field not allowed")
        else:
            _check(item, extra, root, where, out)


_KEYWORDS = {"$ref", "type", "const", "enum", "minimum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
             "pattern", "items", "required", "properties", "patternProperties", "additionalProperties", "allOf",
             "if", "then", "else", "not"}

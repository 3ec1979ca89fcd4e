"""The JSON Schema of ``algorithm.yaml``, with what each field expects in words, and how a
violation is said.

Each field's schema carries an ``expected`` phrase (a keyword JSON Schema ignores) that the
error messages quote, so a user reads "inputs[0].max: expected a whole number of at least 1
or null (no maximum), got 'lots'" rather than a validator's internals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from jsonschema.exceptions import ValidationError

from nearline.errors import ManifestError

ID_PATTERN = r"^[a-z0-9_-]{1,64}$"
VERSION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$"
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"
"""An algorithm's id, a parameter's or an input's name: letters, digits, ``_`` and ``-``,
starting with a letter or ``_``, at most 64 characters."""
MEDIA_TYPE_PATTERN = r"^[A-Za-z0-9][\w.+-]*/[A-Za-z0-9][\w.+-]*(\s*;.*)?$"


def _argv(example: str) -> dict[str, Any]:
    return {
        "type": "array",
        "minItems": 1,
        "items": {"type": "string", "minLength": 1, "pattern": "^[^\\x00]*$"},
        "expected": "a non-empty list of strings (an argv, run without a shell), such as "
        + example,
    }


_TEXT = {"type": "string", "expected": "text"}
_NAME = {
    "type": "string",
    "pattern": NAME_PATTERN,
    "expected": "a name of letters, digits, '_' or '-' starting with a letter or '_' "
    "(at most 64 characters)",
}
_SIZE = {
    "anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "minLength": 1}],
    "expected": "a size such as '2GiB' or '512MB'",
}

INPUT = {
    "type": "object",
    "expected": "a data input: a mapping with name, collection and optional min, max, description",
    "required": ["name", "collection"],
    "additionalProperties": False,
    "properties": {
        "name": _NAME,
        "collection": {
            "type": "string",
            "minLength": 1,
            "maxLength": 256,
            "expected": "the id of the catalogue collection the granules come from, or '*' "
            "for whichever collections an order names",
        },
        "min": {
            "type": "integer",
            "minimum": 0,
            "expected": "a whole number of at least 0 (granules per run; default 1)",
        },
        "max": {
            "type": ["integer", "null"],
            "minimum": 1,
            "expected": "a whole number of at least 1, or null (no maximum)",
        },
        "description": _TEXT,
    },
}

OUTPUT = {
    "type": "object",
    "expected": "an output: a mapping with name and optional media_type, pattern, description",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "name": _NAME,
        "media_type": {
            "type": "string",
            "pattern": MEDIA_TYPE_PATTERN,
            "expected": "a media type such as application/x-netcdf or image/png",
        },
        "pattern": {
            "type": "string",
            "minLength": 1,
            "expected": "a file name pattern such as '*.nc' (the files this output names)",
        },
        "description": _TEXT,
    },
}

RESOURCES = {
    "type": "object",
    "expected": "a mapping of cpus, memory, disk and timeout",
    "additionalProperties": False,
    "properties": {
        "cpus": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 1024,
            "expected": "a number of CPUs greater than 0, such as 1 or 0.5",
        },
        "memory": _SIZE,
        "disk": _SIZE,
        "timeout": {
            "anyOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "string"}],
            "expected": "a duration: seconds, or a string such as '90s', '30m' or '2h'",
        },
    },
}

TEST = {
    "type": "object",
    "expected": "a test case: a mapping with inputs, optional parameters, and expect",
    "required": ["inputs", "expect"],
    "additionalProperties": False,
    "properties": {
        "inputs": {
            "type": "object",
            "expected": "a mapping of input names to lists of files in the package",
            "additionalProperties": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "expected": "a list of paths of files in the package",
            },
        },
        "parameters": {"type": "object", "expected": "a mapping of parameter values"},
        "expect": {
            "type": "object",
            "minProperties": 1,
            "expected": "a mapping of output file names to the package files they must equal",
            "additionalProperties": {
                "type": "string",
                "minLength": 1,
                "expected": "the path of a file in the package",
            },
        },
    },
}

MANIFEST_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "expected": "a mapping of the manifest's fields (id, version, title, description, command, "
    "inputs, outputs ...)",
    "required": ["id", "version", "title", "description", "command", "inputs", "outputs"],
    "additionalProperties": False,
    "properties": {
        "id": {
            "type": "string",
            "pattern": ID_PATTERN,
            "expected": "1 to 64 lowercase letters, digits, '-' or '_', such as 'ndvi-smooth'",
        },
        "version": {
            "type": "string",
            "pattern": VERSION_PATTERN,
            "expected": "a version string such as '1.0' (quote it in YAML) of letters, digits, "
            "'.', '_', '+' and '-'",
        },
        "title": {"type": "string", "minLength": 1, "maxLength": 200, "expected": "a short title"},
        "description": _TEXT,
        "command": _argv("[python, main.py] or [./smooth]"),
        "build": _argv("[make] or [make, FC=gfortran, FFLAGS=-O2]"),
        "requirements": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "expected": "a list of Python requirements such as ['pyhdf>=0.11']",
        },
        "inputs": {
            "type": "array",
            "minItems": 1,
            "items": INPUT,
            "expected": "a non-empty list of data inputs (name, collection, min, max)",
        },
        "outputs": {
            "type": "array",
            "minItems": 1,
            "items": OUTPUT,
            "expected": "a non-empty list of outputs (name, media_type, pattern)",
        },
        "parameters": {
            "type": "object",
            "expected": "a JSON Schema of type object describing the parameters",
        },
        "resources": RESOURCES,
        "tests": {"type": "array", "items": TEST, "expected": "a list of test cases"},
        "collection": {
            "type": "string",
            "pattern": ID_PATTERN,
            "expected": "the id of the output collection: 1 to 64 lowercase letters, digits, "
            "'-' or '_'",
        },
    },
}


# -- messages -------------------------------------------------------------------------------
def schema_error(error: ValidationError) -> ManifestError:
    """A schema violation as a ManifestError naming the field, what it expects and got."""
    path = list(error.absolute_path)
    if error.validator == "required":
        missing = next(name for name in error.validator_value if name not in error.instance)
        expected = error.schema["properties"][missing].get("expected", "a value")
        return ManifestError(f"missing; expected {expected}", field=field_name([*path, missing]))
    if error.validator == "additionalProperties" and "properties" in error.schema:
        known = error.schema["properties"]
        extra = sorted(name for name in error.instance if name not in known)[0]
        return ManifestError(
            f"unknown field; expected one of {', '.join(known)}", field=field_name([*path, extra])
        )
    expected = _expected(error)
    return ManifestError(
        f"expected {expected}, got {shown(error.instance)}", field=field_name(path)
    )


def _expected(error: ValidationError) -> str:
    """The ``expected`` phrase of the deepest schema on the error's path that has one."""
    schema: Any = MANIFEST_SCHEMA
    found = schema["expected"]
    for key in error.absolute_schema_path:
        try:
            schema = schema[key]
        except (KeyError, IndexError, TypeError):
            break
        if isinstance(schema, Mapping) and "expected" in schema:
            found = schema["expected"]
    return found


def field_name(path: Sequence[Any]) -> str:
    """``["inputs", 0, "max"]`` as ``inputs[0].max``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top)"


def shown(value: Any) -> str:
    """A value as a message quotes it, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_json_values(value: Any, path: list[Any]) -> None:
    """YAML makes dates, sets and bytes that JSON (and the service) cannot hold."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ManifestError(f"keys must be text, got {shown(key)}", field=field_name(path))
            check_json_values(item, [*path, key])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_json_values(item, [*path, index])
    elif isinstance(value, date):
        raise ManifestError(
            f"YAML read {value.isoformat()} as a date; quote it to make it text",
            field=field_name(path),
        )
    elif value is not None and not isinstance(value, str | int | float | bool):
        raise ManifestError(f"expected a JSON value, got {shown(value)}", field=field_name(path))

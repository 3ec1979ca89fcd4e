"""The JSON Schema of ``algorithm.yaml``, with what each field expects in words.

Each field's schema carries an ``expected`` phrase (a keyword JSON Schema ignores) that the
error messages quote, so a user reads "inputs[0].max: expected a whole number of at least 1
or null (no maximum), got 'lots'" rather than a validator's internals.
"""

from __future__ import annotations

from typing import Any

ID_PATTERN = r"^[a-z0-9_-]{1,64}$"
VERSION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$"
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"
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
            "expected": "the id of the catalogue collection the granules come from",
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

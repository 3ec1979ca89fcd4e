"""The OpenAPI 3.0 rendering of the service's 3.1 document, for the clients that read only 3.0
(the OGC's API - Features test suite, whose parser refuses 3.1's ``type: 'null'``).

FastAPI writes 3.1; /api serves this rendering to a request that asks for
``application/vnd.oai.openapi+json;version=3.0`` (the landing page's service-desc type) and
the 3.1 document to every other. Written here because no maintained Python library converts
3.1 down (the one that does, @apiture/openapi-down-convert, is an npm tool); the document
uses few 3.1 features, each rewritten below to the 3.0 form that accepts the same values or,
where 3.0 cannot say as much (tuples), a little more.
"""

from __future__ import annotations

import copy
from typing import Any

VERSION = "3.0.3"
MEDIA_TYPE = "application/vnd.oai.openapi+json;version=3.0"
NULL = {"type": "null"}


def downgrade(document: dict[str, Any]) -> dict[str, Any]:
    """A 3.0 copy of the 3.1 ``document`` (left as it is)."""
    rendered = copy.deepcopy(document)
    rendered["openapi"] = VERSION
    rendered.get("info", {}).pop("summary", None)  # 3.1 only
    rendered.get("info", {}).get("license", {}).pop("identifier", None)
    for schema in rendered.get("components", {}).get("schemas", {}).values():
        _schema(schema)
    for operations in rendered.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict):
                _walk_operation(operation)
    return rendered


def _walk_operation(operation: dict[str, Any]) -> None:
    for parameter in operation.get("parameters", []):
        _in_place(parameter)
    if "requestBody" in operation:
        _in_place(operation["requestBody"])
    for response in operation.get("responses", {}).values():
        _in_place(response)


def _in_place(holder: dict[str, Any]) -> None:
    """Rewrite the schemas a parameter, body or response holds (directly or by media type)."""
    if "schema" in holder:
        _schema(holder["schema"])
    for media in holder.get("content", {}).values():
        if "schema" in media:
            _schema(media["schema"])
    for header in holder.get("headers", {}).values():
        _in_place(header)


def _schema(schema: Any) -> None:
    """Rewrite one JSON schema (and every schema inside it) to 3.0, in place."""
    if not isinstance(schema, dict):
        return
    for key in ("properties", "patternProperties"):
        for inner in schema.get(key, {}).values():
            _schema(inner)
    for key in ("items", "additionalProperties", "not"):
        _schema(schema.get(key))
    for key in ("anyOf", "oneOf", "allOf"):
        for inner in schema.get(key, []):
            _schema(inner)
    _nullable(schema)
    if "const" in schema:
        schema["enum"] = [schema.pop("const")]
    if "prefixItems" in schema:
        positions = schema.pop("prefixItems")
        same = all(position == positions[0] for position in positions)
        schema.setdefault("items", positions[0] if same else {"anyOf": positions})
    for bound in ("Minimum", "Maximum"):
        exclusive = schema.get(f"exclusive{bound}")
        if isinstance(exclusive, int | float) and not isinstance(exclusive, bool):
            schema[bound.lower()] = exclusive
            schema[f"exclusive{bound}"] = True
    if "examples" in schema:
        examples = schema.pop("examples")
        if isinstance(examples, list) and examples:
            schema["example"] = examples[0]
    if "$ref" in schema and len(schema) > 1:  # 3.0 ignores a reference's siblings
        schema["allOf"] = [{"$ref": schema.pop("$ref")}]


def _nullable(schema: dict[str, Any]) -> None:
    """3.1's ``null`` type (in anyOf/oneOf or a list of types) as 3.0's ``nullable``."""
    kind = schema.get("type")
    if isinstance(kind, list):
        rest = [k for k in kind if k != "null"]
        if len(rest) < len(kind):
            schema["nullable"] = True
        schema["type"] = rest[0] if len(rest) == 1 else rest
        if len(rest) > 1:
            schema.pop("type")
            schema["anyOf"] = [{"type": k} for k in rest]
    for key in ("anyOf", "oneOf"):
        choices = schema.get(key)
        if choices and NULL in choices:
            rest = [choice for choice in choices if choice != NULL]
            schema["nullable"] = True
            if len(rest) == 1:
                schema.pop(key)
                only = rest[0]
                if "$ref" in only:
                    schema["allOf"] = [only]
                else:
                    schema.update(only)
            else:
                schema[key] = rest
    if kind == "null":
        schema.pop("type")
        schema["nullable"] = True
        schema["enum"] = [None]

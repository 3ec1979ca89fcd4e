"""What ``POST /subscriptions`` accepts, as a JSON Schema (2020-12, as OpenAPI 3.1 reads it):
parse_subscription checks every body against it, and the service's OpenAPI document
publishes it, so the two cannot disagree.

What depends on the process named cannot be in a static schema, and is checked beside it: a
process (or version) you may not order is a 404, as its own URL is; an ``input`` it does not
have, ``search.collections`` other than that input's collection, and ``parameters`` its
description refuses are 400s.
"""

from __future__ import annotations

from typing import Any

from nearline.archive.search_schema import BBOX, DATED_DATETIME_SCHEMA, GEOMETRY, NAME, nullable
from nearline.orders.subscriptions._policies import (
    CALENDAR_DURATION,
    FIXED_DURATION,
    MAX_BATCH,
    NO_PARTS,
    ZERO_DURATION,
)

URL = r"^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9._~%!$&'()*+,;=:@-]+(?:[/?#][^\s]*)?$"
_SCALAR = {"type": ["string", "number", "boolean"]}
_PERIOD = {
    "type": "string",
    "pattern": f"^(?:{CALENDAR_DURATION}|{FIXED_DURATION})$",
    "not": {"anyOf": [{"pattern": NO_PARTS}, {"pattern": ZERO_DURATION}]},
    "description": "An ISO 8601 duration longer than 0: years and months (P1M), or weeks, "
    "days, hours, minutes and seconds (P1D, PT6H), not both",
}
_DEADLINE = {
    "type": "string",
    "pattern": f"^{FIXED_DURATION}$",
    "not": {"pattern": NO_PARTS},
    "description": "An ISO 8601 duration of fixed length (PT6H): after the period's end",
}
POLICY: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["each"],
            "properties": {"each": {"const": 1}},
        },
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["batch"],
            "properties": {"batch": {"type": "integer", "minimum": 1, "maximum": MAX_BATCH}},
        },
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["period"],
            "properties": {"period": _PERIOD, "deadline": _DEADLINE},
        },
    ]
}
SAVED_SEARCH: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "collections": {
            "type": "array",
            "items": NAME,
            "minItems": 1,
            "maxItems": 1,
            "description": "the input's own collection (the default)",
        },
        "bbox": nullable(BBOX),
        "intersects": nullable(GEOMETRY),
        "datetime": nullable(DATED_DATETIME_SCHEMA),
        "properties": {
            "type": "object",
            "description": "item properties by equality (a list: any of its values)",
            "additionalProperties": {"anyOf": [_SCALAR, {"type": "array", "items": _SCALAR}]},
        },
    },
    "not": {
        "required": ["bbox", "intersects"],
        "properties": {"bbox": {"type": "array"}, "intersects": {"type": "object"}},
    },
}
SUBSCRIBER: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "properties": {
        "successUri": {"type": "string", "pattern": URL},
        "failedUri": {"type": "string", "pattern": URL},
    },
}
SUBSCRIPTION: dict[str, Any] = {
    "type": "object",
    "description": "A subscription (null is the same as leaving a field out)",
    "additionalProperties": False,
    "required": ["process", "policy"],
    "properties": {
        "process": {"type": "string", "minLength": 1, "description": "the process to run"},
        "version": nullable({"type": "string", "minLength": 1, "description": "pin a version"}),
        "input": nullable({"type": "string", "description": "the data input granules go to"}),
        "search": SAVED_SEARCH,
        "parameters": {"type": "object", "description": "the process's other inputs"},
        "policy": POLICY,
        "subscriber": nullable(SUBSCRIBER),
    },
}
REPROCESS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"version": nullable({"type": "string", "minLength": 1})},
}

"""What an item search accepts, written once as patterns and JSON Schemas (2020-12, as
OpenAPI 3.1 reads them): the parser checks values against these, and the service's OpenAPI
document publishes them, so the document and the service cannot disagree.

Rules no schema can state stay 400s: as STAC (and its validator) asks, a bbox with an
intersects, a bbox whose south lies north of its north, an interval that ends before it
starts; and a geometry whose edges cross (shapely's is_valid: repairing one can take minutes).
A geometry with no positions is read as finding nothing (``Search.impossible``).
"""

from __future__ import annotations

import re
from typing import Any

# -- RFC 3339 dates and times, as Python reads them: years 0001-9999, real calendar days -------
_YEAR = r"(?:[0-9]{3}[1-9]|[0-9]{2}[1-9][0-9]|[0-9][1-9][0-9]{2}|[1-9][0-9]{3})"
_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_MONTH_DAY = (
    r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    r"|02-(?:0[1-9]|1[0-9]|2[0-8]))"
)
DATE = rf"(?:{_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)"
_TIME = (
    r"[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?"
    r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)
INSTANT = rf"{DATE}{_TIME}"  # a date alone is refused by a search, as STAC's validator asks


def _interval(instant: str) -> str:
    return rf"^(?:{instant}(?:/(?:{instant}|\.\.)?)?|(?:\.\.)?/{instant})?$"  # "": no bound


DATETIME = _interval(INSTANT)
DATED_DATETIME = _interval(rf"{DATE}(?:{_TIME})?")  # orders and subscriptions: a date is its day
# a collection's items (OGC API - Features' route): also a date with a bare 'T', as GDAL's OAPIF
# driver sends for a -where on a date (start_datetime > '2025-01-01': 2025-01-01T/..)
ITEMS_DATETIME = _interval(rf"{DATE}(?:{_TIME}|[Tt])?")

# -- a bbox in a query string: 4 or 6 decimal numbers, longitudes and latitudes in range ------
_LONGITUDE = r"-?(?:180(?:\.0+)?|(?:1[0-7][0-9]|[0-9]{1,2})(?:\.[0-9]+)?)"
_LATITUDE = r"-?(?:90(?:\.0+)?|[0-8]?[0-9](?:\.[0-9]+)?)"
_HEIGHT = r"-?[0-9]+(?:\.[0-9]+)?"
_CORNER = rf"{_LONGITUDE},{_LATITUDE}"
BBOX_TEXT = rf"^(?:{_CORNER},{_CORNER}|{_CORNER},{_HEIGHT},{_CORNER},{_HEIGHT})?$"
NAMES_TEXT = r"^(?:[^,\x00]+(?:,[^,\x00]+)*)?$"  # ids or collections, comma-separated
WHOLE_TEXT = r"^-?[0-9]+$"

# -- JSON values ------------------------------------------------------------------------------
LONGITUDE: dict[str, Any] = {"type": "number", "minimum": -180, "maximum": 180}
LATITUDE: dict[str, Any] = {"type": "number", "minimum": -90, "maximum": 90}
NUMBER: dict[str, Any] = {"type": "number"}
NAME: dict[str, Any] = {"type": "string", "minLength": 1, "pattern": r"^[^\x00]*$"}
BBOX: dict[str, Any] = {
    "description": "west, south, east, north (or with heights: west, south, bottom, east, "
    "north, top); west greater than east crosses the antimeridian; a south north of the "
    "north is a 400",
    "oneOf": [
        {
            "type": "array",
            "prefixItems": [LONGITUDE, LATITUDE, LONGITUDE, LATITUDE],
            "minItems": 4,
            "maxItems": 4,
        },
        {
            "type": "array",
            "prefixItems": [LONGITUDE, LATITUDE, NUMBER, LONGITUDE, LATITUDE, NUMBER],
            "minItems": 6,
            "maxItems": 6,
        },
    ],
}
POSITION: dict[str, Any] = {  # longitude, latitude and an optional height (ignored)
    "type": "array",
    "prefixItems": [LONGITUDE, LATITUDE, NUMBER],
    "minItems": 2,
    "maxItems": 3,
}
_LINE = {"type": "array", "items": POSITION, "minItems": 2}
_RING = {"type": "array", "items": POSITION, "minItems": 4}
_POLYGON = {"type": "array", "items": _RING}
_COORDINATES = {
    "Point": POSITION,
    "MultiPoint": {"type": "array", "items": POSITION},
    "LineString": _LINE,
    "MultiLineString": {"type": "array", "items": _LINE},
    "Polygon": _POLYGON,
    "MultiPolygon": {"type": "array", "items": _POLYGON},
}
SIMPLE_GEOMETRIES: dict[str, dict[str, Any]] = {
    kind: {
        "type": "object",
        "required": ["type", "coordinates"],
        "properties": {"type": {"const": kind}, "coordinates": coordinates},
    }
    for kind, coordinates in _COORDINATES.items()
}
GEOMETRY_COLLECTION: dict[str, Any] = {
    "type": "object",
    "required": ["type", "geometries"],
    "properties": {
        "type": {"const": "GeometryCollection"},
        "geometries": {"type": "array", "items": {"oneOf": list(SIMPLE_GEOMETRIES.values())}},
    },
}
GEOMETRY: dict[str, Any] = {
    "description": "A GeoJSON geometry (RFC 7946; a collection's members are not collections). "
    "Heights are ignored; rings need not be closed; a geometry whose edges cross is a 400 "
    "(no schema can say so), and one with no positions finds nothing.",
    "oneOf": [*SIMPLE_GEOMETRIES.values(), GEOMETRY_COLLECTION],
}
DATETIME_SCHEMA: dict[str, Any] = {
    "type": "string",
    "pattern": DATETIME,
    "description": "An RFC 3339 date-time with its zone, or an interval of two separated by "
    "'/', open at one end with '..' or nothing; an interval that ends before it starts is a "
    "400; empty, no time bound",
}
DATED_DATETIME_SCHEMA: dict[str, Any] = {
    "type": "string",
    "pattern": DATED_DATETIME,
    "description": "As a search's datetime, and a date alone stands for its whole day",
}
ITEMS_DATETIME_SCHEMA: dict[str, Any] = {
    "type": "string",
    "pattern": ITEMS_DATETIME,
    "description": DATETIME_SCHEMA["description"] + "; a date alone, or with a bare 'T' "
    "(GDAL's OAPIF driver), stands for its whole UTC day",
}
LIMIT: dict[str, Any] = {
    "type": "integer",
    "minimum": 1,
    "description": "Items a page holds at most (above 10,000, 10,000)",
}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


SEARCH_BODY: dict[str, Any] = {
    "type": "object",
    "description": "An item search (null is the same as leaving a field out). The next "
    "page is asked for by merging the next link's body (a token) into this one.",
    "additionalProperties": False,
    "properties": {
        "collections": nullable({"type": "array", "items": NAME}),
        "ids": nullable({"type": "array", "items": NAME}),
        "bbox": nullable({"$ref": "#/components/schemas/BBox"}),
        "intersects": nullable({"$ref": "#/components/schemas/Geometry"}),
        "datetime": nullable(DATETIME_SCHEMA),
        "limit": nullable(LIMIT),
        "filter": nullable(
            {
                "description": "A CQL2 filter (STAC's Filter extension): CQL2 JSON, or CQL2 "
                "text with filter-lang cql2-text; names only queryables (GET /queryables)",
                "type": ["object", "string", "boolean"],
            }
        ),
        "filter-lang": nullable({"enum": ["cql2-json", "cql2-text"]}),
        "filter-crs": nullable({"const": "http://www.opengis.net/def/crs/OGC/1.3/CRS84"}),
        "sortby": nullable(
            {
                "description": "The order (STAC's Sort extension); ties fall by id",
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["field"],
                    "additionalProperties": False,
                    "properties": {
                        "field": {"type": "string", "minLength": 1},
                        "direction": {"enum": ["asc", "desc"]},
                    },
                },
            }
        ),
        "fields": {
            "description": "Which parts of each item to answer with (STAC's Fields "
            "extension); null is a 400",
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "include": nullable({"type": "array", "items": {"type": "string"}}),
                "exclude": nullable({"type": "array", "items": {"type": "string"}}),
            },
        },
    },
    "not": {  # STAC: a bbox and a geometry together are a 400
        "required": ["bbox", "intersects"],
        "properties": {"bbox": {"type": "array"}, "intersects": {"type": "object"}},
    },
}
COMPONENTS = {"BBox": BBOX, "Geometry": GEOMETRY}  # what SEARCH_BODY's $refs name


def matches(pattern: str, text: str) -> bool:
    """Whether ``text`` matches ``pattern`` as JSON Schema means it: the whole text (Python's
    ``$`` would also let a final newline through)."""
    return re.fullmatch(pattern.removeprefix("^").removesuffix("$"), text) is not None

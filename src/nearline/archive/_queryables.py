"""What a collection's items can be filtered and sorted by: the queryables.

Every item has an id, a collection, a time range and (mostly) a footprint: those are columns of
the catalogue. Everything else is an item's own properties (platform, instruments, the reader
and product its file was read by...), which each catalogue records as items arrive: every
(collection, property name, JSON type) it has seen, in a small table of its own. So the
queryables of a collection are what its items really carry, looked up without reading an item,
and a filter naming anything else is refused by name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from nearline.archive._base import Item

# the columns every item has, as STAC names them (datetime is the start, as items show it)
CORE: dict[str, dict[str, Any]] = {
    "id": {"title": "Item id", "type": "string"},
    "collection": {"title": "Collection id", "type": "string"},
    "datetime": {"title": "Start of the data", "type": "string", "format": "date-time"},
    "start_datetime": {"title": "Start of the data", "type": "string", "format": "date-time"},
    "end_datetime": {"title": "End of the data", "type": "string", "format": "date-time"},
    "geometry": {"title": "Footprint", "format": "geometry-any"},
}
TIME_COLUMNS = {
    "datetime": "i.start_us",
    "start_datetime": "i.start_us",
    "end_datetime": "i.end_us",
}
SCALARS = {"string", "number", "integer", "boolean"}  # what a property can be compared or sorted by
QUERYABLE_NAME = re.compile(r"^[^\"\\\x00-\x1f]{1,200}$")  # safe inside a JSON path's quotes
SCHEMA_DIALECT = "https://json-schema.org/draft/2019-09/schema"


def json_type(value: Any) -> str:
    """The JSON Schema type of a property's value."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if value is None:
        return "null"
    return "object"


def item_property_types(items: Iterable[Item]) -> set[tuple[str, str, str]]:
    """(collection, property name, JSON type) of every property ``items`` carry."""
    return {
        (item.collection, name, json_type(value))
        for item in items
        for name, value in item.properties.items()
        if QUERYABLE_NAME.match(name) and name not in CORE
    }


def property_types(rows: Iterable[Mapping[str, Any]]) -> dict[str, set[str]]:
    """Each property name's JSON types, from rows of the catalogue's ``item_properties``."""
    found: dict[str, set[str]] = {}
    for row in rows:
        found.setdefault(row["name"], set()).add(row["type"])
    return found


def queryables_schema(types: Mapping[str, set[str]], *, url: str, title: str) -> dict[str, Any]:
    """The queryables as OGC API - Features Part 3 and STAC's filter extension publish them.

    Parameters
    ----------
    types
        Each item property's JSON types (property_types).
    url
        Where the document is served: its ``$id``.
    title
        What it describes (a collection, or every collection).

    Returns
    -------
    dict
        A JSON Schema of the queryable properties; no other name is accepted.
    """
    properties: dict[str, Any] = dict(CORE)
    for name in sorted(types):
        kinds = sorted(types[name] - {"null"}) or ["null"]
        properties[name] = {"type": kinds[0] if len(kinds) == 1 else kinds}
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": url,
        "type": "object",
        "title": title,
        "description": "What items can be filtered by (filter=, CQL2 text or JSON) and sorted "
        "by (sortby=: the columns and the properties of one type of string, number or boolean)",
        "properties": properties,
        "additionalProperties": False,
        # the names as Part 3's drafts listed them, where GDAL 3.6's OAPIF driver reads them
        "queryables": [{"id": name} for name in properties],
    }

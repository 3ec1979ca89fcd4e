"""The STAC API Sort extension's ``sortby`` as users send it, checked.

GET gives ``-properties.datetime,id`` (a leading ``-`` for descending, ``+`` or nothing for
ascending; a ``+`` left unescaped in a URL arrives as a space, and is read as one); POST gives
``[{"field": "properties.datetime", "direction": "desc"}]``. A field is named as in an item
(``properties.platform``) or as its queryable (``platform``); what can be sorted by is checked
against the catalogue's queryables when the search runs (_ordered.py).
"""

from __future__ import annotations

from typing import Any

from nearline.errors import SearchError

TOP_LEVEL = {"id", "collection"}  # an item's own fields a sort may name without properties.
NOT_SORTABLE = {"geometry", "bbox", "assets", "links", "type", "stac_version", "properties"}
SORT_WANTED = '-properties.datetime,id, or [{"field": "id", "direction": "asc"}]'


def parse_sortby(value: Any) -> tuple[tuple[str, bool], ...]:
    """``sortby`` as (queryable, descending) pairs.

    Parameters
    ----------
    value
        GET's text (comma-separated fields, each with an optional sign) or POST's list of
        ``{"field": ..., "direction": "asc" | "desc"}``.

    Returns
    -------
    tuple
        (queryable name, descending) in order; a field named twice is refused.

    Raises
    ------
    SearchError
        Not of either form, or a field that can never be sorted by (geometry, assets...).
    """
    if isinstance(value, str):
        keys = [_signed(part) for part in value.split(",")]
    elif isinstance(value, list) and value:
        keys = [_entry(entry) for entry in value]
    else:
        raise SearchError(f"sortby: expected {SORT_WANTED}; got {value!r}")
    names = [name for name, _ in keys]
    if len(set(names)) != len(names):
        raise SearchError(f"sortby: a field is named twice in {value!r}")
    return tuple(keys)


def _signed(part: str) -> tuple[str, bool]:
    text = part.strip(" ") if part.startswith(" ") else part  # '+' unescaped: a space
    descending = text.startswith("-")
    return _queryable(text.lstrip("+-") if text[:1] in "+-" else text), descending


def _entry(entry: Any) -> tuple[str, bool]:
    if not isinstance(entry, dict) or not isinstance(entry.get("field"), str):
        raise SearchError(f"sortby: expected {SORT_WANTED}; got {entry!r}")
    direction = entry.get("direction", "asc")
    if direction not in ("asc", "desc"):
        raise SearchError(f"sortby: direction is asc or desc, got {direction!r}")
    if set(entry) - {"field", "direction"}:
        raise SearchError(f"sortby: each entry has a field and a direction; got {entry!r}")
    return _queryable(entry["field"]), direction == "desc"


def _queryable(field: str) -> str:
    """The queryable a sort field names (``properties.x`` and ``x`` alike)."""
    name = field.removeprefix("properties.")
    if not name or name in NOT_SORTABLE or (name == field and "." in name):
        raise SearchError(
            f"sortby: {field!r} is not sortable; sort by id, collection, datetime, "
            "start_datetime, end_datetime or a string, number or boolean property"
        )
    return name

"""A STAC item search as users send it (query strings or a JSON body) turned into a checked
:class:`~nearline.archive._base.Search`; every refusal names the parameter and what it wants.

Both shapes arrive here: GET's strings (``bbox=1,2,3,4``, ``collections=a,b``, an
``intersects`` GeoJSON string) and POST's lists and objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, time
from typing import Any

import orjson
import shapely
from jsonschema import Draft202012Validator
from shapely.geometry import shape

from nearline.archive._base import BBox, Search
from nearline.archive._filter import parse_filter
from nearline.archive._sorting import parse_sortby
from nearline.archive.search_schema import (
    BBOX,
    BBOX_TEXT,
    DATED_DATETIME,
    DATETIME,
    GEOMETRY,
    NAMES_TEXT,
    WHOLE_TEXT,
    matches,
)
from nearline.errors import SearchError

MAX_LIMIT = 10_000  # a page never holds more (larger limits are cut to this, as STAC allows)
KNOWN = {"collections", "ids", "bbox", "intersects", "datetime", "limit", "token"}
EXTENSIONS = {"filter", "filter-lang", "filter-crs", "sortby"}  # STAC's Filter and Sort
OPEN = {"", ".."}
DATE_LENGTH = len("2012-12-12")
BBOX_CHECK = Draft202012Validator(BBOX)
GEOMETRY_CHECK = Draft202012Validator(GEOMETRY)
BBOX_WANTED = "4 numbers west,south,east,north such as -10,35,30,60 (or 6, with heights)"


def query_values(query: Mapping[str, Any]) -> dict[str, Any]:
    """GET's text as the JSON values a POST body gives, for
    [`parse_search`][nearline.archive.parse_search].

    Parameters
    ----------
    query
        A GET query's values: ``bbox=1,2,3,4``, ``ids=a,b``, ``limit=5``, an ``intersects``
        JSON text. What is not text (or not one of these) is passed on as it is; empty text
        is a parameter left out.

    Returns
    -------
    dict
        The same parameters as JSON values.

    Raises
    ------
    SearchError
        A text that is not of its parameter's form; the message says what was expected.
    """
    values = dict(query)
    for name, value in query.items():
        if not isinstance(value, str) or name not in TEXT_FORMS:
            continue
        pattern, wanted, convert = TEXT_FORMS[name]
        if value == "":
            values[name] = None
        elif pattern is not None and not matches(pattern, value):
            raise SearchError(f"{name}: expected {wanted}, got {value!r}")
        else:
            values[name] = convert(value)
    return values


def _json_text(value: str) -> Any:
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        raise SearchError("intersects: expected a GeoJSON geometry; it is not JSON") from None


TEXT_FORMS: dict[str, tuple[str | None, str, Any]] = {  # GET's text: pattern, wanted, value
    "collections": (NAMES_TEXT, "collection ids such as a,b", lambda text: text.split(",")),
    "ids": (NAMES_TEXT, "item ids such as a,b", lambda text: text.split(",")),
    "bbox": (
        BBOX_TEXT,
        f"{BBOX_WANTED} as decimals, longitudes in -180..180 and latitudes in -90..90",
        lambda text: [float(part) for part in text.split(",")],
    ),
    "intersects": (None, "a GeoJSON geometry", _json_text),
    "limit": (WHOLE_TEXT, "a whole number of at least 1", int),
}


def parse_search(query: Mapping[str, Any], *, viewer: str | None, dates: bool = False) -> Search:
    """STAC item-search parameters as a checked [`Search`][nearline.archive.Search].

    Exactly what search_schema.py describes is accepted.

    Parameters
    ----------
    query
        ``collections``, ``ids``, ``bbox``, ``intersects``, ``datetime``, ``limit`` and
        ``token`` as JSON values: a POST body, or GET's text through ``query_values``; and
        ``filter`` (with ``filter-lang`` and ``filter-crs``) and ``sortby``, as STAC's Filter
        and Sort extensions give them.
    viewer
        The user searching (None: anonymous, public items only).
    dates
        Let a date alone stand for its day (orders and subscriptions; STAC's item search
        refuses it).

    Returns
    -------
    Search
        Ready for [`Catalogue.search`][nearline.archive.Catalogue.search].

    Raises
    ------
    SearchError
        An unknown or unusable parameter; the message names it and what it wants.
    """
    unknown = sorted(set(query) - KNOWN - EXTENSIONS)
    if unknown:
        raise SearchError(
            f"unknown search parameter {unknown[0]!r}; use "
            f"{', '.join(sorted(KNOWN | EXTENSIONS | {'fields'}))}"
        )
    bbox = parse_bbox(query["bbox"]) if query.get("bbox") is not None else None
    given = query.get("intersects") is not None  # {} is no geometry: refused, not ignored
    intersects = parse_intersects(query["intersects"]) if given else None
    if bbox is not None and intersects is not None:
        raise SearchError("bbox and intersects: give one or the other, not both")
    given = query.get("datetime") not in (None, "")
    start, end = parse_datetime(query["datetime"], dates=dates) if given else (None, None)
    token = query.get("token")
    if token is not None and not isinstance(token, str):
        raise SearchError("token: expected the string a next link gave")
    return Search(
        filter=_filter(query),
        sortby=parse_sortby(query["sortby"]) if query.get("sortby") not in (None, "") else (),
        collections=_names(query.get("collections"), "collections"),
        ids=_names(query.get("ids"), "ids"),
        bbox=bbox,
        intersects=intersects,
        start=start,
        end=end,
        limit=parse_limit(query.get("limit", 10)),
        token=token or None,
        viewer=viewer,
    )


def _filter(query: Mapping[str, Any]) -> Mapping[str, Any] | bool | None:
    """The filter, checked (its language and CRS without a filter: a 400, not ignored)."""
    if query.get("filter") in (None, ""):
        for name in ("filter-lang", "filter-crs"):
            if query.get(name) is not None:
                raise SearchError(f"{name}: given without a filter")
        return None
    return parse_filter(query["filter"], lang=query.get("filter-lang"), crs=query.get("filter-crs"))


def _names(value: Any, what: str) -> tuple[str, ...] | None:
    if value is None or value == []:
        return None
    if not isinstance(value, list | tuple) or not all(
        isinstance(v, str) and v and "\x00" not in v for v in value
    ):
        raise SearchError(f'{what}: expected a list of ids, such as ["a", "b"] or a,b')
    return tuple(dict.fromkeys(value))


def whole_number(value: Any) -> int | None:
    """``value`` as a whole number if it is one, as JSON Schema's integer is.

    Parameters
    ----------
    value
        A number from a JSON document or a query.

    Returns
    -------
    int or None
        The int, or the float with nothing after the point, as an int; None for anything
        else, booleans included.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def parse_limit(value: Any) -> int:
    """The page size: a whole number of at least 1 (above 10,000 it is cut to 10,000)."""
    limit = whole_number(value)
    if limit is None or limit < 1:
        raise SearchError(f"limit: expected a whole number of at least 1, got {value!r}")
    return min(limit, MAX_LIMIT)


def parse_bbox(value: Any) -> BBox:
    """A STAC bbox, checked.

    Parameters
    ----------
    value
        4 JSON numbers west, south, east, north (or 6 with heights, which are ignored);
        never booleans. West greater than east crosses the antimeridian.

    Returns
    -------
    BBox
        (west, south, east, north).

    Raises
    ------
    SearchError
        Not 4 (or 6) numbers in range, or south north of north.
    """
    if not BBOX_CHECK.is_valid(value):
        raise SearchError(
            f"bbox: expected {BBOX_WANTED}, longitudes in -180..180 and latitudes in -90..90; "
            f"got {value!r}"
        )
    numbers = [float(v) for v in value]
    if len(numbers) == 6:
        numbers = [numbers[0], numbers[1], numbers[3], numbers[4]]
    west, south, east, north = numbers
    if south > north:  # a 400, as STAC's validator asks (no schema can say so)
        raise SearchError(f"bbox: south ({south:g}) must not lie north of north ({north:g})")
    return (west, south, east, north)


def parse_intersects(value: Any) -> dict[str, Any]:
    """A GeoJSON geometry object as search_schema.GEOMETRY describes it, heights dropped; one
    whose edges cross (invalid, for shapely) is refused."""
    if not GEOMETRY_CHECK.is_valid(value):
        error = min(GEOMETRY_CHECK.iter_errors(value), key=lambda e: len(e.path))
        where = "".join(f"[{part!r}]" for part in error.path)
        raise SearchError(
            "intersects: expected a GeoJSON geometry such as "
            '{"type": "Polygon", "coordinates": [[[0, 0], [10, 0], [5, 8], [0, 0]]]} with '
            f"longitudes in -180..180 and latitudes in -90..90; at {where or 'the top'}: "
            f"{error.message[:200]}"
        )
    flat = _flat(value)
    geometry = shape(flat)
    if not shapely.is_valid(geometry):  # repairing one (make_valid) can take minutes
        raise SearchError(f"intersects: invalid geometry ({shapely.is_valid_reason(geometry)})")
    return dict(value) if flat == value else flat


def _flat(geometry: Mapping[str, Any]) -> dict[str, Any]:
    """``geometry`` with each position cut to longitude and latitude."""
    if geometry["type"] == "GeometryCollection":
        parts = [_flat(part) for part in geometry["geometries"]]
        return {"type": "GeometryCollection", "geometries": parts}

    def cut(value: Any) -> Any:
        if value and not isinstance(value[0], list):
            return value[:2]
        return [cut(part) for part in value]

    coordinates = cut(geometry["coordinates"])
    if geometry["type"] == "MultiPolygon":  # shapely cannot build one holding an empty polygon
        coordinates = [polygon for polygon in coordinates if polygon]
    return {"type": geometry["type"], "coordinates": coordinates}


def parse_datetime(value: Any, *, dates: bool = False) -> tuple[datetime | None, datetime | None]:
    """A STAC datetime as the (start, end) it bounds.

    Parameters
    ----------
    value
        An RFC 3339 date-time, or an interval ``a/b`` open at either end (``..`` or empty).
        Times without a zone are refused.
    dates
        Let a date alone stand for its whole day.

    Returns
    -------
    start, end : datetime or None
        UTC bounds; None where the interval is open. An instant gives it twice.

    Raises
    ------
    SearchError
        Not RFC 3339 (or a zone is missing), or an interval that ends before it starts.
    """
    if not isinstance(value, str) or not matches(DATED_DATETIME if dates else DATETIME, value):
        raise SearchError(
            f"datetime: {value!r} is not an RFC 3339 date-time such as 2012-12-12T00:00:00Z "
            f"(with its time zone){', a date' if dates else ''}, or an interval of them "
            "(a/b, a/.., ../b)"
        )
    if "/" in value:
        first, _, second = value.partition("/")
        start = None if first in OPEN else _instant(first, end=False)
        end = None if second in OPEN else _instant(second, end=True)
        if start is not None and end is not None and start > end:  # a 400, as STAC asks
            raise SearchError(f"datetime: the interval {value!r} ends before it starts")
        return start, end
    return _instant(value, end=False), _instant(value, end=True)


def _instant(text: str, *, end: bool) -> datetime:
    """One RFC 3339 date-time (or a date: its first, or with ``end`` its last, moment), in
    UTC where UTC reaches (years 1-9999)."""
    if len(text) == DATE_LENGTH:
        return datetime.combine(date.fromisoformat(text), time.max if end else time(), UTC)
    moment = datetime.fromisoformat(text.upper())
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00:00+01:00: before year 1 in UTC; kept in its zone
        return moment

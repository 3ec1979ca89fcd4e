"""A STAC item search as users send it (query strings or a JSON body) turned into a checked
:class:`~nearline.archive.base.Search`; every refusal names the parameter and what it wants.

Both shapes arrive here: GET's strings (``bbox=1,2,3,4``, ``collections=a,b``, an
``intersects`` GeoJSON string) and POST's lists and objects.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import orjson
import shapely
from shapely.geometry import shape

from nearline.archive.base import BBox, Search
from nearline.errors import SearchError

MAX_LIMIT = 10_000  # a page never holds more (larger limits are cut to this, as STAC allows)
KNOWN = {"collections", "ids", "bbox", "intersects", "datetime", "limit", "token"}
GEOMETRY_TYPES = {
    "Point",
    "MultiPoint",
    "LineString",
    "MultiLineString",
    "Polygon",
    "MultiPolygon",
    "GeometryCollection",
}
OPEN = {"", ".."}


def parse_search(query: Mapping[str, Any], *, viewer: str | None) -> Search:
    """STAC item-search parameters as a checked [`Search`][nearline.archive.Search].

    Parameters
    ----------
    query
        ``collections``, ``ids``, ``bbox``, ``intersects``, ``datetime``, ``limit`` and
        ``token``, as a GET query string's values or a POST body's JSON.
    viewer
        The user searching (None: anonymous, public items only).

    Returns
    -------
    Search
        Ready for [`Catalogue.search`][nearline.archive.Catalogue.search].

    Raises
    ------
    SearchError
        An unknown or unusable parameter; the message names it and what it wants.
    """
    unknown = sorted(set(query) - KNOWN)
    if unknown:
        raise SearchError(
            f"unknown search parameter {unknown[0]!r}; use {', '.join(sorted(KNOWN))}"
        )
    bbox = parse_bbox(query["bbox"]) if query.get("bbox") not in (None, "", []) else None
    given = query.get("intersects") not in (None, "")  # {} is no geometry: refused, not ignored
    intersects = parse_intersects(query["intersects"]) if given else None
    if bbox is not None and intersects is not None:
        raise SearchError("bbox and intersects: give one or the other, not both")
    start, end = parse_datetime(query["datetime"]) if query.get("datetime") else (None, None)
    token = query.get("token")
    if token is not None and not isinstance(token, str):
        raise SearchError("token: expected the string a next link gave")
    return Search(
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


def _names(value: Any, what: str) -> tuple[str, ...] | None:
    if value in (None, "", []):
        return None
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, Sequence) or not all(isinstance(v, str) and v for v in value):
        raise SearchError(f'{what}: expected a list of ids, such as ["a", "b"] or a,b')
    return tuple(dict.fromkeys(value))


def parse_limit(value: Any) -> int:
    """The page size: a whole number of at least 1 (above 10,000 it is cut to 10,000)."""
    try:
        limit = int(value) if not isinstance(value, bool | float) else None
    except (TypeError, ValueError):
        limit = None
    if limit is None or limit < 1:
        raise SearchError(f"limit: expected a whole number of at least 1, got {value!r}")
    return min(limit, MAX_LIMIT)


def parse_bbox(value: Any) -> BBox:
    """A STAC bbox, checked.

    Parameters
    ----------
    value
        4 numbers west, south, east, north (or 6 with heights, which are ignored), as a
        sequence or ``"w,s,e,n"`` text. West greater than east crosses the antimeridian.

    Returns
    -------
    BBox
        (west, south, east, north).

    Raises
    ------
    SearchError
        Not 4 (or 6) finite numbers, or out of range.
    """
    if isinstance(value, str):
        value = value.split(",")
    try:
        numbers = [float(v) for v in value]
    except (TypeError, ValueError):
        raise SearchError(
            f"bbox: expected 4 numbers west,south,east,north such as -10,35,30,60, got {value!r}"
        ) from None
    if len(numbers) == 6:
        numbers = [numbers[0], numbers[1], numbers[3], numbers[4]]
    if len(numbers) != 4 or not all(math.isfinite(n) for n in numbers):
        raise SearchError(
            f"bbox: expected 4 numbers west,south,east,north such as -10,35,30,60, got {value!r}"
        )
    west, south, east, north = numbers
    if not (-180 <= west <= 180 and -180 <= east <= 180):
        raise SearchError(f"bbox: longitudes must lie in -180..180, got {west:g} and {east:g}")
    if not (-90 <= south <= north <= 90):
        raise SearchError(
            f"bbox: latitudes must lie in -90..90 with south <= north, got {south:g}, {north:g}"
        )
    return (west, south, east, north)


def parse_intersects(value: Any) -> dict[str, Any]:
    """A GeoJSON geometry (an object, or its JSON text) with longitudes and latitudes in
    range."""
    if isinstance(value, str | bytes):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            raise SearchError("intersects: expected a GeoJSON geometry; it is not JSON") from None
    if not isinstance(value, Mapping) or value.get("type") not in GEOMETRY_TYPES:
        raise SearchError(
            "intersects: expected a GeoJSON geometry object, such as "
            '{"type": "Polygon", "coordinates": [...]}'
        )
    try:
        geometry = shape(value)
    except Exception as error:  # shapely raises many kinds on malformed coordinates
        raise SearchError(f"intersects: not a usable {value['type']}: {error}") from None
    if geometry.is_empty:
        raise SearchError("intersects: the geometry is empty")
    west, south, east, north = geometry.bounds
    if not (-180 <= west <= east <= 180 and -90 <= south <= north <= 90):
        raise SearchError("intersects: coordinates must be longitude -180..180, latitude -90..90")
    if not shapely.is_valid(geometry):
        raise SearchError(f"intersects: invalid geometry ({shapely.is_valid_reason(geometry)})")
    return dict(value)


def parse_datetime(value: Any) -> tuple[datetime | None, datetime | None]:
    """A STAC datetime as the (start, end) it bounds.

    Parameters
    ----------
    value
        An RFC 3339 instant, or an interval ``a/b`` open at either end (``..`` or empty). A
        bare date stands for the whole day. Times without a zone are refused.

    Returns
    -------
    start, end : datetime or None
        UTC bounds; None where the interval is open. An instant gives it twice.

    Raises
    ------
    SearchError
        Not RFC 3339, no zone, no end at all, or an interval that ends before it starts.
    """
    if not isinstance(value, str):
        raise SearchError(f"datetime: expected RFC 3339 text, got {value!r}")
    if "/" in value:
        first, _, second = value.partition("/")
        if first in OPEN and second in OPEN:
            raise SearchError("datetime: an interval needs at least one end")
        start = None if first in OPEN else _instant(first, end=False)
        end = None if second in OPEN else _instant(second, end=True)
        if start is not None and end is not None and start > end:
            raise SearchError(f"datetime: the interval {value!r} ends before it starts")
        return start, end
    if _is_date(value):
        return _instant(value, end=False), _instant(value, end=True)
    moment = _instant(value, end=False)
    return moment, moment


def _is_date(text: str) -> bool:
    return len(text) == 10 and text[4] == "-" and text[7] == "-"


def _instant(text: str, *, end: bool) -> datetime:
    """One RFC 3339 date-time (or a date: its first, or with ``end`` its last, moment)."""
    try:
        if _is_date(text):
            day = date.fromisoformat(text)
            moment = datetime.combine(day, time(), UTC)
            return moment + timedelta(days=1, microseconds=-1) if end else moment
        moment = datetime.fromisoformat(text.upper())
    except ValueError:
        raise SearchError(
            f"datetime: {text!r} is not an RFC 3339 date-time such as 2012-12-12T00:00:00Z"
        ) from None
    if moment.tzinfo is None:
        raise SearchError(f"datetime: {text!r} has no time zone; add Z for UTC")
    return moment.astimezone(UTC)

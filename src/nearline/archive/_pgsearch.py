"""Item search in PostgreSQL, on B-tree and GiST indexes, in one snapshot.

Answers come in start-time order (then position order: an item added again counts from its
last addition), a page at a time, and a page ends with the token of its last item, so the
next page starts right after it (keyset paging: page n costs what page 1 does).

Each asked-for collection is a stream of its own (a search of every collection is one stream
over them all), read through the B-tree on (collection, start, position) (or on (start,
position)) in order from where the page begins, with the time bounds and the token as index
conditions. Footprints are tested first by their bounding boxes in SQL, then exactly by
shapely, as the SQLite catalogue tests them (PostGIS's ``ST_Intersects`` answers otherwise
for a few degenerate shapes, such as a bbox of no width). A search with a place is read in
two steps, because the planner's choice between walking the B-tree in order and collecting
every item in the place from the GiST index (then sorting them) goes wrong both ways: the walk
is cheap when matches are common and endless when they are rare; the sort is cheap when they
are rare and reads a quarter of the archive for a quarter of the Earth. So the stream's next
hundred or so items in time order are read first; only if too few of them match, and the
stream goes on beyond them, is the place rare enough for the n-D GiST index over space and
time to read on from there (the planner's estimates for a place are too far off, for the
large footprints of swaths, to leave it the choice between a 2-D GiST and the B-tree). The
GiST is read a window of time at a time, as SQLite's R*Tree is: the first window as long as
the walk's rate of matches says the rest of the page needs, each next one twice as long, so
a page reads about a page's candidates and never sorts every match of the place to its end
(a site's time series, the place's matches over all time, read and sorted on every page:
0.2-0.8 s a page at 10^6 items). An item's end is not in the B-trees: a search from a time
walks from that time less the longest item of the collection.

Counting a search is _pgcount.py's; the catalogue keeps counts for the next pages
(_counts.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import shapely

from nearline.archive._base import Search
from nearline.archive._index import HOUR_US, hits, search_shape
from nearline.archive._rows import microseconds
from nearline.archive._scan import decode_token

COLUMNS = "i.seq, i.collection, i.id, i.owner, i.start_us, i.end_us, i.body"
FAR = 1e9  # hours: a time range's open end, in the 3-D boxes
WALK = 64  # items of a stream read in order before the GiST is (plus 4 a match)
MIN_WIDTH = 1_000_000  # the narrowest window of time the GiST is read in, in microseconds
Run = Callable[[str, list[Any]], list[Any]]  # runs one statement of the search: its rows


@dataclass(frozen=True)
class Stream:
    """Items of one collection (``key``), or of every collection in ``keys`` at once."""

    key: int | None
    keys: tuple[int, ...]
    longest: int  # microseconds
    last: int  # the last start, microseconds
    condition: tuple[str, tuple[Any, ...]] | None = None  # a filter's SQL on items (alias i)


@dataclass
class Query:
    """SQL conditions on items (alias ``i``) and their parameters, built up in order."""

    conditions: list[str] = field(default_factory=list)
    parameters: list[Any] = field(default_factory=list)

    def add(self, condition: str, *parameters: Any) -> None:
        self.conditions.append(condition)
        self.parameters.extend(parameters)

    @property
    def where(self) -> str:
        return " AND ".join(self.conditions) or "TRUE"


def search_rows(
    run: Run, search: Search, condition: tuple[str, list[Any]] | None = None
) -> tuple[list[Any], dict[int, str]]:
    """Up to ``limit + 1`` rows of ``search``'s answer from its token on, in order, and the
    ids of their collections by key; ``run`` executes each statement (in one snapshot);
    ``condition``: a filter's SQL the items must pass too."""
    decode_token(search.token)  # a forged token is refused, whatever the catalogue holds
    collections = run(*streams_sql(search))
    names = {row["key"]: row["id"] for row in collections}
    found = [
        row
        for stream in streams(search, collections, condition)
        for row in _stream(run, search, stream)
    ]
    found.sort(key=lambda row: (row["start_us"], row["seq"]))
    return found[: search.limit + 1], names


def streams_sql(search: Search) -> tuple[str, list[Any]]:
    """The collections the viewer may see (those asked for, if any): key, id, longest, last
    start."""
    sql = (
        "SELECT key, id, longest_us, COALESCE(last_start_us, 0) AS last_start_us "
        "FROM collections WHERE (owner IS NULL OR owner = %s)"
        + (" AND id = ANY(%s)" if search.collections is not None else "")
        + " ORDER BY key"
    )
    asked = [list(search.collections)] if search.collections is not None else []
    return sql, [search.viewer, *asked]


def streams(
    search: Search, rows: list[Any], condition: tuple[str, list[Any]] | None = None
) -> list[Stream]:
    """What to read: each asked-for collection, or every visible one as one stream (each
    with the filter's ``condition``)."""
    if not rows:
        return []
    where = (condition[0], tuple(condition[1])) if condition is not None else None
    if search.collections is not None:
        return [
            Stream(row["key"], (row["key"],), row["longest_us"], row["last_start_us"], where)
            for row in rows
        ]
    keys = tuple(row["key"] for row in rows)
    longest = max(row["longest_us"] for row in rows)
    return [Stream(None, keys, longest, max(row["last_start_us"] for row in rows), where)]


def _stream(run: Run, search: Search, stream: Stream) -> list[Any]:
    """The first ``limit + 1`` matches of ``stream`` from the token on, in order."""
    want = search.limit + 1
    boxes, where = search_shape(search)
    if boxes is None or where is None:  # no place: every candidate matches
        return run(*_plain_sql(search, stream, after=decode_token(search.token), most=want))
    if search.ids is not None:  # named items: the index on ids, as the planner likes
        return _planned(run, search, stream, boxes, where, want)
    cap = 4 * want + 64  # candidates a statement returns at most
    length = WALK + 4 * want  # items a walk reads at most
    after = decode_token(search.token)
    found: list[Any] = []
    while len(found) < want:
        rows = run(*_walk_sql(search, stream, boxes, after=after, length=length, most=cap))
        candidates = [row for row in rows if row["hit"]]
        found += exact_rows(candidates, where)
        ended = [row for row in rows if row["n"] == length]  # the walk's last item
        if len(rows) == cap and not ended:
            after = (rows[-1]["start_us"], rows[-1]["seq"])  # candidates abound: walk on
            continue
        if not ended:
            return found[:want]  # the walk read every item left
        # matches are rare: on in windows of time, as long as the walk's rate asks
        began = after[0] if after is not None else min(row["start_us"] for row in rows)
        end = (ended[0]["start_us"], ended[0]["seq"])
        width = (
            max(end[0] - began, MIN_WIDTH) * max(1, want - len(found)) // max(len(candidates), 1)
        )
        return found + _windows(run, search, stream, boxes, where, end, width, want - len(found))
    return found[:want]


def _windows(
    run: Run,
    search: Search,
    stream: Stream,
    boxes: list[tuple[float, float, float, float]],
    where: shapely.Geometry,
    after: tuple[int, int],
    width: int,
    want: int,
) -> list[Any]:
    """The first ``want`` matches after ``after``, read from the n-D GiST a window of start
    time at a time (the first ``width`` long, each next twice as long), each statement
    returning about twice the candidates still wanted (with their bodies) at most."""
    stop = stream.last + 1 if search.end is None else min(stream.last, microseconds(search.end)) + 1
    found: list[Any] = []
    until = min(after[0] + width, stop)
    while len(found) < want and after[0] < stop:
        cap = 2 * (want - len(found)) + 16
        rows = run(*_window_sql(search, stream, boxes, after=after, until=until, most=cap))
        found += exact_rows(rows, where)
        if len(rows) == cap:  # the window holds more: read on in it
            after = (rows[-1]["start_us"], rows[-1]["seq"])
            continue
        after, width = (until, -1), width * 2  # (start, -1): from that start on
        until = min(until + width, stop)
    return found[:want]


def _planned(
    run: Run,
    search: Search,
    stream: Stream,
    boxes: list[tuple[float, float, float, float]],
    where: shapely.Geometry,
    want: int,
) -> list[Any]:
    """The first ``want`` matches from the token on, as the planner reads them."""
    cap = 4 * want + 64
    after = decode_token(search.token)
    found: list[Any] = []
    while len(found) < want:
        rows = run(*_plain_sql(search, stream, after=after, most=cap, boxes=boxes))
        found += exact_rows(rows, where)
        if len(rows) < cap:
            break
        after = (rows[-1]["start_us"], rows[-1]["seq"])
    return found[:want]


def exact_rows(rows: list[Any], where: shapely.Geometry) -> list[Any]:
    """The candidates whose footprint intersects ``where`` (shapely, as SQLite's search)."""
    if not rows:
        return []
    inside = hits([bytes(row["wkb"]) for row in rows], where)
    return [row for row, hit in zip(rows, inside, strict=True) if hit]


def _plain_sql(
    search: Search,
    stream: Stream,
    *,
    after: tuple[int, int] | None,
    most: int,
    boxes: list[tuple[float, float, float, float]] | None = None,
) -> tuple[str, list[Any]]:
    """Up to ``most`` candidates after ``after``, in order, as the planner likes (with
    ``boxes``: through the n-D GiST index, as a rule)."""
    items = item_conditions(search, stream, after)
    columns = COLUMNS
    if boxes is not None:
        items.add(*space_time(search, boxes))
        columns += ", ST_AsBinary(i.footprint) AS wkb"
    sql = (
        f"SELECT {columns} FROM items AS i WHERE {items.where} ORDER BY i.start_us, i.seq LIMIT %s"
    )
    return sql, [*items.parameters, most]


def _window_sql(
    search: Search,
    stream: Stream,
    boxes: list[tuple[float, float, float, float]],
    *,
    after: tuple[int, int],
    until: int,
    most: int,
) -> tuple[str, list[Any]]:
    """Up to ``most`` candidates after ``after`` that start before ``until``, in order,
    through the n-D GiST index (the place over that stretch of time)."""
    items = item_conditions(search, stream, after)
    items.add("i.start_us < %s", until)
    items.add(*space_time(search, boxes, first=after[0], last=until))
    sql = (
        f"SELECT {COLUMNS}, ST_AsBinary(i.footprint) AS wkb FROM items AS i "
        f"WHERE {items.where} ORDER BY i.start_us, i.seq LIMIT %s"
    )
    return sql, [*items.parameters, most]


def _walk_sql(
    search: Search,
    stream: Stream,
    boxes: list[tuple[float, float, float, float]],
    *,
    after: tuple[int, int] | None,
    length: int,
    most: int,
) -> tuple[str, list[Any]]:
    """The candidates among the stream's next ``length`` items after ``after`` (``hit``),
    up to ``most`` rows in order; the walk's last item comes through too (``n = length``):
    it tells a walk cut short from one that read every item left."""
    items = item_conditions(search, stream, after)
    overlapping, *boxed = overlaps(boxes)
    sql = (
        f"SELECT * FROM (SELECT {COLUMNS}, ST_AsBinary(i.footprint) AS wkb, i.n, "
        f"{overlapping} AS hit FROM (SELECT {COLUMNS}, i.footprint, "
        "row_number() OVER (ORDER BY i.start_us, i.seq) AS n FROM "
        f"(SELECT {COLUMNS}, i.footprint FROM items AS i WHERE {items.where} "
        "ORDER BY i.start_us, i.seq LIMIT %s) AS i) AS i) AS i "
        "WHERE i.hit OR i.n = %s ORDER BY i.start_us, i.seq LIMIT %s"
    )
    return sql, [*boxed, *items.parameters, length, length, most]


def overlaps(boxes: list[tuple[float, float, float, float]]) -> tuple[Any, ...]:
    """The bounding-box test of a footprint (``&&``) and its parameters."""
    sql = " OR ".join("i.footprint && ST_MakeEnvelope(%s, %s, %s, %s, 4326)" for _ in boxes)
    return (f"({sql})", *[v for box in boxes for v in box])


def space_time(
    search: Search,
    boxes: list[tuple[float, float, float, float]],
    *,
    first: int | None = None,
    last: int | None = None,
) -> tuple[Any, ...]:
    """The 3-D box test (``&&&``, which the n-D GiST index answers) and its parameters:
    each box of the place over the search's time range, in hours (open ends: far), or over
    [first, last] (microseconds) where given."""
    if first is None and search.start is not None:
        first = microseconds(search.start)
    if last is None and search.end is not None:
        last = microseconds(search.end)
    low = first / HOUR_US if first is not None else -FAR
    high = last / HOUR_US if last is not None else FAR
    sql = " OR ".join(
        "i.space_time &&& ST_MakeLine(ST_MakePoint(%s, %s, %s), ST_MakePoint(%s, %s, %s))"
        for _ in boxes
    )
    corners = [v for (w, s, e, n) in boxes for v in (w, s, low, e, n, high)]
    return (f"({sql})", *corners)


def item_conditions(search: Search, stream: Stream, after: tuple[int, int] | None) -> Query:
    """The conditions on a stream's items from ``after`` on, but the place."""
    items = Query()
    if stream.key is not None:
        items.add("i.collection = %s", stream.key)
    else:
        items.add("i.collection = ANY(%s)", list(stream.keys))
    if search.viewer is None:
        items.add("i.owner IS NULL")
    else:
        items.add("(i.owner IS NULL OR i.owner = %s)", search.viewer)
    if search.start is not None:
        # the end is checked exactly; the start bound lets the B-tree skip what ends before
        items.add("i.end_us >= %s", microseconds(search.start))
        items.add("i.start_us >= %s", microseconds(search.start) - stream.longest)
    if search.end is not None:
        items.add("i.start_us <= %s", microseconds(search.end))
    if after is not None:
        items.add("(i.start_us, i.seq) > (%s, %s)", *after)
    if search.ids is not None:
        items.add("i.id = ANY(%s)", list(search.ids))
    if stream.condition is not None:
        items.add(f"({stream.condition[0]})", *stream.condition[1])
    return items

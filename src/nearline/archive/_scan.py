"""Item search that never reads the whole archive: the R*Tree walked in time windows.

Answers come in start-time order (then insertion order), a page at a time, and a page ends
with a token naming its last item, so the next page starts right after it: page n costs what
page 1 does. Each collection is searched in windows of start time that begin where the page
begins and double until the page is full: the first window is sized from the collection's
own density (its count over its time span) to hold about one page, so a search finds its page
in a few index probes whether the archive holds a thousand items or a billion. A window is
counted (no further than a few pages) before it is read: one denser than the average, as
after a gap or in a collection with a few far older items, is halved (skipping halves where
nothing starts) until it holds a few pages at most. Candidates from the (single-precision)
index are then checked exactly: time, owner, and shapely's ``intersects`` on the footprint.

Counting a search is _scan_count.py's; the catalogue keeps counts for the next pages
(_counts.py).
"""

from __future__ import annotations

import base64
import binascii
import sqlite3
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import shapely

from nearline.archive._base import Page, Search
from nearline.archive._index import HOUR_US, MAX_BOXES, SLACK_HOURS, Box, hits, hours, search_shape
from nearline.archive._rows import item_from_row, microseconds
from nearline.errors import SearchError

MIN_WIDTH = 1_000_000  # the narrowest window, in microseconds
CROWDED = 4  # a window holding more than this many pages' worth of boxes is narrowed
SLACK = int(SLACK_HOURS * HOUR_US)  # the index's time slack, in microseconds
TOKEN = struct.Struct("<qq")  # (start in microseconds, rowid) of a page's last item
EVERY = 2**62  # a want no search reaches
CANDIDATE = "SELECT i.rowid, i.start_us, i.end_us, i.owner, i.collection, i.id, i.wkb FROM "


@dataclass(frozen=True)
class Stream:
    """One collection to search (``key`` None: all at once) and its window numbers."""

    key: int | None
    first: int
    last: int
    count: int
    longest: int


@dataclass(frozen=True)
class Query:
    """A search in the units of the tables."""

    start: int | None
    end: int | None
    after: tuple[int, int] | None
    boxes: list[Box] | None
    where: shapely.Geometry | None
    viewer: str | None
    hidden: frozenset[int]
    ids: frozenset[str] | None
    want: int
    condition: tuple[str, list] | None = None  # a filter's SQL on items (alias i)

    def filtered(self) -> tuple[str, list]:
        """The filter as a clause to append to a WHERE, and its parameters."""
        if self.condition is None:
            return "", []
        return f" AND ({self.condition[0]})", list(self.condition[1])


def encode_token(start_us: int, rowid: int) -> str:
    return base64.urlsafe_b64encode(TOKEN.pack(start_us, rowid)).decode().rstrip("=")


def decode_token(token: str | None) -> tuple[int, int] | None:
    if token is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        return TOKEN.unpack(raw) if len(raw) == TOKEN.size else _bad_token()
    except (binascii.Error, ValueError):
        return _bad_token()


def _bad_token() -> tuple[int, int]:
    raise SearchError("token: not one this service gave; follow the next link of a page")


def search_items(
    connection: sqlite3.Connection, search: Search, condition: tuple[str, list] | None = None
) -> Page:
    """One page of ``search``'s answer (not counted: ``count_matches``); ``condition``: a
    filter's SQL the items must pass too."""
    if search.impossible:
        return Page(items=[])
    streams, query = prepare(connection, search, condition)
    if query.ids is not None:
        found = named_matches(connection, query, streams)
    else:
        found = sorted(hit for stream in streams for hit in _scan(connection, stream, query))
    page = found[: search.limit]
    token = encode_token(*page[-1][:2]) if len(found) > search.limit else None
    return Page(items=_load(connection, [rowid for _, rowid in page]), next_token=token)


def prepare(
    connection: sqlite3.Connection, search: Search, condition: tuple[str, list] | None
) -> tuple[list[Stream], Query]:
    boxes, where = search_shape(search)
    streams, hidden = _streams(connection, search)
    return streams, Query(
        start=microseconds(search.start) if search.start else None,
        end=microseconds(search.end) if search.end else None,
        after=decode_token(search.token),
        boxes=boxes,
        where=where,
        viewer=search.viewer,
        hidden=hidden,
        ids=frozenset(search.ids) if search.ids is not None else None,
        want=search.limit + 1,
        condition=condition,
    )


def start_span(stream: Stream, query: Query) -> tuple[int, int]:
    """The first and last start (microseconds) a match of ``stream`` may have."""
    low = stream.first
    if query.start is not None:
        low = max(low, query.start - stream.longest)
    if query.after is not None:
        low = max(low, query.after[0])
    high = stream.last if query.end is None else min(stream.last, query.end)
    return low, high


def _streams(connection: sqlite3.Connection, search: Search) -> tuple[list[Stream], frozenset[int]]:
    """What to scan: each asked-for collection the viewer may see, or (none asked) every
    collection at once; and the keys of collections the viewer may not see."""
    rows = connection.execute(
        "SELECT key, id, owner, first_start_us, last_start_us, count, longest_us FROM collections"
    ).fetchall()
    visible = [row for row in rows if row["owner"] is None or row["owner"] == search.viewer]
    hidden = frozenset(row["key"] for row in rows) - {row["key"] for row in visible}
    filled = [row for row in visible if row["count"] > 0 and row["first_start_us"] is not None]
    if search.collections is not None:
        wanted = set(search.collections)
        return [
            Stream(
                row["key"],
                row["first_start_us"],
                row["last_start_us"],
                row["count"],
                row["longest_us"],
            )
            for row in filled
            if row["id"] in wanted
        ], hidden
    if not filled:
        return [], hidden
    return [
        Stream(
            None,
            min(row["first_start_us"] for row in filled),
            max(row["last_start_us"] for row in filled),
            sum(row["count"] for row in filled),
            max(row["longest_us"] for row in filled),
        )
    ], hidden


def _scan(connection: sqlite3.Connection, stream: Stream, query: Query) -> list[tuple[int, int]]:
    """Up to ``query.want`` (start, rowid) of ``stream``'s matches after the token, in order."""
    low, high = start_span(stream, query)
    span = max(stream.last - stream.first, 1)
    width = max(MIN_WIDTH, span * query.want * 2 // max(stream.count, 1))
    found: list[tuple[int, int]] = []
    most = CROWDED * query.want
    while low <= high and len(found) < query.want:
        stop = min(low + width, high + 1)
        # a window denser than the average (or past a gap) is narrowed before it is read,
        # skipping halves where nothing starts
        crowded = count_boxes(connection, stream.key, query, low, stop, most) > most
        while crowded and stop - low > MIN_WIDTH:
            middle = low + (stop - low) // 2
            if count_boxes(connection, stream.key, query, low - SLACK, middle + SLACK, 0) == 0:
                low = middle
            else:
                stop = middle
                crowded = count_boxes(connection, stream.key, query, low, stop, most) > most
        found += _window(connection, stream.key, query, low, stop)
        low, width = stop, (stop - low) * 2
    return found[: query.want]


def count_boxes(
    connection: sqlite3.Connection, key: int | None, query: Query, low: int, stop: int, most: int
) -> int:
    """How many index boxes start in [low, stop), counted no further than ``most + 1``."""
    seen = 0
    for where, parameters in index_conditions(key, query, hours(low), hours(stop)):
        seen += connection.execute(
            f"SELECT COUNT(*) FROM (SELECT 1 FROM items_index AS x WHERE {where} LIMIT ?)",
            [*parameters, most + 1 - seen],
        ).fetchone()[0]
        if seen > most:
            break
    return seen


def index_conditions(
    key: int | None, query: Query, first: float, last: float
) -> list[tuple[str, list[float | int]]]:
    """The R*Tree conditions of a window whose boxes start within [first, last] hours: one
    (SQL, parameters) per box the search looks in."""
    sql = "x.t0 >= ? AND x.t0 <= ?"
    base: list[float | int] = [first, last]
    if query.start is not None:
        sql += " AND x.t1 >= ?"
        base.append(hours(query.start) - SLACK_HOURS)
    if key is not None:
        sql += " AND x.c0 <= ? AND x.c1 >= ?"
        base += [key, key]
    if not query.boxes:
        return [(sql, base)]
    return [
        (
            sql + " AND x.x1 >= ? AND x.x0 <= ? AND x.y1 >= ? AND x.y0 <= ?",
            [*base, west, east, south, north],
        )
        for west, south, east, north in query.boxes
    ]


def _window(
    connection: sqlite3.Connection, key: int | None, query: Query, low: int, stop: int
) -> list[tuple[int, int]]:
    """Matches starting in [low, stop), in order."""
    sql = CANDIDATE + f"items_index AS x JOIN items AS i ON i.rowid = x.id / {MAX_BOXES} WHERE "
    rows: dict[int, sqlite3.Row] = {}
    first, last = hours(low) - SLACK_HOURS, hours(stop) + SLACK_HOURS
    extra, more = query.filtered()
    for where, parameters in index_conditions(key, query, first, last):
        for row in connection.execute(sql + where + extra, [*parameters, *more]):
            if low <= row["start_us"] < stop:
                rows[row["rowid"]] = row
    return sorted(exact_matches(list(rows.values()), query))


def named_matches(
    connection: sqlite3.Connection, query: Query, streams: Sequence[Stream]
) -> list[tuple[int, int]]:
    """Matches among the items named by id (a short list: looked up one by one)."""
    keys = [stream.key for stream in streams]
    if not keys:
        return []
    rows = []
    extra, more = query.filtered()
    for item_id in sorted(query.ids or ()):
        named = connection.execute(
            CANDIDATE + "items AS i WHERE i.id = ?" + extra, (item_id, *more)
        )
        for row in named:
            if keys == [None] or row["collection"] in keys:
                rows.append(row)
    return sorted(exact_matches(rows, query))[: query.want]


def exact_matches(rows: list[sqlite3.Row], query: Query) -> list[tuple[int, int]]:
    """The exact test of index candidates: time, token, owner, ids, then the footprint."""
    kept = [
        row
        for row in rows
        if (query.start is None or row["end_us"] >= query.start)
        and (query.end is None or row["start_us"] <= query.end)
        and (query.after is None or (row["start_us"], row["rowid"]) > query.after)
        and (row["owner"] is None or row["owner"] == query.viewer)
        and row["collection"] not in query.hidden
        and (query.ids is None or row["id"] in query.ids)
    ]
    if query.where is not None and kept:
        inside = hits([row["wkb"] for row in kept], query.where)
        kept = [row for row, hit in zip(kept, inside, strict=True) if hit]
    return [(row["start_us"], row["rowid"]) for row in kept]


def _load(connection: sqlite3.Connection, rowids: list[int]) -> list:
    if not rowids:
        return []
    marks = ",".join("?" * len(rowids))
    rows = connection.execute(
        "SELECT i.*, c.id AS collection_id FROM items AS i "
        f"JOIN collections AS c ON c.key = i.collection WHERE i.rowid IN ({marks})",
        rowids,
    ).fetchall()
    by_rowid = {row["rowid"]: row for row in rows}
    return [item_from_row(by_rowid[rowid], by_rowid[rowid]["collection_id"]) for rowid in rowids]

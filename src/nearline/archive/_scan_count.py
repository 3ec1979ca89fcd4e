"""How many items match a search on the SQLite catalogue: counted afresh, or those added
after a position (for a count kept by _counts.py).

A count afresh first counts the index's candidate boxes, no further than ``count_to``; only
if they are no more are the candidates read, in one statement: the index's boxes give the
rows (``rowid IN``, so each row is read once, in rowid order), SQL tests everything but the
footprint (times, owner, collection, the filter) and returns only the footprints, which
shapely tests at once. Nothing is read row by row in Python, so a count costs little more
than reading its candidates' pages.

The candidates come from whichever tree holds fewer: a place over a short time from the
space-time tree (the boxes of that time), a place over a long time from the place tree (the
boxes around the place, of any time; their rows' times are then tested). Which is fewer is
told before either is read: the place tree's boxes are counted (no further than
``count_to``), the time range's items estimated from each collection's density, as the
page's windows are sized. A place over all time is the place tree's alone: both trees hold
the same boxes for it, and the place tree finds them without visiting every leaf.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from nearline.archive._base import Search
from nearline.archive._index import MAX_BOXES, SLACK_HOURS, hits, hours
from nearline.archive._scan import (
    CANDIDATE,
    EVERY,
    SLACK,
    Query,
    Stream,
    count_boxes,
    exact_matches,
    index_conditions,
    named_matches,
    prepare,
    start_span,
)


def count_matches(
    connection: sqlite3.Connection, search: Search, condition: tuple[str, list] | None = None
) -> int | None:
    """How many items match ``search`` (its token aside), or None past ``search.count_to``
    candidates; ``condition``: a filter's SQL the items must pass too."""
    if search.impossible:
        return 0
    streams, query = prepare(connection, replace(search, token=None), condition)
    return _count(connection, streams, query, search.count_to)


def count_added(
    connection: sqlite3.Connection,
    search: Search,
    condition: tuple[str, list] | None,
    after: int,
) -> int | None:
    """How many items added after rowid ``after`` match ``search``, or None if more than
    ``search.count_to`` were added to the collections searched (read by rowid, which only
    grows, then tested exactly, as a window's candidates are)."""
    streams, query = prepare(connection, replace(search, token=None), condition)
    keys = [stream.key for stream in streams if stream.key is not None]
    if not streams:
        return 0
    extra, more = query.filtered()
    if keys:  # else every collection: the hidden ones are left by exact_matches
        extra = f" AND i.collection IN ({','.join('?' * len(keys))}){extra}"
        more = [*keys, *more]
    rows = connection.execute(
        CANDIDATE + "items AS i WHERE i.rowid > ?" + extra + " LIMIT ?",
        [after, *more, search.count_to + 1],
    ).fetchall()
    return len(exact_matches(rows, query)) if len(rows) <= search.count_to else None


def _count(
    connection: sqlite3.Connection, streams: Sequence[Stream], query: Query, most: int
) -> int | None:
    """How many items match ``query`` in all, or None if the index finds more than ``most``
    candidate boxes for it (they are counted, not read, before any is read)."""
    if query.ids is not None:  # named items: looked up one by one, as for a page
        named = len(named_matches(connection, replace(query, want=EVERY), streams))
        return named if named <= most else None  # past ``most``, as any other search
    spans = [(stream, *start_span(stream, query)) for stream in streams]
    spans = [(stream, low, high + 1) for stream, low, high in spans if low <= high]
    if not spans:
        return 0
    if query.boxes is not None:
        keys = [stream.key for stream, _, _ in spans]
        whole = all(low <= s.first and stop > s.last for s, low, stop in spans)
        timed = sum(_items_between(stream, low, stop) for stream, low, stop in spans)
        fewer = most if whole else min(most, timed)  # the place tree's, if no more boxes
        if _placed_boxes(connection, keys, query, fewer) <= fewer:
            return _counted(connection, _placed_rows(keys, query), query)
        if whole:  # all time: the space-time tree would find the same boxes, too many
            return None
    seen = 0
    for stream, low, stop in spans:
        seen += count_boxes(connection, stream.key, query, low - SLACK, stop + SLACK, most - seen)
        if seen > most:
            return None
    return sum(
        _counted(
            connection,
            _timed_rows(stream.key, query, low, stop),
            query,
            span=(low, stop),
        )
        for stream, low, stop in spans
    )


def _items_between(stream: Stream, low: int, stop: int) -> int:
    """About how many of ``stream``'s items start in [low, stop), from its density."""
    span = max(stream.last - stream.first, 1)
    return min(stream.count, stream.count * (stop - low) // span + 1)


Rows = tuple[str, list[Any]]  # a statement giving candidate rowids, and its parameters


def _placed_boxes(
    connection: sqlite3.Connection, keys: list[int | None], query: Query, most: int
) -> int:
    """How many place-tree boxes of collections ``keys`` (None: every one) lie in the
    search's place, counted no further than ``most + 1``."""
    seen = 0
    for where, parameters in _place_conditions(keys, query):
        seen += connection.execute(
            f"SELECT COUNT(*) FROM (SELECT 1 FROM items_place AS p WHERE {where} LIMIT ?)",
            (*parameters, most + 1 - seen),
        ).fetchone()[0]
        if seen > most:
            break
    return seen


def _placed_rows(keys: list[int | None], query: Query) -> Rows:
    """The rowids of the place tree's boxes of collections ``keys`` (None: every one) in
    the search's place, of any time."""
    conditions = _place_conditions(keys, query)
    sql = " UNION ALL ".join(
        f"SELECT p.id / {MAX_BOXES} FROM items_place AS p WHERE {where}" for where, _ in conditions
    )
    return sql, [value for _, parameters in conditions for value in parameters]


def _place_conditions(keys: list[int | None], query: Query) -> list[Rows]:
    """The place tree's conditions: one per box of the place and collection searched."""
    return [
        (
            "p.x1 >= ? AND p.x0 <= ? AND p.y1 >= ? AND p.y0 <= ?"
            + (" AND p.c0 <= ? AND p.c1 >= ?" if key is not None else ""),
            [west, east, south, north, *((key, key) if key is not None else ())],
        )
        for west, south, east, north in query.boxes or ()
        for key in keys
    ]


def _timed_rows(key: int | None, query: Query, low: int, stop: int) -> Rows:
    """The rowids of the space-time tree's boxes of collection ``key`` (None: every one)
    that start in [low, stop), in the search's place if it has one."""
    boxes = index_conditions(key, query, hours(low) - SLACK_HOURS, hours(stop) + SLACK_HOURS)
    sql = " UNION ALL ".join(
        f"SELECT x.id / {MAX_BOXES} FROM items_index AS x WHERE {where}" for where, _ in boxes
    )
    return sql, [value for _, parameters in boxes for value in parameters]


def _counted(
    connection: sqlite3.Connection,
    rows: Rows,
    query: Query,
    *,
    span: tuple[int, int] | None = None,
) -> int:
    """How many of the candidates ``rows`` gives match ``query`` (only those starting within
    ``span``, if given): one statement, then shapely on the footprints it returns."""
    tests, values = _row_tests(query, span)
    found = connection.execute(
        f"SELECT {'i.wkb' if query.where is not None else 'count(*)'} FROM items AS i "
        f"WHERE i.rowid IN ({rows[0]}) AND {tests}",
        [*rows[1], *values],
    ).fetchall()
    if query.where is None:
        return int(found[0][0])
    return int(hits([row[0] for row in found], query.where).sum())


def _row_tests(query: Query, span: tuple[int, int] | None) -> tuple[str, list[Any]]:
    """Every test of a candidate's row but its footprint, as SQL (exact_matches's tests);
    unary ``+`` keeps the planner off the (collection, start) indexes, whose walk would read
    every item of the collection: the rows are the candidates'."""
    tests: list[str] = []
    values: list[Any] = []
    if span is not None:
        tests += ["+i.start_us >= ?", "+i.start_us < ?"]
        values += span
    if query.viewer is None:
        tests.append("i.owner IS NULL")
    else:
        tests.append("(i.owner IS NULL OR i.owner = ?)")
        values.append(query.viewer)
    if query.hidden:
        tests.append(f"+i.collection NOT IN ({','.join('?' * len(query.hidden))})")
        values += sorted(query.hidden)
    if query.start is not None:
        tests.append("i.end_us >= ?")
        values.append(query.start)
    if query.end is not None:
        tests.append("+i.start_us <= ?")
        values.append(query.end)
    extra, more = query.filtered()
    return " AND ".join(tests) + extra, [*values, *more]

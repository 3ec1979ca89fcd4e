"""How many items match a search on the PostgreSQL catalogue: counted afresh, or those
added after a position (for a count kept by _counts.py).

A count afresh counts its candidates with the page's conditions (and, with a place, a box
test an index answers), no further than ``count_to``; only if they are no more are their
footprints read and tested exactly. The box test of a place over some time is the n-D GiST's
(place and time at once); of a place over all time, the 2-D GiST's on the footprints, which
clusters them by place: the n-D index's pages each hold items of a few hours covering most of
the Earth, so a place over all time visits nearly all of them (0.3 s to find a site's
candidates at 10^6 items, where the 2-D index takes 0.07 s).
"""

from __future__ import annotations

from typing import Any

from nearline.archive._base import Search
from nearline.archive._index import search_shape
from nearline.archive._pgsearch import (
    Run,
    exact_rows,
    item_conditions,
    overlaps,
    space_time,
    streams,
    streams_sql,
)


def count_rows(
    run: Run, search: Search, condition: tuple[str, list[Any]] | None = None
) -> int | None:
    """How many items match ``search`` in all (its token aside), or None if more than
    ``search.count_to`` candidates do; ``run`` executes each statement (in one snapshot)."""
    most = search.count_to
    boxes, where = search_shape(search)
    queries, total = [], 0
    for stream in streams(search, run(*streams_sql(search)), condition):
        items = item_conditions(search, stream, None)
        if boxes is not None and search.start is None and search.end is None:
            items.add(*overlaps(boxes))  # a place over all time: the 2-D GiST
        elif boxes is not None:
            items.add(*space_time(search, boxes))
        (counted,) = run(
            f"SELECT count(*) AS n FROM (SELECT 1 FROM items AS i WHERE {items.where} "
            "LIMIT %s) AS i",
            [*items.parameters, most - total + 1],
        )
        total += counted["n"]
        if total > most:
            return None
        queries.append(items)
    if where is None:  # no place: the conditions are exact
        return total
    return sum(
        len(
            exact_rows(
                run(
                    f"SELECT ST_AsBinary(i.footprint) AS wkb FROM items AS i WHERE {items.where}",
                    items.parameters,
                ),
                where,
            )
        )
        for items in queries
    )


def count_added_rows(
    run: Run, search: Search, condition: tuple[str, list[Any]] | None, after: int
) -> int | None:
    """How many items added after position ``after`` match ``search``, or None if more than
    ``search.count_to`` candidates were added; ``run`` executes each statement."""
    boxes, where = search_shape(search)
    added, most = 0, search.count_to
    for stream in streams(search, run(*streams_sql(search)), condition):
        items = item_conditions(search, stream, None)
        items.add("i.seq > %s", after)
        columns = "i.seq"
        if boxes is not None and where is not None:
            items.add(*overlaps(boxes))
            columns = "ST_AsBinary(i.footprint) AS wkb"
        rows = run(
            f"SELECT {columns} FROM items AS i WHERE {items.where} LIMIT %s",
            [*items.parameters, most + 1],
        )
        most -= len(rows)
        if most < 0:
            return None
        added += len(rows) if where is None else len(exact_rows(rows, where))
    return added


def state_sql(search: Search) -> tuple[str, list[Any]]:
    """The catalogue's position, and the items ever removed from the collections ``search``
    reads (every one the viewer sees, when it names none): a kept count's state."""
    sql = (
        "SELECT (SELECT position FROM catalogue_position) AS position, "
        "COALESCE(SUM(removed), 0)::bigint AS removed FROM collections "
        "WHERE (owner IS NULL OR owner = %s)"
        + (" AND id = ANY(%s)" if search.collections is not None else "")
    )
    asked = [list(search.collections)] if search.collections is not None else []
    return sql, [search.viewer, *asked]

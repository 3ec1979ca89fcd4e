"""The embedded catalogue: one SQLite file, items indexed by an R*Tree over longitude,
latitude, time and collection. Nothing to install; safe for the service's threads.

Each item is a row of ``items`` and one to four boxes in ``items_index`` (one per side of
the antimeridian, or per part of a footprint); box ``k`` of item ``r`` has id ``4r + k``, so
replacing an item finds its boxes without a scan. Each collection keeps its extent and the
numbers a search plans its time windows with (first and last start, count, longest item).

The same boxes, without time, are kept in a second R*Tree (``items_place``; items with no
place are left out). Items arrive in time order, so the space-time tree's leaves each hold
consecutive granules, whose boxes together cover most of the Earth: a place over all time (a
site's time series) would visit nearly every leaf, about a second at 10^7 items. The place
tree clusters boxes by place, so counting a place's candidates over any stretch of time
reads only the leaves around it (_scan_count.py). Its third axis is the collection, as an
interval [key, key + 0.5]: an R*Tree picks where a box goes by the volume it adds, and a
zero-width axis (the space-time tree's [key, key]) makes every volume zero, so a tree would
no longer choose by place; half a unit keeps collections apart and the volumes those of the
places. It costs ingest about a quarter of its rate (docs/benchmarks.md, "A site's time
series").
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from nearline.archive._base import Catalogue, Collection, Item, Page, Search
from nearline.archive._counts import Counts, State
from nearline.archive._filter_sql import (
    INTERSECTS,
    SQLITE,
    filter_sql,
    footprint_intersects,
)
from nearline.archive._index import MAX_BOXES, NO_PLACE, hours
from nearline.archive._ordered import ordered_rows, sort_keys
from nearline.archive._queryables import item_property_types, property_types
from nearline.archive._rows import (
    ItemRow,
    collection_from_row,
    item_from_row,
    item_rows,
    visible,
    visible_item,
    widenings,
)
from nearline.archive._scan import search_items
from nearline.archive._scan_count import count_added, count_matches
from nearline.db import SQLiteDatabase
from nearline.errors import CollectionNotFound, Conflict

SCHEMA = """
CREATE TABLE IF NOT EXISTS collections (
    key INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    owner TEXT,
    title TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    license TEXT NOT NULL DEFAULT 'proprietary',
    properties TEXT NOT NULL DEFAULT '{}',
    west REAL, south REAL, east REAL, north REAL,
    first_start_us INTEGER, last_start_us INTEGER, last_end_us INTEGER,
    longest_us INTEGER NOT NULL DEFAULT 0,
    count INTEGER NOT NULL DEFAULT 0,
    removed INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS items (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,
    collection INTEGER NOT NULL REFERENCES collections (key),
    id TEXT NOT NULL,
    owner TEXT,
    start_us INTEGER NOT NULL,
    end_us INTEGER NOT NULL,
    wkb BLOB,
    body BLOB NOT NULL,
    UNIQUE (collection, id)
);
CREATE INDEX IF NOT EXISTS items_by_id ON items (id);
CREATE VIRTUAL TABLE IF NOT EXISTS items_index USING rtree (
    id, x0, x1, y0, y1, t0, t1, c0, c1
);
CREATE INDEX IF NOT EXISTS items_by_start ON items (collection, start_us);
CREATE INDEX IF NOT EXISTS items_by_start_all ON items (start_us);
"""
PROPERTIES = """
CREATE TABLE IF NOT EXISTS item_properties (
    collection INTEGER NOT NULL REFERENCES collections (key),
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    PRIMARY KEY (collection, name, type)
) WITHOUT ROWID;
"""
# a catalogue made before item_properties was: what its items carry, read once (json_each's
# types named as JSON Schema's)
BACKFILL = """
INSERT OR IGNORE INTO item_properties
SELECT DISTINCT i.collection, p.key, CASE p.type WHEN 'real' THEN 'number'
    WHEN 'text' THEN 'string' WHEN 'true' THEN 'boolean' WHEN 'false' THEN 'boolean'
    ELSE p.type END
FROM items AS i, json_each(CAST(i.body AS TEXT), '$.properties') AS p
"""
PLACE = "CREATE VIRTUAL TABLE IF NOT EXISTS items_place USING rtree (id, x0, x1, y0, y1, c0, c1)"
# a catalogue made before items_place was: its places, from the space-time tree's boxes
PLACES = (
    "INSERT INTO items_place SELECT id, x0, x1, y0, y1, c0, c0 + 0.5 FROM items_index "
    f"WHERE x0 < {NO_PLACE}"
)
# tables added since the first catalogues: each created, and filled from what was there
ADDED = (("item_properties", PROPERTIES, BACKFILL), ("items_place", PLACE, PLACES))
BATCH = 500  # ids per IN (...) lookup
log = logging.getLogger(__name__)


class SQLiteCatalogue(Catalogue):
    """The catalogue in one SQLite file: the embedded default, with no server to run.

    Searches go through an R*Tree of the items' boxes and times.

    Parameters
    ----------
    path
        The file, created with its tables if missing.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.database = SQLiteDatabase(self.path)
        self.database.apply(SCHEMA)
        # items ever removed from each collection: a kept count's state (_counts.py)
        self.database.add_columns("collections", {"removed": "INTEGER NOT NULL DEFAULT 0"})
        self.counts = Counts()
        with self.database.transaction() as connection:
            held = connection.execute("SELECT 1 FROM items LIMIT 1").fetchone()
            for table, create, fill in ADDED:
                new = not connection.execute(
                    "SELECT 1 FROM sqlite_master WHERE name = ?", (table,)
                ).fetchone()
                connection.execute(create)
                if new and held:
                    log.info("%s: filling %s (once; minutes at 10^7 items)", path, table)
                    connection.execute(fill)

    # -- collections ------------------------------------------------------------------------
    def put_collection(self, collection: Collection) -> None:
        with self.database.transaction() as connection:
            found = connection.execute(
                "SELECT owner FROM collections WHERE id = ?", (collection.id,)
            ).fetchone()
            if found is not None and found["owner"] != collection.owner:
                raise Conflict(f"the collection id {collection.id!r} is taken; choose another")
            connection.execute(
                "INSERT INTO collections (id, owner, title, description, license, properties) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET title = excluded.title, "
                "description = excluded.description, license = excluded.license, "
                "properties = excluded.properties",
                (
                    collection.id,
                    collection.owner,
                    collection.title,
                    collection.description,
                    collection.license,
                    orjson.dumps(dict(collection.properties)).decode(),
                ),
            )

    def get_collection(self, id: str, *, viewer: str | None = None) -> Collection:
        rows = self.database.query("SELECT * FROM collections WHERE id = ?", (id,))
        if not rows or not visible(rows[0]["owner"], viewer):
            raise CollectionNotFound(f"no collection {id!r}")
        return _collection(rows[0])

    def list_collections(self, *, viewer: str | None = None) -> list[Collection]:
        rows = self.database.query(
            "SELECT * FROM collections WHERE owner IS NULL OR owner = ? ORDER BY id", (viewer,)
        )
        return [_collection(row) for row in rows]

    # -- items ------------------------------------------------------------------------------
    def add_items(self, items: Iterable[Item]) -> int:
        latest = {(item.collection, item.id): item for item in items}  # the last of duplicates
        rows = item_rows(list(latest.values()))
        if not rows:
            return 0
        with self.database.transaction() as connection:
            keys = self._keys(connection, {row.collection for row in rows})
            self._remove(connection, keys, rows)
            first = connection.execute(  # AUTOINCREMENT's counter: never a deleted item's
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM sqlite_sequence WHERE name = 'items'"
            ).fetchone()
            numbers = range(first[0], first[0] + len(rows))
            connection.executemany(
                "INSERT INTO items (rowid, collection, id, owner, start_us, end_us, wkb, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (n, keys[r.collection], r.id, r.owner, r.start_us, r.end_us, r.wkb, r.body)
                    for n, r in zip(numbers, rows, strict=True)
                ],
            )
            connection.executemany(
                "INSERT INTO items_index VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        n * MAX_BOXES + k,
                        west,
                        east,
                        south,
                        north,
                        hours(r.start_us),
                        hours(r.end_us),
                        keys[r.collection],
                        keys[r.collection],
                    )
                    for n, r in zip(numbers, rows, strict=True)
                    for k, (west, south, east, north) in enumerate(r.boxes)
                ],
            )
            connection.executemany(
                "INSERT INTO items_place VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        n * MAX_BOXES + k,
                        west,
                        east,
                        south,
                        north,
                        keys[r.collection],
                        keys[r.collection] + 0.5,
                    )
                    for n, r in zip(numbers, rows, strict=True)
                    for k, (west, south, east, north) in enumerate(r.boxes)
                    if west != NO_PLACE
                ],
            )
            self._widen(connection, keys, rows)
            connection.executemany(
                "INSERT OR IGNORE INTO item_properties VALUES (?, ?, ?)",
                [
                    (keys[collection], name, kind)
                    for collection, name, kind in item_property_types(latest.values())
                ],
            )
        return len(rows)

    def get_item(self, collection: str, id: str, *, viewer: str | None = None) -> Item:
        rows = self.database.query(
            "SELECT items.*, collections.owner AS collection_owner FROM items "
            "JOIN collections ON collections.key = items.collection "
            "WHERE collections.id = ? AND items.id = ?",
            (collection, id),
        )
        return visible_item(rows, collection, id, viewer)

    def search(self, search: Search) -> Page:
        connection = self.database.connection()
        if connection.in_transaction:
            return self._search(connection, search)
        # one read transaction: every statement of the search sees the same snapshot, so a
        # write in between cannot swap the rows found for others (rowids are reused)
        connection.execute("BEGIN")
        try:
            return self._search(connection, search)
        finally:
            connection.execute("COMMIT")

    def _search(self, connection: Any, search: Search) -> Page:
        """A page, and its count if asked, kept for the next pages (_counts.py)."""
        condition = None
        if search.impossible or (search.filter is None and not search.sortby):
            page = search_items(connection, search)
        else:
            page, condition = self._chosen(connection, search)
        if not search.count_to:
            return page
        return replace(page, matched=self._matched(connection, search, condition))

    def _chosen(self, connection: Any, search: Search) -> tuple[Page, Any]:
        """A filter (as SQL) and a chosen order (_ordered.py) beside the time-index walk: the
        page, and the filter's SQL (None without a filter)."""
        names = self._visible(connection, search)
        types = property_types(self._property_rows(connection, list(names)))
        condition = None
        if search.filter is not None:
            condition = filter_sql(search.filter, SQLITE, types)
            connection.create_function(INTERSECTS, 2, footprint_intersects, deterministic=True)
        if not search.sortby:
            return search_items(connection, search, condition), condition
        rows, token = ordered_rows(
            lambda sql, parameters: connection.execute(sql, parameters).fetchall(),
            SQLITE,
            search,
            keys=sort_keys(search, SQLITE, types),
            collections=list(names),
            condition=condition,
        )
        items = [item_from_row(row, names[row["collection"]]) for row in rows]
        return Page(items, token), condition

    def _matched(self, connection: Any, search: Search, condition: Any) -> int | None:
        """``search``'s count: kept, brought up to date by what was added since, or made."""
        if search.impossible:
            return 0
        whole = replace(search, token=None)
        return self.counts.matched(
            whole,
            self._state(connection, whole),
            recount=lambda: count_matches(connection, whole, condition),
            count_added=lambda after: count_added(connection, whole, condition, after),
        )

    @staticmethod
    def _state(connection: Any, search: Search) -> State:
        """The catalogue's position, and the items ever removed from the collections
        ``search`` reads (all the viewer sees, when it names none)."""
        asked = orjson.dumps(search.collections).decode() if search.collections else None
        row = connection.execute(
            "SELECT (SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence WHERE name = 'items'), "
            "COALESCE(SUM(removed), 0) FROM collections WHERE (owner IS NULL OR owner = ?) "
            "AND (? IS NULL OR id IN (SELECT value FROM json_each(?)))",
            (search.viewer, asked, asked),
        ).fetchone()
        return State(position=row[0], removed=row[1])

    @staticmethod
    def _visible(connection: Any, search: Search) -> dict[int, str]:
        """The collections ``search`` reads (asked for, and the viewer's to see), by key."""
        rows = connection.execute(
            "SELECT key, id FROM collections WHERE owner IS NULL OR owner = ?", (search.viewer,)
        ).fetchall()
        asked = set(search.collections) if search.collections is not None else None
        return {row["key"]: row["id"] for row in rows if asked is None or row["id"] in asked}

    @staticmethod
    def _property_rows(connection: Any, keys: list[int]) -> list[Any]:
        marks = ",".join("?" * len(keys))
        return connection.execute(
            f"SELECT DISTINCT name, type FROM item_properties WHERE collection IN ({marks})",
            keys,
        ).fetchall()

    def queryables(
        self, collection: str | None = None, *, viewer: str | None = None
    ) -> dict[str, set[str]]:
        connection = self.database.connection()
        names = self._visible(
            connection, Search(collections=(collection,) if collection else None, viewer=viewer)
        )
        return property_types(self._property_rows(connection, list(names)))

    def delete_items(self, collection: str, ids: Iterable[str]) -> int:
        wanted = list(dict.fromkeys(ids))
        with self.database.transaction() as connection:
            found = connection.execute("SELECT key FROM collections WHERE id = ?", (collection,))
            row = found.fetchone()
            if row is None:
                return 0
            return self._remove_ids(connection, row["key"], wanted)

    def changes(self, after: int = 0, *, limit: int = 1000) -> tuple[list[Item], int]:
        """Items added or replaced since a position, oldest first.

        Rowids only grow (AUTOINCREMENT: an item replaced takes a new one, a deleted one's
        is never used again), so they are the positions.

        Parameters
        ----------
        after
            A position from an earlier call (0 is the beginning).
        limit
            At most this many items.
        """
        rows = self.database.query(
            "SELECT i.*, c.id AS collection_id FROM items AS i "
            "JOIN collections AS c ON c.key = i.collection "
            "WHERE i.rowid > ? ORDER BY i.rowid LIMIT ?",
            (after, limit),
        )
        items = [item_from_row(row, row["collection_id"]) for row in rows]
        return items, rows[-1]["rowid"] if rows else after

    def position(self) -> int:
        found = self.database.query("SELECT seq FROM sqlite_sequence WHERE name = 'items'")
        return int(found[0]["seq"]) if found else 0

    def count(self, collection: str | None = None) -> int:
        """How many items the catalogue holds.

        Parameters
        ----------
        collection
            Count only this collection's (None: all).
        """
        rows = self.database.query(
            "SELECT COALESCE(SUM(count), 0) AS n FROM collections WHERE ? IS NULL OR id = ?",
            (collection, collection),
        )
        return int(rows[0]["n"])

    def close(self) -> None:
        self.counts.close()
        self.database.close()

    # -- inside one transaction -------------------------------------------------------------
    @staticmethod
    def _keys(connection: Any, names: set[str]) -> dict[str, int]:
        keys = {}
        for name in sorted(names):
            row = connection.execute("SELECT key FROM collections WHERE id = ?", (name,)).fetchone()
            if row is None:
                raise CollectionNotFound(
                    f"no collection {name!r}; create it first (nearline ingest --collection "
                    "creates one)"
                )
            keys[name] = row["key"]
        return keys

    def _remove(self, connection: Any, keys: dict[str, int], rows: list[ItemRow]) -> None:
        by_collection: dict[str, list[str]] = {}
        for row in rows:
            by_collection.setdefault(row.collection, []).append(row.id)
        for name, ids in by_collection.items():
            self._remove_ids(connection, keys[name], ids)

    @staticmethod
    def _remove_ids(connection: Any, key: int, ids: list[str]) -> int:
        removed = 0
        for first in range(0, len(ids), BATCH):
            part = ids[first : first + BATCH]
            marks = ",".join("?" * len(part))
            numbers = [
                row[0]
                for row in connection.execute(
                    f"SELECT rowid FROM items WHERE collection = ? AND id IN ({marks})",
                    (key, *part),
                )
            ]
            for number in numbers:
                for tree in ("items_index", "items_place"):
                    connection.execute(
                        f"DELETE FROM {tree} WHERE id BETWEEN ? AND ?",
                        (number * MAX_BOXES, number * MAX_BOXES + MAX_BOXES - 1),
                    )
            connection.executemany("DELETE FROM items WHERE rowid = ?", [(n,) for n in numbers])
            connection.execute(
                "UPDATE collections SET count = count - ?, removed = removed + ? WHERE key = ?",
                (len(numbers), len(numbers), key),
            )
            removed += len(numbers)
        return removed

    @staticmethod
    def _widen(connection: Any, keys: dict[str, int], rows: list[ItemRow]) -> None:
        """Widen each collection's extent and window numbers by the new rows."""
        for key, widening in widenings(keys, rows):
            connection.execute(
                "UPDATE collections SET "
                "west = MIN(COALESCE(west, :west), COALESCE(:west, west)), "
                "south = MIN(COALESCE(south, :south), COALESCE(:south, south)), "
                "east = MAX(COALESCE(east, :east), COALESCE(:east, east)), "
                "north = MAX(COALESCE(north, :north), COALESCE(:north, north)), "
                "first_start_us = MIN(COALESCE(first_start_us, :first_start_us), "
                ":first_start_us), "
                "last_start_us = MAX(COALESCE(last_start_us, :last_start_us), :last_start_us), "
                "last_end_us = MAX(COALESCE(last_end_us, :last_end_us), :last_end_us), "
                "longest_us = MAX(longest_us, :longest_us), count = count + :count "
                "WHERE key = :key",
                {**vars(widening), "key": key},
            )


def _collection(row: Any) -> Collection:
    return collection_from_row(row, orjson.loads(row["properties"]))

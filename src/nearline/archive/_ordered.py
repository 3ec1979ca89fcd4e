"""A search in the order a user chose (the Sort extension's ``sortby``), on either catalogue.

The catalogues' own searches walk their time index in start-time order; a search sorted by
anything else is one SQL statement, ordered by the sort keys, then the item's id, then its
position (so ties always fall the same way), and paged by keyset: a page's token carries its
last item's sort keys, id and position, and the next page is what sorts after them, so page n
costs what page 1 does. A missing property sorts after every value (first, descending), as
PostgreSQL orders NULLs. A place (bbox, intersects) is first a box test in SQL (the R*Tree on
SQLite, PostGIS's ``&&`` on PostgreSQL) and then shapely's exact test of each candidate,
read in order until the page is full.

Only the columns (id, collection, times) have an index to walk in order; a sort by an item
property reads every item the other conditions leave, and sorts them (docs/service.md).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from nearline.archive._base import Search
from nearline.archive._filter_sql import Dialect, sort_operand
from nearline.archive._index import hits, search_shape
from nearline.archive._rows import microseconds
from nearline.errors import SearchError

Run = Callable[[str, list[Any]], list[Any]]  # runs one statement: its rows, as mappings
NUMBERS = {"number", "integer"}


@dataclass(frozen=True)
class Key:
    """One sort key: its SQL, the parameters that SQL takes, and its direction."""

    sql: str
    parameters: list[Any]
    descending: bool
    property: bool  # an item property (compared as the dialect compares JSON values; may
    # be missing: NULL), not a column (never NULL, and walked in order by an index)


def sort_keys(search: Search, dialect: Dialect, types: Mapping[str, set[str]]) -> list[Key]:
    """The keys ``search`` is ordered by, ties broken by id and position.

    Raises SearchError for a field that is not sortable (geometry, an array or object
    property, one of several types) or not a queryable at all.
    """
    keys = []
    for name, descending in search.sortby:
        operand = sort_operand(name, dialect, types, what="sortby")
        kinds = operand.types - {"null"}
        if (
            operand.kind == "geometry"
            or (operand.kind == "json" and not (len(kinds) == 1 or kinds <= NUMBERS))
            or kinds & {"array", "object"}
        ):
            raise SearchError(
                f"sortby: {name} is not sortable ({' or '.join(sorted(kinds)) or 'a geometry'}); "
                "sort by id, collection, a time or a string, number or boolean property"
            )
        keys.append(Key(operand.sql, operand.parameters, descending, operand.kind == "json"))
    return [*keys, Key("i.id", [], False, False), Key(dialect.position, [], False, False)]


def encode_keys(values: list[Any]) -> str:
    """A page's last sort keys as a token."""
    return base64.urlsafe_b64encode(orjson.dumps(values)).decode().rstrip("=")


def decode_keys(token: str | None, count: int) -> list[Any] | None:
    """The sort keys a token carries (``count`` of them), or SearchError for any other."""
    if token is None:
        return None
    try:
        values = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError):
        values = None
    if not isinstance(values, list) or len(values) != count:
        raise SearchError("token: not one this service gave; follow the next link of a page")
    return values


def ordered_rows(
    run: Run,
    dialect: Dialect,
    search: Search,
    *,
    keys: list[Key],
    collections: list[int],
    condition: tuple[str, list[Any]] | None,
) -> tuple[list[Any], str | None]:
    """Up to ``search.limit`` rows of the answer after the token, in order, and the next
    page's token (None on the last page).

    Parameters
    ----------
    run
        Runs one statement (in the search's snapshot).
    dialect
        The catalogue's SQL.
    search
        The search; its sort is ``keys`` (sort_keys).
    keys
        The sort keys, ties broken by id and position.
    collections
        The keys of the collections searched (asked for and visible to the viewer).
    condition
        The filter's SQL, if any.
    """
    after = decode_keys(search.token, len(keys))
    _, where = search_shape(search)
    want = search.limit + 1
    cap = 4 * want + 64 if where is not None else want
    found: list[Any] = []
    while len(found) < want and collections:
        sql, parameters = _statement(dialect, search, keys, collections, condition, after, cap)
        rows = run(sql, parameters)
        matched = rows
        if where is not None and rows:
            inside = hits([_wkb(row["wkb"]) for row in rows], where)
            matched = [row for row, hit in zip(rows, inside, strict=True) if hit]
        found += matched
        if len(rows) < cap:
            break
        after = [rows[-1][f"k{n}"] for n in range(len(keys))]
    page = found[: search.limit]
    if len(found) <= search.limit:
        return page, None
    return page, encode_keys([page[-1][f"k{n}"] for n in range(len(keys))])


def _wkb(value: Any) -> bytes | None:
    return bytes(value) if value is not None else None


def _statement(
    dialect: Dialect,
    search: Search,
    keys: list[Key],
    collections: list[int],
    condition: tuple[str, list[Any]] | None,
    after: list[Any] | None,
    most: int,
) -> tuple[str, list[Any]]:
    mark = dialect.mark
    selected = ", ".join(f"{key.sql} AS k{n}" for n, key in enumerate(keys))
    parameters: list[Any] = [p for key in keys for p in key.parameters]
    conditions: list[str] = []

    def add(sql: str, *values: Any) -> None:
        conditions.append(sql)
        parameters.extend(values)

    if len(collections) == 1:  # the (collection, start) and (collection, id) indexes
        add(f"i.collection = {mark}", collections[0])
    elif dialect.postgres:
        add("i.collection = ANY(%s)", collections)
    else:  # SQLite: unary + keeps it off the collection's indexes, to walk the sort's own
        add(f"+i.collection IN ({', '.join('?' * len(collections))})", *collections)
    if search.viewer is None:
        add("i.owner IS NULL")
    else:
        add(f"(i.owner IS NULL OR i.owner = {mark})", search.viewer)
    if search.start is not None:
        add(f"i.end_us >= {mark}", microseconds(search.start))
    if search.end is not None:
        add(f"i.start_us <= {mark}", microseconds(search.end))
    if search.ids is not None:
        add(f"i.id IN ({', '.join([mark] * len(search.ids))})", *search.ids)
    if condition is not None:
        add(f"({condition[0]})", *condition[1])
    boxes, _ = search_shape(search)
    if boxes is not None:
        near, values = dialect.near(boxes)
        add(near, *values)
    if after is not None:
        sql, values = _after(dialect, keys, after)
        add(sql, *values)
    order = ", ".join(_order(n, key) for n, key in enumerate(keys))
    sql = (
        f"SELECT i.id, i.owner, i.start_us, i.end_us, i.body, i.collection, "
        f"{dialect.footprint} AS wkb, {selected} FROM items AS i "
        f"WHERE {' AND '.join(conditions)} ORDER BY {order} LIMIT {mark}"
    )
    return sql, [*parameters, most]


def _order(n: int, key: Key) -> str:
    """Key ``n`` in ORDER BY: a property's NULLs after every value (before, descending); a
    column's as the database orders it, which its index can give."""
    direction = "DESC" if key.descending else "ASC"
    if not key.property:
        return f"k{n} {direction}"
    return f"k{n} {direction} NULLS {'FIRST' if key.descending else 'LAST'}"


def _after(dialect: Dialect, keys: list[Key], values: list[Any]) -> tuple[str, list[Any]]:
    """What sorts after ``values`` (NULLs after every value, ascending): the disjunction of
    (equal on the first keys, after on the next), and, where the first key is a column, the
    bound on it that lets its index start there."""
    ors, parameters = [], []
    for n, key in enumerate(keys):
        ands, these = [], []
        for previous, value in zip(keys[:n], values[:n], strict=True):
            sql, params = _equal(dialect, previous, value)
            ands.append(sql)
            these += params
        sql, params = _beyond(dialect, key, values[n])
        ands.append(sql)
        these += params
        ors.append("(" + " AND ".join(ands) + ")")
        parameters += these
    either = "(" + " OR ".join(ors) + ")"
    first = keys[0]
    if first.property:
        return either, parameters
    bound = f"{first.sql} {'<=' if first.descending else '>='} {dialect.mark}"
    return f"{bound} AND {either}", [*first.parameters, values[0], *parameters]


def _value(dialect: Dialect, key: Key, value: Any) -> tuple[str, list[Any]]:
    return dialect.json_value(value) if key.property else (dialect.mark, [value])


def _equal(dialect: Dialect, key: Key, value: Any) -> tuple[str, list[Any]]:
    if value is None:
        return f"{key.sql} IS NULL", list(key.parameters)
    sql, params = _value(dialect, key, value)
    return f"{key.sql} = {sql}", [*key.parameters, *params]


def _beyond(dialect: Dialect, key: Key, value: Any) -> tuple[str, list[Any]]:
    if value is None:
        return ("1 = 0", []) if not key.descending else (f"{key.sql} IS NOT NULL", key.parameters)
    sql, params = _value(dialect, key, value)
    if key.descending or not key.property:
        operator = "<" if key.descending else ">"
        return f"{key.sql} {operator} {sql}", [*key.parameters, *params]
    return f"({key.sql} > {sql} OR {key.sql} IS NULL)", [
        *key.parameters,
        *params,
        *key.parameters,
    ]

"""CQL2 JSON translated to one SQL condition on items (alias ``i``), for SQLite or PostgreSQL.

The catalogue evaluates the condition itself, beside its own index conditions: no item is
read into Python to be filtered. An item's columns (id, collection, its times) are compared
as columns, with a time literal turned into the microseconds they are kept in; every other
property is read from the item's JSON body (SQLite's ``json_extract``; PostgreSQL's ``jsonb``,
compared as ``jsonb``). ``S_INTERSECTS`` is PostGIS's ``ST_Intersects`` on PostgreSQL; on
SQLite it is the R*Tree's box test and then shapely's exact one, as a SQL function
(:data:`INTERSECTS`) that SQLite calls only for the items whose box meets the geometry.

Offered (CQL2 1.0): basic CQL2 (comparisons, ``IS NULL``, ``AND``, ``OR``, ``NOT``),
advanced comparison operators (``LIKE``, ``BETWEEN``, ``IN``) and basic spatial functions
(``S_INTERSECTS``). A comparison sets a property against a value. Anything else is refused
by name, as is a property the searched collections' items do not carry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import numpy as np
import orjson
import shapely
from shapely.geometry import box, shape

from nearline.archive._index import MAX_BOXES, Box, bbox_parts, index_boxes
from nearline.archive._queryables import CORE, SCALARS, TIME_COLUMNS
from nearline.archive._rows import microseconds
from nearline.archive._search import parse_intersects
from nearline.errors import SearchError

COMPARISONS = {"=": "=", "<>": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
MIRRORED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
OFFERED = "=, <>, <, <=, >, >=, IS NULL, AND, OR, NOT, LIKE, BETWEEN, IN, S_INTERSECTS"
COLLECTION_ID = "(SELECT c.id FROM collections AS c WHERE c.key = i.collection)"
INTERSECTS = "nearline_intersects"  # SQLite: footprint WKB, geometry WKB -> 0 or 1


@dataclass(frozen=True)
class Dialect:
    """How one database spells what a filter needs."""

    name: str
    mark: str  # a parameter's placeholder

    @property
    def postgres(self) -> bool:
        return self.name == "postgresql"

    def json_property(self, name: str) -> tuple[str, list[Any]]:
        """An item property as a comparable value (SQL NULL when missing or JSON null)."""
        if self.postgres:
            body = "(convert_from(i.body, 'UTF8')::jsonb -> 'properties')"
            return f"NULLIF({body} -> %s, 'null'::jsonb)", [name]
        return "json_extract(CAST(i.body AS TEXT), ?)", [f'$.properties."{name}"']

    def text_property(self, name: str) -> tuple[str, list[Any]]:
        """An item property as text, for LIKE."""
        if self.postgres:
            return "(convert_from(i.body, 'UTF8')::jsonb -> 'properties' ->> %s)", [name]
        return self.json_property(name)

    def json_value(self, value: Any) -> tuple[str, list[Any]]:
        """A value compared with a property read by :meth:`json_property`."""
        if self.postgres:
            return "%s::jsonb", [orjson.dumps(value).decode()]
        return "?", [value]

    def like(self, column: str, pattern: str) -> tuple[str, list[Any]]:
        """``column`` matching a CQL2 LIKE pattern (``%``, ``_``, ``\\`` escapes), case and
        all (SQLite's LIKE ignores case: its GLOB does not)."""
        if self.postgres:
            return f"{column} LIKE %s", [pattern]
        return f"{column} GLOB ?", [glob(pattern)]

    def intersects(self, geometry: shapely.Geometry) -> tuple[str, list[Any]]:
        """The footprint intersects ``geometry`` (exactly)."""
        if self.postgres:
            return "ST_Intersects(i.footprint, ST_GeomFromWKB(%s, 4326))", [geometry.wkb]
        near, parameters = self.near(index_boxes(np.array([geometry], dtype=object))[0])
        return f"({near} AND {INTERSECTS}(i.wkb, ?))", [*parameters, geometry.wkb]

    def near(self, boxes: list[Box]) -> tuple[str, list[Any]]:
        """The footprint's bounding boxes meet one of ``boxes`` (the index's coarse test)."""
        if self.postgres:
            envelope = "i.footprint && ST_MakeEnvelope(%s, %s, %s, %s, 4326)"
            return "(" + " OR ".join(envelope for _ in boxes) + ")", [v for b in boxes for v in b]
        rows = ", ".join(f"i.rowid * {MAX_BOXES} + {k}" for k in range(MAX_BOXES))
        near = " OR ".join(
            f"EXISTS (SELECT 1 FROM items_index AS b WHERE b.id IN ({rows}) "
            "AND b.x1 >= ? AND b.x0 <= ? AND b.y1 >= ? AND b.y0 <= ?)"
            for _ in boxes
        )
        return f"({near})", [v for (w, s, e, n) in boxes for v in (w, e, s, n)]

    @property
    def position(self) -> str:
        """An item's position: the order it was catalogued in."""
        return "i.seq" if self.postgres else "i.rowid"

    @property
    def footprint(self) -> str:
        """An item's footprint as WKB."""
        return "ST_AsBinary(i.footprint)" if self.postgres else "i.wkb"


SQLITE = Dialect("sqlite", "?")
POSTGRES = Dialect("postgresql", "%s")


def glob(pattern: str) -> str:
    """A CQL2 LIKE pattern as a SQLite GLOB pattern."""
    out, escaped = [], False
    for char in pattern:
        if escaped:
            out.append(f"[{char}]" if char in "*?[" else char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "%":
            out.append("*")
        elif char == "_":
            out.append("?")
        elif char in "*?[":
            out.append(f"[{char}]")
        else:
            out.append(char)
    return "".join(out)


@lru_cache(maxsize=64)
def _prepared(wkb: bytes) -> shapely.Geometry:
    geometry = shapely.from_wkb(wkb)
    shapely.prepare(geometry)
    return geometry


def footprint_intersects(footprint: bytes | None, wkb: bytes) -> int:
    """SQLite's :data:`INTERSECTS`: whether a footprint (WKB) meets a filter's geometry."""
    if footprint is None:
        return 0
    return int(shapely.intersects(shapely.from_wkb(footprint), _prepared(wkb)))


@dataclass(frozen=True)
class Operand:
    """One side of a comparison: SQL and its parameters, and what kind of value it is."""

    sql: str
    parameters: list[Any]
    kind: str  # "json" (an item property), "text", "time" (microseconds) or "geometry"
    name: str
    types: frozenset[str] = frozenset()


def sort_operand(
    name: str, dialect: Dialect, types: Mapping[str, set[str]], *, what: str = "filter"
) -> Operand:
    """A queryable as a value to compare or sort by (for ``what``: filter or sortby), or
    SearchError naming it."""
    if name in TIME_COLUMNS:
        return Operand(TIME_COLUMNS[name], [], "time", name)
    if name == "id":
        return Operand("i.id", [], "text", name)
    if name == "collection":
        return Operand(COLLECTION_ID, [], "text", name)
    if name == "geometry":
        return Operand("i.footprint" if dialect.postgres else "i.wkb", [], "geometry", name)
    if name in types:
        sql, parameters = dialect.json_property(name)
        return Operand(sql, parameters, "json", name, frozenset(types[name]))
    offered = [*CORE, *sorted(types)]
    raise SearchError(
        f"{what}: unknown queryable {name!r}; the items searched offer {', '.join(offered[:30])} "
        "(GET /queryables, or /collections/{id}/queryables)"
    )


class Translation:
    """One filter's SQL condition, built by walking its CQL2 JSON."""

    def __init__(self, dialect: Dialect, types: Mapping[str, set[str]]) -> None:
        self.dialect = dialect
        self.types = types

    def condition(self, node: Any) -> tuple[str, list[Any]]:
        if isinstance(node, bool):
            return ("1 = 1" if node else "1 = 0"), []
        if not isinstance(node, Mapping) or "op" not in node:
            raise SearchError(f"filter: expected a condition, got {_shown(node)}")
        op, args = str(node["op"]).lower(), list(node.get("args", []))
        if op in ("and", "or") and args:
            parts = [self.condition(arg) for arg in args]
            joined = f" {op.upper()} ".join(f"({sql})" for sql, _ in parts)
            return f"({joined})", [p for _, parameters in parts for p in parameters]
        if op == "not" and len(args) == 1:
            sql, parameters = self.condition(args[0])
            return f"NOT ({sql})", parameters
        if op in COMPARISONS and len(args) == 2:
            return self.comparison(op, args)
        if op == "isnull" and len(args) == 1:
            operand = self.operand(args[0], scalar=False)
            return f"{operand.sql} IS NULL", operand.parameters
        if op == "like" and len(args) == 2:
            return self.like(args)
        bounds = args[1] if len(args) == 2 and isinstance(args[1], list) else args[1:]
        if op == "between" and len(bounds) == 2:
            low, high = bounds
            above, first = self.comparison(">=", [args[0], low])
            below, second = self.comparison("<=", [args[0], high])
            return f"({above} AND {below})", [*first, *second]
        if op == "in" and len(args) == 2 and isinstance(args[1], list) and args[1]:
            operand = self.operand(args[0])
            values = [self.value(operand, value) for value in args[1]]
            listed = ", ".join(sql for sql, _ in values)
            return f"{operand.sql} IN ({listed})", [
                *operand.parameters,
                *(p for _, parameters in values for p in parameters),
            ]
        if op == "s_intersects" and len(args) == 2:
            return self.intersects(args)
        raise SearchError(
            f"filter: {op.upper()} with {len(args)} argument(s) is not offered; use {OFFERED}"
        )

    def operand(self, node: Any, *, scalar: bool = True) -> Operand:
        if not (isinstance(node, Mapping) and set(node) == {"property"}):
            raise SearchError(f"filter: expected a property, got {_shown(node)}")
        name = str(node["property"])
        if name not in self.types and name.startswith("properties."):
            name = name.removeprefix("properties.")  # as an item names it
        found = sort_operand(name, self.dialect, self.types)
        if found.kind == "geometry" and scalar:
            raise SearchError("filter: geometry is compared with S_INTERSECTS only")
        if found.kind == "json" and scalar and not found.types & SCALARS:
            raise SearchError(
                f"filter: {found.name} is {' or '.join(sorted(found.types))}, not a string, "
                "number or boolean; array and object properties cannot be compared"
            )
        return found

    def comparison(self, op: str, args: list[Any]) -> tuple[str, list[Any]]:
        left, right = args
        if _is_property(right) and not _is_property(left):
            left, right, op = right, left, MIRRORED[op]
        operand = self.operand(left)
        if _is_property(right):
            raise SearchError(
                f"filter: {operand.name} {op} a property: compare a property with a value"
            )
        value_sql, parameters = self.value(operand, right)
        return f"{operand.sql} {COMPARISONS[op]} {value_sql}", [*operand.parameters, *parameters]

    def value(self, operand: Operand, value: Any) -> tuple[str, list[Any]]:
        """``value`` as the operand's kind wants it, or SearchError saying what it wants."""
        if operand.kind == "time":
            return self.dialect.mark, [microseconds(_moment(value, operand.name))]
        if isinstance(value, Mapping | list):
            raise SearchError(f"filter: {operand.name} is compared with {_shown(value)}")
        if operand.kind == "text":
            if not isinstance(value, str):
                raise SearchError(f"filter: {operand.name} is a string; got {_shown(value)}")
            return self.dialect.mark, [value]
        wanted = _wanted(operand.types)
        if wanted is not None:
            kinds, said = wanted
            flag = isinstance(value, bool)
            if (not flag) if kinds is bool else (flag or not isinstance(value, kinds)):
                raise SearchError(f"filter: {operand.name} is {said}; got {_shown(value)}")
        return self.dialect.json_value(value)

    def like(self, args: list[Any]) -> tuple[str, list[Any]]:
        operand = self.operand(args[0])
        if not isinstance(args[1], str):
            raise SearchError(f"filter: LIKE takes a pattern string; got {_shown(args[1])}")
        if operand.kind == "json":
            column, parameters = self.dialect.text_property(operand.name)
        elif operand.kind == "text":
            column, parameters = operand.sql, []
        else:
            raise SearchError(f"filter: {operand.name} is a time; LIKE takes a string property")
        sql, pattern = self.dialect.like(column, args[1])
        return sql, [*parameters, *pattern]

    def intersects(self, args: list[Any]) -> tuple[str, list[Any]]:
        geometry = next((a for a in args if not _is_property(a)), None)
        named = [a for a in args if _is_property(a)]
        if len(named) != 1 or self.operand(named[0], scalar=False).kind != "geometry":
            raise SearchError("filter: S_INTERSECTS takes geometry and a geometry value")
        return self.dialect.intersects(_geometry(geometry))


def filter_sql(
    expression: Any, dialect: Dialect, types: Mapping[str, set[str]]
) -> tuple[str, list[Any]]:
    """A checked CQL2 JSON filter as one SQL condition on items (alias ``i``).

    Parameters
    ----------
    expression
        CQL2 JSON (from parse_filter).
    dialect
        SQLITE or POSTGRES.
    types
        The JSON types of each property the searched items carry: any other name is refused.

    Returns
    -------
    sql, parameters
        The condition and its parameters, in order.

    Raises
    ------
    SearchError
        An operator, a property or a value nearline cannot filter by, named.
    """
    return Translation(dialect, types).condition(expression)


def _is_property(node: Any) -> bool:
    return isinstance(node, Mapping) and set(node) == {"property"}


def _wanted(types: frozenset[str]) -> tuple[type | tuple[type, ...], str] | None:
    kinds = types - {"null"}
    if kinds and kinds <= {"number", "integer"}:
        return (int, float), "a number"
    if kinds == {"string"}:
        return str, "a string"
    if kinds == {"boolean"}:
        return bool, "a boolean"
    return None


def _moment(value: Any, name: str) -> datetime:
    """A CQL2 time value (TIMESTAMP, DATE, or RFC 3339 text, as GDAL sends): its instant."""
    text = value.get("timestamp", value.get("date")) if isinstance(value, Mapping) else value
    if isinstance(text, str):
        try:
            moment = datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
        except ValueError:
            moment = None
        if moment is not None:
            return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    raise SearchError(
        f"filter: {name} is a time; compare it with TIMESTAMP('2012-12-12T00:00:00Z') or "
        f"DATE('2012-12-12'), got {_shown(value)}"
    )


def _geometry(value: Any) -> shapely.Geometry:
    """A CQL2 geometry value (GeoJSON, or a BBOX), checked as intersects is."""
    if isinstance(value, Mapping) and set(value) == {"bbox"}:
        corners = value["bbox"]
        if not isinstance(corners, list) or len(corners) not in (4, 6):
            raise SearchError("filter: BBOX takes west, south, east, north")
        west, south, east, north = (corners[:2] + corners[-3:-1]) if len(corners) == 6 else corners
        parts = [box(*part) for part in bbox_parts((west, south, east, north))]
        return parts[0] if len(parts) == 1 else shapely.MultiPolygon(parts)
    try:
        checked = parse_intersects(value)
    except SearchError as error:
        raise SearchError(
            f"filter: S_INTERSECTS {str(error).removeprefix('intersects: ')}"
        ) from None
    return shape(checked)


def _shown(value: Any) -> str:
    return orjson.dumps(value).decode()[:120]

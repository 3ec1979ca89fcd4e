"""OGC API - Coverages' query parameters, checked: ``subset`` (Lon/Lat in degrees, or the
grid's own x/y, and time), ``bbox``, ``datetime``, ``properties``, and ``scale-factor``,
``scale-axes`` or ``scale-size`` (also as GDAL spells it, ``scaleSize``), into what
``nearline.coverage`` reads. Every refusal names the parameter and what it wants."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nearline.coverage import Box, Target, box_target, native_target, whole_grid
from nearline.errors import CoverageError
from nearline.grid import Grid

AXES = {
    "lon": "lon", "long": "lon", "longitude": "lon",
    "lat": "lat", "latitude": "lat",
    "x": "x", "e": "x", "easting": "x",
    "y": "y", "n": "y", "northing": "y",
    "time": "time", "t": "time", "date": "time", "datetime": "time",
}  # fmt: skip
PARAMETERS = frozenset(
    {"subset", "bbox", "bbox-crs", "datetime", "properties", "scale-factor", "scale-size",
     "scale-axes", "scaleSize", "f"}
)  # fmt: skip
CRS84 = ("http://www.opengis.net/def/crs/OGC/1.3/CRS84", "CRS84")
_PART = re.compile(r"\s*([A-Za-z_]+)\s*\(([^()]*)\)\s*(?:,|$)")


@dataclass(frozen=True)
class CoverageQuery:
    """A coverage request, checked: where (``target``), when (a STAC datetime or None),
    which bands (None: all) and the scale."""

    target: Target
    when: str | None
    bands: list[str] | None


def _parts(name: str, text: str) -> list[tuple[str, str]]:
    """``axis(value)`` pieces of a comma-separated list, or a CoverageError quoting it."""
    found, at = [], 0
    text = text.strip()
    while at < len(text):
        match = _PART.match(text, at)
        if match is None:
            raise CoverageError(
                f"{name}={text!r}: expected axis(low:high) pieces separated by commas, such as "
                "Lon(-10:10),Lat(30:50)"
            )
        found.append((match.group(1), match.group(2)))
        at = match.end()
    return found


def _axis(name: str, label: str) -> str:
    axis = AXES.get(label.lower())
    if axis is None:
        raise CoverageError(
            f"{name}: unknown axis {label!r}; use Lon and Lat (degrees), x and y (the grid's own "
            "coordinates) or time"
        )
    return axis


def _number(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise CoverageError(f"{name}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise CoverageError(f"{name}: {text!r} is not a finite number")
    return value


def parse_box(text: str) -> Box:
    """``bbox``'s west,south,east,north in degrees, or a CoverageError quoting it."""
    edges = [_number("bbox", part) for part in text.split(",")]
    if len(edges) != 4:
        raise CoverageError(f"bbox={text!r}: expected west,south,east,north in degrees")
    return Box(*edges)


def _range(name: str, text: str) -> tuple[str, str]:
    low, colon, high = text.partition(":")
    low, high = low.strip(), (high if colon else low).strip()
    return low, high


def parse_subset(values: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Each ``subset`` axis and its (low, high) text (``*`` for open), from every subset
    parameter given."""
    found: dict[str, tuple[str, str]] = {}
    for text in values:
        for label, inside in _parts("subset", text):
            axis = _axis("subset", label)
            if axis in found:
                raise CoverageError(f"subset: the {axis} axis is given twice; give it once")
            found[axis] = _range("subset", inside)
    return found


def per_axis(name: str, text: str, *, whole: bool) -> tuple[float | None, float | None]:
    """The x (or Lon) and y (or Lat) values of ``scale-size`` (``whole`` numbers) or
    ``scale-axes``, each at least 1; None for an axis not named."""
    found: list[float | None] = [None, None]
    for label, inside in _parts(name, text):
        axis = _axis(name, label)
        value = _number(name, inside)
        if value < 1 or (whole and value != int(value)):
            kind = "a whole number" if whole else "a number"
            raise CoverageError(f"{name}: {label}({inside}) must be {kind} >= 1")
        if axis not in ("x", "lon", "y", "lat"):
            raise CoverageError(f"{name}: the {axis} axis cannot be scaled")
        found[axis in ("y", "lat")] = value
    return found[0], found[1]


def _scaled(target: Target, one: Mapping[str, str], exact: Target | None) -> Target:
    """``target`` as scale-size, scale-axes or scale-factor (one of them) ask; ``exact``: the
    box a native subset asked for, which a scale-size of both axes gives exactly (GDAL's
    blocks)."""
    size_text = one.get("scale-size", one.get("scaleSize"))
    given = [name for name in ("scale-size", "scale-axes", "scale-factor") if name in one]
    if len(given) + (size_text is not None and "scale-size" not in one) > 1:
        raise CoverageError(f"{' and '.join(given)}: give one way of scaling, not several")
    if size_text is not None:
        width, height = per_axis("scale-size", size_text, whole=True)
        if exact is not None and width is not None and height is not None:
            return Target(exact.extent, int(width), int(height))
        return target.scaled(size=(None if width is None else int(width),
                                   None if height is None else int(height)))  # fmt: skip
    if "scale-axes" in one:
        x, y = per_axis("scale-axes", one["scale-axes"], whole=False)
        return target.scaled(size=(max(1, round(target.width / (x or 1))),
                                   max(1, round(target.height / (y or 1)))))  # fmt: skip
    if "scale-factor" in one:
        factor = _number("scale-factor", one["scale-factor"])
        if factor <= 0:
            raise CoverageError(f"scale-factor {factor:g}: give a number >= 1 (2 halves each side)")
        return target.scaled(factor=factor)
    return target


def _time(subset: dict[str, tuple[str, str]], datetime: str | None) -> str | None:
    if "time" not in subset:
        return datetime
    if datetime is not None:
        raise CoverageError("datetime and subset=time(...): give one or the other")
    low, high = (part.strip('"') for part in subset["time"])
    low, high = (".." if part == "*" else part for part in (low, high))
    return low if low == high else f"{low}/{high}"


def _span(name: str, low: str, high: str) -> tuple[float | None, float | None]:
    return (
        None if low == "*" else _number(name, low),
        None if high == "*" else _number(name, high),
    )


def _where(grid: Grid, subset: dict[str, tuple[str, str]], bbox: str | None) -> tuple[Target, bool]:
    """The target a subset or bbox names, and whether it was asked in the grid's own x/y."""
    degrees = {axis for axis in ("lon", "lat") if axis in subset}
    native = {axis for axis in ("x", "y") if axis in subset}
    if degrees and native:
        raise CoverageError("subset: give Lon/Lat or x/y, not both")
    if bbox is not None and (degrees or native):
        raise CoverageError("bbox and a subset of Lon/Lat or x/y: give one or the other")
    if bbox is not None:
        return _box_target(grid, parse_box(bbox)), False
    if degrees:
        west, east = _span("subset Lon", *subset.get("lon", ("*", "*")))
        south, north = _span("subset Lat", *subset.get("lat", ("*", "*")))
        box = Box(-180.0 if west is None else west, -90.0 if south is None else south,
                  180.0 if east is None else east, 90.0 if north is None else north)  # fmt: skip
        return _box_target(grid, box), False
    if native:
        xmin, ymin, xmax, ymax = grid.extent
        x0, x1 = _span("subset x", *subset.get("x", ("*", "*")))
        y0, y1 = _span("subset y", *subset.get("y", ("*", "*")))
        x = (xmin if x0 is None else x0, xmax if x1 is None else x1)
        y = (ymin if y0 is None else y0, ymax if y1 is None else y1)
        return native_target(grid, x, y), True
    return whole_grid(grid), False


def _box_target(grid: Grid, box: Box) -> Target:
    """A lat-lon grid's own coordinates are degrees: its box is taken as x/y."""
    if grid.crs_is_projected:
        return box_target(grid, box)
    return native_target(grid, (box.west, box.east), (box.south, box.north))


def parse_coverage_query(grid: Grid, params: Mapping[str, Sequence[str]]) -> CoverageQuery:
    """The coverage request of query parameters ``params`` (each name's values).

    Raises
    ------
    CoverageError
        An unknown parameter, or one whose value cannot be used.
    """
    unknown = sorted(set(params) - PARAMETERS)
    if unknown:
        raise CoverageError(
            f"unknown parameter {unknown[0]!r}; a coverage takes {', '.join(sorted(PARAMETERS))}"
        )
    for name in params.keys() - {"subset"}:
        if len(params[name]) > 1:
            raise CoverageError(f"{name}: given {len(params[name])} times; give it once")
    one = {name: values[0] for name, values in params.items() if name != "subset"}
    if one.get("bbox-crs", CRS84[0]) not in CRS84:
        raise CoverageError(f"bbox-crs: only {CRS84[0]} (longitude, latitude) is offered")
    subset = parse_subset(params.get("subset", []))
    target, native = _where(grid, subset, one.get("bbox"))
    exact = _exact(subset) if native and {"x", "y"} <= subset.keys() else None
    target = _scaled(target, one, exact)
    bands = None
    if "properties" in one:
        bands = [name.strip() for name in one["properties"].split(",") if name.strip()]
        if not bands:
            raise CoverageError("properties: name at least one band, comma-separated")
    return CoverageQuery(target, _time(subset, one.get("datetime")), bands)


def _exact(subset: dict[str, tuple[str, str]]) -> Target:
    """The box a native subset names exactly, in one pixel (scale-size gives its size)."""
    x0, x1 = (_number("subset x", part) for part in subset["x"])
    y0, y1 = (_number("subset y", part) for part in subset["y"])
    return Target((x0, y0, x1, y1), 1, 1)

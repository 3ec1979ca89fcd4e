"""Granule footprints for the catalogue: where a swath's pixels are, as GeoJSON (RFC 7946).

A footprint covers the whole swath (every tie point, the pixels between them and the four
beyond the outermost tie point of each line) with a margin of about ``tolerance / 2``, and is
tight: nothing in it is farther than ``1.5 tolerance`` from the swath (``2.5 tolerance`` at
a corner, where the growth is mitred). It is made from the tie points of every few lines:

1. Each run of lines whose tie points are all valid is cut into segments of
   :data:`SEGMENT_ROWS` sampled lines. A segment's outline goes up its left edge, across
   its last line, down its right edge and back across its first line. The edges are the
   outermost pixels, extrapolated beyond the outermost tie points on a parabola through
   three of them, on the sphere; the first and last line of a run pass through every tie
   point, and the line two segments share is a great-circle chord (both sides use the same).
2. Outline edges are densified along great circles until a straight line in longitude and
   latitude strays at most ``tolerance / 5`` from the great circle (near the poles only).
3. Longitudes are unwrapped along the outline. An outline that winds once round the Earth
   encloses a pole: that segment is the cap between its outline and the pole.
4. Segments are simplified within ``tolerance / 2``, joined, grown by ``tolerance`` (so the
   simplification loses nothing), cut at the antimeridian, shifted into -180..180 and
   rounded to 1e-6 degrees. Cut at ±180 (RFC 7946), a footprint that crosses it is a
   MultiPolygon; a cap is a polygon with edges along ±180 and the pole.

Lines with invalid tie points (NaN, fill values, out of range) are left out; a line with
only some of them invalid still brings its valid tie points (as small discs).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import shapely
from shapely.geometry import shape

from nearline.hdf_lock import HDF_LOCK
from nearline.swath._base import Granule
from nearline.swath._registry import open_granule, open_granule_stream

TOLERANCE = 0.05  # degrees
STEP = 8  # lines: the tie points of every 8th line (26 km apart) outline the swath
SEGMENT_ROWS = 64  # sampled lines per segment (512 lines, 4 minutes of a GAC orbit)
EDGE_REACH = Granule.edge_reach  # GAC's pixels 0-3: 0.5 tie steps
GRID = 1e-6  # degrees: coordinates are rounded to this
MAX_BISECTIONS = 12
CHORD_ACCURACY = 1.0  # degrees: lines between segments only need their winding right

BBox = tuple[float, float, float, float]


@dataclass(frozen=True)
class GranuleSummary:
    """What the catalogue records of a granule file."""

    path: Path
    reader: str  # the reader's registered name
    platform: str
    instrument: str
    start: datetime  # UTC, first line
    end: datetime  # UTC, last line
    n_lines: int | None  # None for a product without scan lines (a tile, points)
    geometry: dict[str, Any] | None  # GeoJSON Polygon or MultiPolygon; None if no valid line
    bbox: BBox | None  # (west, south, east, north); west > east across the antimeridian
    product: str = ""  # as the file names it
    media_type: str = "application/octet-stream"
    warnings: tuple[str, ...] = ()  # a file read but not whole, say
    properties: dict[str, Any] = field(default_factory=dict)  # the reader's own, for the item


def describe_granule(path: str | Path, *, step: int = STEP) -> GranuleSummary:
    """Open ``path`` (its reader found by sniffing), read its times and footprint, close it.

    Raises :class:`~nearline.errors.GranuleError` naming the file if no reader knows it or
    it is truncated or corrupt.
    """
    path = Path(path)
    with HDF_LOCK, open_granule(path) as granule:
        return summarize_granule(granule, path, step=step)


def describe_stream(stream: BinaryIO, *, name: str, step: int = STEP) -> GranuleSummary | None:
    """:func:`describe_granule` of the granule in a seekable file object (an object store's
    ranged reader: only the header and the sampled tie points are read), or None if no
    reader that reads streams knows it (the caller then reads a copy)."""
    granule = open_granule_stream(stream, name=name)
    if granule is None:
        return None
    with granule:
        return summarize_granule(granule, Path(name), step=step)


def summarize_granule(granule: Granule, path: Path, *, step: int = STEP) -> GranuleSummary:
    """What the catalogue records of an open granule."""
    geometry, bbox = granule_footprint(granule, step=step)
    return GranuleSummary(
        path=path,
        reader=granule.reader,
        platform=granule.platform,
        instrument=granule.instrument,
        start=_utc(granule.start_time),
        end=_utc(granule.end_time),
        n_lines=getattr(granule, "n_lines", None),
        geometry=geometry,
        bbox=bbox,
        product=granule.product,
        media_type=granule.media_type,
        warnings=tuple(granule.warnings),
        properties=dict(granule.item_properties),
    )


def granule_footprint(
    granule: Granule, *, step: int = STEP, tolerance: float = TOLERANCE
) -> tuple[dict[str, Any] | None, BBox | None]:
    """The footprint of an open granule from the tie points of every ``step``-th line (or
    from its own outline, for a product that is not a swath: ``Granule.read_outline``).

    If a sampled line has invalid tie points, every line is read instead, so that only the
    invalid lines themselves are left out.
    """
    outline = granule.read_outline()
    if outline is not None:
        return outline_footprint(outline)
    lon, lat = granule.read_tie_lonlat(step)
    if step > 1 and not _valid(lon, lat).all():
        lon, lat = granule.read_tie_lonlat(1)
    return swath_footprint(lon, lat, tolerance=tolerance, reach=granule.edge_reach)


def swath_footprint(
    lon: np.ndarray,
    lat: np.ndarray,
    *,
    tolerance: float = TOLERANCE,
    reach: float = EDGE_REACH,
) -> tuple[dict[str, Any] | None, BBox | None]:
    """GeoJSON geometry and STAC bbox of a swath from its tie-point grids.

    Parameters
    ----------
    lon, lat : (lines, columns) degrees, lines in time order; invalid points are ignored.
    tolerance : degrees; the footprint contains the swath with a margin of about
        ``tolerance / 2``, and nothing farther than ``1.5 tolerance`` from it (``2.5`` at a
        corner).
    reach : how far the swath's pixels reach beyond the first and last tie column, in tie
        steps (GAC: pixels 0-3 and 405-408 beyond tie columns 4 and 404, 0.5).

    Returns
    -------
    geometry : a Polygon or MultiPolygon (split at the antimeridian), exterior rings
        counter-clockwise, or None if no tie point is valid.
    bbox : (west, south, east, north); west > east if it crosses the antimeridian,
        (-180, south, 180, north) if it spans every longitude.
    """
    lon, lat = np.asarray(lon, np.float64), np.asarray(lat, np.float64)
    if lon.ndim != 2 or lon.shape != lat.shape or lon.shape[1] < (3 if reach else 2):
        raise ValueError(
            f"tie-point grids of shapes {lon.shape} and {lat.shape}; expected two equal "
            f"(lines, columns) grids of at least {3 if reach else 2} columns"
        )
    if not tolerance > 0:
        raise ValueError(f"tolerance: expected degrees > 0, got {tolerance!r}")
    good = _valid(lon, lat)
    with np.errstate(invalid="ignore"):  # inf
        lon = np.where(good, (lon + 180.0) % 360.0 - 180.0, np.nan)
    whole = good.all(axis=1)
    pieces = []
    for start, stop in _runs(whole):
        pieces += _run_pieces(lon[start:stop], lat[start:stop], reach, tolerance / 5)
    partial = good & ~whole[:, None]
    if partial.any():  # lines with some tie points invalid: their valid ones, as points
        pieces.append(shapely.multipoints(np.column_stack([lon[partial], lat[partial]])))
    if not pieces:
        return None, None
    # simplified by at most tolerance / 2, then grown by tolerance: never smaller than the
    # swath grown by tolerance / 2 (a mitre join reaches beyond a round one). Overlays snap
    # to the output's 1e-6 grid: GEOS's floating-point union can drop a whole piece
    # (libgeos/geos#965, #1383); snap-rounding cannot
    joined = shapely.union_all(_simplified(np.array(pieces), tolerance / 2), grid_size=GRID)
    grown = shapely.buffer(joined, tolerance, join_style="mitre", mitre_limit=2.0)
    world = _to_world(grown)
    rounded = shapely.transform(world, lambda xy: np.round(xy, 6))
    if not shapely.is_valid(rounded):  # rounding made parts touch or cross: snap them
        rounded = shapely.set_precision(world, GRID)
    world = shapely.orient_polygons(rounded, exterior_cw=False)
    polygons = _polygons(world)
    if not polygons:
        return None, None
    return _geojson(polygons), _bbox(polygons)


def outline_footprint(
    rings: list[np.ndarray],
) -> tuple[dict[str, Any] | None, BBox | None]:
    """GeoJSON geometry and STAC bbox of polygons given by their outlines, as a swath's
    footprint is finished: cut at ±180 and shifted into -180..180, exterior rings
    counter-clockwise, rounded to 1e-6 degrees.

    Parameters
    ----------
    rings
        Each an (n, 2) array of (longitude, latitude) degrees in one longitude frame (a ring
        that crosses ±180 goes on past it); closed or not. Rings of fewer than three
        distinct points are left out.
    """
    polygons = []
    for ring in rings:
        ring = np.asarray(ring, np.float64)
        if ring.ndim != 2 or ring.shape[1] != 2 or not np.isfinite(ring).all():
            raise ValueError(f"an outline of shape {ring.shape}; expected finite (n, 2)")
        if len(np.unique(ring, axis=0)) >= 3:
            polygon = shapely.polygons(ring)
            if not shapely.is_valid(polygon):
                polygon = shapely.make_valid(polygon, method="structure")
            polygons.append(polygon)
    if not polygons:
        return None, None
    world = _to_world(shapely.union_all(polygons, grid_size=GRID))
    world = shapely.orient_polygons(shapely.set_precision(world, GRID), exterior_cw=False)
    parts = _polygons(world)
    if not parts:
        return None, None
    return _geojson(parts), _bbox(parts)


def union_footprints(
    geometries: list[dict[str, Any]],
) -> tuple[dict[str, Any], BBox] | None:
    """The union of GeoJSON footprints, as one footprint and its STAC bbox.

    Snap-rounded to the 1e-6 degree grid as granule footprints are, since a floating-point
    union can drop a whole piece (libgeos/geos#965).

    Parameters
    ----------
    geometries
        GeoJSON footprints in -180..180, cut at the antimeridian.

    Returns
    -------
    tuple[dict, BBox] or None
        The union and its bbox (west > east when its parts lie on both sides of ±180);
        None for no footprint.
    """
    shapes = [shape(geometry) for geometry in geometries]
    polygons = _polygons(shapely.union_all(shapes, grid_size=GRID)) if shapes else []
    if not polygons:
        return None
    return _geojson(polygons), _bbox(polygons)


def _simplified(pieces: np.ndarray, tolerance: float) -> np.ndarray:
    """Douglas-Peucker (a tenth of the cost of the topology-preserving simplifier), which
    is taken only for the pieces Douglas-Peucker left invalid."""
    simple = shapely.simplify(pieces, tolerance, preserve_topology=False)
    broken = ~shapely.is_valid(simple)
    simple[broken] = shapely.simplify(pieces[broken], tolerance)
    return simple


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _valid(lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.isfinite(lon) & np.isfinite(lat) & (np.abs(lat) <= 90) & (np.abs(lon) <= 360)


def _runs(whole: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of each run of consecutive True."""
    edges = np.flatnonzero(np.diff(np.concatenate([[False], whole, [False]]).astype(np.int8)))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


def _run_pieces(lon: np.ndarray, lat: np.ndarray, reach: float, fine: float) -> list[Any]:
    """The shapes of one run of lines, in longitudes unwrapped along the run."""
    if reach:
        left_lon, left_lat, right_lon, right_lat = _edges(lon, lat, reach)
        inner = slice(None)
    else:
        left_lon, left_lat, right_lon, right_lat = lon[:, 0], lat[:, 0], lon[:, -1], lat[:, -1]
        inner = slice(1, -1)
    # every outline point once: both edges, then the inner tie points of the first and last line
    points_lon = np.concatenate([left_lon, right_lon, lon[0, inner], lon[-1, inner]])
    points_lat = np.concatenate([left_lat, right_lat, lat[0, inner], lat[-1, inner]])
    rows, columns = lon.shape[0], lon[0, inner].size
    first_line = 2 * rows + np.arange(columns)
    last_line = first_line + columns
    if rows == 1:  # one line: a path across it
        path = np.concatenate([[0], first_line, [rows]])
        ((x, y),) = _densify(points_lon, points_lat, [path], fine, closed=False)
        return [shapely.linestrings(_unwrap(x), y)]
    bounds = [*range(0, rows - 1, SEGMENT_ROWS), rows - 1]
    outlines, accuracies = [], []
    for a, b in itertools.pairwise(bounds):
        up, down = np.arange(a, b + 1), rows + np.arange(b, a - 1, -1)
        across_last = last_line if b == rows - 1 else np.array([], np.intp)
        across_first = first_line[::-1] if a == 0 else np.array([], np.intp)
        outline = np.concatenate([up, across_last, down, across_first])
        # a line two segments share is inside the footprint: only near a pole does it need
        # points between its ends (for the winding), so it is densified loosely
        accuracy = np.full(outline.size, fine)
        if b != rows - 1:
            accuracy[up.size - 1] = CHORD_ACCURACY
        if a != 0:
            accuracy[-1] = CHORD_ACCURACY
        outlines.append(outline)
        accuracies.append(accuracy)
    frame = _unwrap(left_lon)  # where each segment's first point sits, so segments line up
    paths = _densify(points_lon, points_lat, outlines, np.concatenate(accuracies))
    return [_segment(x, y, frame[a]) for a, (x, y) in zip(bounds[:-1], paths, strict=True)]


def _segment(lon: np.ndarray, lat: np.ndarray, x0: float) -> Any:
    """One segment's outline as a polygon whose first point is at longitude ``x0``; the cap
    up to the pole if the outline winds round it."""
    x = _unwrap(lon) - lon[0] + x0
    winding = round((x[-1] + _wrap(lon[0] - lon[-1]) - x[0]) / 360.0)
    if winding:
        pole = math.copysign(90.0, float(np.mean(lat)))
        end = x[0] + 360.0 * winding
        x = np.concatenate([x, [end, end, x[0]]])
        lat = np.concatenate([lat, [lat[0], pole, pole]])
    polygon = shapely.polygons(np.column_stack([x, lat]))
    if not shapely.is_valid(polygon):  # an outline that crosses itself: keep every lobe
        polygon = shapely.make_valid(polygon, method="structure")
    return polygon


def _to_world(geometry: Any) -> Any:
    """Cut at every antimeridian crossing and shift each part into -180..180."""
    west, south, east, north = geometry.bounds
    parts = []
    for turn in range(math.floor((west + 180) / 360), math.floor((east + 180) / 360) + 1):
        shift = 360.0 * turn
        part = geometry
        if west < shift - 180 or east > shift + 180 or south < -90 or north > 90:
            box = shapely.box(shift - 180, -90, shift + 180, 90)
            part = shapely.intersection(part, box, grid_size=GRID)
        if turn:
            part = shapely.transform(part, lambda xy, shift=shift: xy - [shift, 0.0])
        parts.append(part)
    if len(parts) == 1:
        return parts[0]
    if east - west <= 360:  # the parts cannot overlap once shifted
        return shapely.multipolygons([p for part in parts for p in _polygons(part)])
    return shapely.union_all(parts, grid_size=GRID)


def _polygons(geometry: Any) -> list[Any]:
    return [
        part
        for part in shapely.get_parts(geometry)
        if isinstance(part, shapely.Polygon) and not part.is_empty
    ]


def _geojson(polygons: list[Any]) -> dict[str, Any]:
    rings = [
        [np.round(shapely.get_coordinates(ring), 6).tolist()
         for ring in (polygon.exterior, *polygon.interiors)]
        for polygon in polygons
    ]  # fmt: skip
    if len(rings) == 1:
        return {"type": "Polygon", "coordinates": rings[0]}
    return {"type": "MultiPolygon", "coordinates": rings}


def _bbox(polygons: list[Any]) -> BBox:
    """STAC bbox: the longitudes the parts cover, with the widest gap between them left out."""
    bounds = np.array([polygon.bounds for polygon in polygons])
    south, north = float(bounds[:, 1].min()), float(bounds[:, 3].max())
    spans = sorted(bounds[:, [0, 2]].tolist())
    merged = [spans[0]]
    for west, east in spans[1:]:
        if west <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], east)
        else:
            merged.append([west, east])
    gaps = [(merged[i + 1][0] - merged[i][1], i) for i in range(len(merged) - 1)]
    wrap_gap = merged[0][0] + 360.0 - merged[-1][1]
    widest, after = max(gaps, default=(-1.0, -1))
    if max(widest, wrap_gap) <= 0:
        return (-180.0, south, 180.0, north)
    if wrap_gap >= widest:
        return (merged[0][0], south, merged[-1][1], north)
    return (merged[after + 1][0], south, merged[after][1], north)


# -- on the sphere ---------------------------------------------------------------------------
def _wrap(degrees: Any) -> Any:
    return (np.asarray(degrees) + 180.0) % 360.0 - 180.0


def _unwrap(lon: np.ndarray) -> np.ndarray:
    """Longitudes made continuous along a path, starting at its first."""
    return lon[0] + np.concatenate([[0.0], np.cumsum(_wrap(np.diff(lon)))])


def _xyz(lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    lam, phi = np.radians(lon), np.radians(lat)
    return np.stack([np.cos(phi) * np.cos(lam), np.cos(phi) * np.sin(lam), np.sin(phi)], -1)


def _lonlat(xyz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y, z = xyz[..., 0], xyz[..., 1], xyz[..., 2]
    return np.degrees(np.arctan2(y, x)), np.degrees(np.arctan2(z, np.hypot(x, y)))


def _edges(lon: np.ndarray, lat: np.ndarray, reach: float) -> tuple[np.ndarray, ...]:
    """Longitudes and latitudes of each line's two outermost pixels, ``reach`` tie steps
    beyond its first and last tie points, on the parabola through the three outermost tie
    points on each side (on the unit sphere)."""
    r = reach
    weights = np.array([(1 + r) * (2 + r) / 2, -r * (2 + r), r * (1 + r) / 2])
    xyz = _xyz(lon[:, [0, 1, 2, -1, -2, -3]], lat[:, [0, 1, 2, -1, -2, -3]])
    ends = np.stack([weights @ xyz[:, :3], weights @ xyz[:, 3:]], axis=1)  # (n, 2, 3)
    ends /= np.linalg.norm(ends, axis=-1, keepdims=True)
    edge_lon, edge_lat = _lonlat(ends)
    return edge_lon[:, 0], edge_lat[:, 0], edge_lon[:, 1], edge_lat[:, 1]


def _densify(
    lon: np.ndarray,
    lat: np.ndarray,
    paths: list[np.ndarray],
    accuracy: float | np.ndarray,
    *,
    closed: bool = True,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each path (indices of points) with great-circle midpoints inserted, recursively,
    wherever the straight line between neighbours in longitude and latitude strays more than
    ``accuracy`` degrees (one for all, or one for each edge, in the order of the paths' points)
    from the great circle. Closed paths return to their first point."""
    sizes = np.array([path.size for path in paths])
    ends = np.cumsum(sizes)
    flat = np.concatenate(paths)
    ahead = np.arange(1, flat.size + 1)
    ahead[ends - 1] = ends - sizes  # the closing edge
    edges = np.arange(flat.size)
    if not closed:
        edges = np.setdiff1d(edges, ends - 1)
    xyz = _xyz(lon, lat)
    # the sub-edges still to check: (edge, t0, t1, both ends)
    edge, t0, t1 = edges, np.zeros(edges.size), np.ones(edges.size)
    limit = np.broadcast_to(np.asarray(accuracy, np.float64), flat.shape)
    a_lon, a_lat, a_xyz = lon[flat[edges]], lat[flat[edges]], xyz[flat[edges]]
    b_lon, b_lat, b_xyz = lon[flat[ahead[edges]]], lat[flat[ahead[edges]]], xyz[flat[ahead[edges]]]
    added: list[tuple[np.ndarray, ...]] = []
    for _ in range(MAX_BISECTIONS):
        mid = a_xyz + b_xyz
        mid /= np.linalg.norm(mid, axis=-1, keepdims=True)
        mid_lon, mid_lat = _lonlat(mid)
        straight_lon = a_lon + _wrap(b_lon - a_lon) / 2
        stray = np.hypot(_wrap(mid_lon - straight_lon), mid_lat - (a_lat + b_lat) / 2)
        off = stray > limit[edge]
        if not off.any():
            break
        edge, t_mid = edge[off], (t0[off] + t1[off]) / 2
        mid, mid_lon, mid_lat = mid[off], mid_lon[off], mid_lat[off]
        added.append((edge, t_mid, mid_lon, mid_lat))
        both = lambda first, second: np.concatenate([first, second])  # noqa: E731
        t0, t1 = both(t0[off], t_mid), both(t_mid, t1[off])
        a_lon, b_lon = both(a_lon[off], mid_lon), both(mid_lon, b_lon[off])
        a_lat, b_lat = both(a_lat[off], mid_lat), both(mid_lat, b_lat[off])
        a_xyz, b_xyz = both(a_xyz[off], mid), both(mid, b_xyz[off])
        edge = both(edge, edge)
    if not added:
        return [(lon[path], lat[path]) for path in paths]
    new_edge, new_t, new_lon, new_lat = (np.concatenate(k) for k in zip(*added, strict=True))
    order = np.lexsort((np.concatenate([np.zeros(flat.size), new_t]),
                        np.concatenate([np.arange(flat.size), new_edge])))  # fmt: skip
    all_lon = np.concatenate([lon[flat], new_lon])[order]
    all_lat = np.concatenate([lat[flat], new_lat])[order]
    ring_of_new = np.searchsorted(ends, new_edge, side="right")
    cuts = np.cumsum(sizes + np.bincount(ring_of_new, minlength=len(paths)))[:-1]
    return list(zip(np.split(all_lon, cuts), np.split(all_lat, cuts), strict=True))

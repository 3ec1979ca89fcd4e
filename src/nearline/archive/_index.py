"""The catalogue's index keys: the boxes an item's footprint is indexed under, the boxes a
search looks in, and the exact test that follows the index's coarse one.

The R*Tree holds single-precision boxes (rounded outward), so it finds a superset; each
candidate's footprint is then tested exactly with shapely. A footprint split at the
antimeridian is indexed as one box per side, never as one box around the whole Earth.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import shapely
from shapely.geometry import box, shape

from nearline.archive._base import BBox, Search
from nearline.errors import InvalidRequest

Box = tuple[float, float, float, float]  # west, south, east, north; west <= east
MAX_BOXES = 4  # per item: its rows in the R*Tree are ROWID * MAX_BOXES + k
NO_PLACE = 1000.0  # items with no geometry sit here: outside every spatial query
HOUR_US = 3_600_000_000
SLACK_HOURS = 1.0  # beyond single precision's rounding of hours since 1970 (< 4 min to 2100)


def hours(microseconds: int) -> float:
    """Time in the R*Tree's unit: hours since 1970."""
    return microseconds / HOUR_US


def index_boxes(shapes: np.ndarray) -> list[list[Box]]:
    """Each footprint's index boxes (None: no place): one per part, at most MAX_BOXES; past
    that, one box around the parts west of the prime meridian and one around the rest."""
    result: list[list[Box]] = [[(NO_PLACE,) * 4] for _ in range(len(shapes))]
    present = np.flatnonzero(shapes != None)  # noqa: E711 - elementwise on an object array
    if not present.size:
        return result
    parts, owners = shapely.get_parts(shapes[present], return_index=True)
    bounds = shapely.bounds(parts)
    if not np.isfinite(bounds).all():
        raise InvalidRequest("geometry: a footprint is empty or has no coordinates")
    west, south, east, north = bounds.T
    if (west < -180).any() or (east > 180).any() or (south < -90).any() or (north > 90).any():
        raise InvalidRequest(
            "geometry: longitudes must lie in -180..180 and latitudes in -90..90; split a "
            "footprint that crosses the antimeridian into a MultiPolygon"
        )
    grouped: dict[int, list[Box]] = {}
    for owner, row in zip(owners.tolist(), bounds.tolist(), strict=True):
        grouped.setdefault(int(present[owner]), []).append(tuple(row))
    for index, boxes in grouped.items():
        result[index] = boxes if len(boxes) <= MAX_BOXES else _by_side(boxes)
    return result


def _by_side(boxes: list[Box]) -> list[Box]:
    sides = ([b for b in boxes if b[0] + b[2] < 0], [b for b in boxes if b[0] + b[2] >= 0])
    return [_around(side) for side in sides if side]


def _around(boxes: Sequence[Box]) -> Box:
    array = np.asarray(boxes)
    return (
        float(array[:, 0].min()),
        float(array[:, 1].min()),
        float(array[:, 2].max()),
        float(array[:, 3].max()),
    )


def search_shape(search: Search) -> tuple[list[Box] | None, shapely.Geometry | None]:
    """Where a search looks: boxes for the R*Tree and the exact shape (None: anywhere)."""
    if search.bbox is not None:
        return bbox_parts(search.bbox), _bbox_shape(search.bbox)
    if search.intersects is not None:
        geometry = shape(search.intersects)
        return index_boxes(np.array([geometry], dtype=object))[0], geometry
    return None, None


def bbox_parts(bbox: BBox) -> list[Box]:
    """A bbox as boxes with west <= east: two when it crosses the antimeridian."""
    west, south, east, north = bbox
    if west <= east:
        return [(west, south, east, north)]
    return [(west, south, 180.0, north), (-180.0, south, east, north)]


def _bbox_shape(bbox: BBox) -> shapely.Geometry:
    parts = [box(*part) for part in bbox_parts(bbox)]
    return parts[0] if len(parts) == 1 else shapely.MultiPolygon(parts)


def hits(footprints: Sequence[bytes | None], where: shapely.Geometry) -> np.ndarray:
    """Which footprints (WKB) intersect ``where``; those with none never do."""
    found = np.zeros(len(footprints), dtype=bool)
    present = [i for i, wkb in enumerate(footprints) if wkb is not None]
    if present:
        shapes = shapely.from_wkb([footprints[i] for i in present])
        shapely.prepare(where)
        found[present] = shapely.intersects(shapes, where)
    return found

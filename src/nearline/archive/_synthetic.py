"""MODIS-like granule items for filling a catalogue in benchmarks and tests: 5-minute
granules of a sun-synchronous orbit (Terra's: 98.2 degrees, 98.9 minutes), each footprint the
2,330 km wide swath over those 5 minutes, split at the antimeridian and widened to a cap where
it passes a pole. No files are made; the assets point nowhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import shapely
from shapely.geometry import box, mapping

from nearline.archive._base import Asset, Item

EARTH_RADIUS_KM = 6371.0
PERIOD_S = 98.9 * 60
INCLINATION = math.radians(98.2)
EARTH_TURN = 2 * math.pi / 86_164.0  # radians a second
GRANULE_S = 300
HALF_SWATH = 1165.0 / EARTH_RADIUS_KM  # radians of arc
Bounds = tuple[float, float, float, float]


def _positions(seconds: np.ndarray, node: float) -> np.ndarray:
    """Unit vectors (n, 3), Earth-fixed, of the satellite ``seconds`` after an ascending
    node at longitude ``node``."""
    u = 2 * math.pi * seconds / PERIOD_S
    lat = np.arcsin(math.sin(INCLINATION) * np.sin(u))
    lon = node + np.arctan2(math.cos(INCLINATION) * np.sin(u), np.cos(u)) - EARTH_TURN * seconds
    return np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=1)


def _lonlat(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lon = np.degrees(np.arctan2(vectors[..., 1], vectors[..., 0]))
    lat = np.degrees(np.arcsin(np.clip(vectors[..., 2], -1, 1)))
    return lon, lat


def swath_corners(seconds: np.ndarray, node: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(lon, lat) of the 6 outline points (start left, middle left, end left, end right,
    middle right, start right) of each granule starting at ``seconds``: arrays (n, 6)."""
    times = np.stack([seconds, seconds + GRANULE_S / 2, seconds + GRANULE_S], axis=1)
    track = _positions(times.ravel(), node).reshape(-1, 3, 3)
    ahead = _positions(times.ravel() + 1.0, node).reshape(-1, 3, 3) - track
    across = np.cross(track, ahead)
    across /= np.linalg.norm(across, axis=2, keepdims=True)
    left = math.cos(HALF_SWATH) * track + math.sin(HALF_SWATH) * across
    right = math.cos(HALF_SWATH) * track - math.sin(HALF_SWATH) * across
    outline = np.concatenate([left, right[:, ::-1]], axis=1)
    return _lonlat(outline)


def footprints(lons: np.ndarray, lats: np.ndarray) -> list[tuple[dict[str, Any], Bounds]]:
    """GeoJSON and STAC bbox of each outline (rows of ``lons``, ``lats``): split at the
    antimeridian, or a cap to the pole the outline goes round. The common case (neither) is
    done for the whole batch at once."""
    steps = np.diff(np.concatenate([lons, lons[:, :1]], axis=1), axis=1)
    steps = (steps + 180) % 360 - 180
    unwrapped = lons[:, :1] + np.concatenate(
        [np.zeros((len(lons), 1)), np.cumsum(steps[:, :-1], axis=1)], axis=1
    )
    plain = (np.abs(steps.sum(axis=1)) < 180) & (unwrapped.min(axis=1) >= -180)
    plain &= unwrapped.max(axis=1) <= 180
    area = (lons * np.roll(lats, -1, axis=1) - np.roll(lons, -1, axis=1) * lats).sum(axis=1)
    found = []
    for row, lon, lat in zip(range(len(lons)), lons.round(6), lats.round(6), strict=True):
        if not plain[row]:
            found.append(footprint(lons[row], lats[row]))
            continue
        ring = np.stack([lon, lat], axis=1)
        ring = ring if area[row] > 0 else ring[::-1]
        points = ring.tolist()
        found.append(
            (
                {"type": "Polygon", "coordinates": [[*points, points[0]]]},
                (float(lon.min()), float(lat.min()), float(lon.max()), float(lat.max())),
            )
        )
    return found


def footprint(lon: np.ndarray, lat: np.ndarray) -> tuple[dict[str, Any], Bounds]:
    """GeoJSON and STAC bbox of one outline that crosses the antimeridian or circles a pole."""
    steps = np.diff(np.append(lon, lon[0]))
    steps = (steps + 180) % 360 - 180
    if abs(steps.sum()) > 180:  # the outline circles a pole
        if lat.mean() > 0:
            shape = box(-180, float(lat.min()), 180, 90)
        else:
            shape = box(-180, -90, 180, float(lat.max()))
        return mapping(shape), shape.bounds
    unwrapped = lon[0] + np.concatenate([[0], np.cumsum(steps[:-1])])
    polygon = shapely.Polygon(np.stack([unwrapped, lat], axis=1))
    parts = []
    for shift in (-360, 0, 360):
        piece = shapely.intersection(polygon, box(-180 - shift, -90, 180 - shift, 90))
        if not piece.is_empty and piece.area > 0:
            parts.append(shapely.affinity.translate(piece, xoff=shift))
    joined = shapely.MultiPolygon(
        [p for part in parts for p in getattr(part, "geoms", [part]) if p.area > 0]
    )
    joined = shapely.orient_polygons(joined)
    west = min(p.bounds[0] for p in joined.geoms if p.bounds[2] > 0)
    east = max(p.bounds[2] for p in joined.geoms if p.bounds[0] < 0)
    _, south, _, north = joined.bounds
    return mapping(joined), (float(west), float(south), float(east), float(north))


def modis_like_items(
    count: int, *, collection: str, start: datetime, seed: int = 0, owner: str | None = None
) -> Iterator[Item]:
    """Consecutive 5-minute MODIS-like granules, as catalogue items: a large catalogue to test.

    Footprints follow a sun-synchronous orbit; assets point at files that do not exist.

    Parameters
    ----------
    count
        How many items.
    collection
        Their collection's id.
    start
        The first granule's start.
    seed
        Seeds the orbit's node and the assets' sizes.
    owner
        The items' owner (None: public).

    Yields
    ------
    Item
        In time order.
    """
    pick = np.random.default_rng(seed)
    node = float(pick.uniform(-math.pi, math.pi))
    chunk = 10_000
    for first in range(0, count, chunk):
        seconds = GRANULE_S * np.arange(first, min(count, first + chunk), dtype=np.float64)
        lons, lats = swath_corners(seconds, node)
        sizes = pick.integers(20_000_000, 80_000_000, len(seconds))
        shapes = footprints(lons, lats)
        for offset, (geometry, bbox), size in zip(seconds, shapes, sizes, strict=True):
            began = start + timedelta(seconds=float(offset))
            name = f"{collection}.A{began:%Y%j.%H%M}.061"
            yield Item(
                id=name,
                collection=collection,
                start=began,
                end=began + timedelta(seconds=GRANULE_S),
                geometry=geometry,
                bbox=bbox,
                properties={"platform": "terra", "instruments": ["modis"]},
                assets={
                    "data": Asset(
                        location=f"/archive/{collection}/{began:%Y/%j}/{name}.hdf",
                        media_type="application/x-hdf",
                        size=int(size),
                        sha256=f"{int(offset):064x}",
                    )
                },
                owner=owner,
            )

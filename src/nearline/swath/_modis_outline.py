"""The outline, in longitude and latitude, of an HDF-EOS2 grid tile: the part of its projected
rectangle that lies on the Earth.

GCTP_SNSOID (the MODIS land tiles) is the sinusoidal projection on a sphere of radius R
(``ProjParams[0]``, 6371007.181 m): ``x = R (lon - lon0) cos(lat)``, ``y = R lat``. Its inverse
is ``lat = y / R`` and ``lon = lon0 + x / (R cos(lat))``, defined where ``|lon - lon0| <= 180``.
At each latitude a tile's columns ``x_left..x_right`` are therefore the longitudes
``[max(-180, x_left / (R cos lat)), min(180, x_right / (R cos lat))]`` about ``lon0``: a tile
at the projection's edge is a sliver bounded by those curves and ±180, and a tile whose
columns reach ``x = 0`` and whose rows reach ``y = ±R pi / 2`` holds the pole. The outline
runs up the western boundary and down the eastern one; the curves are sampled where they
bend (bisected until the chord strays at most :data:`ACCURACY` degrees of longitude from the
curve), and exactly at each point where a curve meets ±180.

GCTP_GEO (the climate modelling grids) is plain longitude and latitude: a rectangle.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np

ACCURACY = 1e-4  # degrees of longitude: the most a chord may stray from the curve (< 11 m)
MAX_BISECTIONS = 24


def packed_dms(value: float) -> float:
    """Degrees from HDF-EOS's packed DDDMMMSSS.SS (GCTP_GEO corners: -180000000.0 is -180)."""
    magnitude = abs(value)
    degrees = math.floor(magnitude / 1e6)
    minutes = math.floor((magnitude - degrees * 1e6) / 1e3)
    seconds = magnitude - degrees * 1e6 - minutes * 1e3
    return math.copysign(degrees + minutes / 60 + seconds / 3600, value)


def geographic_outline(
    upper_left: tuple[float, float], lower_right: tuple[float, float]
) -> list[np.ndarray]:
    """A GCTP_GEO grid's rectangle (corners in packed DMS), within -90..90 latitude."""
    west, north = (packed_dms(v) for v in upper_left)
    east, south = (packed_dms(v) for v in lower_right)
    south, north = max(-90.0, min(south, north)), min(90.0, max(south, north))
    west, east = min(west, east), max(west, east)
    if not (east > west and north > south):
        return []
    ring = [(west, south), (east, south), (east, north), (west, north), (west, south)]
    return [np.array(ring, np.float64)]


def sinusoidal_outline(
    upper_left: tuple[float, float],
    lower_right: tuple[float, float],
    *,
    radius: float,
    lon0: float = 0.0,
    false_easting: float = 0.0,
    false_northing: float = 0.0,
) -> list[np.ndarray]:
    """The valid part of a GCTP_SNSOID tile (corners in metres) as one ring of (lon, lat),
    or no ring if the tile lies wholly off the Earth."""
    x_left, y_top = upper_left[0] - false_easting, upper_left[1] - false_northing
    x_right, y_bottom = lower_right[0] - false_easting, lower_right[1] - false_northing
    x_left, x_right = min(x_left, x_right), max(x_left, x_right)
    top = min(90.0, math.degrees(max(y_top, y_bottom) / radius))
    bottom = max(-90.0, math.degrees(min(y_top, y_bottom) / radius))
    if not top > bottom or x_right <= x_left:
        return []
    halfturn = math.pi * radius  # |x| that reaches ±180 where cos(lat) = 1
    # where cos(lat) meets |x| / (pi R): a curve meets ±180 (a kink), or the interval closes
    kinks = [_latitude(abs(x) / halfturn, bottom, top) for x in (x_left, x_right) if x]
    needs = [x_left / halfturn if x_left > 0 else 0.0, -x_right / halfturn if x_right < 0 else 0.0]
    south, north = _valid_latitudes(max(needs), bottom, top)
    if south is None:
        return []

    def west(lat: np.ndarray) -> np.ndarray:
        return _longitude(x_left, lat, radius)

    def east(lat: np.ndarray) -> np.ndarray:
        return _longitude(x_right, lat, radius)

    stops = np.array(sorted({south, north, *(k for k in kinks if k and south < k < north)}))
    up, down = _sampled(stops, west), _sampled(stops, east)[::-1]
    ring = np.concatenate([np.column_stack([west(up), up]), np.column_stack([east(down), down])])
    ring[:, 0] += lon0
    return [np.vstack([ring, ring[:1]])]


def _latitude(cosine: float, bottom: float, top: float) -> float | None:
    """The latitude within [bottom, top] (one hemisphere) whose cosine is ``cosine``."""
    if cosine > 1:
        return None
    lat = math.degrees(math.acos(cosine))
    lat = lat if top > 0 else -lat
    return lat if bottom <= lat <= top else None


def _valid_latitudes(need: float, bottom: float, top: float) -> tuple[float | None, float]:
    """The latitudes of [bottom, top] where cos(lat) >= ``need`` (the tile's columns reach
    within ±180 there). A tile lies in one hemisphere, where |lat| grows toward its pole."""
    if need <= 0:
        return bottom, top
    if need > 1:
        return None, top
    limit = math.degrees(math.acos(need))
    south, north = max(bottom, -limit), min(top, limit)
    return (south, north) if north > south else (None, top)


def _longitude(x: float, lat: np.ndarray, radius: float) -> np.ndarray:
    """``x / (R cos lat)`` in degrees, clipped to ±180 (at the pole, the sign of ``x``)."""
    cosine = np.cos(np.radians(lat))
    with np.errstate(divide="ignore", invalid="ignore"):
        lon = np.degrees(x / (radius * cosine))
    lon = np.where(cosine <= 0, math.copysign(180.0, x) if x else 0.0, lon)
    return np.clip(lon, -180.0, 180.0)


def _sampled(stops: np.ndarray, curve: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Latitudes from ``stops[0]`` to ``stops[-1]``, including every stop, bisected until the
    curve's chord strays at most ACCURACY degrees from it at the middle (between stops it
    bends one way, so the middle is where a chord strays most, to within a few percent)."""
    between = [np.linspace(a, b, 5) for a, b in itertools.pairwise(stops)]
    lats = np.unique(np.concatenate([stops, *between]))
    for _ in range(MAX_BISECTIONS):
        middle = (lats[:-1] + lats[1:]) / 2
        ends = curve(lats)
        stray = np.abs(curve(middle) - (ends[:-1] + ends[1:]) / 2) > ACCURACY
        if not stray.any():
            break
        lats = np.sort(np.concatenate([lats, middle[stray]]))
    return lats

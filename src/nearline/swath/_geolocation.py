"""Every pixel's position and angles from the 51 tie points of each GAC scan line."""

from __future__ import annotations

import numba
import numpy as np

from nearline.swath._block import N_PIXELS, TIE_COLUMNS, SwathBlock


@numba.njit(cache=True, nogil=True, inline="always")
def _wrap(d):
    if d > 180.0:
        return d - 360.0
    if d < -180.0:
        return d + 360.0
    return d


@numba.njit(cache=True, nogil=True, inline="always")
def _quadratic(a, b, c, t):
    """The parabola through (0, a), (1, b), (2, c) at ``t``."""
    return a * (t - 1) * (t - 2) / 2 - b * t * (t - 2) + c * t * (t - 1) / 2


@numba.njit(cache=True, nogil=True)
def _parabola_columns(columns, n_pixels):
    """Per pixel column: the first of its three nearest tie points and its position ``t``
    (0..2) on their parabola; the same for every line, so computed once per block."""
    n_tie = columns.size
    step = columns[1] - columns[0]
    first = np.empty(n_pixels, np.int64)
    position = np.empty(n_pixels, np.float64)
    for j in range(n_pixels):
        k = min(max(round((j - columns[0]) / step) - 1, 0), n_tie - 3)
        first[j] = k
        position[j] = (j - columns[k]) / step
    return first, position


@numba.njit(cache=True, nogil=True)
def _chord_columns(columns, n_pixels):
    """Per pixel column: the tie point before it and its weight toward the next one."""
    n_tie = columns.size
    step = columns[1] - columns[0]
    before = np.empty(n_pixels, np.int64)
    weight = np.empty(n_pixels, np.float64)
    for j in range(n_pixels):
        k = min(max((j - columns[0]) // step, 0), n_tie - 2)
        before[j] = k
        weight[j] = (j - columns[k]) / (columns[k + 1] - columns[k])
    return before, weight


@numba.njit(cache=True, nogil=True)
def _interpolate_line(tie_lon, tie_lat, first, position, before, weight, xyz, out_lon, out_lat):
    n_tie = tie_lon.size
    polar = False
    for k in range(n_tie):
        if abs(tie_lat[k]) > 75.0:
            polar = True
    if not polar:
        # on a parabola through the three nearest tie points: pixels spread faster
        # toward the scan edges, and a straight line between tie points misses by km
        for j in range(out_lon.size):
            k, t = first[j], position[j]
            base = tie_lon[k + 1]
            lon = base + _quadratic(_wrap(tie_lon[k] - base), 0.0, _wrap(tie_lon[k + 2] - base), t)
            out_lon[j] = _wrap(lon)
            lat = _quadratic(tie_lat[k], tie_lat[k + 1], tie_lat[k + 2], t)
            out_lat[j] = min(90.0, max(-90.0, lat))
        return
    # near a pole, on the unit sphere: longitudes swing fast there
    deg = np.pi / 180.0
    for k in range(n_tie):  # each tie point on the sphere once, not once per pixel
        xyz[k, 0] = np.cos(tie_lat[k] * deg) * np.cos(tie_lon[k] * deg)
        xyz[k, 1] = np.cos(tie_lat[k] * deg) * np.sin(tie_lon[k] * deg)
        xyz[k, 2] = np.sin(tie_lat[k] * deg)
    for j in range(out_lon.size):
        k, w = before[j], weight[j]
        x = xyz[k, 0] + w * (xyz[k + 1, 0] - xyz[k, 0])
        y = xyz[k, 1] + w * (xyz[k + 1, 1] - xyz[k, 1])
        z = xyz[k, 2] + w * (xyz[k + 1, 2] - xyz[k, 2])
        out_lon[j] = np.arctan2(y, x) / deg
        out_lat[j] = np.arctan2(z, np.sqrt(x * x + y * y)) / deg


@numba.njit(cache=True, nogil=True)
def _interpolate(tie_lon, tie_lat, columns, out_lon, out_lat):
    first, position = _parabola_columns(columns, out_lon.shape[1])
    before, weight = _chord_columns(columns, out_lon.shape[1])
    xyz = np.empty((columns.size, 3), np.float64)
    for i in range(tie_lon.shape[0]):
        _interpolate_line(
            tie_lon[i], tie_lat[i], first, position, before, weight, xyz, out_lon[i], out_lat[i]
        )


@numba.njit(cache=True, nogil=True)
def _interpolate_plain(tie, columns, longitude, out):
    before, weight = _chord_columns(columns, out.shape[1])
    for i in range(tie.shape[0]):
        for j in range(out.shape[1]):
            k, w = before[j], weight[j]
            if longitude:  # the short way round, then back into -180..180
                out[i, j] = _wrap(tie[i, k] + w * _wrap(tie[i, k + 1] - tie[i, k]))
            else:
                out[i, j] = (1.0 - w) * tie[i, k] + w * tie[i, k + 1]  # exact at both ends


def lonlat(block: SwathBlock) -> tuple[np.ndarray, np.ndarray]:
    """Longitude and latitude of every pixel, (n, 409) float32, from the tie points.

    On a parabola through the three nearest tie points along the scan line, longitudes
    unwrapped across the date line; for lines reaching beyond 75 degrees latitude, linearly
    on the unit sphere.
    """
    return pixel_lonlat(block.tie_lon, block.tie_lat)


def pixel_lonlat(tie_lon: np.ndarray, tie_lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`lonlat` of tie-point arrays (lines, 51) without a block around them."""
    shape = (tie_lat.shape[0], N_PIXELS)
    lon, lat = np.empty(shape, np.float32), np.empty(shape, np.float32)
    _interpolate(np.ascontiguousarray(tie_lon),
                 np.ascontiguousarray(tie_lat), TIE_COLUMNS, lon, lat)  # fmt: skip
    return lon, lat


def interpolate_tiepoints(tie: np.ndarray, *, longitude: bool = False) -> np.ndarray:
    """Any smooth tie-point field (angles) to every pixel, (n, 51) -> (n, 409) float32.

    Linear between tie points and linearly extrapolated to columns 0-3 and 405-408. With
    ``longitude=True`` each step goes the short way round, so a line crossing the date line
    stays in -180..180 without a jump through zero. For geolocation prefer :func:`lonlat`,
    which follows the curvature of the scan (linear is off by up to 2 km between tie points).
    """
    tie = np.asarray(tie)
    if tie.ndim != 2 or tie.shape[1] != TIE_COLUMNS.size:
        raise ValueError(f"tie-point field of shape {tie.shape}; expected (lines, 51)")
    out = np.empty((tie.shape[0], N_PIXELS), np.float32)
    _interpolate_plain(tie, TIE_COLUMNS, longitude, out)
    return out

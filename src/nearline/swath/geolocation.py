"""Every pixel's position and angles from the 51 tie points of each GAC scan line."""

from __future__ import annotations

import numba
import numpy as np

from nearline.swath.block import N_PIXELS, TIE_COLUMNS, SwathBlock


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
def _interpolate_line(tie_lon, tie_lat, columns, out_lon, out_lat):
    n_tie = tie_lon.size
    step = columns[1] - columns[0]
    polar = False
    for k in range(n_tie):
        if abs(tie_lat[k]) > 75.0:
            polar = True
    deg = np.pi / 180.0
    for j in range(out_lon.size):
        if not polar:
            # on a parabola through the three nearest tie points: pixels spread faster
            # toward the scan edges, and a straight line between tie points misses by km
            k = min(max(round((j - columns[0]) / step) - 1, 0), n_tie - 3)
            t = (j - columns[k]) / step
            base = tie_lon[k + 1]
            lon = base + _quadratic(_wrap(tie_lon[k] - base), 0.0, _wrap(tie_lon[k + 2] - base), t)
            out_lon[j] = _wrap(lon)
            lat = _quadratic(tie_lat[k], tie_lat[k + 1], tie_lat[k + 2], t)
            out_lat[j] = min(90.0, max(-90.0, lat))
            continue
        # near a pole, on the unit sphere: longitudes swing fast there
        k = min(max((j - columns[0]) // step, 0), n_tie - 2)
        w = (j - columns[k]) / step
        x0 = np.cos(tie_lat[k] * deg) * np.cos(tie_lon[k] * deg)
        y0 = np.cos(tie_lat[k] * deg) * np.sin(tie_lon[k] * deg)
        z0 = np.sin(tie_lat[k] * deg)
        x1 = np.cos(tie_lat[k + 1] * deg) * np.cos(tie_lon[k + 1] * deg)
        y1 = np.cos(tie_lat[k + 1] * deg) * np.sin(tie_lon[k + 1] * deg)
        z1 = np.sin(tie_lat[k + 1] * deg)
        x = x0 + w * (x1 - x0)
        y = y0 + w * (y1 - y0)
        z = z0 + w * (z1 - z0)
        out_lon[j] = np.arctan2(y, x) / deg
        out_lat[j] = np.arctan2(z, np.sqrt(x * x + y * y)) / deg


@numba.njit(cache=True, nogil=True)
def _interpolate(tie_lon, tie_lat, columns, out_lon, out_lat):
    for i in range(tie_lon.shape[0]):
        _interpolate_line(tie_lon[i], tie_lat[i], columns, out_lon[i], out_lat[i])


@numba.njit(cache=True, nogil=True)
def _interpolate_plain(tie, columns, longitude, out):
    n_tie = columns.size
    for i in range(tie.shape[0]):
        for j in range(out.shape[1]):
            k = min(max((j - columns[0]) // (columns[1] - columns[0]), 0), n_tie - 2)
            w = (j - columns[k]) / (columns[k + 1] - columns[k])
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
    shape = (block.n_lines, N_PIXELS)
    lon, lat = np.empty(shape, np.float32), np.empty(shape, np.float32)
    _interpolate(block.tie_lon, block.tie_lat, TIE_COLUMNS, lon, lat)
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

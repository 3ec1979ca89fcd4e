"""Regular latitude-longitude grids (plate carree), including GEOS-5's pole-centred ones.

x is longitude and y latitude, in degrees. Every lat-lon grid nearline knows spans 360
degrees of longitude, so longitudes wrap onto it; the poles belong to the first and last rows.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def forward(
    lon: np.ndarray, lat: np.ndarray, x: np.ndarray, y: np.ndarray, xmin: float, span: float
) -> None:
    """x: longitude wrapped into [xmin, xmin + span); y: latitude; NaN outside the sphere."""
    for i in range(lon.size):
        lo, la = np.float64(lon[i]), np.float64(lat[i])
        if not (la >= -90.0 and la <= 90.0 and abs(lo) < math.inf):
            x[i], y[i] = math.nan, math.nan
        else:
            x[i] = lo - span * math.floor((lo - xmin) / span)
            y[i] = la


@numba.njit(cache=True, nogil=True)
def cell_indices(
    lon: np.ndarray,
    lat: np.ndarray,
    out: np.ndarray,
    xmin: float,
    ymax: float,
    dx: float,
    dy: float,
    width: int,
    height: int,
    first_row: int,
    stop_row: int,
    wraps: bool,
) -> None:
    """Flat cell index (relative to ``first_row``) of each point, -1 outside rows or grid.

    With ``wraps`` (the grid spans 360 degrees) longitudes wrap onto it; the southern edge
    belongs to the last row, so a grid reaching -90 holds the south pole.
    """
    for i in range(lon.size):
        out[i] = point_cell(
            np.float64(lon[i]), np.float64(lat[i]),
            xmin, ymax, dx, dy, width, height, first_row, stop_row, wraps,
        )  # fmt: skip


@numba.njit(cache=True, nogil=True, inline="always")
def point_cell(
    x: float, y: float, xmin: float, ymax: float, dx: float, dy: float, width: int,
    height: int, first_row: int, stop_row: int, wraps: bool,
) -> int:  # fmt: skip
    """``cell_indices`` of one point (x longitude, y latitude)."""
    if not (y >= -90.0 and y <= 90.0 and abs(x) < math.inf):  # NaN fails too
        return -1
    col = math.floor((x - xmin) / dx)
    if wraps:
        col %= width
    row = math.floor((ymax - y) / dy)
    if row == height and y >= ymax - height * dy:
        row = height - 1
    if col < 0 or col >= width or row < first_row or row >= stop_row:
        return -1
    return (row - first_row) * width + col

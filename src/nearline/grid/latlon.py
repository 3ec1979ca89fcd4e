"""Regular latitude-longitude grids (plate carree), including GEOS-5's pole-centred ones."""

from __future__ import annotations

import math

import numba
import numpy as np


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
) -> None:
    """Flat cell index (relative to ``first_row``) of each point; longitudes wrap."""
    for i in range(lon.size):
        x = lon[i]
        y = lat[i]
        if not (abs(y) <= 90.0 and abs(x) <= 360.0):
            out[i] = -1
            continue
        col = math.floor((x - xmin) / dx) % width  # wraps: the grid spans 360 degrees
        row = min(math.floor((ymax - y) / dy), height - 1)  # the south pole is in the last row
        if row < first_row or row >= stop_row:
            out[i] = -1
        else:
            out[i] = (row - first_row) * width + col

"""Dispatch from a :class:`Grid` to the compiled kernel of its kind."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from nearline.grid import igh, latlon

if TYPE_CHECKING:
    from nearline.grid.base import Grid


def cell_indices(
    grid: Grid, lon: np.ndarray, lat: np.ndarray, out: np.ndarray, first: int, stop: int
) -> None:
    from nearline.grid.base import Kind

    xmin, _, _, ymax = grid.extent
    dx, dy = grid.cell_size
    if grid.kind is Kind.IGH:
        igh.cell_indices(
            lon,
            lat,
            out,
            xmin,
            ymax,
            dx,
            dy,
            grid.width,
            first,
            stop,
            igh.MOLLWEIDE_SCALE,
            igh.MOLLWEIDE_NORTH,
        )
    else:
        latlon.cell_indices(lon, lat, out, xmin, ymax, dx, dy, grid.width, grid.height, first, stop)


def northing(grid: Grid, lat: np.ndarray) -> np.ndarray:
    """y of each latitude in the grid's units (IGH: metres; lat-lon: the latitude)."""
    from nearline.grid.base import Kind

    lat = np.asarray(lat, dtype=np.float64)
    if grid.kind is Kind.LATLON:
        return lat.copy()
    return np.vectorize(igh.northing, otypes=[np.float64])(lat)

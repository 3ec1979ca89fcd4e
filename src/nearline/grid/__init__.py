"""grid: target grids (Interrupted Goode Homolosine 8 km / 1 km, lat-lon, GEOS-5) and their
partition into latitude bands."""

from __future__ import annotations

from nearline.grid.bands import Band, row_of_latitude, split_rows
from nearline.grid.base import Grid, Kind
from nearline.grid.registry import available_grids, get_grid

__all__ = ["Band", "Grid", "Kind", "available_grids", "get_grid", "row_of_latitude", "split_rows"]

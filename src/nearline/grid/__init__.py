"""grid: target grids (Interrupted Goode Homolosine 8 km / 1 km, lat-lon, GEOS-5) and their
partition into latitude bands."""

from __future__ import annotations

from nearline.grid._bands import Band, row_of_latitude, split_rows
from nearline.grid._base import Grid, Kind
from nearline.grid._footprints import FootprintRegistrar
from nearline.grid._igh import EARTH_RADIUS
from nearline.grid._registry import IGH_CRS, available_grids, get_grid, igh_grid, latlon_grid

__all__ = [
    "EARTH_RADIUS",
    "IGH_CRS",
    "Band",
    "FootprintRegistrar",
    "Grid",
    "Kind",
    "available_grids",
    "get_grid",
    "igh_grid",
    "latlon_grid",
    "row_of_latitude",
    "split_rows",
]

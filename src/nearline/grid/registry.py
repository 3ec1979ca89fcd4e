"""The named grids a user can ask for by ``--grid NAME``."""

from __future__ import annotations

from nearline.errors import GridError
from nearline.grid.base import Grid, Kind

IGH_CRS = "+proj=igh +R=6370997 +units=m +no_defs"
LATLON_CRS = "EPSG:4326"
_IGH_EXTENT = (-20016000.0, -8672000.0, 20016000.0, 8672000.0)


def _geos5(name: str, dlat: float, dlon: float) -> Grid:
    """GEOS-5's grids put cell centres on both poles and on -180 degrees."""
    width, height = round(360 / dlon), round(180 / dlat) + 1
    extent = (-180 - dlon / 2, -90 - dlat / 2, 180 - dlon / 2, 90 + dlat / 2)
    return Grid(name, Kind.LATLON, LATLON_CRS, width, height, extent)


GRIDS: dict[str, Grid] = {
    "igh-8km": Grid("igh-8km", Kind.IGH, IGH_CRS, 5004, 2168, _IGH_EXTENT),
    "igh-1km": Grid("igh-1km", Kind.IGH, IGH_CRS, 40032, 17344, _IGH_EXTENT),
    "latlon-0.25": Grid("latlon-0.25", Kind.LATLON, LATLON_CRS, 1440, 720, (-180, -90, 180, 90)),
    "geos5-0.5x0.625": _geos5("geos5-0.5x0.625", 0.5, 0.625),
    "geos5-1x1.25": _geos5("geos5-1x1.25", 1.0, 1.25),
}


def get_grid(name: str | Grid) -> Grid:
    """The grid called ``name`` (a Grid passes through)."""
    if isinstance(name, Grid):
        return name
    try:
        return GRIDS[name]
    except KeyError:
        raise GridError(f"unknown grid {name!r}; choose one of {', '.join(GRIDS)}") from None


def available_grids() -> list[str]:
    return list(GRIDS)

"""The named grids a user can ask for by ``--grid NAME``, and builders for others. Grids of
other packages plug in through the ``nearline.grids`` entry points, each naming a Grid."""

from __future__ import annotations

from nearline.errors import GridError
from nearline.grid._base import Grid, Kind
from nearline.plugins import Registry

IGH_CRS = "+proj=igh +R=6370997 +units=m +no_defs"
LATLON_CRS = "EPSG:4326"
# the published IGH extent: whole kilometres just beyond pi R = 20015077 m in x; in y just
# short of the poles (+-8673539 m), so the last ~0.13 degrees around each pole are outside
IGH_EXTENT = (-20016000.0, -8672000.0, 20016000.0, 8672000.0)


def igh_grid(name: str, cell_size: float) -> Grid:
    """An IGH grid of square cells of ``cell_size`` metres over the published extent."""
    xmin, ymin, xmax, ymax = IGH_EXTENT
    width, height = (xmax - xmin) / cell_size, (ymax - ymin) / cell_size
    if cell_size <= 0 or width != round(width) or height != round(height):
        raise GridError(
            f"IGH cell size {cell_size} m must divide the extent {IGH_EXTENT} "
            "(e.g. 1000, 2000, 4000, 8000)"
        )
    return Grid(name, Kind.IGH, IGH_CRS, round(width), round(height), IGH_EXTENT)


def latlon_grid(name: str, dlat: float, dlon: float, *, pole_centred: bool = False) -> Grid:
    """A global lat-lon grid of ``dlat`` x ``dlon`` degree cells.

    Plain grids have cell edges on -180 and +-90. ``pole_centred`` grids follow GEOS-5:
    cell centres on both poles and on -180 degrees, so 180 / dlat + 1 rows.
    """
    width, rows = 360 / dlon, 180 / dlat
    if dlat <= 0 or dlon <= 0 or abs(width - round(width)) > 1e-9 or abs(rows - round(rows)) > 1e-9:
        raise GridError(f"lat-lon cells of {dlat} x {dlon} degrees must divide 180 x 360")
    if pole_centred:
        extent = (-180 - dlon / 2, -90 - dlat / 2, 180 - dlon / 2, 90 + dlat / 2)
        return Grid(name, Kind.LATLON, LATLON_CRS, round(width), round(rows) + 1, extent)
    return Grid(name, Kind.LATLON, LATLON_CRS, round(width), round(rows), (-180, -90, 180, 90))


GRIDS: dict[str, Grid] = {
    "igh-8km": igh_grid("igh-8km", 8000.0),
    "igh-1km": igh_grid("igh-1km", 1000.0),
    "latlon-0.25": latlon_grid("latlon-0.25", 0.25, 0.25),
    "geos5-0.5x0.625": latlon_grid("geos5-0.5x0.625", 0.5, 0.625, pole_centred=True),
    "geos5-1x1.25": latlon_grid("geos5-1x1.25", 1.0, 1.25, pole_centred=True),
}
GRID_REGISTRY: Registry[Grid] = Registry(
    "grid", group="nearline.grids", builtins=GRIDS, error=GridError
)


def get_grid(name: str | Grid) -> Grid:
    """The grid called ``name`` (a Grid passes through); unknown names raise GridError."""
    if isinstance(name, Grid):
        return name
    return GRID_REGISTRY.get(name)


def available_grids() -> list[str]:
    return GRID_REGISTRY.names()

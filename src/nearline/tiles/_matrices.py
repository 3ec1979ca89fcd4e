"""The tile matrix sets the map tiles are served in (morecantile's definitions of the OGC
registry's WebMercatorQuad and WorldCRS84Quad), how deep each is served, and where a tile's
pixels lie on the Earth."""

from __future__ import annotations

import math
from functools import cache

import morecantile
import numpy as np
import pyproj

from nearline.errors import NotFound
from nearline.grid import EARTH_RADIUS

TILE_MATRIX_SETS = ("WebMercatorQuad", "WorldCRS84Quad")
# the deepest matrix served: pixels about an eighth of an 8 km cell at the equator (1.2 km
# in WebMercatorQuad, 1.5 km in WorldCRS84Quad); deeper tiles would show nothing new
MAX_ZOOM = {"WebMercatorQuad": 7, "WorldCRS84Quad": 6}


class TileNotFound(NotFound):
    """A tile matrix set, matrix, row or column that is not served: a 404, as OGC API - Tiles
    asks of a tile outside the set's limits."""

    code = "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/req/core/tc-op"


@cache
def tile_matrix_set(name: str) -> morecantile.TileMatrixSet:
    """The tile matrix set called ``name``; :class:`TileNotFound` naming the served ones."""
    if name not in TILE_MATRIX_SETS:
        raise TileNotFound(
            f"no tile matrix set {name!r}; tiles are served in {', '.join(TILE_MATRIX_SETS)}"
        )
    return morecantile.tms.get(name)


def check_tile(name: str, zoom: int, row: int, col: int) -> morecantile.Tile:
    """The tile (col, row, zoom) of set ``name`` if it is served; :class:`TileNotFound` else.

    Parameters
    ----------
    name
        The tile matrix set's id.
    zoom, row, col
        The tile matrix (its id is its zoom level), row and column.
    """
    tms = tile_matrix_set(name)
    if not 0 <= zoom <= MAX_ZOOM[name]:
        raise TileNotFound(f"no tile matrix {zoom} in {name}: it has 0 to {MAX_ZOOM[name]}")
    matrix = tms.matrix(zoom)
    if not (0 <= row < matrix.matrixHeight and 0 <= col < matrix.matrixWidth):
        raise TileNotFound(
            f"tile row {row}, column {col} is outside matrix {zoom} of {name} "
            f"(rows 0 to {matrix.matrixHeight - 1}, columns 0 to {matrix.matrixWidth - 1})"
        )
    return morecantile.Tile(col, row, zoom)


@cache
def _to_lonlat(name: str) -> pyproj.Transformer:
    crs = pyproj.CRS.from_user_input(tile_matrix_set(name).crs.root)
    return pyproj.Transformer.from_crs(crs, "OGC:CRS84", always_xy=True)


def pixel_lonlat(name: str, tile: morecantile.Tile, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Longitude of each column's and latitude of each row's pixel centres (degrees).

    Both served sets are aligned with the meridians and parallels (a column of pixels is one
    longitude, a row one latitude), so ``size`` + ``size`` points are projected, not
    ``size`` squared.
    """
    left, bottom, right, top = tile_matrix_set(name).xy_bounds(tile)
    centres = (np.arange(size) + 0.5) / size
    x = left + (right - left) * centres
    y = top - (top - bottom) * centres
    to_lonlat = _to_lonlat(name)
    lon, _ = to_lonlat.transform(x, np.full(size, (top + bottom) / 2))
    _, lat = to_lonlat.transform(np.full(size, (left + right) / 2), y)
    return np.asarray(lon), np.asarray(lat)


def pixel_metres(lon: np.ndarray, lat: np.ndarray) -> float:
    """The east-west size of a tile's pixel on the ground at its middle row, metres."""
    middle = math.radians(float(lat[len(lat) // 2]))
    return math.radians(abs(float(lon[1] - lon[0]))) * EARTH_RADIUS * math.cos(middle)

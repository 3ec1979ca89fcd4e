"""tiles: map tiles of gridded composites (OGC tile matrix sets, PNG with a legend's colours),
drawn from overviews made once per composite and kept in a bounded cache. No HTTP here: the
service serves them (nearline.api)."""

from __future__ import annotations

from nearline.tiles._cache import TileCache
from nearline.tiles._matrices import (
    MAX_ZOOM,
    TILE_MATRIX_SETS,
    TileNotFound,
    check_tile,
    pixel_lonlat,
    tile_matrix_set,
)
from nearline.tiles._overviews import (
    TILE_SIZE,
    Overviews,
    OverviewsGone,
    block_means,
    level_grid,
    sweep_overviews,
)
from nearline.tiles._render import Drawn, Footprint, draw, encode, footprint, level_for
from nearline.tiles._sources import (
    Composite,
    NotAComposite,
    Source,
    file_identity,
    local_source,
    ndvi,
    object_source,
)
from nearline.tiles._styles import NDVI_INDEX, STYLES, Style, UnknownStyle, drawable, style_of
from nearline.tiles._tiles import OVERVIEW_BYTES, MapTiles

__all__ = [
    "MAX_ZOOM",
    "NDVI_INDEX",
    "OVERVIEW_BYTES",
    "STYLES",
    "TILE_MATRIX_SETS",
    "TILE_SIZE",
    "Composite",
    "Drawn",
    "Footprint",
    "MapTiles",
    "NotAComposite",
    "Overviews",
    "OverviewsGone",
    "Source",
    "Style",
    "TileCache",
    "TileNotFound",
    "UnknownStyle",
    "block_means",
    "check_tile",
    "draw",
    "drawable",
    "encode",
    "file_identity",
    "footprint",
    "level_for",
    "level_grid",
    "local_source",
    "ndvi",
    "object_source",
    "pixel_lonlat",
    "style_of",
    "sweep_overviews",
    "tile_matrix_set",
]

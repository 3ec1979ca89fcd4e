"""Drawing one tile: each pixel's centre found on the composite's grid, at the overview level
whose cell is just finer than the pixel, and painted with the band's colours.

Only the window of that level that the tile's pixels fall in is read, so a tile of the whole
world reads the coarsest level and a tile of a country reads a few chunks of the finest.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import numpy as np
from PIL import Image

from nearline.tiles._matrices import check_tile, pixel_lonlat, pixel_metres
from nearline.tiles._overviews import TILE_SIZE, Overviews, level_grid
from nearline.tiles._styles import Style


@dataclass(frozen=True)
class Drawn:
    """A tile as drawn.

    Parameters
    ----------
    png
        The PNG (RGBA, 256 x 256).
    level
        The overview level it was sampled from (0: the composite's own cells).
    window
        (rows, columns) of that level read to draw it.
    values
        The sampled physical values, NaN where transparent.
    """

    png: bytes
    level: int
    window: tuple[int, int]
    values: np.ndarray


def level_for(overviews: Overviews, pixel: float) -> int:
    """The coarsest level whose cells are no larger than ``pixel`` metres (0 if none is)."""
    cell = max(overviews.composite.grid.cell_size)
    if pixel <= cell:
        return 0
    return min(overviews.levels, math.floor(math.log2(pixel / cell)))


@dataclass(frozen=True)
class Footprint:
    """Where a tile's pixels fall on the overviews, before anything is read.

    Parameters
    ----------
    level
        The overview level the tile is sampled from (0: the composite's own cells).
    cells
        Each pixel's cell of that level (flat index; -1 beyond the grid's poles), as
        (rows, columns) of the tile.
    rows, cols
        The window of that level holding every cell a pixel falls in (empty: none does).
    """

    level: int
    cells: np.ndarray
    rows: slice
    cols: slice


def footprint(overviews: Overviews, matrix_set: str, zoom: int, row: int, col: int) -> Footprint:
    """Which level and window of ``overviews`` tile (``zoom``, ``row``, ``col``) of
    ``matrix_set`` reads: what :func:`draw` reads, found without reading (a benchmark's
    physical limit reads the same window straight from the store).

    Parameters
    ----------
    overviews
        The composite's pyramid.
    matrix_set
        ``WebMercatorQuad`` or ``WorldCRS84Quad``.
    zoom, row, col
        The tile.

    Returns
    -------
    Footprint
        The level, each pixel's cell and the window holding them.

    Raises
    ------
    TileNotFound
        No such tile in the set (or deeper than served).
    """
    tile = check_tile(matrix_set, zoom, row, col)
    lon, lat = pixel_lonlat(matrix_set, tile, TILE_SIZE)
    level = level_for(overviews, pixel_metres(lon, lat))
    grid = level_grid(overviews.composite.grid, level)
    cells = grid.cell_index(*np.meshgrid(lon, lat))  # -1 beyond the grid's poles
    inside = cells >= 0
    if not inside.any():
        return Footprint(level, cells, slice(0, 0), slice(0, 0))
    rows, cols = np.divmod(cells[inside], grid.width)
    return Footprint(level, cells, slice(int(rows.min()), int(rows.max()) + 1),
                     slice(int(cols.min()), int(cols.max()) + 1))  # fmt: skip


def draw(
    overviews: Overviews, style: Style, matrix_set: str, zoom: int, row: int, col: int
) -> Drawn:
    """Draw tile (``zoom``, ``row``, ``col``) of ``matrix_set`` in ``style``.

    Parameters
    ----------
    overviews
        The composite's pyramid.
    style
        Which band (or index) and its colours.
    matrix_set
        ``WebMercatorQuad`` or ``WorldCRS84Quad``.
    zoom, row, col
        The tile.

    Raises
    ------
    TileNotFound
        No such tile in the set (or deeper than served).
    """
    where = footprint(overviews, matrix_set, zoom, row, col)
    inside = where.cells >= 0
    values = np.full(where.cells.shape, np.nan, dtype=np.float32)
    window = (where.rows.stop - where.rows.start, where.cols.stop - where.cols.start)
    if inside.any():
        width = level_grid(overviews.composite.grid, where.level).width
        rows, cols = np.divmod(where.cells[inside], width)
        block = overviews.read(style.band, where.level, where.rows, where.cols)
        values[inside] = block[rows - where.rows.start, cols - where.cols.start]
    return Drawn(png=encode(style.paint(values)), level=where.level, window=window, values=values)


def encode(rgba: np.ndarray) -> bytes:
    """RGBA as PNG, as every tile is encoded (Pillow, compression level 6).

    Parameters
    ----------
    rgba
        (rows, columns, 4) uint8.

    Returns
    -------
    bytes
        The PNG.
    """
    buffer = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(buffer, format="PNG", compress_level=6)
    return buffer.getvalue()

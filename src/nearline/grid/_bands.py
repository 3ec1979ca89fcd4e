"""Latitude bands: contiguous row ranges of a grid, one owner each.

Every grid nearline knows has y depending on latitude alone (IGH included), so a band of
rows is a band of latitudes and the scan lines that can touch it are found from their
latitudes only.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from nearline.errors import GridError
from nearline.grid._base import Grid


@dataclass(frozen=True)
class Band:
    """Rows ``[rows[0], rows[1])`` of a grid."""

    index: int
    rows: tuple[int, int]

    @property
    def height(self) -> int:
        return self.rows[1] - self.rows[0]

    def latitudes(self, grid: Grid) -> tuple[float, float]:
        """(south, north) latitude in degrees the band spans on ``grid``."""
        return grid.latitude_range(self.rows)


def row_of_latitude(grid: Grid, lat: np.ndarray | float) -> np.ndarray:
    """The row (int64, the shape of ``lat``) each latitude in degrees falls in, as
    ``cell_index`` would place a point there, but clipped to the grid: latitudes north of
    the grid give row 0, south of it the last row. NaN gives -1."""
    _, dy = grid.cell_size
    y = grid.northing(lat)
    rows = np.floor((grid.extent[3] - np.nan_to_num(y)) / dy)
    rows = np.clip(rows, 0, grid.height - 1).astype(np.int64)
    return np.where(np.isnan(y), -1, rows)


def split_rows(
    grid: Grid, n_bands: int, *, align: int = 1, weights: np.ndarray | None = None
) -> list[Band]:
    """``n_bands`` contiguous bands covering every row once, edges on multiples of ``align``.

    With ``weights`` (work per row), edges are placed so each band carries about the same
    total weight; otherwise bands have about the same number of rows. A band is never empty:
    when the grid has fewer aligned rows than bands, fewer bands come back.
    """
    if n_bands < 1 or align < 1:
        raise GridError(f"need n_bands >= 1 and align >= 1, got {n_bands} and {align}")
    w = np.ones(grid.height) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (grid.height,) or np.any(w < 0):
        raise GridError(f"weights must be {grid.height} values >= 0, one per row of {grid.name}")
    cumulative = np.concatenate(([0.0], np.cumsum(w + 1e-9)))  # never flat: rows count a bit
    targets = cumulative[-1] * np.arange(1, n_bands) / n_bands
    edges = np.searchsorted(cumulative, targets)
    edges = np.round(edges / align).astype(np.int64) * align
    edges = np.unique(np.clip(np.concatenate(([0], edges, [grid.height])), 0, grid.height))
    return [Band(index, (int(a), int(b))) for index, (a, b) in enumerate(itertools.pairwise(edges))]

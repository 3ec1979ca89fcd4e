"""A coverage subset: chosen bands of chosen layers on a :class:`~nearline.coverage.Target`,
read from only the window of cells the target needs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nearline.coverage._layers import BandInfo, Layer, read_bands, read_window
from nearline.coverage._target import Target
from nearline.errors import CoverageError, CoverageTooLarge
from nearline.grid import Grid, get_grid

DEFAULT_MAX_VALUES = 50_000_000  # values a request may read: a day's global 8 km band is 10.8 M
LIMIT_SETTING = "NEARLINE_COVERAGE_MAX_VALUES"


@dataclass(frozen=True)
class Subset:
    """Stored values of ``bands`` for each layer, on ``target`` of ``grid``.

    ``values[name]`` is (layers, height, width) in the band's stored type, its fill value
    where a pixel's centre is off the grid. ``bytes_read``: what reading it cost, in bytes
    of the files (metadata and the window's chunks).
    """

    grid: Grid
    target: Target
    layers: tuple[Layer, ...]
    bands: dict[str, BandInfo]
    values: dict[str, np.ndarray]
    bytes_read: int

    @property
    def output_grid(self) -> Grid:
        """The target as a Grid: its coordinates and CF grid mapping."""
        return self.target.as_grid(self.grid)


def choose_bands(
    available: dict[str, BandInfo], wanted: Sequence[str] | None
) -> dict[str, BandInfo]:
    """``wanted`` of ``available``, in the order asked (None: every band, in file order).

    Raises
    ------
    CoverageError
        A band is not among them; the message lists those there are.
    """
    if wanted is None:
        return dict(available)
    unknown = [name for name in wanted if name not in available]
    if unknown or not wanted:
        raise CoverageError(
            f"unknown band {', '.join(map(repr, unknown)) or '(none named)'}: this collection's "
            f"bands are {', '.join(available)}"
        )
    return {name: available[name] for name in dict.fromkeys(wanted)}


def first_bands(
    layers: Sequence[Layer], wanted: Sequence[str] | None, grid: Grid
) -> dict[str, BandInfo]:
    """The bands ``wanted`` of the first layer on ``grid`` (see :func:`choose_bands`).

    Raises
    ------
    CoverageError
        No layer, or an unknown band.
    """
    if not layers:
        raise CoverageError("no item of this collection lies in the time asked for")
    found = read_bands(layers[0], grid, wanted)
    if wanted is None or (wanted and len(found) == len(set(wanted))):
        return found
    return choose_bands(read_bands(layers[0], grid), wanted)  # every band, for what to ask


def check_limit(values: int, limit: int, what: str) -> None:
    """Refuse a request that would read more than ``limit`` values (413), saying how much
    it asked, the limit and its setting."""
    if values > limit:
        raise CoverageTooLarge(
            f"{what} would read {values:,} values, over this service's limit of {limit:,} "
            f"({LIMIT_SETTING}); ask for a smaller box, fewer bands or times, or a coarser scale"
        )


def _rows_to_read(rows: np.ndarray) -> tuple[slice | np.ndarray, np.ndarray]:
    """Which grid rows to read for a target's pixel rows (-1: off the grid), and where each
    pixel row's cell is among them: the window's rows, or only the rows a coarse target
    samples when they are fewer than half of them (a scale-down holds a row of cells per
    pixel row, not the whole window)."""
    on = rows[rows >= 0]
    first, stop = int(on.min()), int(on.max()) + 1
    needed = np.unique(on)
    if needed.size * 2 < stop - first:
        return needed, np.searchsorted(needed, np.clip(rows, first, None))
    return slice(first, stop), np.clip(rows - first, 0, None)


def read_subset(
    layers: Sequence[Layer],
    *,
    grid: str | Grid,
    target: Target,
    bands: Sequence[str] | None = None,
    limit: int = DEFAULT_MAX_VALUES,
) -> Subset:
    """Read ``bands`` of every layer on ``target``, each pixel the value of the grid cell
    holding its centre, reading only the window of cells the target covers.

    Parameters
    ----------
    layers
        The files, in time order; at least one.
    grid
        Their grid, or its name.
    target
        The raster to fill, in the grid's CRS.
    bands
        Band names (None: every band of the first layer).
    limit
        Values the read may hold at most (cells read x bands x layers: the window's, or
        for a coarse target only its rows that the pixels sample).

    Raises
    ------
    CoverageError
        No layer, an unknown band, or a target wholly off the grid.
    CoverageTooLarge
        Over ``limit``.
    """
    grid = get_grid(grid)
    chosen = first_bands(layers, bands, grid)
    rows, cols = target.rows(grid), target.cols(grid)
    if (rows < 0).all() or (cols < 0).all():
        raise CoverageError(f"the subset asked for lies outside the grid {grid.name}")
    row_key, row_at = _rows_to_read(rows)
    c0, c1 = int(cols[cols >= 0].min()), int(cols.max()) + 1
    held = len(row_at) if isinstance(row_key, np.ndarray) else row_key.stop - row_key.start
    check_limit(held * (c1 - c0) * len(chosen) * len(layers), limit, "this subset")
    values = {
        name: np.empty((len(layers), target.height, target.width), info.dtype)
        for name, info in chosen.items()
    }
    off = (rows < 0)[:, None] | (cols < 0)[None, :]
    pick = np.ix_(row_at, np.clip(cols - c0, 0, None))
    total = 0
    for number, layer in enumerate(layers):
        window, spent = read_window(layer, chosen, row_key, slice(c0, c1), grid)
        total += spent
        for name, info in chosen.items():
            picked = window[name][pick]
            picked[off] = info.fill if info.fill is not None else 0
            values[name][number] = picked
    return Subset(grid, target, tuple(layers), chosen, values, total)

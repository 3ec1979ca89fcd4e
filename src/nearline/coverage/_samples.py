"""Values at longitude/latitude points, each the value of the grid cell holding the point:
EDR's position queries (a point's values through time) and its area and cube queries (a
regular longitude/latitude lattice at about the grid's own resolution over the box).

A few points are read cell by cell (only the chunks holding them); a lattice reads the
bounding window of its cells once a layer."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nearline.coverage._layers import BandInfo, Layer, read_cells, read_window
from nearline.coverage._subset import DEFAULT_MAX_VALUES, check_limit, first_bands
from nearline.coverage._target import Box, cell_degrees
from nearline.errors import CoverageError
from nearline.grid import Grid, get_grid

FEW_POINTS = 64  # up to this many points are read cell by cell, more as one window


@dataclass(frozen=True)
class Samples:
    """Stored values of ``bands`` at points, for each layer.

    ``values[name]`` is (layers, points) in the band's stored type, its fill value where a
    point is off the grid (an interruption, beyond the poles). ``lon``/``lat``: the points;
    ``shape``: how they are laid out, (points,) or a lattice's (latitudes, longitudes).
    """

    lon: np.ndarray
    lat: np.ndarray
    shape: tuple[int, ...]
    layers: tuple[Layer, ...]
    bands: dict[str, BandInfo]
    values: dict[str, np.ndarray]
    bytes_read: int


def lattice(grid: str | Grid, box: Box) -> tuple[np.ndarray, np.ndarray]:
    """Longitudes and latitudes of a regular lattice over ``box`` at about the grid's own
    resolution (cell centres of the box cut into equal cells; one on a degenerate side)."""
    step = cell_degrees(get_grid(grid))
    axes = []
    for low, high in ((box.west, box.east), (box.south, box.north)):
        count = max(1, math.ceil((high - low) / step - 1e-9))
        width = (high - low) / count
        axes.append(low + (np.arange(count) + 0.5) * width if high > low else np.array([low]))
    return axes[0], axes[1]


def sample_points(
    layers: Sequence[Layer],
    *,
    grid: str | Grid,
    lon: np.ndarray,
    lat: np.ndarray,
    bands: Sequence[str] | None = None,
    shape: tuple[int, ...] | None = None,
    inside: np.ndarray | None = None,
    limit: int = DEFAULT_MAX_VALUES,
) -> Samples:
    """Each band of each layer at each (``lon``, ``lat``) point.

    Parameters
    ----------
    layers
        The files, in time order; at least one.
    grid
        Their grid, or its name.
    lon, lat
        Degrees, flat and of one size.
    bands
        Band names (None: every band of the first layer).
    shape
        The points' layout, recorded in the result (default: flat).
    inside
        Which points to read (an area's lattice inside its polygon); the others get the
        fill value, as points off the grid do (default: all).
    limit
        Values the read may hold at most.

    Raises
    ------
    CoverageError
        No layer, an unknown band, or no point on the grid.
    CoverageTooLarge
        Over ``limit``.
    """
    grid = get_grid(grid)
    chosen = first_bands(layers, bands, grid)
    lon, lat = np.asarray(lon, np.float64).ravel(), np.asarray(lat, np.float64).ravel()
    cells = grid.cell_index(lon, lat).ravel()
    on = cells >= 0
    if inside is not None:
        on &= np.asarray(inside, bool).ravel()
    if not on.any():
        raise CoverageError(
            f"no point asked for lies on the grid {grid.name} (off its lobes or beyond its "
            "poles); ask elsewhere"
        )
    rows, cols = np.divmod(cells[on], grid.width)
    few = on.sum() <= FEW_POINTS
    window = (rows.min(), rows.max() + 1, cols.min(), cols.max() + 1)
    read = on.sum() if few else (window[1] - window[0]) * (window[3] - window[2])
    check_limit(int(read) * len(chosen) * len(layers), limit, "this query")
    values = {name: np.empty((len(layers), lon.size), info.dtype) for name, info in chosen.items()}
    total = 0
    for number, layer in enumerate(layers):
        if few:
            found, spent = read_cells(layer, chosen, rows, cols, grid)
        else:
            block, spent = read_window(layer, chosen, slice(*window[:2]), slice(*window[2:]), grid)
            found = {name: block[name][rows - window[0], cols - window[2]] for name in chosen}
        total += spent
        for name, info in chosen.items():
            values[name][number] = info.fill if info.fill is not None else 0
            values[name][number, on] = found[name]
    return Samples(lon, lat, shape or (lon.size,), tuple(layers), chosen, values, total)

"""The partition: which latitude band each worker owns in each pass, and which scan lines
every band needs from every granule, found by sampling the input (the seed's design).

Sampling reads only the tie-point latitudes of each granule (51 per line, a few MB a day).
Each line's latitude range, widened by a margin for the pixels between and beyond the tie
points and for the terrain correction, gives the grid rows it can touch. Bands are split so
that each carries about the same number of pixels, and made narrow enough that one band's
state fits a worker's share of the memory budget; bands that do not fit at once are done in
successive passes (out of core), ``workers`` bands per pass.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from nearline.errors import CompositeError
from nearline.grid import Band, Grid, row_of_latitude, split_rows
from nearline.swath.servers import ReadTask, Runs

# Pixels lie up to ~0.05 deg beyond the outermost tie points, and the terrain correction
# moves them by at most h * tan(68 deg) ~ 22 km ~ 0.2 deg: 0.3 deg keeps every pixel inside.
LATITUDE_MARGIN = 0.3
CHUNK_ROWS = 128


@dataclass(frozen=True)
class GranuleInfo:
    """A granule as the plan knows it."""

    index: int
    path: Path
    platform: str
    n_lines: int
    start_time: datetime


@dataclass
class Plan:
    """Bands, passes and the line runs every band needs; identical on every process."""

    grid: Grid
    granules: list[GranuleInfo]
    line_rows: list[np.ndarray]  # per granule: (n_lines, 2) first and last grid row, inclusive
    bands: list[Band]
    workers: int

    @property
    def passes(self) -> int:
        return len(self.bands) // self.workers

    def band(self, pass_index: int, worker: int) -> Band:
        return self.bands[pass_index * self.workers + worker]

    @property
    def max_band_cells(self) -> int:
        return max(band.rows[1] - band.rows[0] for band in self.bands) * self.grid.width

    def runs(self, granule: int, band: Band) -> Runs:
        """Contiguous line runs of ``granule`` that can touch ``band``."""
        rows = self.line_rows[granule]
        touches = (rows[:, 0] < band.rows[1]) & (rows[:, 1] >= band.rows[0])
        edges = np.flatnonzero(np.diff(np.concatenate(([0], touches.view(np.int8), [0]))))
        return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]

    def tasks(self, pass_index: int, server: int, servers: int) -> list[ReadTask]:
        """The reads of one server in one pass: granules are dealt round-robin."""
        tasks = []
        for info in self.granules[server::servers]:
            runs = {
                worker: self.runs(info.index, self.band(pass_index, worker))
                for worker in range(self.workers)
            }
            runs = {worker: r for worker, r in runs.items() if r}
            if runs:
                tasks.append(ReadTask(info.index, runs))
        return tasks

    def lines_to_ship(self) -> int:
        """Lines the servers ship over the whole run (a line touching two bands counts twice)."""
        return sum(
            stop - start
            for info in self.granules
            for band in self.bands
            for start, stop in self.runs(info.index, band)
        )


def line_rows(grid: Grid, tie_latitudes: np.ndarray) -> np.ndarray:
    """First and last grid row each scan line can touch, from its tie-point latitudes."""
    finite = np.where(np.isfinite(tie_latitudes), tie_latitudes, np.nan)
    north = np.clip(np.nanmax(finite, axis=1) + LATITUDE_MARGIN, -90.0, 90.0)
    south = np.clip(np.nanmin(finite, axis=1) - LATITUDE_MARGIN, -90.0, 90.0)
    first = row_of_latitude(grid, north)
    last = row_of_latitude(grid, south)
    return np.stack([first, last], axis=1).astype(np.int64)


def row_weights(grid: Grid, rows: Sequence[np.ndarray]) -> np.ndarray:
    """Expected pixels per grid row: each line's pixels spread evenly over the rows it spans."""
    diff = np.zeros(grid.height + 1)
    for pairs in rows:
        share = 409.0 / (pairs[:, 1] - pairs[:, 0] + 1)
        np.add.at(diff, pairs[:, 0], share)
        np.add.at(diff, pairs[:, 1] + 1, -share)
    return np.maximum(np.cumsum(diff[:-1]), 0.0)  # round-off must not make work negative


def make_plan(
    grid: Grid,
    granules: list[GranuleInfo],
    tie_latitudes: Sequence[np.ndarray],
    *,
    workers: int,
    state_bytes_per_cell: int,
    memory_per_worker: int,
) -> Plan:
    """Split ``grid`` into bands that balance the work and fit ``memory_per_worker`` each."""
    rows = [line_rows(grid, lat) for lat in tie_latitudes]
    weights = row_weights(grid, rows)
    max_rows = memory_per_worker // (state_bytes_per_cell * grid.width)
    if max_rows < 1:
        raise CompositeError(
            f"--memory leaves {memory_per_worker} bytes per worker, less than one row of "
            f"{grid.name} needs ({state_bytes_per_cell * grid.width} bytes); raise --memory "
            "or use fewer workers"
        )
    align = CHUNK_ROWS if max_rows >= CHUNK_ROWS else 1
    n_bands = workers * max(1, math.ceil(grid.height / max_rows / workers))
    while True:
        bands = split_rows(grid, n_bands, align=align, weights=weights)
        if len(bands) == n_bands and max(b.rows[1] - b.rows[0] for b in bands) <= max_rows:
            return Plan(grid, granules, rows, bands, workers)
        if n_bands >= grid.height:
            raise CompositeError(
                f"cannot split {grid.name} into bands of at most {max_rows} rows; raise --memory"
            )
        n_bands += workers

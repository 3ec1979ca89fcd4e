"""The partition: which latitude band each worker owns in each pass, and which scan lines
every band needs from every granule, found by sampling the input (Saltz et al.'s design).

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

from nearline.composite._chunks import CHUNK_ROWS
from nearline.composite._cloudmask import DAY_SUN_ZENITH, TILE_LINES
from nearline.errors import CompositeError
from nearline.grid import Band, Grid, row_of_latitude, split_rows
from nearline.swath.input_servers import ReadTask, Runs, merge_runs

# Beyond the extrapolated scan ends, the terrain correction moves pixels by at most
# h * tan(68 deg) ~ 22 km ~ 0.2 deg, and interpolation on the sphere near the poles bends
# lines a little: 0.3 deg keeps every pixel inside.
LATITUDE_MARGIN = 0.3
# What a line the band owners do not observe (no daylight near it, for a reducer of sunlit
# pixels only) costs them, against one they observe: its delivery and the daylight check.
UNOBSERVED_WEIGHT = 0.05
# Pixels between and beyond the tie points have solar zenith angles within a degree of the
# tie points' range.
SUN_MARGIN = 1.0


@dataclass(frozen=True)
class GranuleInfo:
    """A granule as the plan knows it."""

    index: int
    path: Path
    platform: str
    n_lines: int
    start_time: datetime
    product: str = "AVHRR-GAC-L1B"  # as the file names it (Granule.product)


@dataclass
class Plan:
    """Bands, passes and the line runs every band needs; identical on every process."""

    grid: Grid
    granules: list[GranuleInfo]
    line_rows: list[np.ndarray]  # per granule: (n_lines, 2) first and last grid row, inclusive
    bands: list[Band]
    workers: int
    chunk_rows: int = CHUNK_ROWS  # height of an output chunk; every band starts on one

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
        # runs start and end on whole tiles of the cloud mask, so its windows and clear
        # neighbours are the same however the granule is cut
        n_lines, tile = rows.shape[0], TILE_LINES
        runs = [
            (int(a) - int(a) % tile, min(int(b) + (-int(b)) % tile, n_lines))
            for a, b in zip(edges[::2], edges[1::2], strict=True)
        ]
        return merge_runs(runs)

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
    tie = np.asarray(tie_latitudes, dtype=np.float64)
    # pixels 0-3 and 405-408 lie beyond the outer tie points, on the parabola the reader
    # extrapolates along (half a tie interval out)
    first_pixel = 1.875 * tie[:, 0] - 1.25 * tie[:, 1] + 0.375 * tie[:, 2]
    last_pixel = 1.875 * tie[:, -1] - 1.25 * tie[:, -2] + 0.375 * tie[:, -3]
    finite = np.column_stack([tie, first_pixel, last_pixel])
    north = np.clip(np.nanmax(finite, axis=1) + LATITUDE_MARGIN, -90.0, 90.0)
    south = np.clip(np.nanmin(finite, axis=1) - LATITUDE_MARGIN, -90.0, 90.0)
    first = row_of_latitude(grid, north)
    last = row_of_latitude(grid, south)
    return np.stack([first, last], axis=1).astype(np.int64)


def observed_lines(tie_sun_zenith: np.ndarray) -> np.ndarray:
    """(n_lines,) weights for :func:`row_weights` when the owners observe sunlit pixels only:
    1 for a line with daylight or next to one, :data:`UNOBSERVED_WEIGHT` for the others."""
    tie = np.asarray(tie_sun_zenith, dtype=np.float64)
    lit = np.zeros(tie.shape[0] + 2, bool)
    lit[1:-1] = np.nanmin(tie, axis=1, initial=np.inf) < DAY_SUN_ZENITH + SUN_MARGIN
    near = lit[1:-1] | lit[:-2] | lit[2:]
    return np.where(near, 1.0, UNOBSERVED_WEIGHT)


def row_weights(
    grid: Grid, rows: Sequence[np.ndarray], lines: Sequence[np.ndarray] | None = None
) -> np.ndarray:
    """Expected work per grid row: each line's pixels spread evenly over the rows it spans,
    weighted by ``lines`` (per granule, one weight per line; default 1)."""
    diff = np.zeros(grid.height + 1)
    for index, pairs in enumerate(rows):
        share = 409.0 / (pairs[:, 1] - pairs[:, 0] + 1)
        if lines is not None:
            share = share * lines[index]
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
    line_weights: Sequence[np.ndarray] | None = None,
) -> Plan:
    """Split ``grid`` into bands that balance the work and fit ``memory_per_worker`` each;
    ``line_weights`` (per granule, :func:`observed_lines`) weigh each line's work."""
    rows = [line_rows(grid, lat) for lat in tie_latitudes]
    weights = row_weights(grid, rows, line_weights)
    max_rows = memory_per_worker // (state_bytes_per_cell * grid.width)
    if max_rows < 1:
        raise CompositeError(
            f"--memory leaves {memory_per_worker} bytes per worker, less than one row of "
            f"{grid.name} needs ({state_bytes_per_cell * grid.width} bytes); raise --memory "
            "or use fewer workers"
        )
    # bands start on output chunk rows (128, or less when the memory allows fewer rows)
    align = min(CHUNK_ROWS, 1 << (max_rows.bit_length() - 1))
    passes = max(1, math.ceil(grid.height / max_rows / workers))
    balanced = split_rows(grid, workers * passes, align=align, weights=weights)
    edges = _fit([band.rows for band in balanced], max_rows=max_rows // align * align, align=align)
    while len(edges) % workers:  # every pass gives each worker one band
        tallest = max(range(len(edges)), key=lambda i: edges[i][1] - edges[i][0])
        a, b = edges[tallest]
        middle = a + max(align, (b - a) // 2 // align * align)
        if not a < middle < b:
            raise CompositeError(
                f"{grid.name} has too few rows to give {workers} workers a band each; "
                "use fewer workers"
            )
        edges[tallest : tallest + 1] = [(a, middle), (middle, b)]
    bands = [Band(index, rows) for index, rows in enumerate(edges)]
    return Plan(grid, granules, rows, bands, workers, chunk_rows=align)


def _fit(edges: list[tuple[int, int]], *, max_rows: int, align: int) -> list[tuple[int, int]]:
    """Cut every band taller than ``max_rows`` into aligned pieces that fit."""
    fitted = []
    for a, b in edges:
        pieces = math.ceil((b - a) / max_rows)
        step = -(-(b - a) // pieces // align) * align
        fitted += [(start, min(start + step, b)) for start in range(a, b, step)]
    return fitted

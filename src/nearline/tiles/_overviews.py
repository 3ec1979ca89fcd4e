"""A composite's overviews: the pyramid its tiles are sampled from, made once per file.

Level 0 is the composite itself. Level k's cell is the 2^k x 2^k block of level-0 cells
starting at row and column multiples of 2^k, and holds the mean of the block's values that
are not NaN (NaN where none is): each level is summed from the one below it, sums and counts
kept apart, so a coarse cell is the exact mean of its block however many cells of it are
empty. Levels stop once the whole grid fits in one 256-pixel tile. They are kept as a Zarr
store in physical values (float32, 256 x 256 chunks), under a name made of the file's
identity, built under a lock and published by rename, so two servers never build it twice
and none reads half of one; the store of the file's earlier state, if any, then goes.

The stores are bounded in total (:func:`sweep_overviews`): one is made per composite drawn
(5.3 MB for a two-orbit day of igh-8km, more for a full one), and a user paging through years
of days would otherwise fill the service's disk. Past the budget the least recently opened
stores go, renamed away first so that a server still reading one finds it gone
(:class:`OverviewsGone`) rather than reading the chunks that are left as empty cells.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import shutil
from collections.abc import Collection
from pathlib import Path

import numpy as np

from nearline.durable import discard, publish, temporary_path
from nearline.grid import Grid
from nearline.tiles._sources import Composite, earlier_states

TILE_SIZE = 256
CHUNK = (256, 256)
STORE = ".zarr"
SHRINK_TO = 0.8  # of the budget, once it is passed: room for several stores before the next sweep


class OverviewsGone(Exception):
    """A store was swept (by this server or another) while it was being read."""


def level_count(grid: Grid) -> int:
    """Levels above 0: halve until the grid's longer side fits in one tile."""
    return max(0, math.ceil(math.log2(max(grid.width, grid.height) / TILE_SIZE)))


def level_grid(grid: Grid, level: int) -> Grid:
    """The grid of level ``level``: cells 2^level times wider, from the same corner (its last
    row and column may reach past the composite's extent, where the cells are NaN)."""
    factor = 2**level
    width, height = math.ceil(grid.width / factor), math.ceil(grid.height / factor)
    xmin, _, _, ymax = grid.extent
    dx, dy = grid.cell_size
    extent = (xmin, ymax - height * dy * factor, xmin + width * dx * factor, ymax)
    return Grid(f"{grid.name}/{level}", grid.kind, grid.crs, width, height, extent)


class Overviews:
    """The levels above 0 of one composite's drawable bands.

    Parameters
    ----------
    composite
        The composite they are made of.
    folder
        Where overview stores are kept (one per composite identity).
    bands
        The bands (and index) to keep levels of.
    """

    def __init__(self, composite: Composite, folder: Path, bands: list[str]) -> None:
        self.composite = composite
        self.levels = level_count(composite.grid)
        self.path = folder / f"{composite.identity}{STORE}"
        if not self.path.is_dir():
            self._build(folder, bands)
        import zarr

        self._group = zarr.open_group(self.path, mode="r")

    def read(self, band: str, level: int, rows: slice, cols: slice) -> np.ndarray:
        """A window of ``band`` at ``level`` (0: the file itself), float32, NaN where empty;
        only the chunks of that level the window touches are read.

        Raises
        ------
        OverviewsGone
            The store was swept while it was read: what was read may be empty cells.
        """
        if level == 0:
            return self.composite.read(band, rows, cols)
        try:
            values = np.asarray(self._group[f"{band}/{level}"][rows, cols])
        except (KeyError, FileNotFoundError):
            if self.path.is_dir():
                raise
            raise OverviewsGone(self.path) from None
        if not self.path.is_dir():  # zarr reads a chunk that is no longer there as empty
            raise OverviewsGone(self.path)
        return values

    def mark_used(self) -> None:
        """Say the store was opened now: the sweep removes the least recently opened first."""
        with contextlib.suppress(FileNotFoundError):  # swept meanwhile: its next read says so
            os.utime(self.path)

    def _build(self, folder: Path, bands: list[str]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / f".{self.composite.identity}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it
            if self.path.is_dir():
                return
            partial = temporary_path(self.path)
            discard(partial)
            try:
                self._write(partial, bands)
                publish(partial, self.path)
            except BaseException:
                discard(partial)
                raise
            for stale in earlier_states(folder, self.composite.identity, STORE):
                discard(stale)  # the same composite before it was written again

    def _write(self, store: Path, bands: list[str]) -> None:
        import zarr

        group = zarr.open_group(store, mode="w")
        for band in bands:
            values = self.composite.read(band, slice(None), slice(None))
            for level, mean in enumerate(block_means(values, self.levels), start=1):
                array = group.create_array(
                    f"{band}/{level}", shape=mean.shape, chunks=CHUNK, dtype=np.float32,
                    fill_value=np.nan,
                )  # fmt: skip
                array[:] = mean


def sweep_overviews(folder: Path, budget: int, keep: Collection[Path] = ()) -> int:
    """Remove the least recently opened overview stores in ``folder`` until they take no more
    than 80 % of ``budget`` bytes on disk, if they take more than ``budget``; never one of
    ``keep`` (those this server has open). Each goes by a rename first, then its removal.

    Parameters
    ----------
    folder
        The stores' folder.
    budget
        Bytes the stores may take on disk.
    keep
        Stores not to remove.

    Returns
    -------
    int
        The bytes the stores take afterwards.
    """
    stores = []
    for path in folder.glob(f"*{STORE}"):
        try:
            stores.append((path.stat().st_mtime, _disk_bytes(path), path))
        except FileNotFoundError:  # swept by another server meanwhile
            continue
    held = sum(size for _, size, _ in stores)
    if held <= budget:
        return held
    kept = set(keep)
    for _, size, path in sorted(stores):
        if held <= budget * SHRINK_TO:
            break
        if path in kept:
            continue
        swept = path.with_name(f".{path.name}.swept.{os.getpid()}")
        try:
            os.rename(path, swept)
        except FileNotFoundError:
            continue
        shutil.rmtree(swept, ignore_errors=True)
        held -= size
    return held


def _disk_bytes(store: Path) -> int:
    """What a store takes on disk: its files' allocated blocks."""
    total = 0
    for folder, _, names in os.walk(store):
        for name in names:
            try:
                total += os.stat(os.path.join(folder, name)).st_blocks * 512
            except FileNotFoundError:
                continue
    return total


def block_means(values: np.ndarray, levels: int) -> list[np.ndarray]:
    """Levels 1..``levels`` of ``values``: each cell the mean of the non-NaN values of its
    2^k x 2^k block (NaN where there are none), padded with NaN to whole blocks."""
    factor = 2**levels
    height, width = values.shape
    padded = np.full((-(-height // factor) * factor, -(-width // factor) * factor), np.nan)
    padded[:height, :width] = values
    seen = ~np.isnan(padded)
    sums, counts = np.where(seen, padded, 0.0), seen.astype(np.int32)
    means = []
    for _ in range(levels):
        sums, counts = _pairs(sums), _pairs(counts)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        means.append(mean.astype(np.float32))
    return [mean[: -(-height // 2**k), : -(-width // 2**k)] for k, mean in enumerate(means, 1)]


def _pairs(array: np.ndarray) -> np.ndarray:
    """Sums of 2 x 2 blocks."""
    rows, cols = array.shape
    return array.reshape(rows // 2, 2, cols // 2, 2).sum(axis=(1, 3))

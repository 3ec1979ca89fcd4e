"""Measures of a composite's coverage, counted on the composite itself.

A *pinhole* is an empty cell with at least 6 of its 8 neighbours filled: a cell inside a
swath that registration left out, although a neighbouring pixel's footprint covers it. Cells
beyond the grid's edge count as empty, so the grid's border is never a pinhole by itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

PINHOLE_NEIGHBOURS = 6  # of 8


@dataclass(frozen=True)
class Coverage:
    """Filled cells and pinholes of one composite band."""

    filled: int
    pinholes: int

    @property
    def pinhole_fraction(self) -> float:
        """Pinholes per filled cell (0 when nothing is filled)."""
        return self.pinholes / self.filled if self.filled else 0.0


def filled_neighbours(filled: np.ndarray) -> np.ndarray:
    """How many of each cell's 8 neighbours are filled (uint8, the shape of ``filled``)."""
    padded = np.pad(np.asarray(filled, dtype=bool), 1).astype(np.uint8)
    height, width = np.shape(filled)
    count = np.zeros((height, width), np.uint8)
    for dr in (0, 1, 2):
        for dc in (0, 1, 2):
            if dr != 1 or dc != 1:
                count += padded[dr : dr + height, dc : dc + width]
    return count


def pinhole_mask(filled: np.ndarray) -> np.ndarray:
    """True at every pinhole of the boolean image ``filled`` (rows x columns)."""
    filled = np.asarray(filled, dtype=bool)
    return ~filled & (filled_neighbours(filled) >= PINHOLE_NEIGHBOURS)


def coverage(filled: np.ndarray, *, block_rows: int = 512) -> Coverage:
    """Filled cells and pinholes of ``filled`` (any 2-D array-like of booleans, such as a
    netCDF variable compared to its fill value), counted ``block_rows`` rows at a time with
    a row of overlap, so igh-1km never needs more than a few blocks in memory."""
    height = np.shape(filled)[0]
    total_filled = total_pinholes = 0
    for start in range(0, height, block_rows):
        stop = min(start + block_rows, height)
        lo, hi = max(start - 1, 0), min(stop + 1, height)
        block = np.asarray(filled[lo:hi], dtype=bool)
        holes = pinhole_mask(block)[start - lo : start - lo + stop - start]
        total_filled += int(block[start - lo : start - lo + stop - start].sum())
        total_pinholes += int(holes.sum())
    return Coverage(total_filled, total_pinholes)


def composite_coverage(path: str | Path, *, band: str = "ndvi") -> Coverage:
    """:func:`coverage` of ``band`` in the composite file ``path`` (filled: not the fill)."""
    import netCDF4

    with netCDF4.Dataset(path) as dataset:
        variable = dataset.variables[band]
        variable.set_auto_maskandscale(False)
        fill = variable.getncattr("_FillValue")
        height = variable.shape[0]
        filled = _Filled(variable, fill, height)
        return coverage(filled)


class _Filled:
    """Rows of a netCDF variable as booleans "not the fill value", read on demand."""

    def __init__(self, variable: object, fill: object, height: int) -> None:
        self._variable = variable
        self._fill = fill
        self.shape = (height,)

    def __getitem__(self, rows: slice) -> np.ndarray:
        return np.asarray(self._variable[rows, :]) != self._fill  # type: ignore[index]

"""Footprint registration: each swath pixel to every grid cell its sampled footprint covers.

A scan of pixels samples the ground on a lattice (GAC: every 5th field of view across, every
3rd line along the track), and a pixel stands for the ground between it and its neighbours.
Its footprint here is the quadrilateral whose corners are the centres of the 2 x 2 groups of
pixels around it (the dual of the scan lattice): the footprints of a block tile the swath
with no gap and no overlap. A pixel is given the cell holding its centre and every cell whose
centre lies inside its footprint, so a cell inside a swath is never left empty, and a cell
smaller than the pixel spacing is filled by the one pixel whose footprint holds it.

Pixels are projected once, each in its own lobe's frame (lat-lon: longitude as is); a corner
is the mean of its four pixels' projected positions, drawn in the frame of the lobe it is
drawn into. A footprint that reaches over an interruption of Goode's projection is drawn once
in each lobe its neighbours fall in, each time keeping only that lobe's cells, so the cells
along an interruption are covered from both sides and nothing is drawn into the gaps. At a
block's first and last line and column, the missing neighbours are extrapolated linearly. A
footprint more than :data:`MAX_SPAN` cells across (over a pole, or across a frame's
antimeridian) gives only the centre's cell.

Each (cell, pixel) pair comes once; the pairs come pixel by pixel, in block order.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING

import numba
import numpy as np

from nearline.grid import _igh as igh

if TYPE_CHECKING:
    from nearline.grid._base import Grid

MAX_SPAN = 64  # cells: a footprint wider or taller than this gives its centre's cell only
_DEG = math.pi / 180.0
_IGH, _LATLON = 0, 1
# IGH's six lobes, numbered: north -100, 30; south -160, -60, 20, 140 (central meridians),
# and the lobe of each 20-degree longitude bin, north then south (as igh.LOBE_MERIDIANS)
_LOBE_MERIDIANS = np.array([-100.0, 30.0, -160.0, -60.0, 20.0, 140.0])
_LOBE_EDGES = np.array(
    [[-180.0, -40.0], [-40.0, 180.0], [-180.0, -100.0], [-100.0, -20.0], [-20.0, 80.0],
     [80.0, 180.0]]
)  # fmt: skip
_LOBE_OF_BIN = np.array([0] * 7 + [1] * 11 + [2] * 4 + [3] * 4 + [4] * 5 + [5] * 5)
_NO_LOBE = -1  # a pixel off the sphere (NaN)
_CORNER_A, _CORNER_B = (0, 0, 1, 1), (0, 1, 1, 0)  # a pixel's corners, around its footprint


@numba.njit(cache=True, nogil=True, inline="always")
def _position(lon, lat, frame, kind, g):
    """(column, row) in cell units of a point drawn in the frame centred on ``frame`` (an
    IGH lobe's central meridian, or for lat-lon a longitude); as ``cell_index`` computes it."""
    if kind == _IGH:
        scale, north = igh.scale_northing(lat, igh.MOLLWEIDE_SCALE, igh.MOLLWEIDE_NORTH)
        x = igh._wrap(lon - frame) * _DEG * scale + frame * _DEG
        return x * g[4] - g[6], g[7] - north * g[5]
    return (frame + igh._wrap(lon - frame) - g[0]) / g[2], (g[1] - lat) / g[3]


@numba.njit(cache=True, nogil=True)
def _project(lon, lat, kind, g, pu, pv, plobe):
    """Every pixel's position in its own lobe's frame (lat-lon: its longitude) and lobe."""
    for i in range(lon.shape[0]):
        for j in range(lon.shape[1]):
            lo, la = np.float64(lon[i, j]), np.float64(lat[i, j])
            if not (la >= -90.0 and la <= 90.0 and abs(lo) < math.inf):
                plobe[i, j] = _NO_LOBE
                continue
            lo = igh._wrap(lo)
            if kind == _IGH:
                k = max(math.ceil((lo + 180.0) / 20.0) - 1, 0)
                lobe = _LOBE_OF_BIN[k + 18 if la < 0 else k]
                pu[i, j], pv[i, j] = _position(lo, la, _LOBE_MERIDIANS[lobe], kind, g)
            else:
                lobe = 0
                pu[i, j], pv[i, j] = _position(lo, la, lo, kind, g)
            plobe[i, j] = lobe


@numba.njit(cache=True, nogil=True)
def _corners(pu, pv, plobe, cu, cv, clobe):
    """Corner (a, b), between pixels a - 1, a and b - 1, b: the mean of their positions,
    where all four are in one lobe (inside the block); else lobe -1 (drawn per frame)."""
    n, m = pu.shape
    for a in range(n + 1):
        for b in range(m + 1):
            clobe[a, b] = _NO_LOBE
            if 0 < a < n and 0 < b < m:
                lobe = plobe[a, b]
                if (
                    lobe != _NO_LOBE
                    and plobe[a - 1, b - 1] == lobe
                    and plobe[a - 1, b] == lobe
                    and plobe[a, b - 1] == lobe
                ):
                    cu[a, b] = (pu[a - 1, b - 1] + pu[a - 1, b] + pu[a, b - 1] + pu[a, b]) / 4
                    cv[a, b] = (pv[a - 1, b - 1] + pv[a - 1, b] + pv[a, b - 1] + pv[a, b]) / 4
                    clobe[a, b] = lobe


@numba.njit(cache=True, nogil=True)
def _extended(lon, lat, i, j, frame, kind, g):
    """(column, row) of pixel (i, j), i in [-1, n], j in [-1, m], drawn in ``frame``:
    outside the block, extrapolated linearly from the two nearest pixels."""
    n, m = lon.shape
    ci, cj = min(max(i, 0), n - 1), min(max(j, 0), m - 1)
    u, v = _position(igh._wrap(np.float64(lon[ci, cj])), np.float64(lat[ci, cj]), frame, kind, g)
    du = dv = 0.0
    if i != ci and n > 1:
        inner = ci + (1 if i < 0 else -1)
        iu, iv = _position(igh._wrap(np.float64(lon[inner, cj])), np.float64(lat[inner, cj]),
                           frame, kind, g)  # fmt: skip
        du, dv = du + u - iu, dv + v - iv
    if j != cj and m > 1:
        inner = cj + (1 if j < 0 else -1)
        iu, iv = _position(igh._wrap(np.float64(lon[ci, inner])), np.float64(lat[ci, inner]),
                           frame, kind, g)  # fmt: skip
        du, dv = du + u - iu, dv + v - iv
    return u + du, v + dv


@numba.njit(cache=True, nogil=True)
def _corner_in(lon, lat, a, b, frame, kind, g):
    """Corner (a, b) drawn in ``frame``: the mean of its four (extended) pixels there."""
    su = sv = 0.0
    for di in (-1, 0):
        for dj in (-1, 0):
            u, v = _extended(lon, lat, a + di, b + dj, frame, kind, g)
            su += u
            sv += v
    return su / 4, sv / 4


@numba.njit(cache=True, nogil=True, inline="always")
def _draw(
    u, v, lobe, pixel, own, first_row, stop_row, width, wraps, lobe_columns, cells, pixels, count
):
    """Emit (cell, pixel) for every cell centre inside the quadrilateral (u, v) that lies in
    ``lobe``'s columns; returns the new count and whether ``own`` was among them."""
    found = False
    v_low, v_high = min(v[0], v[1], v[2], v[3]), max(v[0], v[1], v[2], v[3])
    u_low, u_high = min(u[0], u[1], u[2], u[3]), max(u[0], u[1], u[2], u[3])
    if not max(u_high - u_low, v_high - v_low) <= MAX_SPAN:  # NaN fails too
        return count, found
    row_lo = max(math.ceil(v_low - 0.5), first_row)
    row_hi = min(math.floor(v_high - 0.5), stop_row - 1, lobe_columns.shape[0] - 1)
    if row_hi < row_lo or math.floor(u_high - 0.5) < math.ceil(u_low - 0.5):
        return count, found  # most footprints of an 8 km grid hold no cell centre
    for row in range(row_lo, row_hi + 1):
        centre = row + 0.5
        left, right = math.inf, -math.inf
        for q in range(4):
            q1 = (q + 1) % 4
            va, vb = v[q], v[q1]
            if (va <= centre < vb) or (vb <= centre < va):
                x = u[q] + (centre - va) * (u[q1] - u[q]) / (vb - va)
                left, right = min(left, x), max(right, x)
        if not left <= right:
            continue
        col_lo = math.ceil(left - 0.5)
        col_hi = math.ceil(right - 0.5) - 1
        if not wraps:  # IGH: only this lobe's cells (lat-lon: one lobe, all columns)
            col_lo = max(col_lo, lobe_columns[row, lobe, 0])
            col_hi = min(col_hi, lobe_columns[row, lobe, 1])
        for col in range(col_lo, col_hi + 1):
            cell = (row - first_row) * width + (col % width if wraps else col)
            found |= cell == own
            if count < cells.size:
                cells[count] = cell
                pixels[count] = pixel
            count += 1
    return count, found


@numba.njit(cache=True, nogil=True, inline="always")
def _span(w):
    return max(w[0], w[1], w[2], w[3]) - min(w[0], w[1], w[2], w[3])


@numba.njit(cache=True, nogil=True)
def _draw_in_frames(
    lon, lat, i, j, kind, g, plobe, own, first_row, stop_row, width, wraps, lobe_columns,
    cells, pixels, count,
):  # fmt: skip
    """``_draw`` pixel (i, j) once in the frame of each lobe among its neighbours (lat-lon:
    once, around its own longitude), its corners computed in that frame."""
    n, m = lon.shape
    frames = np.empty(9, np.int64)
    n_frames = 0
    for a in range(max(i - 1, 0), min(i + 2, n)):
        for b in range(max(j - 1, 0), min(j + 2, m)):
            other = plobe[a, b]
            seen = other == _NO_LOBE
            for f in range(n_frames):
                seen |= frames[f] == other
            if not seen:
                frames[n_frames] = other
                n_frames += 1
    u, v = np.empty(4), np.empty(4)
    found = False
    for f in range(n_frames):
        frame = igh._wrap(np.float64(lon[i, j]))
        if kind == _IGH:
            frame = _LOBE_MERIDIANS[frames[f]]
        for q in range(4):
            u[q], v[q] = _corner_in(lon, lat, i + _CORNER_A[q], j + _CORNER_B[q], frame, kind, g)
        count, hit = _draw(
            u, v, frames[f], i * m + j, own, first_row, stop_row, width, wraps, lobe_columns,
            cells, pixels, count,
        )  # fmt: skip
        found |= hit
    return count, found


@numba.njit(cache=True, nogil=True)
def _footprints(
    lon, lat, kind, g, width, wraps, first_row, stop_row, lobe_columns, pu, pv, plobe, cu, cv,
    clobe, cells, pixels,
):  # fmt: skip
    """Fill ``cells``/``pixels`` with every (cell, pixel) pair; return how many there are
    (pairs beyond the buffers' size are counted, not written)."""
    n, m = lon.shape
    _project(lon, lat, kind, g, pu, pv, plobe)
    _corners(pu, pv, plobe, cu, cv, clobe)
    u, v = np.empty(4), np.empty(4)
    count = 0
    for i in range(n):
        for j in range(m):
            lobe = plobe[i, j]
            if lobe == _NO_LOBE:
                continue
            pixel = i * m + j
            row, col = math.floor(pv[i, j]), math.floor(pu[i, j])
            inside = 0 <= col < width and first_row <= row < stop_row
            if kind == _LATLON:  # as cell_index: wrapped, the south pole in the last row
                col %= width
                height = lobe_columns.shape[0]
                if row == height and lat[i, j] <= -90.0:
                    row = height - 1
                inside = first_row <= row < stop_row
            own = (row - first_row) * width + col if inside else -1
            simple = True
            for q in range(4):
                a, b = i + _CORNER_A[q], j + _CORNER_B[q]
                simple &= clobe[a, b] == lobe
                u[q], v[q] = cu[a, b], cv[a, b]
            found = own < 0
            if simple and (kind == _IGH or _span(u) <= MAX_SPAN):
                count, hit = _draw(
                    u, v, lobe, pixel, own, first_row, stop_row, width, wraps, lobe_columns,
                    cells, pixels, count,
                )  # fmt: skip
            else:  # by an interruption, a block's edge or a wrap: drawn in each lobe near
                count, hit = _draw_in_frames(
                    lon, lat, i, j, kind, g, plobe, own, first_row, stop_row, width, wraps,
                    lobe_columns, cells, pixels, count,
                )  # fmt: skip
            found |= hit
            if not found:
                if count < cells.size:
                    cells[count] = own
                    pixels[count] = pixel
                count += 1
    return count


@lru_cache(maxsize=16)
def _lobe_columns(grid: Grid) -> np.ndarray:
    """(height, lobes, 2) first and last column whose cell centre lies in each lobe, per row
    (a centre on an edge belongs to the lobe west of it); lat-lon: one lobe, every column."""
    if grid.kind.value != "igh":
        columns = np.empty((grid.height, 1, 2), np.int64)
        columns[..., 0], columns[..., 1] = 0, grid.width - 1
        return columns
    lat = grid.row_latitudes()
    scale = igh.mollweide_scale(lat)
    xmin = grid.extent[0]
    dx = grid.cell_size[0]
    columns = np.empty((grid.height, len(_LOBE_MERIDIANS), 2), np.int64)
    for lobe, (meridian, (west, east)) in enumerate(zip(_LOBE_MERIDIANS, _LOBE_EDGES, strict=True)):
        edges = [
            (igh.EARTH_RADIUS * _DEG * (meridian + (edge - meridian) * scale) - xmin) / dx - 0.5
            for edge in (west, east)
        ]
        columns[:, lobe, 0] = np.floor(edges[0]).astype(np.int64) + 1
        columns[:, lobe, 1] = np.floor(edges[1]).astype(np.int64)
        hemisphere = lat >= 0 if lobe < 2 else lat < 0
        columns[~hemisphere, lobe] = (0, -1)  # no cell of this row lies in the lobe
    columns[..., 0] = np.maximum(columns[..., 0], 0)
    columns[..., 1] = np.minimum(columns[..., 1], grid.width - 1)
    return columns


class FootprintRegistrar:
    """Registers blocks of swath pixels to the cells of ``grid`` their footprints cover,
    reusing its buffers from block to block (they grow to the largest block's need)."""

    def __init__(self, grid: Grid) -> None:
        self.grid = grid
        self._cells = np.empty(0, np.int64)
        self._pixels = np.empty(0, np.int64)
        self._kept: dict[str, tuple[np.ndarray, ...]] = {}

    def register(
        self, lon: np.ndarray, lat: np.ndarray, *, rows: tuple[int, int] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(cells, pixels): flat cell index (relative to ``rows[0]``) and flat pixel index
        into the (lines, columns) block ``lon``/``lat``, one entry per pair, int64 views
        valid until the next call."""
        grid = self.grid
        first, stop = grid._rows(rows)
        lon = np.ascontiguousarray(lon)
        lat = np.ascontiguousarray(lat)
        if lon.ndim != 2 or lon.shape != lat.shape:
            raise ValueError(f"lon and lat must be (lines, columns) alike; got {lon.shape}")
        kind = _IGH if grid.kind.value == "igh" else _LATLON
        xmin, _, _, ymax = grid.extent
        dx, dy = grid.cell_size
        r = igh.EARTH_RADIUS
        g = np.array([xmin, ymax, dx, dy, r / dx, r / dy, xmin / dx, ymax / dy])
        lobe_columns = _lobe_columns(grid)
        n, m = lon.shape
        pu, pv, plobe = self._scratch("pixels", (n, m))
        cu, cv, clobe = self._scratch("corners", (n + 1, m + 1))
        if self._cells.size < 2 * lon.size:
            self._grow(2 * lon.size)
        while True:
            count = _footprints(
                lon, lat, kind, g, grid.width, grid.wraps, first, stop, lobe_columns,
                pu, pv, plobe, cu, cv, clobe, self._cells, self._pixels,
            )  # fmt: skip
            if count <= self._cells.size:
                return self._cells[:count], self._pixels[:count]
            self._grow(count + count // 4)

    def _scratch(self, name: str, shape: tuple[int, int]) -> tuple[np.ndarray, ...]:
        """Column, row (float64) and lobe (int8) arrays of ``shape``, kept from block to
        block: allocating them anew each time costs as much as filling them."""
        size = shape[0] * shape[1]
        kept = self._kept.get(name)
        if kept is None or kept[0].size < size:
            kept = (np.empty(size), np.empty(size), np.empty(size, np.int8))
            self._kept[name] = kept
        return tuple(array[:size].reshape(shape) for array in kept)

    def _grow(self, size: int) -> None:
        self._cells = np.empty(size, np.int64)
        self._pixels = np.empty(size, np.int64)

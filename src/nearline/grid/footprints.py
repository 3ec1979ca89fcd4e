"""Footprint registration: each swath pixel to every grid cell its sampled footprint covers.

A scan of pixels samples the ground on a lattice (GAC: every 5th field of view across, every
3rd line along the track), and a pixel stands for the ground between it and its neighbours.
Its footprint here is the quadrilateral whose corners are the centres of the 2 x 2 groups of
pixels around it (the dual of the scan lattice): the footprints of a block tile the swath
with no gap and no overlap. A pixel is given the cell holding its centre and every cell whose
centre lies inside its footprint, so a cell inside a swath is never left empty, and a cell
smaller than the pixel spacing is filled by the one pixel whose footprint holds it.

Corners are averaged on the sphere's longitude/latitude (as unit vectors where the lines
reach beyond 75 degrees, so the poles cause no trouble), then projected in the frame of the
lobe they are drawn into. A footprint that reaches over an interruption of Goode's projection
is drawn once in each lobe its corners fall in, each time keeping only that lobe's cells, so
the cells along an interruption are covered from both sides. At a block's first and last
line and column, the missing neighbours are extrapolated linearly. A footprint more than
:data:`MAX_SPAN` cells across (a lat-lon grid at the pole) gives only the centre's cell.

Each (cell, pixel) pair comes once; the pairs come pixel by pixel, in block order.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING

import numba
import numpy as np

from nearline.grid import igh, latlon

if TYPE_CHECKING:
    from nearline.grid.base import Grid

MAX_SPAN = 64  # cells: a footprint wider or taller than this gives its centre's cell only
POLAR_LATITUDE = 75.0  # corners of pixels beyond it are averaged as unit vectors
_DEG = math.pi / 180.0
_IGH, _LATLON = 0, 1


@numba.njit(cache=True, nogil=True, inline="always")
def _wrap(d):
    if d > 180.0:
        return d - 360.0
    if d < -180.0:
        return d + 360.0
    return d


@numba.njit(cache=True, nogil=True)
def _extended(lon, lat, i, j, ref):
    """(longitude relative to ``ref``, latitude) of pixel (i, j), i in [-1, n], j in [-1, m]:
    outside the block, extrapolated linearly from the two nearest pixels."""
    n, m = lon.shape
    ci, cj = min(max(i, 0), n - 1), min(max(j, 0), m - 1)
    base_lon, base_lat = np.float64(lon[ci, cj]), np.float64(lat[ci, cj])
    dlon, la = _wrap(base_lon - ref), base_lat
    if i != ci and n > 1:
        inner = ci + (1 if i < 0 else -1)
        dlon += _wrap(base_lon - lon[inner, cj])
        la += base_lat - lat[inner, cj]
    if j != cj and m > 1:
        inner = cj + (1 if j < 0 else -1)
        dlon += _wrap(base_lon - lon[ci, inner])
        la += base_lat - lat[ci, inner]
    return dlon, la


@numba.njit(cache=True, nogil=True)
def _corners(lon, lat, kind, scale_table, north_table, c_lon, c_lat, c_scale, c_north):
    """Corner (a, b), between pixels a - 1, a and b - 1, b: lon, lat, x scale and northing."""
    n, m = lon.shape
    for a in range(n + 1):
        for b in range(m + 1):
            ref = np.float64(lon[min(a, n - 1), min(b, m - 1)])
            sum_lon, sum_lat, polar = 0.0, 0.0, False
            for di in (-1, 0):
                for dj in (-1, 0):
                    dlon, la = _extended(lon, lat, a + di, b + dj, ref)
                    sum_lon += dlon
                    sum_lat += la
                    polar |= abs(la) > POLAR_LATITUDE
            if polar:  # average as unit vectors
                vx, vy, vz = 0.0, 0.0, 0.0
                for di in (-1, 0):
                    for dj in (-1, 0):
                        dlon, la = _extended(lon, lat, a + di, b + dj, ref)
                        la = min(90.0, max(-90.0, la)) * _DEG
                        lo = (ref + dlon) * _DEG
                        vx += math.cos(la) * math.cos(lo)
                        vy += math.cos(la) * math.sin(lo)
                        vz += math.sin(la)
                clo = math.atan2(vy, vx) / _DEG
                cla = math.atan2(vz, math.sqrt(vx * vx + vy * vy)) / _DEG
            else:
                clo = _wrap(ref + sum_lon / 4.0)
                cla = min(90.0, max(-90.0, sum_lat / 4.0))
            c_lon[a, b], c_lat[a, b] = clo, cla
            if kind == _IGH and cla == cla:
                c_scale[a, b], c_north[a, b] = igh.scale_northing(cla, scale_table, north_table)
            else:
                c_scale[a, b], c_north[a, b] = 1.0, cla


@numba.njit(cache=True, nogil=True, inline="always")
def _in_lobe(lam0, x, lat, scale):
    """True if the IGH point (x metres, ``lat``), where x scale is ``scale``, lies in the lobe
    whose central meridian is ``lam0`` (a cell is drawn only into its own lobe)."""
    if scale <= 0.0:
        return False
    lon = lam0 + (x / igh.EARTH_RADIUS / _DEG - lam0) / scale
    if not abs(lon) <= 180.0:
        return False
    return igh._lobe_meridian(lon, lat, igh.LOBE_MERIDIANS) == lam0


@numba.njit(cache=True, nogil=True)
def _footprints(
    lon, lat, kind, xmin, ymax, dx, dy, width, height, wraps, first_row, stop_row,
    row_lat, row_scale, c_lon, c_lat, c_scale, c_north, cells, pixels,
):  # fmt: skip
    """Fill ``cells``/``pixels`` with every (cell, pixel) pair; return how many there are
    (pairs beyond the buffers' size are counted, not written)."""
    n, m = lon.shape
    count = 0
    rx, ry = igh.EARTH_RADIUS / dx, igh.EARTH_RADIUS / dy
    x0, y0 = xmin / dx, ymax / dy
    capacity = cells.size
    frames = np.empty(5)
    u = np.empty(4)
    v = np.empty(4)
    corner_a = (0, 0, 1, 1)
    corner_b = (0, 1, 1, 0)  # around the quadrilateral
    for i in range(n):
        for j in range(m):
            pixel = i * m + j
            lo, la = np.float64(lon[i, j]), np.float64(lat[i, j])
            if kind == _IGH:
                own = igh.point_cell(lo, la, rx, ry, x0, y0, width, first_row, stop_row)
            else:
                own = latlon.point_cell(
                    lo, la, xmin, ymax, dx, dy, width, height, first_row, stop_row, wraps
                )
            if not (la >= -90.0 and la <= 90.0 and abs(lo) < math.inf):
                continue
            own_done = own < 0
            # the frames to draw in: the lobe of the pixel and of each corner
            n_frames = 1
            if kind == _IGH:
                frames[0] = igh._lobe_meridian(igh._wrap(lo), la, igh.LOBE_MERIDIANS)
                for q in range(4):
                    cl = c_lon[i + corner_a[q], j + corner_b[q]]
                    ct = c_lat[i + corner_a[q], j + corner_b[q]]
                    if not (abs(cl) <= 180.0 and abs(ct) <= 90.0):
                        continue
                    meridian = igh._lobe_meridian(cl, ct, igh.LOBE_MERIDIANS)
                    seen = False
                    for f in range(n_frames):
                        seen |= frames[f] == meridian
                    if not seen:
                        frames[n_frames] = meridian
                        n_frames += 1
            else:
                frames[0] = lo
            for f in range(n_frames):
                lam0 = frames[f]
                usable = True
                for q in range(4):
                    a, b = i + corner_a[q], j + corner_b[q]
                    x = lam0 + _wrap(c_lon[a, b] - lam0) * c_scale[a, b]
                    if kind == _IGH:
                        u[q] = x * _DEG * rx - x0
                        v[q] = y0 - c_north[a, b] * ry
                    else:
                        u[q] = (x - xmin) / dx
                        v[q] = (ymax - c_north[a, b]) / dy
                    usable &= u[q] == u[q] and v[q] == v[q]
                if not usable:
                    continue
                if max(u.max() - u.min(), v.max() - v.min()) > MAX_SPAN:
                    continue
                row_lo = max(math.ceil(v.min() - 0.5), first_row, 0)
                row_hi = min(math.floor(v.max() - 0.5), stop_row - 1, height - 1)
                for row in range(row_lo, row_hi + 1):
                    centre = row + 0.5
                    left, right = math.inf, -math.inf
                    for q in range(4):
                        q1 = (q + 1) % 4
                        va, vb = v[q], v[q1]
                        if (va <= centre < vb) or (vb <= centre < va):
                            x = u[q] + (centre - va) * (u[q1] - u[q]) / (vb - va)
                            left, right = min(left, x), max(right, x)
                    for col in range(math.ceil(left - 0.5), math.ceil(right - 0.5)):
                        c = col
                        if wraps:
                            c %= width
                        elif c < 0 or c >= width:
                            continue
                        if kind == _IGH and not _in_lobe(
                            lam0, xmin + (c + 0.5) * dx, row_lat[row], row_scale[row]
                        ):
                            continue
                        cell = (row - first_row) * width + c
                        if cell == own:
                            own_done = True
                        if count < capacity:
                            cells[count] = cell
                            pixels[count] = pixel
                        count += 1
            if not own_done:
                if count < capacity:
                    cells[count] = own
                    pixels[count] = pixel
                count += 1
    return count


@lru_cache(maxsize=16)
def _row_tables(grid: Grid) -> tuple[np.ndarray, np.ndarray]:
    """Latitude (degrees) and IGH x scale at each row's centre."""
    lat = grid.row_latitudes()
    if grid.kind.value == "igh":
        return lat, igh.mollweide_scale(lat)
    return lat, np.ones_like(lat)


class FootprintRegistrar:
    """Registers blocks of swath pixels to the cells of ``grid`` their footprints cover,
    reusing its buffers from block to block (they grow to the largest block's need)."""

    def __init__(self, grid: Grid) -> None:
        self.grid = grid
        self._cells = np.empty(0, np.int64)
        self._pixels = np.empty(0, np.int64)

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
        n, m = lon.shape
        corners = [np.empty((n + 1, m + 1)) for _ in range(4)]
        _corners(lon, lat, kind, igh.MOLLWEIDE_SCALE, igh.MOLLWEIDE_NORTH, *corners)
        row_lat, row_scale = _row_tables(grid)
        xmin, _, _, ymax = grid.extent
        dx, dy = grid.cell_size
        if self._cells.size < 2 * lon.size:
            self._grow(2 * lon.size)
        while True:
            count = _footprints(
                lon, lat, kind, xmin, ymax, dx, dy, grid.width, grid.height, grid.wraps,
                first, stop, row_lat, row_scale, *corners, self._cells, self._pixels,
            )  # fmt: skip
            if count <= self._cells.size:
                return self._cells[:count], self._pixels[:count]
            self._grow(count + count // 4)

    def _grow(self, size: int) -> None:
        self._cells = np.empty(size, np.int64)
        self._pixels = np.empty(size, np.int64)

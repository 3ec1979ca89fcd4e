"""Where a coverage answer lies: a box in longitude and latitude or in the grid's own
coordinates, turned into a raster in the grid's CRS (a :class:`Target`) whose pixels take the
value of the grid cell holding their centre.

A longitude/latitude box becomes the bounding window of the cells it touches. On an
interrupted grid (IGH) those cells need not be one rectangle on the plane: a box across an
interruption touches two lobes, and its window spans both, the cells between them off the
Earth (their fill value). The window is found by projecting a lattice of points over the box
(rows' centre latitudes, longitudes half a cell apart, and both sides of every whole ten
degrees of longitude, where interrupted projections break) with ``Grid.cell_index``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from nearline.errors import CoverageError
from nearline.grid import EARTH_RADIUS, Grid

MAX_LATTICE_LONGITUDES = 4096
MAX_LATTICE_LATITUDES = 1024
BREAK_EPSILON = 1e-7  # degrees either side of a whole ten degrees of longitude


@dataclass(frozen=True)
class Box:
    """A box in longitude and latitude (degrees, WGS 84 / CRS84 axis order).

    Parameters
    ----------
    west, south, east, north
        Its edges; a box may be a line or a point (west == east, south == north).

    Raises
    ------
    CoverageError
        An edge is not a finite number in range, or the box is reversed.
    """

    west: float
    south: float
    east: float
    north: float

    def __post_init__(self) -> None:
        edges = (self.west, self.south, self.east, self.north)
        if not all(math.isfinite(edge) for edge in edges):
            raise CoverageError(f"box {list(edges)}: every edge must be a finite number")
        if not (-180 <= self.west <= 180 and -180 <= self.east <= 180):
            raise CoverageError(f"box {list(edges)}: longitudes must lie in -180..180")
        if not (-90 <= self.south <= 90 and -90 <= self.north <= 90):
            raise CoverageError(f"box {list(edges)}: latitudes must lie in -90..90")
        if self.west > self.east or self.south > self.north:
            raise CoverageError(
                f"box {list(edges)} is reversed: give west <= east and south <= north (a box "
                "across the antimeridian is two requests, one each side)"
            )


@dataclass(frozen=True)
class Target:
    """A raster in the grid's CRS: ``width`` x ``height`` pixels over ``extent``.

    Parameters
    ----------
    extent
        (xmin, ymin, xmax, ymax) in the grid's CRS units.
    width, height
        Pixels, at least 1.
    """

    extent: tuple[float, float, float, float]
    width: int
    height: int

    def rows(self, grid: Grid) -> np.ndarray:
        """The grid row holding each pixel row's centre; -1 off the grid."""
        _, ymin, _, ymax = self.extent
        centres = ymax - (np.arange(self.height) + 0.5) * (ymax - ymin) / self.height
        cells = np.floor((grid.extent[3] - centres) / grid.cell_size[1]).astype(np.int64)
        return np.where((cells >= 0) & (cells < grid.height), cells, -1)

    def cols(self, grid: Grid) -> np.ndarray:
        """The grid column holding each pixel column's centre; -1 off the grid."""
        xmin, _, xmax, _ = self.extent
        centres = xmin + (np.arange(self.width) + 0.5) * (xmax - xmin) / self.width
        cells = np.floor((centres - grid.extent[0]) / grid.cell_size[0]).astype(np.int64)
        return np.where((cells >= 0) & (cells < grid.width), cells, -1)

    def as_grid(self, grid: Grid) -> Grid:
        """This raster as a Grid of ``grid``'s kind and CRS (for its coordinates and CF
        grid mapping)."""
        return Grid(f"{grid.name} subset", grid.kind, grid.crs, self.width, self.height,
                    self.extent)  # fmt: skip

    def scaled(self, *, size: tuple[int | None, int | None] | None = None,
               factor: float | None = None) -> Target:  # fmt: skip
        """The same extent in fewer (or other) pixels: ``size`` (width, height; None keeps
        one), or ``factor`` (each side divided by it, at least one pixel).

        Raises
        ------
        CoverageError
            A size below 1, or a factor that is not a number of at least 1.
        """
        width, height = self.width, self.height
        if factor is not None:
            if not math.isfinite(factor) or factor < 1:
                raise CoverageError(
                    f"scale-factor {factor:g}: nearline scales down only; give a number >= 1 "
                    "(2 halves each side)"
                )
            width, height = max(1, round(width / factor)), max(1, round(height / factor))
        if size is not None:
            for name, value in zip(("width", "height"), size, strict=True):
                if value is not None and value < 1:
                    raise CoverageError(f"scale-size: a {name} of {value}; give 1 or more")
            width = size[0] if size[0] is not None else width
            height = size[1] if size[1] is not None else height
        return Target(self.extent, int(width), int(height))


def window_target(grid: Grid, rows: tuple[int, int], cols: tuple[int, int]) -> Target:
    """The raster of grid cells ``rows`` x ``cols`` ([first, stop) each), one pixel a cell."""
    xmin, _, _, ymax = grid.extent
    dx, dy = grid.cell_size
    extent = (xmin + cols[0] * dx, ymax - rows[1] * dy, xmin + cols[1] * dx, ymax - rows[0] * dy)
    return Target(extent, cols[1] - cols[0], rows[1] - rows[0])


def whole_grid(grid: Grid) -> Target:
    """Every cell of ``grid``."""
    return window_target(grid, (0, grid.height), (0, grid.width))


def native_target(
    grid: Grid, x: tuple[float, float] | None, y: tuple[float, float] | None
) -> Target:
    """The cells overlapping ``x`` x ``y`` (the grid's CRS units; None: the grid's whole
    extent on that axis).

    Raises
    ------
    CoverageError
        A range is reversed or misses the grid.
    """
    xmin, ymin, xmax, ymax = grid.extent
    dx, dy = grid.cell_size
    x0, x1 = x if x is not None else (xmin, xmax)
    y0, y1 = y if y is not None else (ymin, ymax)
    for axis, low, high, lowest, highest in (("x", x0, x1, xmin, xmax), ("y", y0, y1, ymin, ymax)):
        if not (math.isfinite(low) and math.isfinite(high)) or low > high:
            raise CoverageError(f"subset {axis}({low:g}:{high:g}) is reversed: give low:high")
        if high < lowest or low > highest:
            raise CoverageError(
                f"subset {axis}({low:g}:{high:g}) lies outside the grid {grid.name}, whose "
                f"{axis} runs {lowest:.10g}..{highest:.10g}"
            )
    cols = (max(0, math.floor((x0 - xmin) / dx)), min(grid.width, math.ceil((x1 - xmin) / dx)))
    rows = (max(0, math.floor((ymax - y1) / dy)), min(grid.height, math.ceil((ymax - y0) / dy)))
    return window_target(grid, rows, (cols[0], max(cols[1], cols[0] + 1)))


def box_target(grid: Grid, box: Box) -> Target:
    """The bounding window of the cells the box touches, one pixel a cell.

    Raises
    ------
    CoverageError
        The box touches no cell of the grid.
    """
    cells = _lattice_cells(grid, box)
    if cells.size == 0:
        south, north = grid.latitude_range((0, grid.height))
        raise CoverageError(
            f"box {[box.west, box.south, box.east, box.north]} lies outside the grid "
            f"{grid.name} (latitudes {south:.4f}..{north:.4f}, on the Earth's lobes only)"
        )
    rows, cols = np.divmod(cells, grid.width)
    return window_target(grid, (int(rows.min()), int(rows.max()) + 1),
                         (int(cols.min()), int(cols.max()) + 1))  # fmt: skip


def cell_degrees(grid: Grid) -> float:
    """A cell's width in degrees of longitude at the equator: the native resolution."""
    dx = grid.cell_size[0]
    return dx / (EARTH_RADIUS * math.pi / 180) if grid.crs_is_projected else dx


def _lattice_cells(grid: Grid, box: Box) -> np.ndarray:
    """The cells the box's lattice falls in (flat indices; one may stand several times: only
    their bounds are wanted, and making them distinct took a tenth of a subset's time)."""
    edges = grid.row_latitudes(edges=True)
    centres = grid.row_latitudes()
    inside = (centres >= box.south) & (centres <= box.north)
    lats = centres[inside]
    if lats.size > MAX_LATTICE_LATITUDES:
        lats = lats[np.linspace(0, lats.size - 1, MAX_LATTICE_LATITUDES).round().astype(int)]
    lowest, highest = float(edges[-1]), float(edges[0])
    box_edges = [lat for lat in (box.south, box.north) if lowest <= lat <= highest]
    lats = np.unique(np.concatenate([lats, box_edges]))
    step = cell_degrees(grid) / 2
    count = min(MAX_LATTICE_LONGITUDES, max(2, math.ceil((box.east - box.west) / step) + 1))
    tens = np.arange(math.ceil(box.west / 10) * 10, box.east + 1e-9, 10.0)
    breaks = np.concatenate([tens - BREAK_EPSILON, tens + BREAK_EPSILON])
    lons = np.concatenate([np.linspace(box.west, box.east, count), breaks])
    lons = np.unique(lons[(lons >= box.west) & (lons <= box.east)])
    lon, lat = np.meshgrid(lons, lats)
    cells = grid.cell_index(lon, lat).ravel()
    return cells[cells >= 0]

"""Footprint registration on real NOAA-19 GAC scan geometry (pyorbital): every cell inside a
swath is covered, each pixel keeps its own cell, bands see exactly their rows, and a swath
over an interruption of Goode's projection fills both lobes up to the edge."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest

from nearline.composite._quality import coverage
from nearline.grid import FootprintRegistrar, get_grid
from nearline.swath._orbit import GAC_PIXEL_SECONDS, NOAA19_TLE, gac_scan_angles, scan_lonlat

LINES = 700  # 350 s of an orbit: about 2,300 km along the track


def turned(lon: np.ndarray, degrees: float) -> np.ndarray:
    """The swath turned ``degrees`` east (still a real swath: the Earth turned under it)."""
    return ((lon + degrees + 180.0) % 360.0 - 180.0).astype(np.float32)


@pytest.fixture(scope="module")
def mid_latitudes() -> tuple[np.ndarray, np.ndarray]:
    """(LINES, 409) lon/lat of GAC pixels from 23 to 43 N, across IGH's sinusoidal/Mollweide
    boundary."""
    columns = np.arange(409)
    lon, lat = scan_lonlat(
        NOAA19_TLE, datetime(2012, 12, 12, 10, 36), np.arange(LINES) * 0.5,
        gac_scan_angles(columns), columns * GAC_PIXEL_SECONDS,
    )  # fmt: skip
    return lon.astype(np.float32), lat.astype(np.float32)


def pair_codes(cells: np.ndarray, pixels: np.ndarray, first_cell: int = 0) -> np.ndarray:
    """(cell, pixel) pairs as one int64 each, cells counted from the grid's first row."""
    return (cells.astype(np.int64) + first_cell) * 2**20 + pixels


def holes(filled: np.ndarray) -> int:
    """Empty cells whose four edge neighbours are all filled."""
    inner = filled[1:-1, 1:-1]
    around = filled[:-2, 1:-1] & filled[2:, 1:-1] & filled[1:-1, :-2] & filled[1:-1, 2:]
    return int((~inner & around).sum())


def image(grid, cells: np.ndarray, rows: tuple[int, int]) -> np.ndarray:
    filled = np.zeros((rows[1] - rows[0]) * grid.width, bool)
    filled[cells[cells >= 0]] = True
    return filled.reshape(rows[1] - rows[0], grid.width)


def rows_of(grid, lat: np.ndarray) -> tuple[int, int]:
    """Rows spanning the block's latitudes, with a margin."""
    from nearline.grid import row_of_latitude

    north, south = row_of_latitude(grid, np.array([lat.max() + 1, lat.min() - 1]))
    return int(north), int(south) + 1


@pytest.mark.parametrize("name", ["igh-8km", "igh-1km", "latlon-0.25"])
def test_no_cell_inside_a_swath_is_left_empty(name, mid_latitudes):
    grid = get_grid(name)
    lon, lat = mid_latitudes
    if name == "igh-1km":  # a shorter piece keeps the images small
        lon, lat = lon[:160], lat[:160]
    rows = rows_of(grid, lat)
    cells, pixels = FootprintRegistrar(grid).register(lon, lat, rows=rows)
    pairs = pair_codes(cells, pixels)
    assert np.unique(pairs).size == pairs.size  # each (cell, pixel) once
    own = grid.cell_index(lon, lat, rows=rows).ravel()
    assert np.isin(pair_codes(own, np.arange(own.size)), pairs).all()  # and its centre's cell
    filled, centres = image(grid, cells, rows), image(grid, own, rows)
    assert coverage(filled).pinholes == 0
    assert holes(filled) == 0
    if name == "igh-8km":  # cells smaller than the edge pixels' spacing
        assert coverage(centres).pinholes > 100  # what registering centres alone leaves
    if name == "igh-1km":  # cells smaller than the pixels: each fills many
        assert filled.sum() > 10 * centres.sum()


def test_a_band_gets_exactly_the_pairs_of_its_rows(mid_latitudes):
    grid = get_grid("igh-8km")
    lon, lat = mid_latitudes
    whole = rows_of(grid, lat)
    middle = (whole[0] + whole[1]) // 2
    registrar = FootprintRegistrar(grid)
    cells, pixels = registrar.register(lon, lat, rows=whole)
    everything = np.sort(pair_codes(cells, pixels, whole[0] * grid.width))
    parts = []
    for band in ((whole[0], middle), (middle, whole[1])):
        cells, pixels = registrar.register(lon, lat, rows=band)
        parts.append(pair_codes(cells, pixels, band[0] * grid.width))
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), everything)


@pytest.mark.parametrize("edge", [-40.0, 180.0])  # the northern interruption, the date line
def test_a_swath_over_an_interruption_fills_both_lobes_and_nothing_between(edge, mid_latitudes):
    grid = get_grid("igh-8km")
    lon, lat = mid_latitudes
    lon = turned(lon, edge - float(lon[LINES // 2, 204]))
    assert lat.min() > 0
    assert np.abs(lon - edge).min() < 0.1
    rows = rows_of(grid, lat)
    cells, _ = FootprintRegistrar(grid).register(lon, lat, rows=rows)
    filled = image(grid, cells, rows)
    on_earth = grid.domain_mask(rows)
    # a cell whose centre is off the Earth is filled only by a pixel inside it, on its lobe
    centres = image(grid, grid.cell_index(lon, lat, rows=rows).ravel(), rows)
    assert not (filled & ~on_earth & ~centres).any()
    assert coverage(filled).pinholes == 0
    assert holes(filled & on_earth) == 0
    # both lobes are filled right up to the interruption along the swath's middle line
    row = int(grid.cell_index(lon[LINES // 2, 204], lat[LINES // 2, 204], rows=rows)) // grid.width
    edge_cells = np.flatnonzero(np.diff(on_earth[row].astype(np.int8)))
    for edge in edge_cells:
        if abs(edge - np.flatnonzero(filled[row]).mean()) < 200:
            assert filled[row, edge] or filled[row, edge + 1]


def test_registration_grows_its_buffers_and_reuses_them(mid_latitudes):
    grid = get_grid("igh-1km")
    lon, lat = mid_latitudes
    rows = rows_of(grid, lat)
    registrar = FootprintRegistrar(grid)
    first = [a.copy() for a in registrar.register(lon[:100], lat[:100], rows=rows)]
    assert first[0].size > 10 * lon[:100].size  # 1 km cells: many per GAC pixel
    registrar.register(lon, lat, rows=rows)
    again = registrar.register(lon[:100], lat[:100], rows=rows)
    for want, got in zip(first, again, strict=True):
        np.testing.assert_array_equal(got, want)

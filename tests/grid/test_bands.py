"""Latitude bands: every row once, aligned edges, balanced work, rows of latitudes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nearline.errors import GridError
from nearline.grid import Band, available_grids, get_grid, row_of_latitude, split_rows


@settings(max_examples=60, deadline=None)
@given(
    n_bands=st.integers(1, 40),
    align=st.sampled_from([1, 8, 128]),
    weighted=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_bands_cover_every_row_once_on_aligned_edges(n_bands, align, weighted, seed):
    grid = get_grid("igh-8km")
    weights = np.random.default_rng(seed).exponential(size=grid.height) if weighted else None
    bands = split_rows(grid, n_bands, align=align, weights=weights)
    assert 1 <= len(bands) <= n_bands
    assert bands[0].rows[0] == 0
    assert bands[-1].rows[1] == grid.height
    for index, (a, b) in enumerate(itertools.pairwise(bands)):
        assert a.index == index
        assert a.rows[1] == b.rows[0]
        assert a.height > 0
        assert a.rows[1] % align == 0


def test_weighted_bands_carry_about_equal_work():
    grid = get_grid("igh-8km")
    weights = np.where(np.arange(grid.height) < 300, 10.0, 1.0)  # heavy polar rows
    bands = split_rows(grid, 4, weights=weights)
    loads = [weights[b.rows[0] : b.rows[1]].sum() for b in bands]
    assert max(loads) / min(loads) < 1.01
    assert bands[0].height < bands[-1].height


@settings(max_examples=40, deadline=None)
@given(
    n_bands=st.integers(1, 12),
    align=st.sampled_from([1, 4, 16]),
    seed=st.integers(0, 1000),
)
def test_no_band_carries_more_than_its_share_plus_one_aligned_block(n_bands, align, seed):
    grid = get_grid("geos5-1x1.25")
    weights = np.random.default_rng(seed).exponential(size=grid.height)
    bands = split_rows(grid, n_bands, align=align, weights=weights)
    # an edge moves at most half an aligned block from the balanced cut, plus one row
    slack = 2 * (align / 2 + 1) * weights.max()
    for band in bands:
        assert weights[band.rows[0] : band.rows[1]].sum() <= weights.sum() / n_bands + slack


def test_split_rows_refuses_nonsense():
    grid = get_grid("igh-8km")
    with pytest.raises(GridError, match="need n_bands >= 1 and align >= 1"):
        split_rows(grid, 0)
    with pytest.raises(GridError, match="weights must be 2168 values >= 0"):
        split_rows(grid, 2, weights=np.ones(10))
    assert [b.rows for b in split_rows(grid, 50, align=1024)] == [
        (0, 1024),
        (1024, 2048),
        (2048, 2168),
    ]


@pytest.mark.parametrize("name", available_grids())
def test_row_of_latitude_matches_the_rows_of_projected_points(name):
    grid = get_grid(name)
    rng = np.random.default_rng(5)
    lat = np.degrees(np.arcsin(rng.uniform(-1, 1, 20_000)))
    lon = rng.uniform(-180, 180, lat.size)
    cells = grid.cell_index(lon, lat)
    ok = cells >= 0
    np.testing.assert_array_equal(row_of_latitude(grid, lat[ok]), cells[ok] // grid.width)
    centres = grid.row_latitudes()
    np.testing.assert_array_equal(row_of_latitude(grid, centres), np.arange(grid.height))


def test_row_of_latitude_clips_to_the_grid_and_marks_nan():
    grid = get_grid("igh-8km")
    rows = row_of_latitude(grid, np.array([90.0, 89.99, -90.0, np.nan, 0.0]))
    np.testing.assert_array_equal(rows, [0, 0, grid.height - 1, -1, 1084])
    assert row_of_latitude(grid, 45.0).shape == ()


def test_a_band_knows_its_latitudes():
    grid = get_grid("latlon-0.25")
    assert Band(0, (0, 4)).latitudes(grid) == (89.0, 90.0)
    assert Band(3, (700, 720)).latitudes(grid) == (-90.0, -85.0)
    assert Band(1, (10, 30)).height == 20

"""Target grids: every point lands in the cell pyproj gives; bands cover each row once."""

from __future__ import annotations

import itertools

import numpy as np
import pyproj
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nearline.errors import GridError
from nearline.grid import Grid, Kind, available_grids, get_grid, row_of_latitude, split_rows


def pyproj_cells(grid: Grid, lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row and column by pyproj; also how far each point is from its cell's nearest edge."""
    transformer = pyproj.Transformer.from_crs("EPSG:4326", grid.crs, always_xy=True)
    x, y = transformer.transform(lon.astype(np.float64), lat.astype(np.float64))
    xmin, _, _, ymax = grid.extent
    if grid.kind is Kind.LATLON:  # longitudes wrap onto a grid that spans 360 degrees
        x = (x - xmin) % 360 + xmin
    dx, dy = grid.cell_size
    fx, fy = (x - xmin) / dx, (ymax - y) / dy
    col, row = np.floor(fx), np.floor(fy)
    inside = (col >= 0) & (col < grid.width) & (row >= 0) & (row < grid.height)
    want = np.where(inside, row * grid.width + col, -1).astype(np.int64)
    edge = np.minimum.reduce([fx - col, col + 1 - fx, fy - row, row + 1 - fy])
    return want, edge


def random_points(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    lon = rng.uniform(-180, 180, n)
    lat = np.degrees(np.arcsin(rng.uniform(-1, 1, n)))  # uniform on the sphere
    special_lon = np.repeat([-180, -160, -100, -60, -40, -20, 20, 30, 80, 140, 179.999], 9)
    special_lat = np.tile([-89.9, -60, -40.74, -40.73, 0, 40.73, 40.74, 60, 89.9], 11)
    return np.concatenate([lon, special_lon]), np.concatenate([lat, special_lat])


@pytest.mark.parametrize("name", ["igh-8km", "igh-1km", "latlon-0.25", "geos5-1x1.25"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_points_land_in_the_cell_pyproj_gives(name, dtype):
    grid = get_grid(name)
    lon, lat = random_points(200_000, seed=7)
    lon, lat = lon.astype(dtype), lat.astype(dtype)
    want, edge = pyproj_cells(grid, lon, lat)
    got = grid.cell_index(lon, lat)
    disagree = got != want
    assert np.all(edge[disagree] < 1e-6), (lon[disagree][:5], lat[disagree][:5])
    assert (got >= 0).mean() > 0.99 if name.startswith(("latlon", "geos5")) else True


def test_a_band_gives_indices_relative_to_its_first_row_and_minus_one_outside():
    grid = get_grid("igh-8km")
    lon, lat = random_points(50_000, seed=3)
    whole = grid.cell_index(lon, lat)
    rows = (600, 900)
    band = grid.cell_index(lon.reshape(-1, 1), lat.reshape(-1, 1), rows=rows).ravel()
    row = whole // grid.width
    inside = (whole >= 0) & (row >= rows[0]) & (row < rows[1])
    np.testing.assert_array_equal(band[inside], whole[inside] - rows[0] * grid.width)
    assert np.all(band[~inside] == -1)


def test_named_grids_have_the_published_shapes():
    shapes = {name: (get_grid(name).width, get_grid(name).height) for name in available_grids()}
    assert shapes == {
        "igh-8km": (5004, 2168),
        "igh-1km": (40032, 17344),
        "latlon-0.25": (1440, 720),
        "geos5-0.5x0.625": (576, 361),
        "geos5-1x1.25": (288, 181),
    }
    assert get_grid("igh-8km").cell_size == (8000.0, 8000.0)
    x, y, attrs = get_grid("geos5-1x1.25").coordinates()
    assert (x[0], y[0], y[-1]) == (-180.0, 90.0, -90.0)  # GEOS-5 centres cells on the poles
    assert "crs_wkt" in attrs
    with pytest.raises(GridError, match="unknown grid 'igh-9km'; choose one of igh-8km"):
        get_grid("igh-9km")


def test_row_of_latitude_matches_the_rows_of_projected_points():
    grid = get_grid("igh-8km")
    lon, lat = random_points(20_000, seed=5)
    cells = grid.cell_index(lon, lat)
    ok = cells >= 0
    np.testing.assert_array_equal(row_of_latitude(grid, lat[ok]), cells[ok] // grid.width)


def test_grid_round_trips_through_a_dict():
    grid = get_grid("igh-1km")
    assert Grid.from_dict(grid.to_dict()) == grid
    with pytest.raises(GridError, match="not a grid description"):
        Grid.from_dict({"name": "x"})


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

"""Target grids: every point lands in the cell pyproj gives; named grids; CF coordinates."""

from __future__ import annotations

import numpy as np
import pyproj
import pytest

from nearline.errors import GridError
from nearline.grid import Grid, Kind, available_grids, get_grid, igh_grid, latlon_grid
from tests.grid.points import awkward_points


def pyproj_cells(grid: Grid, lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat cell index by pyproj (-1 outside); also how far each point is from its cell's
    nearest edge, in cells."""
    transformer = pyproj.Transformer.from_crs("EPSG:4326", grid.crs, always_xy=True)
    x, y = transformer.transform(lon.astype(np.float64), lat.astype(np.float64), errcheck=False)
    xmin, _, _, ymax = grid.extent
    if grid.kind is Kind.LATLON:  # longitudes wrap onto a grid that spans 360 degrees
        x = (x - xmin) % 360 + xmin
    dx, dy = grid.cell_size
    with np.errstate(invalid="ignore"):
        fx, fy = (x - xmin) / dx, (ymax - y) / dy
        col, row = np.floor(fx), np.floor(fy)
        if grid.kind is Kind.LATLON:  # the south pole belongs to the last row
            row = np.where(row == grid.height, grid.height - 1, row)
        inside = (col >= 0) & (col < grid.width) & (row >= 0) & (row < grid.height)
    want = np.where(inside, row * grid.width + col, -1).astype(np.int64)
    edge = np.minimum.reduce([fx - col, col + 1 - fx, fy - row, row + 1 - fy])
    return want, np.nan_to_num(edge, nan=1.0)


@pytest.mark.parametrize("name", available_grids())
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_points_land_in_the_cell_pyproj_gives(name, dtype):
    grid = get_grid(name)
    lon, lat = awkward_points(100_000, seed=7)
    lon, lat = lon.astype(dtype), lat.astype(dtype)
    want, edge = pyproj_cells(grid, lon, lat)
    got = grid.cell_index(lon.reshape(-1, 1), lat.reshape(-1, 1)).ravel()
    disagree = got != want
    assert np.all(edge[disagree] < 1e-6), (lon[disagree][:5], lat[disagree][:5])
    assert np.count_nonzero(disagree) < 50
    assert (got >= 0).mean() > 0.99


def test_a_swath_shaped_block_in_either_precision_gives_its_shape_back():
    grid = get_grid("igh-8km")
    lon, lat = awkward_points(409 * 90, seed=11)
    lon, lat = lon[: 409 * 90].reshape(-1, 409), lat[: 409 * 90].reshape(-1, 409)
    cells = grid.cell_index(lon, lat)
    assert cells.shape == lon.shape
    assert cells.dtype == np.int64
    f32 = grid.cell_index(lon.astype(np.float32), lat.astype(np.float32))
    assert np.mean(f32 == cells) > 0.999  # float32 moves a point by up to ~1 m


def test_interruptions_split_neighbours_between_lobes_as_pyproj_does():
    grid = get_grid("igh-8km")
    lat = np.array([60.0, 20.0, -20.0, -60.0, 60.0, -60.0, -60.0, -60.0])
    lon = np.array([-40.0, -40.0, -100.0, -20.0, 180.0, 80.0, -100.0, 180.0])
    west = grid.cell_index(lon - 1e-7, lat) % grid.width
    east = grid.cell_index(lon + 1e-7, lat) % grid.width
    on_edge = grid.cell_index(lon, lat) % grid.width
    np.testing.assert_array_equal(on_edge, west)  # an edge belongs to the lobe west of it
    assert np.all(np.abs(east - west) > 50)  # 60 N: 139 columns (1100 km) apart, at 20 N: 56
    wrapped = grid.cell_index(np.array([180.0 + 1e-7, -180.0 - 1e-7]), np.array([-60.0, -60.0]))
    np.testing.assert_array_equal(wrapped % grid.width, [east[-1], west[-1]])


def test_poles_dateline_and_impossible_points():
    igh, latlon = get_grid("igh-8km"), get_grid("latlon-0.25")
    lon = np.array([0.0, 120.0, 0.0, np.nan, 0.0, np.inf, 0.0, 180.0, -180.0, 540.0])
    lat = np.array([90.0, -90.0, 89.8, 0.0, np.nan, 0.0, 90.5, 0.0, 0.0, 0.0])
    cells = igh.cell_index(lon, lat)
    assert cells[0] == cells[1] == -1  # the poles are beyond the published extent
    assert cells[2] // igh.width == 0  # 89.8 degrees is in the first row
    np.testing.assert_array_equal(cells[3:7], -1)
    assert cells[7] // igh.width == cells[8] // igh.width  # same row either side of 180
    assert cells[7] % igh.width > igh.width - 3
    assert cells[8] % igh.width < 3
    assert cells[9] == cells[8]  # 540 wraps to -180, as in PROJ
    cells = latlon.cell_index(lon, lat)
    np.testing.assert_array_equal(cells[[0, 1]], [0 * 1440 + 720, 719 * 1440 + 1200])
    np.testing.assert_array_equal(cells[3:7], -1)
    assert cells[7] == cells[8] == cells[9] == 360 * 1440


def test_a_band_gives_indices_relative_to_its_first_row_and_minus_one_outside():
    grid = get_grid("igh-8km")
    lon, lat = awkward_points(50_000, seed=3)
    whole = grid.cell_index(lon, lat)
    rows = (600, 900)
    buffer = np.full(lon.size + 100, 7, dtype=np.int64)
    band = grid.cell_index(lon, lat, rows=rows, out=buffer)
    assert np.shares_memory(band, buffer)
    assert buffer[-1] == 7
    row = whole // grid.width
    inside = (whole >= 0) & (row >= rows[0]) & (row < rows[1])
    np.testing.assert_array_equal(band[inside], whole[inside] - rows[0] * grid.width)
    assert np.all(band[~inside] == -1)
    assert np.all(grid.cell_index(lon, lat, rows=(5, 5)) == -1)


def test_bad_arguments_name_what_was_wrong():
    grid = get_grid("igh-8km")
    lon = np.zeros(10)
    with pytest.raises(GridError, match=r"rows \(0, 3000\) are not within the 2168 rows"):
        grid.cell_index(lon, lon, rows=(0, 3000))
    with pytest.raises(GridError, match="out must be a flat contiguous int64 array of >= 10"):
        grid.cell_index(lon, lon, out=np.empty(5, dtype=np.int64))
    with pytest.raises(GridError, match="out must be"):
        grid.cell_index(lon, lon, out=np.empty(10, dtype=np.int32))
    with pytest.raises(GridError, match="lon and lat differ in size"):
        grid.cell_index(lon, lon[:5])
    with pytest.raises(GridError, match="needs width, height >= 1"):
        Grid("bad", Kind.IGH, "+proj=igh", 0, 10, (0, 0, 1, 1))


def test_named_grids_have_the_published_shapes_and_cells():
    shapes = {name: (get_grid(name).width, get_grid(name).height) for name in available_grids()}
    assert shapes == {
        "igh-8km": (5004, 2168),
        "igh-1km": (40032, 17344),
        "latlon-0.25": (1440, 720),
        "geos5-0.5x0.625": (576, 361),
        "geos5-1x1.25": (288, 181),
    }
    for name in ("igh-8km", "igh-1km"):
        assert get_grid(name).extent == (-20016000.0, -8672000.0, 20016000.0, 8672000.0)
    assert get_grid("igh-8km").cell_size == (8000.0, 8000.0)
    assert get_grid("igh-1km").cell_size == (1000.0, 1000.0)
    assert get_grid("geos5-0.5x0.625").cell_size == (0.625, 0.5)
    assert get_grid("latlon-0.25").extent == (-180, -90, 180, 90)
    assert igh_grid("igh-4km", 4000.0).width == 10008
    with pytest.raises(GridError, match="no grid called 'igh-9km'; installed: igh-8km"):
        get_grid("igh-9km")
    with pytest.raises(GridError, match="must divide the extent"):
        igh_grid("igh-3km", 3000.0)
    with pytest.raises(GridError, match="must divide 180 x 360"):
        latlon_grid("odd", 0.7, 0.7)


def test_coordinates_are_cell_centres_with_cf_and_gdal_crs_attributes():
    x, y, attrs = get_grid("geos5-1x1.25").coordinates()
    assert (x[0], x[-1], y[0], y[-1]) == (-180.0, 178.75, 90.0, -90.0)  # centres on the poles
    assert attrs["grid_mapping_name"] == "latitude_longitude"
    assert attrs["semi_major_axis"] == 6378137.0
    grid = get_grid("igh-8km")
    x, y, attrs = grid.coordinates()
    assert (x[0], x[-1], y[0], y[-1]) == (-20012000.0, 20012000.0, 8668000.0, -8668000.0)
    assert "grid_mapping_name" not in attrs  # CF has none for Goode Homolosine
    crs = pyproj.CRS.from_wkt(attrs["crs_wkt"])
    back = pyproj.Transformer.from_crs("EPSG:4326", crs, always_xy=True)
    np.testing.assert_allclose(back.transform(-60.0, 50.0), grid.forward(-60.0, 50.0))
    assert attrs["GeoTransform"] == "-20016000.0 8000.0 0.0 8672000.0 0.0 -8000.0"
    assert attrs["earth_radius"] == 6370997.0
    x_attrs, y_attrs = grid.axis_attributes()
    assert (x_attrs["standard_name"], y_attrs["units"]) == ("projection_x_coordinate", "m")


def test_row_latitudes_invert_the_rows_of_latitudes():
    for name in available_grids():
        grid = get_grid(name)
        centres = grid.row_latitudes()
        assert centres.shape == (grid.height,)
        assert np.all(np.diff(centres) < 0)
        edges = grid.row_latitudes(edges=True)
        np.testing.assert_array_less(edges[1:-1], edges[:-2])
        band = grid.latitude_range((10, 20))
        assert band == (edges[20], edges[10])
    igh = get_grid("igh-8km")
    np.testing.assert_allclose(igh.row_latitudes()[1083], np.degrees(4000 / 6370997))
    assert igh.latitude_range((0, igh.height)) == pytest.approx((-89.87, 89.87), abs=0.01)
    assert get_grid("geos5-1x1.25").latitude_range((0, 181)) == (-90.0, 90.0)


def test_grid_round_trips_through_a_dict():
    for name in available_grids():
        grid = get_grid(name)
        assert Grid.from_dict(grid.to_dict()) == grid
    with pytest.raises(GridError, match="not a grid description"):
        Grid.from_dict({"name": "x"})
    assert get_grid(get_grid("igh-1km")) is get_grid("igh-1km")

"""nearline.coverage on a hand-made gridded file of the 8 km Goode world whose every cell's
value says where it is (``value = cell_value(row, col)``): windows of boxes (across an
interruption too), the chunks a box reads, points, scaling, and the files it writes."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import numpy as np
import pyproj
import pytest
import rasterio
import xarray as xr
from rio_cogeo.cogeo import cog_validate

from nearline.coverage import (
    Box,
    Layer,
    Target,
    box_target,
    read_bands,
    read_subset,
    sample_points,
    whole_grid,
    write_geotiff,
    write_netcdf,
)
from nearline.errors import CoverageError, CoverageTooLarge
from nearline.grid import get_grid
from nearline.testing.gridded import FILL, cell_value, write_gridded

GRID = get_grid("igh-8km")
IGH = pyproj.Transformer.from_crs("EPSG:4326", "+proj=igh +R=6370997", always_xy=True)


@pytest.fixture(scope="module")
def paths(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("gridded")
    days = ("2012-12-12", "2012-12-13")
    return [write_gridded(folder / f"{day}.nc", day=day, number=n) for n, day in enumerate(days)]


@pytest.fixture(scope="module")
def layers(paths) -> list[Layer]:
    made = []
    for day, path in enumerate(paths):
        moment = datetime(2012, 12, 12 + day, tzinfo=UTC)
        made.append(Layer(path.name, moment, moment, partial(path.open, "rb")))
    return made


def cells_of(lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each point's cell by PROJ's IGH, not nearline's."""
    x, y = IGH.transform(lon, lat)
    xmin, _, _, ymax = GRID.extent
    return np.floor((ymax - y) / 8000).astype(int), np.floor((x - xmin) / 8000).astype(int)


def window(target: Target) -> tuple[slice, slice]:
    xmin, _, _, ymax = GRID.extent
    row, col = round((ymax - target.extent[3]) / 8000), round((target.extent[0] - xmin) / 8000)
    return slice(row, row + target.height), slice(col, col + target.width)


def test_a_box_across_an_interruption_spans_both_lobes():
    box = Box(-45, 30, -35, 40)  # the northern lobes meet at 40 W
    rows, cols = window(box_target(GRID, box))
    lon, lat = np.meshgrid(np.linspace(-45, -35, 401), np.linspace(30, 40, 401))
    row, col = cells_of(lon, lat)
    assert (row.min(), row.max() + 1) == (rows.start, rows.stop)
    assert (col.min(), col.max() + 1) == (cols.start, cols.stop)
    west = col[lon < -40].max() - col[lon < -40].min()
    assert cols.stop - cols.start > 2 * west  # the two lobes are far apart on the plane


def test_a_box_reads_its_cells_and_few_chunks(layers, paths):
    target = box_target(GRID, Box(0, 0, 10, 10))
    subset = read_subset(layers, grid=GRID, target=target)
    rows, cols = window(target)
    r, c = np.meshgrid(np.arange(rows.start, rows.stop), np.arange(cols.start, cols.stop),
                       indexing="ij")  # fmt: skip
    for day in (0, 1):
        assert np.array_equal(subset.values["ndvi"][day], cell_value(r, c, day))
    size = paths[0].stat().st_size
    assert subset.bytes_read < 0.05 * 2 * size
    whole = read_subset(layers[:1], grid=GRID, target=whole_grid(GRID))
    assert whole.bytes_read > 0.95 * size


def test_a_target_beyond_the_grid_is_fill_there_and_scaled_by_nearest_cell(layers):
    xmin, _, _, ymax = GRID.extent
    target = Target((xmin - 80000, ymax - 160000, xmin + 80000, ymax), 10, 10)  # half off
    values = read_subset(layers[:1], grid=GRID, target=target).values["ndvi"][0]
    assert (values[:, :5] == FILL).all()
    rows, cols = np.arange(10) * 2 + 1, np.arange(5) * 2 + 1  # the cell under each centre
    assert np.array_equal(values[:, 5:], cell_value(rows[:, None], cols[None, :]))


def test_points_take_their_cells_values_and_off_the_grid_the_fill(layers):
    lon, lat = np.array([10.0, -120.5, 0.0]), np.array([45.0, -33.3, 89.95])
    samples = sample_points(layers, grid=GRID, lon=lon, lat=lat, bands=["ndvi"])
    row, col = cells_of(lon[:2], lat[:2])
    for day in (0, 1):
        assert np.array_equal(samples.values["ndvi"][day, :2], cell_value(row, col, day))
    assert (samples.values["ndvi"][:, 2] == FILL).all()


def test_files_written_are_whole_and_placed(layers, tmp_path):
    target = box_target(GRID, Box(0, 0, 10, 10))
    subset = read_subset(layers, grid=GRID, target=target)
    with xr.open_dataset(write_netcdf(subset, tmp_path / "two.nc")) as written:
        assert written["ndvi"].shape == (2, target.height, target.width)
        assert np.allclose(written["ndvi"].values, subset.values["ndvi"] * 1e-4)
        assert written["crs"].attrs["GeoTransform"].startswith(repr(target.extent[0]))
    with pytest.raises(CoverageError, match="GeoTIFF holds one time"):
        write_geotiff(subset, tmp_path / "two.tif")
    one = read_subset(layers[:1], grid=GRID, target=target)
    written = write_geotiff(one, tmp_path / "one.tif")
    assert cog_validate(written, quiet=True)[0]
    with rasterio.open(written) as tiff:
        assert tiff.bounds == target.extent
        assert np.allclose(tiff.read(1), one.values["ndvi"][0] * 1e-4)
        crs = pyproj.CRS.from_wkt(tiff.crs.to_wkt())
    # the grid's own CRS, its sphere named as EPSG names it (GDAL then writes it at once)
    assert crs.equals(pyproj.CRS.from_user_input(GRID.crs))
    assert crs.ellipsoid.name == "Clarke 1866 Authalic Sphere"
    assert crs.coordinate_operation.method_name == "Interrupted Goode Homolosine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.tif", "two.nc"]


@pytest.mark.parametrize(
    ("edges", "words"),
    [((10, 0, 5, 1), "reversed"), ((0, 50, 1, 40), "reversed"), ((0, 0, 190, 1), "-180..180"),
     ((0, float("nan"), 1, 1), "finite")],
)  # fmt: skip
def test_bad_boxes_say_what_is_wrong(edges, words):
    with pytest.raises(CoverageError, match=words):
        Box(*edges)


def test_a_read_over_the_limit_is_refused_before_reading(layers):
    with pytest.raises(CoverageTooLarge, match="NEARLINE_COVERAGE_MAX_VALUES"):
        read_subset(layers, grid=GRID, target=whole_grid(GRID), limit=1_000_000)


def test_a_coarse_view_of_the_globe_holds_only_the_rows_it_samples(layers):
    target = whole_grid(GRID).scaled(size=(250, 108))  # what a zoomed-out GIS asks for
    subset = read_subset(layers[:1], grid=GRID, target=target, limit=2_000_000)  # < 10.8 M
    rows = np.floor((np.arange(108) + 0.5) * GRID.height / 108).astype(int)
    cols = np.floor((np.arange(250) + 0.5) * GRID.width / 250).astype(int)
    assert np.array_equal(subset.values["ndvi"][0], cell_value(rows[:, None], cols[None, :]))


def test_only_the_bands_asked_for_are_described_in_the_order_asked(paths, tmp_path):
    import netCDF4

    two = tmp_path / "two-bands.nc"
    two.write_bytes(paths[0].read_bytes())
    with netCDF4.Dataset(two, "a") as dataset:
        doubled = dataset.createVariable("twice", "i4", ("y", "x"), zlib=True)
        doubled.setncatts({"grid_mapping": "crs", "units": "K", "long_name": "twice"})
    layer = Layer("two", datetime(2012, 12, 12, tzinfo=UTC), datetime(2012, 12, 12, tzinfo=UTC),
                  partial(two.open, "rb"))  # fmt: skip
    every = read_bands(layer, GRID)
    assert list(every) == ["ndvi", "twice"]
    assert read_bands(layer, GRID, {"twice"}) == {"twice": every["twice"]}
    assert every["twice"].units == "K"
    assert every["ndvi"].scale == 1e-4
    assert read_bands(layer, GRID, {"neither"}) == {}
    box = box_target(GRID, Box(10, 10, 11, 11))
    subset = read_subset([layer], grid=GRID, target=box, bands=["twice", "ndvi"])
    assert list(subset.bands) == ["twice", "ndvi"]
    rows, cols = window(box)
    expected = cell_value(
        np.arange(rows.start, rows.stop)[:, None], np.arange(cols.start, cols.stop)
    )
    assert np.array_equal(subset.values["ndvi"][0], expected)
    with pytest.raises(CoverageError, match="unknown band 'nope': this collection's bands are "
                       "ndvi, twice"):  # fmt: skip
        read_subset([layer], grid=GRID, target=box, bands=["ndvi", "nope"])

"""The cf-netcdf reader: CF/ACDD products catalogued by their conventions, on small files
written here with netCDF4, and on a real GOES-16 GLM Level 2 file (tests/data/real)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import shapely
from shapely.geometry import shape

from nearline.errors import GranuleError
from nearline.swath import describe_granule, open_granule
from nearline.swath._cf import CFReader
from nearline.swath._cf_time import parse_moment
from nearline.testing.realdata import FILES

GLM = Path(__file__).resolve().parents[1] / "data" / "real" / FILES["glm-l2"]  # BSD-3-Clause
EPOCH = datetime(2020, 1, 1, tzinfo=UTC)
CORNER = 2.5 * 0.05  # degrees: how far a footprint's corner may stand from the swath
CF = {"Conventions": "CF-1.8", "platform": "Earth Observation Satellites > NOAA POES > NOAA-19",
      "instrument": "AVHRR", "short_name": "TEST_L1"}  # fmt: skip


def write(path: Path, variables: dict, attrs: dict, *, fmt: str = "NETCDF4") -> Path:
    """A netCDF file of ``variables`` ({name: (dims, values, attributes)}); dimensions are
    sized by the first variable that names them."""
    with netCDF4.Dataset(path, "w", format=fmt) as dataset:
        dataset.setncatts(attrs)
        for name, (dims, values, attributes) in variables.items():
            values = np.asarray(values)
            for dim, size in zip(dims, values.shape, strict=True):
                if dim not in dataset.dimensions:
                    dataset.createDimension(dim, size)
            variable = dataset.createVariable(name, values.dtype, dims)
            variable.setncatts(attributes)
            variable[...] = values
    return path


def swath(lon: np.ndarray, lat: np.ndarray, seconds: np.ndarray | None = None) -> dict:
    """2-D latitude and longitude on (y, x), and a time per line if ``seconds``."""
    variables = {
        "latitude": (("y", "x"), lat.astype("f4"), {"standard_name": "latitude",
                                                   "units": "degrees_north"}),
        "longitude": (("y", "x"), lon.astype("f4"), {"units": "degrees_east"}),
    }  # fmt: skip
    if seconds is not None:
        units = {"standard_name": "time", "units": "seconds since 2020-01-01 00:00:00"}
        variables["scan_time"] = (("y",), seconds, units)
    return variables


def grids(lines: int, pixels: int) -> tuple[np.ndarray, np.ndarray]:
    return np.mgrid[0:lines, 0:pixels].astype(np.float64)


def covers_every_pixel(geometry: dict, lon: np.ndarray, lat: np.ndarray) -> bool:
    wrapped = (lon + 180.0) % 360.0 - 180.0
    return bool(shapely.covers(shape(geometry), shapely.points(wrapped, lat)).all())


def test_a_swath_is_catalogued_by_its_line_times_and_its_pixels(tmp_path):
    i, j = grids(40, 90)
    lat, lon = 10 + 0.04 * i + 0.002 * j, -60 + 0.05 * j - 0.01 * i
    seconds = 3600.0 + 0.5 * np.arange(40)  # 01:00:00 to 01:00:19.5
    attrs = {**CF, "time_coverage_start": "2019-01-01T00:00:00Z",  # the record's, not the file's
             "time_coverage_end": "2021-01-01T00:00:00Z"}  # fmt: skip
    path = write(tmp_path / "swath.nc", swath(lon, lat, seconds), attrs)
    summary = describe_granule(path)
    assert (summary.reader, summary.product, summary.platform, summary.instrument) == (
        "cf-netcdf", "TEST_L1", "noaa19", "avhrr"
    )  # fmt: skip
    assert summary.start == EPOCH + timedelta(hours=1)
    assert summary.end == EPOCH + timedelta(hours=1, seconds=19.5)
    assert summary.n_lines == 40
    assert summary.media_type == "application/x-netcdf"
    assert covers_every_pixel(summary.geometry, lon, lat)
    # tight: the outline is grown by the footprint's 0.05 degrees, 2.5 times that at a corner
    west, south, east, north = summary.bbox
    assert 0 < lon.min() - west < CORNER
    assert 0 < east - lon.max() < CORNER
    assert 0 < lat.min() - south < CORNER
    assert 0 < north - lat.max() < CORNER


def test_a_swath_across_the_antimeridian_is_split_there(tmp_path):
    i, j = grids(30, 100)
    lon, lat = (170 + 0.2 * j + 0.02 * i + 180) % 360 - 180, -5 + 0.05 * i
    path = write(tmp_path / "across.nc", swath(lon, lat, 60.0 * np.arange(30)), CF)
    summary = describe_granule(path)
    assert summary.geometry["type"] == "MultiPolygon"
    assert covers_every_pixel(summary.geometry, lon, lat)
    west, _, east, _ = summary.bbox
    assert west > east  # STAC: across the antimeridian
    assert 0 < 170 - west < CORNER
    assert 0 < east - lon[lon < 0].max() < CORNER


def test_a_point_product_is_catalogued_by_its_acdd_bounds_and_window(tmp_path):
    rng = np.random.default_rng(1)
    lat, lon = rng.uniform(-20, 20, 50), rng.uniform(172, 188, 50) % 360
    lon = np.where(lon > 180, lon - 360, lon)
    offsets = rng.uniform(-800, 19_000, 50)  # events from before the declared window
    variables = {
        "lat": (("n",), lat.astype("f4"), {"standard_name": "latitude", "units": "degrees_north"}),
        "lon": (("n",), lon.astype("f4"), {"standard_name": "longitude", "units": "degrees_east"}),
        "offset": (("n",), offsets, {"units": "milliseconds since 2020-01-01 00:00:00"}),
    }  # fmt: skip
    attrs = {"Conventions": "CF-1.8, ACDD-1.3", "featureType": "point", "platform_ID": "G18",
             "dataset_name": "OR_GLM-L2-LCFA_G18_s20200010000000_e20200010000200_c2020.nc",
             "time_coverage_start": "2020-01-01T00:00:00.0Z",
             "time_coverage_end": "2020-01-01T00:00:20.0Z",
             "geospatial_lat_min": -25.0, "geospatial_lat_max": 25.0,
             "geospatial_lon_min": 170.0, "geospatial_lon_max": -170.0}  # fmt: skip
    summary = describe_granule(write(tmp_path / "points.nc", variables, attrs))
    assert (summary.product, summary.platform, summary.instrument) == (
        "GLM-L2-LCFA", "goes18", "glm"
    )  # fmt: skip
    assert (summary.start, summary.end) == (EPOCH, EPOCH + timedelta(seconds=20))
    assert summary.n_lines is None
    assert summary.bbox == (170.0, -25.0, -170.0, 25.0)
    assert summary.geometry["type"] == "MultiPolygon"  # the ACDD box, cut at 180
    assert shape(summary.geometry).area == pytest.approx(20 * 50)
    assert covers_every_pixel(summary.geometry, lon, lat)


def test_a_field_of_view_across_the_antimeridian_is_cut_there(tmp_path):
    """GOES-17's GLM looks from 137.2 W: its field-of-view bounds, west then east, cross
    180; the scalar coordinate's own value says which way round they go."""
    fov = {"standard_name": "latitude", "units": "degrees_north", "bounds": "lat_bounds"}
    variables = {
        "lat_fov": ((), np.float32(0.0), fov),
        "lat_bounds": (("b",), np.array([66.56, -66.56], "f4"), {}),
        "lon_fov": ((), np.float32(-137.2), {**fov, "standard_name": "longitude",
                                             "units": "degrees_east", "bounds": "lon_bounds"}),
        "lon_bounds": (("b",), np.array([156.44, -70.64], "f4"), {}),
    }  # fmt: skip
    attrs = {"Metadata_Conventions": "Unidata Dataset Discovery v1.0", "platform_ID": "G17",
             "time_coverage_start": "2020-01-01T00:00:00.0Z",
             "time_coverage_end": "2020-01-01T00:00:20.0Z"}  # fmt: skip
    summary = describe_granule(write(tmp_path / "g17.nc", variables, attrs))
    assert summary.platform == "goes17"
    assert summary.geometry["type"] == "MultiPolygon"
    assert summary.bbox == pytest.approx((156.44, -66.56, -70.64, 66.56), abs=1e-5)
    assert shape(summary.geometry).area == pytest.approx((360 - 156.44 - 70.64) * 133.12, 1e-5)


def test_a_file_without_any_time_is_refused_naming_what_is_missing(tmp_path):
    i, j = grids(10, 20)
    path = write(tmp_path / "timeless.nc", swath(j, i), {"Conventions": "CF-1.8"})
    assert not CFReader.can_open(path)
    why = "netCDF-4 with Conventions CF-1.8 but no time coordinate nor time_coverage_start"
    assert CFReader.why_not(path) == why
    with pytest.raises(GranuleError, match=rf"timeless\.nc: no reader .*cf-netcdf \({why}\)"):
        open_granule(path)


def test_a_file_without_a_place_or_markers_is_refused_naming_what_is_missing(tmp_path):
    times = {"time": (("t",), np.arange(3.0), {"units": "hours since 2020-01-01"})}
    placeless = write(tmp_path / "placeless.nc", times, {"Conventions": "CF-1.8"})
    assert CFReader.why_not(placeless) == (
        "netCDF-4 with Conventions CF-1.8 but no latitude/longitude variables, field-of-view "
        "bounds or ACDD geospatial_lat/lon_min/max"
    )
    i, j = grids(10, 20)
    plain = write(tmp_path / "plain.nc", swath(j, i, np.arange(10.0)), {})
    assert CFReader.why_not(plain).startswith("netCDF-4 without CF or ACDD markers")
    assert CFReader.why_not(Path(__file__)) == "no netCDF-4/HDF5 or netCDF-3 signature"


def test_netcdf3_and_a_time_whose_epoch_is_another_variable_are_read(tmp_path):
    """VGAC's form: time in hours since a scalar variable, itself in days since 01/01/2010
    (day/month/year); and a netCDF-3 classic file."""
    i, j = grids(12, 30)
    variables = swath(j * 0.1, i * 0.1 + 40)
    variables["time"] = (("y",), np.arange(12) / 7200, {"units": "hours since proj_time0"})
    variables["proj_time0"] = ((), np.float64(3652.25), {"units": "days since 01/01/2010T00:00:00"})
    path = write(
        tmp_path / "classic.nc", variables, {"time_coverage_start": "2020"}, fmt="NETCDF3_CLASSIC"
    )
    with open(path, "rb") as handle:
        assert handle.read(4) == b"CDF\x01"
    summary = describe_granule(path)
    start = datetime(2020, 1, 1, 6, tzinfo=UTC)  # 2010-01-01 + 3652.25 days
    assert (summary.start, summary.end) == (start, start + timedelta(seconds=5.5))


def test_times_are_read_as_cf_and_iso_8601_write_them():
    assert parse_moment("19810330T042358Z") == datetime(1981, 3, 30, 4, 23, 58, tzinfo=UTC)
    assert parse_moment("2018-07-02T04:33:00.0Z") == datetime(2018, 7, 2, 4, 33, tzinfo=UTC)
    assert parse_moment("1970-1-1 0:0:0") == datetime(1970, 1, 1, tzinfo=UTC)
    assert parse_moment("2000-01-01 12:00:00 -6:00") == datetime(2000, 1, 1, 18, tzinfo=UTC)
    assert parse_moment("01/02/2010T06:00:00") == datetime(2010, 2, 1, 6, tzinfo=UTC)
    assert parse_moment("2018-13-01") is None
    assert parse_moment("yesterday") is None


# -- a real GOES-16 GLM Level 2 file ---------------------------------------------------------
def test_glm_is_catalogued_by_its_declared_window_and_field_of_view():
    summary = describe_granule(GLM)
    assert (summary.reader, summary.product, summary.platform, summary.instrument) == (
        "cf-netcdf", "GLM-L2-LCFA", "goes16", "glm"
    )  # fmt: skip
    start = datetime(2018, 7, 2, 4, 33, tzinfo=UTC)
    assert (summary.start, summary.end) == (start, start + timedelta(seconds=20))
    assert summary.n_lines is None
    assert summary.bbox == pytest.approx((-141.56, -66.56, -8.44, 66.56), abs=1e-5)
    assert summary.geometry["type"] == "Polygon"
    with netCDF4.Dataset(GLM) as dataset:
        first_event = dataset["event_time_offset"][:].min()  # ms since the window's start
        flashes = dataset["flash_lon"][:], dataset["flash_lat"][:]
    assert first_event == -786.0  # before the window: the flash began in the previous product
    assert covers_every_pixel(summary.geometry, *flashes)

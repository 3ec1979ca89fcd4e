"""Synthetic granules: real geometry, shaped like the product, read back by the readers."""

from __future__ import annotations

import warnings
from datetime import datetime

import netCDF4
import numpy as np
import pytest
from pyorbital.geoloc_avhrr import compute_avhrr_gcps_lonlatalt

from nearline.composite._calibration import calibrate, line_calibration
from nearline.errors import ConfigError, GranuleError
from nearline.swath import N_PIXELS, TIE_COLUMNS, available_readers, lonlat, open_granule
from nearline.swath import _orbit as orbit
from nearline.swath._gac import GACReader
from nearline.swath._synth import synthesize_day
from nearline.swath.netcdf_granule import NetCDFGranuleReader
from nearline.testing.reader import ReaderTests

LINES = 400


@pytest.fixture(scope="module")
def granule_path(tmp_path_factory):
    folder = tmp_path_factory.mktemp("granules")
    return synthesize_day("2012-12-12", 2, folder, lines_per_orbit=LINES)[1]


class TestNetCDFReader(ReaderTests):
    reader = NetCDFGranuleReader


def test_geolocation_reproduces_pyorbitals_published_check():
    """Scan line 2, LAC column 500 of the NOAA-19 test pass (pyorbital's test_geoloc)."""
    start = datetime(2012, 12, 12, 4, 16, 1, 575000)
    lon, lat = orbit.scan_lonlat(
        orbit.NOAA19_TLE,
        start,
        np.array([2 * orbit.LAC_LINE_SECONDS]),
        orbit.lac_scan_angles(np.array([500.0])),
        np.array([500 * orbit.LAC_PIXEL_SECONDS]),
    )
    assert lon[0, 0] == pytest.approx(-34.69996894, abs=1e-6)
    assert lat[0, 0] == pytest.approx(56.69799502, abs=1e-6)


def test_granules_are_shaped_like_the_product(granule_path):
    with netCDF4.Dataset(granule_path) as dataset:
        assert dataset.platform == "noaa19"
        assert dataset.variables["counts"].shape == (5, LINES, N_PIXELS)
        assert dataset.variables["latitude"].shape == (LINES, 51)
        counts = dataset.variables["counts"][:]
        assert counts.max() < 1024  # 10-bit
        times = dataset.variables["time"][:]
        assert np.all(np.diff(times) == 500)  # two lines a second
    assert granule_path.name.startswith("NSS.GHRR.NP.D12347.S")
    assert granule_path.stat().st_size > 1.3e5 * LINES / 2000  # about 5 kB a line


def test_the_tie_points_interpolate_to_pyorbitals_pixels(granule_path):
    """Pixels between tie points lie within 1 km of pyorbital's position for them; the four
    extrapolated at each scan edge (where GAC pixels are 10-15 km across) within 5 km."""
    with open_granule(granule_path) as granule:
        block = granule.read(100, 104)
        start = granule.start_time
    lon, lat = lonlat(block)
    np.testing.assert_allclose(lon[:, TIE_COLUMNS], block.tie_lon, atol=1e-4)
    columns = np.arange(N_PIXELS, dtype=float)
    want_lon, want_lat = orbit.scan_lonlat(
        orbit.NOAA19_TLE,
        start,
        (100 + np.arange(4)) * orbit.GAC_LINE_SECONDS,
        orbit.gac_scan_angles(columns),
        columns * orbit.GAC_PIXEL_SECONDS,
    )
    dlon = (lon - want_lon + 180) % 360 - 180
    km = 111.2 * np.hypot(dlon * np.cos(np.radians(lat)), lat - want_lat)
    inside = slice(TIE_COLUMNS[0], TIE_COLUMNS[-1] + 1)
    assert km[:, inside].max() < 1.0
    assert km.max() < 5.0


def test_counts_calibrate_back_to_a_plausible_scene(granule_path):
    with open_granule(granule_path) as granule:
        calibration = line_calibration(granule.read_telemetry(), granule.platform)
        block = granule.read(0, granule.n_lines)
    physical = calibrate(block.counts, calibration)
    bt4 = physical[3][np.isfinite(physical[3])]
    assert 200 < np.median(bt4) < 310
    assert np.percentile(bt4, 99) < 330


def test_pyorbital_geometry_helper_matches_its_own_gcp_function():
    tle, start = orbit.NOAA19_TLE, datetime(2012, 12, 12, 4, 16, 1, 575000)
    gcps = np.array([[20.0, 1000.0]])
    with warnings.catch_warnings():  # pyorbital warns that its default is the legacy one
        warnings.simplefilter("ignore", DeprecationWarning)
        lons, lats, _ = compute_avhrr_gcps_lonlatalt(gcps, 55.37, (0, 0, 0), start, tle)
    lon, lat = orbit.scan_lonlat(
        tle, start, np.array([20 / 6]), orbit.lac_scan_angles(np.array([1000.0])),
        np.array([1000 * orbit.LAC_PIXEL_SECONDS]),
    )  # fmt: skip
    assert lon[0, 0] == pytest.approx(lons[0], abs=1e-3)
    assert lat[0, 0] == pytest.approx(lats[0], abs=1e-3)


def test_a_truncated_granule_is_named_in_a_granule_error(granule_path, tmp_path):
    broken = tmp_path / granule_path.name
    broken.write_bytes(granule_path.read_bytes()[: granule_path.stat().st_size // 3])
    with pytest.raises(GranuleError, match=broken.name), open_granule(broken) as granule:
        granule.read(0, granule.n_lines)


def test_unknown_files_are_refused_by_every_reader(tmp_path):
    junk = tmp_path / "junk.l1b"
    junk.write_bytes(b"NSS.GHRR.NP.D12347" + bytes(20000))
    assert not GACReader.can_open(junk)
    with pytest.raises(GranuleError, match="no reader recognises"):
        open_granule(junk)
    with pytest.raises(GranuleError, match="does not exist"):
        open_granule(tmp_path / "missing.nc")
    assert {"nearline-avhrr", "avhrr-gac"} <= set(available_readers())


def test_bad_synth_arguments_say_what_was_expected(tmp_path):
    with pytest.raises(ConfigError, match="YYYY-MM-DD"):
        synthesize_day("12/12/2012", 1, tmp_path)
    with pytest.raises(ConfigError, match="--satellite"):
        synthesize_day("2012-12-12", 1, tmp_path, satellite="goes16")

"""observe(): the whole per-pixel chain on a synthetic block that crosses the terminator."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from nearline.composite._ancillary import Ancillary
from nearline.composite._calibration import calibrate, line_calibration
from nearline.composite._cloudmask import cloud_tests
from nearline.composite._observe import NIGHT, SCAN_EDGE, observe
from nearline.swath import interpolate_tiepoints, lonlat, open_granule, synthesize_day
from nearline.swath._orbit import sun_distance_squared

FIRST, STOP = 3800, 4600  # night, the terminator, then day over the southern Pacific


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    folder = tmp_path_factory.mktemp("granule")
    with warnings.catch_warnings():  # pyorbital's legacy-convention notice, swath's business
        warnings.simplefilter("ignore", DeprecationWarning)
        (path,) = synthesize_day("2012-06-12", 1, folder, lines_per_orbit=STOP)
    ancillary = Ancillary.load()
    with open_granule(path) as granule:
        cal = line_calibration(granule.read_telemetry(), granule.platform)
        block = granule.read(FIRST, STOP)
    return block, cal.slice(FIRST, STOP), ancillary


def test_reflectance_ndvi_and_night(chain):
    block, cal, ancillary = chain
    obs = observe(block, cal, ancillary)
    assert obs.ndvi.shape == (STOP - FIRST, 409)
    scaled = calibrate(block.counts, cal)
    sun = interpolate_tiepoints(block.tie_sun_zenith).astype(np.float64)
    sat = interpolate_tiepoints(block.tie_sat_zenith).astype(np.float64)
    day = sun < 85
    assert 0.2 < day.mean() < 0.9
    mu0 = np.cos(np.radians(sun[day])) / sun_distance_squared(164)  # sunlight, 12 June
    slant = 1 / np.cos(np.radians(sun[day])) + 1 / np.cos(np.radians(sat[day]))
    ozone = np.exp(ancillary.ozone_depth * slant)
    np.testing.assert_allclose(obs.refl1[day], scaled[0][day] / mu0 * ozone, rtol=1e-5)
    np.testing.assert_allclose(obs.refl2[day], scaled[1][day] / mu0, rtol=1e-5)
    r1, r2 = obs.refl1[day], obs.refl2[day]
    np.testing.assert_allclose(obs.ndvi[day], (r2 - r1) / (r2 + r1), rtol=1e-5, atol=1e-6)
    assert np.isnan(obs.ndvi[~day]).all()
    assert (obs.qc[~day] & NIGHT).all()
    assert not (obs.qc[day] & NIGHT).any()
    np.testing.assert_array_equal(obs.bt4, scaled[3])
    edge = np.abs(obs.scan_angle[0]) > 42
    assert (obs.qc[:, edge] & SCAN_EDGE).all()
    assert 40 < edge.sum() < 120
    assert (obs.day == 164).all()  # 12 June


def test_cloud_bits_are_the_cloud_tests_of_the_observation(chain):
    block, cal, ancillary = chain
    obs = observe(block, cal, ancillary)
    calibrated = np.stack([obs.refl1, obs.refl2, obs.bt3, obs.bt4, obs.bt5])
    land = ancillary.is_land(obs.lon, obs.lat)
    sun = interpolate_tiepoints(block.tie_sun_zenith)
    sat = interpolate_tiepoints(block.tie_sat_zenith)
    want = cloud_tests(
        calibrated, sun, land, sat_zenith=sat, rel_azimuth=obs.rel_azimuth,
        first_line=block.first_line,
    )  # fmt: skip
    np.testing.assert_array_equal(obs.cloud, want)
    assert (obs.cloud > 0).any()


def test_only_elevated_pixels_move_and_at_most_h_tan_theta(chain):
    block, cal, ancillary = chain
    obs = observe(block, cal, ancillary)
    lon, lat = lonlat(block)
    height = ancillary.height(lon, lat)
    moved = (obs.lon != lon) | (obs.lat != lat)
    assert not moved[height <= 0].any()
    sat = interpolate_tiepoints(block.tie_sat_zenith)
    dy = (obs.lat - lat) * 111_195.0
    dx = (obs.lon - lon) * 111_195.0 * np.cos(np.radians(lat))
    limit = height * np.tan(np.radians(sat)) * 1.01 + 1.0
    assert (np.hypot(dx, dy) <= limit).all()
    if moved.any():
        assert math.isfinite(float(np.hypot(dx, dy)[moved].max()))


def test_even_aligned_blocks_give_the_same_observations(chain):
    block, cal, ancillary = chain
    whole = observe(block, cal, ancillary)
    parts = [
        observe(block.slice(a, b), cal.slice(a, b), ancillary) for a, b in ((0, 300), (300, 800))
    ]
    for name in ("lon", "lat", "ndvi", "cloud", "qc", "refl1", "bt4"):
        joined = np.concatenate([getattr(p, name) for p in parts])
        np.testing.assert_array_equal(joined, getattr(whole, name), err_msg=name)


def test_leaving_out_the_night_observes_every_sunlit_pixel_the_same(chain):
    block, cal, ancillary = chain
    whole = observe(block, cal, ancillary)
    timings: dict[str, float] = {}
    day_only = observe(block, cal, ancillary, night=False, timings=timings)
    assert set(timings) == {"geolocation", "calibration", "reflectance and terrain", "cloud mask"}
    assert all(seconds > 0 for seconds in timings.values())
    # the block starts in the night: its lines before the one before the first sunlit line
    # are left out
    sunlit = whole.sun_zenith < 85
    first_lit = int(np.flatnonzero(sunlit.any(axis=1))[0])
    assert first_lit > 100
    offset = day_only.first_line - block.first_line
    assert offset == first_lit - 1
    assert day_only.ndvi.shape == (block.n_lines - offset, 409)
    rows = slice(offset, None)
    lit = sunlit[rows]
    for name in ("lon", "lat", "qc", "sun_zenith", "rel_azimuth", "day", "time_ms"):
        np.testing.assert_array_equal(getattr(day_only, name), getattr(whole, name)[rows], name)
    for name in ("ndvi", "cloud", "refl1", "refl2", "bt3", "bt4", "bt5"):
        np.testing.assert_array_equal(getattr(day_only, name)[lit], getattr(whole, name)[rows][lit])
    assert (~lit).any()  # the terminator's night pixels are observed, but not cloud-tested
    assert (day_only.cloud[~lit] == 0).all()

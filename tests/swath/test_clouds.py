"""The synthetic day's clouds: one weather for the day, coherent in space, carried by the
wind between orbits, with broken and thin edges; and every orbit of a day sees it."""

from __future__ import annotations

import warnings
from datetime import date

import numpy as np
import pytest

from nearline.swath import lonlat, open_granule, read_truth, synthesize_day
from nearline.swath._clouds import EDGE, Weather, drift_rate, zonal_wind
from nearline.swath._fields import raster_lonlat

DAY = date(2012, 12, 12)


@pytest.fixture(scope="module")
def weather():
    return Weather.make(0, DAY)


@pytest.fixture(scope="module")
def globe():
    return raster_lonlat(180)  # 1 degree


def test_about_two_fifths_of_the_globe_is_under_cloud(weather, globe):
    lon, lat = globe
    area = np.cos(np.radians(lat))
    for hours in (3.0, 12.0, 21.0):
        fraction = weather.clouds(lon, lat, hours).fraction
        cover = np.sum(fraction * area) / np.sum(area)
        assert 0.33 < cover < 0.5, hours
        assert 0.25 < np.sum((fraction == 0) * area) / np.sum(area) < 0.7  # clear skies too
    tropics, highs = np.abs(lat) < 5, np.abs(np.abs(lat) - 24) < 3
    assert fraction[tropics].mean() > fraction[highs].mean() + 0.05  # subtropical highs clearer


def test_the_same_seed_and_day_give_the_same_clouds_and_others_differ(weather, globe):
    lon, lat = globe
    again = Weather.make(0, DAY).clouds(lon, lat, 7.0).fraction
    np.testing.assert_array_equal(weather.clouds(lon, lat, 7.0).fraction, again)
    for other in (Weather.make(1, DAY), Weather.make(0, date(2012, 12, 13))):
        assert np.mean(np.abs(other.clouds(lon, lat, 7.0).fraction - again)) > 0.2


def test_clouds_are_coherent_features_of_tens_to_hundreds_of_km(weather):
    # a line along the equator, a pixel every 4 km: cloud runs are long, not pixel noise
    lon = np.arange(-180.0, 180.0, 0.036)
    fraction = weather.clouds(lon, np.zeros_like(lon), 12.0).fraction
    cloudy = fraction > 0.5
    edges = np.count_nonzero(cloudy[1:] != cloudy[:-1])
    mean_run_km = 40_000.0 / max(edges, 1)
    assert 40 < mean_run_km < 1500
    assert abs(np.corrcoef(fraction[:-1], fraction[1:])[0, 1]) > 0.95  # smooth at 4 km


def test_the_next_orbit_sees_the_same_clouds_moved_on_by_the_wind(weather):
    # mid-latitudes, where the westerlies blow: 102 minutes later the clouds are found where
    # the wind took them, a little changed
    lon, lat = np.meshgrid(np.arange(-30.0, 30.0, 0.05), np.arange(40.0, 50.0, 0.05))
    later = 102.0 / 60.0
    before = weather.clouds(lon, lat, 9.0).fraction.ravel()
    shifts = np.arange(-1.0, 3.5, 0.25)  # degrees east
    match = [
        np.corrcoef(before, weather.clouds(lon + s, lat, 9.0 + later).fraction.ravel())[0, 1]
        for s in shifts
    ]
    drift = np.mean(drift_rate(lat) * later)
    assert abs(shifts[np.argmax(match)] - drift) <= 0.5  # moved east by the wind, about 1.5
    assert max(match) > 0.95  # the same clouds
    assert match[list(shifts).index(0.0)] < max(match) - 0.03  # not where they were
    km = drift * 111.2 * np.cos(np.radians(45.0))
    assert 60 < km < 160  # about 100 km in an orbit
    # a day later, followed with the wind, they have changed much more
    day_later = weather.clouds(lon + drift_rate(lat) * 24.0, lat, 33.0).fraction.ravel()
    assert np.corrcoef(before, day_later)[0, 1] < max(match) - 0.15


def test_the_wind_is_easterly_in_the_tropics_and_westerly_in_mid_latitudes():
    assert zonal_wind(np.array([0.0]))[0] == pytest.approx(-6.0, abs=0.01)
    assert zonal_wind(np.array([45.0, -45.0])) == pytest.approx([20.0, 20.0], abs=0.01)
    assert abs(drift_rate(np.array([89.9]))[0]) < 0.5  # no runaway at the pole


def test_cloud_edges_are_broken_and_thin_and_their_cores_thick(weather):
    lon, lat = np.meshgrid(np.arange(0.0, 60.0, 0.04), np.arange(-30.0, 30.0, 0.04))
    clouds = weather.clouds(lon, lat, 12.0)
    fraction, depth = clouds.fraction, clouds.optical_depth
    partial = (fraction > 0) & (fraction < 1)
    assert 0.03 < partial.mean() < 0.3
    assert np.all(depth[fraction == 0] == 0)
    assert np.median(depth[partial]) < 1.0  # thin, semi-transparent at the edges
    core = clouds.margin > 3 * EDGE
    assert core.any()
    assert np.median(depth[core]) > 10.0
    # partly covered pixels lie at the edges of overcast ones, within about 90 km; clear
    # ones mostly do not
    near_overcast = _within(fraction == 1, 20)
    assert near_overcast[partial].mean() > 0.7
    assert near_overcast[fraction == 0].mean() < 0.2


def _within(mask: np.ndarray, reach: int) -> np.ndarray:
    """Whether a pixel of ``mask`` is within ``reach`` pixels (a square) of each pixel."""
    total = np.pad(mask.astype(np.int64), reach).cumsum(0).cumsum(1)
    total = np.pad(total, ((1, 0), (1, 0)))
    size = 2 * reach + 1
    window = (
        total[size:, size:] - total[:-size, size:] - total[size:, :-size] + total[:-size, :-size]
    )
    return window > 0


@pytest.fixture(scope="module")
def two_orbits(tmp_path_factory):
    folder = tmp_path_factory.mktemp("day")
    with warnings.catch_warnings():  # pyorbital's legacy-convention notice
        warnings.simplefilter("ignore", DeprecationWarning)
        paths = synthesize_day("2012-12-12", 2, folder, lines_per_orbit=3000, truth=True)
    with_truth = []
    for path in paths:
        with open_granule(path) as granule:
            lon, lat = lonlat(granule.read(0, granule.n_lines))
        with_truth.append((lon, lat, read_truth(path)))
    return with_truth


def _cells(lon, lat, values):
    """Mean of values per 0.25-degree cell: {cell: mean}."""
    cells = np.floor(lat * 4).astype(np.int64) * 10_000 + np.floor((lon + 180) * 4).astype(np.int64)
    keys, inverse = np.unique(cells.ravel(), return_inverse=True)
    return keys, np.bincount(inverse, values) / np.bincount(inverse)


def test_consecutive_orbits_of_a_day_see_the_same_clouds(two_orbits):
    (lon0, lat0, truth0), (lon1, lat1, truth1) = two_orbits
    keys0, cloud0 = _cells(lon0, lat0, truth0.cloud_fraction.ravel())
    keys1, cloud1 = _cells(lon1, lat1, truth1.cloud_fraction.ravel())
    both, at0, at1 = np.intersect1d(keys0, keys1, return_indices=True)
    assert both.size > 2000  # the swaths overlap
    agreement = np.corrcoef(cloud0[at0], cloud1[at1])[0, 1]
    assert agreement > 0.6  # one weather (independent clouds per orbit would give about 0)
    assert 0.05 < cloud0[at0].mean() < 0.95

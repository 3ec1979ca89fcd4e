"""The synthetic Earth's land cover: NDVI follows a pattern of biomes from the land mask and
latitude, not latitude alone; rain forests green, deserts bare, seasons by hemisphere."""

from __future__ import annotations

import numpy as np
import pytest

from nearline.swath._fields import raster_lonlat
from nearline.swath._landcover import ROWS, LandCover
from nearline.swath._maps import is_land, land_bits

DECEMBER, JULY = 347, 196


@pytest.fixture(scope="module")
def land():
    return land_bits()


@pytest.fixture(scope="module")
def cover(land):
    return LandCover.make(land, 0)


def _box_mean(cover, land, day, lon, lat, half=2.0):
    """Mean NDVI of the land within ``half`` degrees of (lon, lat)."""
    grid_lon, grid_lat = np.meshgrid(
        np.linspace(lon - half, lon + half, 41), np.linspace(lat - half, lat + half, 41)
    )
    on_land = is_land(land, grid_lon, grid_lat)
    assert on_land.mean() > 0.8, (lon, lat)
    return float(cover.ndvi(grid_lon, grid_lat, day)[on_land].mean())


RAIN_FORESTS = {"Amazon": (-62, -4), "Congo": (22, 0), "Borneo": (114, 0)}
DESERTS = {"Sahara": (10, 23), "Arabia": (46, 22), "Australia": (132, -25), "Namib": (16, -24)}


@pytest.mark.parametrize("day", [DECEMBER, JULY])
def test_rain_forests_are_green_and_deserts_bare_all_year(cover, land, day):
    for name, (lon, lat) in RAIN_FORESTS.items():
        assert _box_mean(cover, land, day, lon, lat) > 0.6, name
    for name, (lon, lat) in DESERTS.items():
        assert _box_mean(cover, land, day, lon, lat) < 0.2, name


def test_the_seasons_follow_the_hemisphere(cover, land):
    def swing(lon, lat):
        return _box_mean(cover, land, JULY, lon, lat) - _box_mean(cover, land, DECEMBER, lon, lat)

    assert swing(30, 55) > 0.2  # Russia's forests green in July
    assert swing(-100, 55) > 0.2  # and Canada's
    assert swing(148, -33) < -0.1  # south-east Australia in December
    assert swing(-58, -33) < -0.1  # the Pampas too
    assert abs(swing(22, 0)) < 0.05  # the Congo's rain forest barely changes
    assert _box_mean(cover, land, JULY, 100, 60) > 0.4  # the Siberian taiga in summer


def test_ndvi_is_not_a_function_of_latitude_alone(cover, land):
    lon, lat = raster_lonlat(ROWS)
    on_land = is_land(land, lon, lat)
    for south in (-30, -20, -10, 10, 20, 40, 50):
        ndvi = cover.ndvi_map(DECEMBER if south < 0 else JULY)  # in the growing season
        band = on_land & (lat >= south) & (lat < south + 2)
        assert band.sum() > 500, south
        assert ndvi[band].std() > 0.08, south  # coasts, interiors and patches differ
        assert np.ptp(np.percentile(ndvi[band], [5, 95])) > 0.25, south
    equator = on_land & (np.abs(lat) < 1)
    assert ndvi[equator].mean() > 0.6  # rain forest nearly all round (no Somali dry zone)


def test_the_land_cover_is_drawn_by_its_seed(cover, land):
    again = LandCover.make(land, 0).ndvi_map(DECEMBER)
    np.testing.assert_array_equal(cover.ndvi_map(DECEMBER), again)
    other = LandCover.make(land, 1).ndvi_map(DECEMBER)
    changed = np.abs(other - again)
    assert 0.005 < changed.mean() < 0.1  # patches move, the climate stays
    assert LandCover.make(land, 1).ndvi(np.array([22.0]), np.array([0.0]), DECEMBER)[0] > 0.6


def test_ice_sheets_are_bare(cover):
    lon = np.array([-40.0, 0.0, 120.0])
    lat = np.array([72.0, -80.0, -75.0])
    np.testing.assert_allclose(cover.ndvi(lon, lat, DECEMBER), 0.03, atol=1e-6)

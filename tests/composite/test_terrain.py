"""Ancillary maps (land/sea, surface height) and the terrain (parallax) correction."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from nearline.composite._ancillary import OZONE_DU, Ancillary
from nearline.composite._terrain import shift_toward_nadir


@pytest.fixture(scope="module")
def ancillary() -> Ancillary:
    return Ancillary.load()


def distance_m(lon0, lat0, lon1, lat1) -> float:
    """Haversine on a 6,371 km sphere."""
    p0, p1, dl = math.radians(lat0), math.radians(lat1), math.radians(lon1 - lon0)
    h = math.sin((p1 - p0) / 2) ** 2 + math.cos(p0) * math.cos(p1) * math.sin(dl / 2) ** 2
    return 2 * 6_371_000 * math.asin(math.sqrt(h))


def test_land_is_global_land_mask_on_random_points(ancillary):
    import global_land_mask

    rng = np.random.default_rng(5)
    lon, lat = rng.uniform(-180, 180, 20000), rng.uniform(-89.9, 89.9, 20000)
    np.testing.assert_array_equal(ancillary.is_land(lon, lat), global_land_mask.is_land(lat, lon))
    places = ancillary.is_land(
        np.array([2.35, -30.0, 13.4, 160.0]), np.array([48.86, 0.0, 52.5, -30])
    )
    assert places.tolist() == [True, False, True, False]  # Paris, Atlantic, Berlin, Tasman Sea


def test_height_is_pvlib_lookup_altitude(ancillary):
    from pvlib.location import lookup_altitude

    rng = np.random.default_rng(6)
    lon, lat = rng.uniform(-179.9, 179.9, 60), rng.uniform(-89.9, 89.9, 60)
    want = [lookup_altitude(y, x) for x, y in zip(lon, lat, strict=True)]
    np.testing.assert_allclose(ancillary.height(lon, lat), want)
    lhasa, sea = ancillary.height(np.array([91.1, -30.0]), np.array([29.65, 0.0]))
    assert 3300 < lhasa < 5500
    assert sea == 0.0


def test_the_ancillary_pickles_as_a_reload(ancillary):
    again = pickle.loads(pickle.dumps(ancillary))
    assert len(pickle.dumps(ancillary)) < 10_000
    np.testing.assert_array_equal(again.height_codes, ancillary.height_codes)
    assert again.ozone_du == OZONE_DU == 300.0
    assert again.ozone_depth == pytest.approx(0.027)


def test_an_elevated_pixel_moves_h_tan_theta_toward_nadir():
    lon, lat, nadir_lon, nadir_lat = 10.0, 45.0, 15.0, 45.5
    for height, zenith in [(1000.0, 60.0), (3000.0, 30.0), (500.0, 68.0)]:
        x, y = shift_toward_nadir(lon, lat, nadir_lon, nadir_lat, height, zenith)
        moved = distance_m(lon, lat, x, y)
        assert moved == pytest.approx(height * math.tan(math.radians(zenith)), rel=0.01)
        before = distance_m(lon, lat, nadir_lon, nadir_lat)
        assert distance_m(x, y, nadir_lon, nadir_lat) == pytest.approx(before - moved, rel=0.01)


def test_sea_level_and_nadir_pixels_stay():
    assert shift_toward_nadir(10.0, 45.0, 15.0, 45.0, 0.0, 50.0) == (10.0, 45.0)
    assert shift_toward_nadir(15.0, 45.0, 15.0, 45.0, 2000.0, 0.0) == (15.0, 45.0)


def test_the_shift_crosses_the_date_line_the_short_way():
    x, y = shift_toward_nadir(179.99, 0.0, -179.0, 0.0, 2000.0, 60.0)
    assert x == pytest.approx(-179.979, abs=0.002)
    assert y == pytest.approx(0.0)

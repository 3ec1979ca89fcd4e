"""Each CLAVR-style test fires alone on a pixel built to trip it, a clear pixel passes, and the
thresholds follow the scene: surface, sun glint, and the day's own clear neighbours."""

from __future__ import annotations

import numpy as np
import pytest

from nearline.composite._cloudmask import (
    CH3_CH4,
    CH4_CH5,
    CONTRAST,
    RATIO,
    REFLECTANCE,
    THERMAL_GROSS,
    UNIFORMITY,
    cloud_tests,
)

CLEAR_SEA = {"refl1": 4.0, "refl2": 2.5, "bt3": 295.0, "bt4": 290.0, "bt5": 289.0}


def window(
    sun_zenith: float = 30.0,
    land: bool = False,
    sat_zenith: float = 30.0,
    rel_azimuth: float = 0.0,  # the satellite on the sun's side: glint angle 60 degrees
    **values: float,
) -> np.ndarray:
    """Bits of a uniform 2x2 window of one pixel kind."""
    pixel = {**CLEAR_SEA, **values}
    calibrated = np.stack(
        [np.full((2, 2), pixel[k], np.float32) for k in ("refl1", "refl2", "bt3", "bt4", "bt5")]
    )
    return cloud_tests(
        calibrated,
        np.full((2, 2), sun_zenith),
        np.full((2, 2), land),
        sat_zenith=np.full((2, 2), sat_zenith),
        rel_azimuth=np.full((2, 2), rel_azimuth),
    )


def test_a_clear_sea_pixel_passes_every_test():
    assert (window() == 0).all()
    assert (window(land=True, refl1=8.0, refl2=30.0) == 0).all()  # vegetation


@pytest.mark.parametrize(
    ("bit", "pixel"),
    [
        (REFLECTANCE, {"refl1": 30.0}),  # bright over sea (> 18 % at air mass 2.3)
        (REFLECTANCE, {"refl1": 40.0, "land": True}),  # bright over land (> 35 %)
        (RATIO, {"refl1": 10.0, "refl2": 10.0}),  # grey over sea (0.9 < ch2/ch1 < 1.1)
        (CH3_CH4, {"bt3": 310.0}),  # day: 3.7 um reflection, ch3 - ch4 = 20 K > 10 K
        (CH3_CH4, {"bt3": 287.0, "sun_zenith": 120.0}),  # night: ch3 - ch4 = -3 K < -2 K
        (CH4_CH5, {"bt5": 286.0}),  # 4 K > (1 + 2.5 * 0.75) (1 + 0.3 (sec 30 - 1)) = 3.0 K
        (THERMAL_GROSS, {"bt4": 260.0, "bt5": 259.5, "bt3": 265.0}),  # < 270 K over sea
        (THERMAL_GROSS, {"bt4": 230.0, "bt5": 229.5, "bt3": 235.0, "land": True}),
    ],
)
def test_each_test_fires_alone(bit, pixel):
    assert (window(**pixel) == bit).all()


def test_thresholds_depend_on_the_surface():
    assert (window(land=True, refl1=30.0) == 0).all()  # 30 % is clear over land
    assert (window(land=True, refl1=10.0, refl2=10.0) == 0).all()  # no ratio test on land
    assert (window(refl1=30.0, sun_zenith=100.0) == 0).all()  # no reflectance test by night


def test_the_uniformity_test_fires_on_the_whole_2x2_window():
    calibrated = np.stack(
        [np.full((4, 4), CLEAR_SEA[k], np.float32) for k in ("refl1", "refl2", "bt3", "bt4", "bt5")]
    )
    calibrated[3, 1, 1] -= 1.0  # 1 K colder: more than 0.5 K over sea, less than 2.5 over land
    calibrated[4, 1, 1] -= 1.0
    sea = cloud_tests(calibrated, np.full((4, 4), 100.0), np.zeros((4, 4), bool))
    want = np.zeros((4, 4), np.uint8)
    want[:2, :2] = UNIFORMITY
    np.testing.assert_array_equal(sea, want)
    land = cloud_tests(calibrated, np.full((4, 4), 100.0), np.ones((4, 4), bool))
    assert (land == 0).all()
    # windows start on even granule lines: a block starting on line 1 pairs lines (1, 2)
    shifted = cloud_tests(calibrated, np.full((4, 4), 100.0), np.zeros((4, 4), bool), first_line=1)
    assert (shifted[1:3, :2] == UNIFORMITY).all()
    assert shifted[0].sum() == 0


def test_nan_temperatures_fire_nothing():
    assert (window(bt3=np.nan, bt4=np.nan, bt5=np.nan) == 0).all()


def test_the_sea_reflectance_threshold_rises_with_the_air_mass():
    assert (window(refl1=25.0, refl2=15.0) == REFLECTANCE).all()  # air mass 2.3: above 18 %
    low_sun = window(refl1=25.0, refl2=15.0, sun_zenith=78.0, sat_zenith=50.0)
    assert (low_sun == 0).all()  # air mass 6.4: 31.6 %


def test_sun_glint_relaxes_the_sea_tests_but_not_for_cold_pixels():
    # sun and view at 30 degrees, the satellite opposite the sun: the mirror direction
    glint = {"rel_azimuth": 180.0, "refl1": 25.0, "refl2": 24.0, "bt3": 302.0}
    assert (window(**glint) == 0).all()  # bright, grey and warm at 3.7 um: glint, not cloud
    assert (window(**{**glint, "rel_azimuth": 0.0}) == REFLECTANCE | RATIO | CH3_CH4).all()
    cold = window(**{**glint, "bt4": 272.0, "bt5": 271.5, "bt3": 284.0})  # below freezing
    assert (cold & (REFLECTANCE | RATIO)).all()


def test_the_contrast_test_compares_with_the_warmest_clear_neighbour():
    shape = (32, 64)
    calibrated = np.stack([np.full(shape, CLEAR_SEA[k], np.float32) for k in CLEAR_SEA])
    calibrated[3, 10:14, 40:44] = 285.0  # 5 K colder than the sea around: a low cloud
    calibrated[4, 10:14, 40:44] = 284.0
    calibrated[2, 10:14, 40:44] = 280.0
    night = np.full(shape, 120.0)
    bits = cloud_tests(calibrated, night, np.zeros(shape, bool))
    assert (bits[10:14, 40:44] & CONTRAST).all()
    assert not (bits[:8] & CONTRAST).any()
    # over land 5 K is within the 8 K a land surface varies by
    land = cloud_tests(calibrated, night, np.ones(shape, bool))
    assert not (land & CONTRAST).any()
    # sunlit land is warmer than land at night: it is no clear neighbour of a night pixel
    land_day = calibrated.copy()
    land_day[3, :, :16] = 305.0
    sun = night.copy()
    sun[:, :16] = 40.0
    bits = cloud_tests(land_day, sun, np.ones(shape, bool))
    assert not (bits[:, 16:] & CONTRAST).any()


def test_coastal_pixels_neither_set_nor_get_the_expected_surface():
    shape = (32, 64)
    calibrated = np.stack([np.full(shape, CLEAR_SEA[k], np.float32) for k in CLEAR_SEA])
    land = np.zeros(shape, bool)
    land[:, 32:] = True
    calibrated[3:5, :, 32:] = 270.0  # land 20 K colder than the sea at night
    calibrated[3, :, 32] = 290.0  # a coastal land pixel as warm as the sea (a mixed pixel)
    bits = cloud_tests(calibrated, np.full(shape, 120.0), land)
    assert not (bits & CONTRAST).any()

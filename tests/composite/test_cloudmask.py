"""Each CLAVR-style test fires alone on a pixel built to trip it, and a clear pixel passes."""

from __future__ import annotations

import numpy as np
import pytest

from nearline.composite.cloudmask import (
    CH3_CH4,
    CH4_CH5,
    RATIO,
    REFLECTANCE,
    THERMAL_GROSS,
    UNIFORMITY,
    cloud_tests,
)

CLEAR_SEA = {"refl1": 4.0, "refl2": 2.5, "bt3": 295.0, "bt4": 290.0, "bt5": 289.0}


def window(sun_zenith: float = 30.0, land: bool = False, **values: float) -> np.ndarray:
    """Bits of a uniform 2x2 window of one pixel kind."""
    pixel = {**CLEAR_SEA, **values}
    calibrated = np.stack(
        [np.full((2, 2), pixel[k], np.float32) for k in ("refl1", "refl2", "bt3", "bt4", "bt5")]
    )
    return cloud_tests(calibrated, np.full((2, 2), sun_zenith), np.full((2, 2), land))


def test_a_clear_sea_pixel_passes_every_test():
    assert (window() == 0).all()
    assert (window(land=True, refl1=8.0, refl2=30.0) == 0).all()  # vegetation


@pytest.mark.parametrize(
    ("bit", "pixel"),
    [
        (REFLECTANCE, {"refl1": 30.0}),  # bright over sea (> 22 %)
        (REFLECTANCE, {"refl1": 40.0, "land": True}),  # bright over land (> 35 %)
        (RATIO, {"refl1": 10.0, "refl2": 10.0}),  # grey over sea (0.9 < ch2/ch1 < 1.1)
        (CH3_CH4, {"bt3": 310.0}),  # day: 3.7 um reflection, ch3 - ch4 = 20 K > 15 K
        (CH3_CH4, {"bt3": 287.0, "sun_zenith": 120.0}),  # night: ch3 - ch4 = -3 K < -2 K
        (CH4_CH5, {"bt5": 286.0}),  # ch4 - ch5 = 4 K > 1 + 2.5 * 0.75 K at 290 K
        (THERMAL_GROSS, {"bt4": 260.0, "bt5": 259.5, "bt3": 265.0}),  # < 268 K over sea
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
    sea = cloud_tests(calibrated, np.full((4, 4), 30.0), np.zeros((4, 4), bool))
    want = np.zeros((4, 4), np.uint8)
    want[:2, :2] = UNIFORMITY
    np.testing.assert_array_equal(sea, want)
    land = cloud_tests(calibrated, np.full((4, 4), 30.0), np.ones((4, 4), bool))
    assert (land == 0).all()
    # windows start on even granule lines: a block starting on line 1 pairs lines (1, 2)
    shifted = cloud_tests(calibrated, np.full((4, 4), 30.0), np.zeros((4, 4), bool), first_line=1)
    assert (shifted[1:3, :2] == UNIFORMITY).all()
    assert shifted[0].sum() == 0


def test_nan_temperatures_fire_nothing():
    assert (window(bt3=np.nan, bt4=np.nan, bt5=np.nan) == 0).all()

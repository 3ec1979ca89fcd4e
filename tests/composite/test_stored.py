"""Level 1C blocks (values their producer calibrated, stored as packed integers): decoded, not
calibrated; reflectances divided by the solar zenith cosine once, corrected to the mean
Earth-Sun distance only when the producer has not; a channel the instrument lacks is NaN and
marks nothing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nearline.composite._ancillary import Ancillary
from nearline.composite._calibration import calibrate, channel3a, line_calibration
from nearline.composite._cloudmask import CH4_CH5
from nearline.composite._observe import BAD_CALIBRATION, observe
from nearline.swath import (
    CH3A,
    CH3B,
    N_PIXELS,
    ChannelPacking,
    StoredScaling,
    SwathBlock,
    Telemetry,
    sun_distance_squared,
)

LINES = 4
REFLECTANCE = ChannelPacking("reflectance", 0.01, 0.0, -32767)
TEMPERATURE = ChannelPacking("brightness_temperature", 0.01, 273.15, -32767)
STORED = {0: 2000, 1: 3000, 2: 2000, 3: 1000, 4: 500}  # 20 %, 30 %, 293.15 K, 283.15 K, 278.15 K
DAY = np.datetime64("2012-12-12T10:00:00", "ms")  # day 347: the Sun 1.6 % nearer than its mean


def block(*, sun_zenith: float = 60.0) -> SwathBlock:
    """Four lines over the open eastern Pacific (no land, no terrain), stored values alike."""
    tie = (LINES, 51)
    counts = np.zeros((5, LINES, N_PIXELS), np.int16)
    for slot, value in STORED.items():
        counts[slot] = value
    return SwathBlock(
        granule="l1c", platform="noaa6", first_line=0,
        times=DAY + np.arange(LINES) * np.timedelta64(500, "ms"),
        counts=counts.view(np.uint16),
        tie_lat=np.broadcast_to(10 + 0.03 * np.arange(LINES)[:, None], tie).astype(np.float32),
        tie_lon=np.broadcast_to(-145 + 0.2 * np.arange(51), tie).astype(np.float32),
        tie_sat_zenith=np.broadcast_to(np.abs(np.linspace(-60, 60, 51)), tie).astype(np.float32),
        tie_sun_zenith=np.full(tie, sun_zenith, np.float32),
        tie_rel_azimuth=np.full(tie, 90.0, np.float32),
        prt_counts=np.zeros(LINES), ict_counts=np.zeros((LINES, 3)),
        space_counts=np.zeros((LINES, 3)),
    )  # fmt: skip


def calibration(*, channel5: bool = False, corrected: bool = True, select=None):
    channels = (REFLECTANCE, REFLECTANCE, TEMPERATURE, TEMPERATURE,
                TEMPERATURE if channel5 else None)  # fmt: skip
    scaling = StoredScaling(channels, ch3a=REFLECTANCE, distance_corrected=corrected)
    times = DAY + np.arange(LINES) * np.timedelta64(500, "ms")
    zeros = np.zeros(LINES), np.zeros((LINES, 3)), np.zeros((LINES, 3))
    return line_calibration(Telemetry(times, *zeros, select, scaling), "noaa6")


def test_stored_values_are_decoded_and_a_missing_channel_is_nan():
    values = calibrate(block().counts, calibration())
    np.testing.assert_allclose(values[:4, :, 0], [[20.0] * 4, [30.0] * 4, [293.15] * 4,
                                                  [283.15] * 4], rtol=1e-6)  # fmt: skip
    assert np.isnan(values[4]).all()
    with_5 = calibrate(block().counts, calibration(channel5=True))
    np.testing.assert_allclose(with_5[4], 278.15, rtol=1e-6)


def test_a_fill_value_is_nan():
    data = block()
    data.counts.view(np.int16)[3, 1, 7] = -32767
    values = calibrate(data.counts, calibration())
    assert np.isnan(values[3, 1, 7])
    assert np.isfinite(values[3]).sum() == LINES * N_PIXELS - 1


def test_lines_carrying_3a_give_a_reflectance_and_no_3b():
    select = np.array([CH3B, CH3A, 2, CH3B], np.uint8)  # 2: in transition, neither
    cal = calibration(select=select)
    data = block()
    values = calibrate(data.counts, cal)
    reflectance = channel3a(data.counts, cal, values)
    np.testing.assert_allclose(reflectance[1], 20.0, rtol=1e-6)  # the slot's 2000, as 3a
    assert np.isnan(reflectance[[0, 2, 3]]).all()
    assert np.isnan(values[2, [1, 2]]).all()
    np.testing.assert_allclose(values[2, [0, 3]], 293.15, rtol=1e-6)


@pytest.mark.parametrize("corrected", [True, False])
def test_reflectances_are_divided_by_the_sun_zenith_cosine_once(corrected):
    """The FDR's reflectances are pygac's scaled radiances times the Earth-Sun distance
    factor, not divided by cos(solar zenith): the chain divides, and multiplies by d^2 only
    for a producer that has not."""
    observed = observe(block(), calibration(corrected=corrected), Ancillary.load())
    distance2 = 1.0 if corrected else sun_distance_squared(347)
    want = 30.0 * distance2 / math.cos(math.radians(60.0))
    np.testing.assert_allclose(observed.refl2, want, rtol=1e-5)


def test_a_missing_channel_5_marks_no_pixel_badly_calibrated_nor_cirrus():
    observed = observe(block(), calibration(), Ancillary.load())
    assert np.isnan(observed.bt5).all()
    assert not (observed.qc & BAD_CALIBRATION).any()
    assert not (observed.cloud & CH4_CH5).any()
    present = calibration(channel5=True)
    data = block()
    data.counts.view(np.int16)[4, 2, 100] = -32767  # a channel it has, without a value
    flagged = observe(data, present, Ancillary.load()).qc & BAD_CALIBRATION
    assert np.flatnonzero(flagged.ravel()).tolist() == [2 * N_PIXELS + 100]

"""Calibration with drift equals pygac's own calibrate_solar / calibrate_thermal, and one
pixel of each kind follows the published equations by hand."""

from __future__ import annotations

import importlib.util
import json
import math
import warnings
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from nearline.composite._calibration import (
    C1,
    C2,
    LineCalibration,
    calibrate,
    line_calibration,
)
from nearline.composite._coefficients import load_coefficients, year_fraction
from nearline.errors import CompositeError
from nearline.swath import Telemetry

LINES, PIXELS = 260, 409
START = np.datetime64("2012-12-12T04:16:01.575", "ms")


def telemetry(seed: int = 3, reset_offset: int = 2) -> Telemetry:
    """Plausible NOAA-19 telemetry: PRTs near 290 K (0 every fifth line), blackbody and space
    counts with noise and a few dropouts in channel 3b."""
    rng = np.random.default_rng(seed)
    lines = np.arange(LINES)
    prt = 300.0 + rng.normal(0, 1.5, LINES)
    prt[lines % 5 == reset_offset] = 0.0
    ict = np.stack([rng.normal(mean, 1.0, LINES) for mean in (980.0, 395.0, 390.0)], axis=1)
    space = np.stack([rng.normal(mean, 0.5, LINES) for mean in (998.0, 990.0, 993.0)], axis=1)
    ict[[17, 101], 0] = 0.0  # channel 3b dropouts pygac interpolates over
    space[55, 0] = 0.0
    times = START + np.arange(LINES) * np.timedelta64(500, "ms")
    return Telemetry(times=times, prt_counts=prt, ict_counts=ict, space_counts=space)


def earth_counts(seed: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    counts = np.empty((5, LINES, PIXELS), np.uint16)
    counts[0:2] = rng.integers(0, 1024, (2, LINES, PIXELS))
    counts[2] = rng.integers(960, 1000, (LINES, PIXELS))
    counts[3] = rng.integers(400, 900, (LINES, PIXELS))
    counts[4] = rng.integers(400, 900, (LINES, PIXELS))
    return counts


@pytest.fixture(scope="module")
def pygac_cal():
    from pygac.calibration.noaa import Calibrator

    with warnings.catch_warnings():  # PATMOS-x 2023's are PROVISIONAL, pygac warns
        warnings.simplefilter("ignore", RuntimeWarning)
        return Calibrator("noaa19")


PYGAC_COEFFICIENTS = Path(importlib.util.find_spec("pygac").origin).parent / "data/calibration.json"
PLATFORMS = sorted(set(json.loads(PYGAC_COEFFICIENTS.read_text())) - {"description"})


@pytest.mark.parametrize("platform", PLATFORMS)
def test_coefficients_read_from_pygacs_file_equal_its_calibrator(platform):
    from pygac.calibration.noaa import Calibrator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        theirs = Calibrator(platform)
    ours = load_coefficients(platform)
    for name in theirs._fields:
        if name == "version":
            continue
        want, got = getattr(theirs, name), getattr(ours, name)
        if isinstance(want, np.ndarray):
            np.testing.assert_array_equal(got, want, err_msg=name)
            assert got.dtype == want.dtype
        else:
            assert got == want, name
    assert year_fraction(ours.date_of_launch) == Calibrator.date2float(theirs.date_of_launch)
    assert year_fraction(datetime(2000, 7, 2)) == Calibrator.date2float(datetime(2000, 7, 2))


def test_a_platform_pygac_does_not_know_is_named_with_the_known_ones():
    with pytest.raises(CompositeError, match=r"'noaa99'.*noaa19"):
        load_coefficients("noaa99")


def test_visible_channels_equal_pygac(pygac_cal):
    from pygac.calibration.noaa import calibrate_solar

    counts = earth_counts()
    ours = calibrate(counts, line_calibration(telemetry(), "noaa19"))
    theirs = calibrate_solar(
        np.moveaxis(counts[0:2], 0, -1).astype(float), np.arange(2), 2012, 347, pygac_cal
    )
    for c in range(2):
        np.testing.assert_allclose(ours[c], theirs[..., c], rtol=1e-4, atol=1e-5)
        assert np.isnan(ours[c]).sum() == np.isnan(theirs[..., c]).sum() > 0  # below dark


@pytest.mark.parametrize("reset_offset", [0, 2, 4])
def test_thermal_channels_equal_pygac(pygac_cal, reset_offset):
    from pygac.calibration.noaa import calibrate_thermal

    counts, tele = earth_counts(), telemetry(reset_offset=reset_offset)
    ours = calibrate(counts, line_calibration(tele, "noaa19"))
    for c, channel in enumerate((3, 4, 5)):
        with np.errstate(invalid="ignore"):  # pygac takes the log of negative radiances
            theirs = calibrate_thermal(
                counts[2 + c].astype(float), tele.prt_counts.copy(),
                tele.ict_counts[:, c].copy(), tele.space_counts[:, c].copy(),
                np.arange(LINES) + 1000, channel, pygac_cal,
            )  # fmt: skip
        valid = np.isfinite(theirs)
        assert valid.mean() > 0.5
        np.testing.assert_array_equal(np.isfinite(ours[2 + c]), valid)
        np.testing.assert_allclose(ours[2 + c][valid], theirs[valid], atol=0.01, rtol=0)


def test_a_block_slice_of_the_granule_calibration_calibrates_the_same(pygac_cal):
    counts, cal = earth_counts(), line_calibration(telemetry(), "noaa19")
    whole = calibrate(counts, cal)
    part = calibrate(counts[:, 100:164], cal.slice(100, 164))
    np.testing.assert_array_equal(part, whole[:, 100:164])


def test_one_visible_pixel_by_hand_heidinger_2010(pygac_cal):
    """S(t) = S0 (100 + S1 t + S2 t^2) / 100 (Heidinger et al. 2010 eq. 6), t in years
    since launch as pygac counts it; AVHRR/3 dual gain: 0.5 S below the switch count,
    1.5 S above it (eq. A1, A2)."""
    s0, s1, s2 = 0.10866667, 0.286, 0.012  # NOAA-19 channel 1, PATMOS-x
    launch = 2009 + (31 + 4 + (57 * 60 + 36) / 3600 / 24) / 365  # 2009-02-05T00:57:36
    t = 2012 + 347 / 365 - round(launch, 5)
    slope = s0 * (100 + s1 * t + s2 * t * t) / 100
    dark, switch = 38.8, 496.43
    low = round(0.5 * s0, 3) / s0 * slope
    high = round(1.5 * s0, 3) / s0 * slope
    counts = earth_counts()
    counts[0, 7, 9], counts[0, 7, 10] = 300, 800
    out = calibrate(counts, line_calibration(telemetry(), "noaa19"))
    assert out[0, 7, 9] == pytest.approx((300 - dark) * low, rel=1e-5)
    assert out[0, 7, 10] == pytest.approx((switch - dark) * low + (800 - switch) * high, rel=1e-5)
    assert out[0, 7, 9] == pytest.approx(14.29, abs=0.01)  # percent


def test_one_thermal_pixel_by_hand_klm_guide():
    """KLM User's Guide 7.1.2.4: N_lin = N_S + (N_BB - N_S)(C_S - C_E)/(C_S - C_BB);
    N_E = N_lin + b0 + b1 N_lin + b2 N_lin^2; T* = c2 nu / ln(1 + c1 nu^3 / N_E);
    T = (T* - A) / B. NOAA-19 channel 4, blackbody at 290 K, space 990 counts, blackbody 395."""
    nu, a, b = 927.92374, 0.39366677, 0.99867187
    b0, b1, b2, ns = 5.7, -1.1187e-01, 5.4668e-04, -5.49
    t_bb = a + b * 290.0
    n_bb = C1 * nu**3 / (math.exp(C2 * nu / t_bb) - 1)
    n_lin = ns + (n_bb - ns) * (990 - 600) / (990 - 395)
    n_e = n_lin + b0 + b1 * n_lin + b2 * n_lin**2
    want = (C2 * nu / math.log(1 + C1 * nu**3 / n_e) - a) / b
    full = np.full((1, 3), np.nan)
    cal = LineCalibration(
        slope_low=np.full(2, 0.05), slope_high=np.full(2, 0.15), dark=np.full(2, 39.0),
        gain_switch=np.full(2, 500.0), space_counts=np.array([[998.0, 990.0, 993.0]]),
        bb_counts=np.array([[980.0, 395.0, 390.0]]),
        bb_radiance=np.where(np.arange(3) == 1, n_bb, full),
        space_radiance=np.array([0.0, ns, -3.39]),
        nonlinear=np.array([[0, 0, 0], [b0, b1, b2], [3.58, -5.991e-2, 2.4985e-4]]),
        wavenumber=np.array([2670.2425, nu, 831.28619]),
        band_a=np.array([1.68202002, a, 0.26339476]),
        band_b=np.array([0.99741122, b, 0.99904631]),
    )  # fmt: skip
    counts = np.zeros((5, 1, PIXELS), np.uint16)
    counts[3] = 600
    out = calibrate(counts, cal)
    assert out[3, 0, 0] == pytest.approx(want, abs=0.001)
    assert 250 < want < 280


def test_drift_raises_the_slope_with_time_since_launch():
    counts = earth_counts()
    counts[1, 0, 0] = 800
    early, late = (
        calibrate(
            counts,
            line_calibration(
                Telemetry(
                    times=np.datetime64(day, "ms") + np.arange(LINES) * np.timedelta64(500, "ms"),
                    prt_counts=telemetry().prt_counts,
                    ict_counts=telemetry().ict_counts,
                    space_counts=telemetry().space_counts,
                ),
                "noaa19",
            ),
        )
        for day in ("2010-01-01", "2020-01-01")
    )
    ratio = late[1, 0, 0] / early[1, 0, 0]
    assert 1.10 < ratio < 1.12  # channel 2: S1 = 0.478 %/yr, S2 = 0.052 %/yr^2


def test_a_granule_without_channel_3b_gives_no_3b_temperatures():
    tele = telemetry()
    ict = tele.ict_counts.copy()
    ict[:, 0] = 0.0  # 3a was on: no 3b blackbody views
    cal = line_calibration(Telemetry(tele.times, tele.prt_counts, ict, tele.space_counts), "noaa19")
    out = calibrate(earth_counts(), cal)
    assert np.isnan(out[2]).all()
    assert np.isfinite(out[3]).mean() > 0.5

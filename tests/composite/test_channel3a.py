"""Channel 3a (1.6 um) by day: the per-line switch from the granule to the mask, 3a's
calibration against pygac's, the 1.6 um tests on known pixels, and the mask's skill on a
MetOp-A slice with snow (Australia by day, Antarctica in December, the switch to 3b at dusk)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from nearline.composite._ancillary import Ancillary
from nearline.composite._calibration import calibrate, channel3a, line_calibration
from nearline.composite._cloudmask import (
    CH3_CH4,
    CONTRAST,
    NEAR_IR,
    REFLECTANCE,
    UNIFORMITY,
    cloud_tests,
    near_infrared_tests,
)
from nearline.composite._observe import observe
from nearline.composite._skill import score_day
from nearline.swath import open_granule, synthesize_day
from nearline.swath._block import CH3A, CH3B, Telemetry
from nearline.swath._truth import read_truth

LINES = 6144  # MetOp-A from 00:00 UTC: 3a from the start, 3b from line 5382 (nadir at dusk)


@pytest.fixture(scope="module")
def slice_path(tmp_path_factory):
    folder = tmp_path_factory.mktemp("metopa")
    with warnings.catch_warnings():  # pyorbital's legacy-convention notice
        warnings.simplefilter("ignore", DeprecationWarning)
        (path,) = synthesize_day(
            "2012-12-12", 1, folder, satellite="metopa", lines_per_orbit=LINES, truth=True,
            snow=True,
        )  # fmt: skip
    return path


def test_the_granule_records_the_switch_line_by_line(slice_path):
    with open_granule(slice_path) as granule:
        telemetry = granule.read_telemetry()
        block = granule.read(0, LINES)
    switch = telemetry.ch3_select
    assert switch.shape == (LINES,)
    assert set(np.unique(switch)) == {CH3A, CH3B}
    first_3b = int(np.argmax(switch == CH3B))
    assert (switch[:first_3b] == CH3A).all()
    assert (switch[first_3b:] == CH3B).all()
    nadir_sun = block.tie_sun_zenith[:, 25]
    assert nadir_sun[first_3b - 1] < 90.0 <= nadir_sun[first_3b]
    # on 3a lines the channel-3 blackbody and space views read 3a's dark count (about 42)
    assert np.abs(telemetry.ict_counts[switch == CH3A, 0] - 41.8).max() < 2
    assert telemetry.ict_counts[switch == CH3B, 0].min() > 700


def test_3a_lines_give_reflectance_and_3b_lines_temperature(slice_path):
    with open_granule(slice_path) as granule:
        cal = line_calibration(granule.read_telemetry(), granule.platform)
        block = granule.read(0, LINES)
    obs = observe(block, cal, Ancillary.load())
    on_3a = cal.ch3_select == CH3A
    day = obs.sun_zenith < 85
    assert np.isnan(obs.bt3[on_3a]).all()
    assert np.isfinite(obs.bt3[~on_3a]).mean() > 0.99
    assert np.isnan(obs.refl3a[~on_3a]).all()
    assert np.isnan(obs.refl3a[on_3a[:, None] & ~day]).all()
    assert np.isfinite(obs.refl3a[on_3a[:, None] & day]).all()
    truth = read_truth(slice_path)
    clear_sea = on_3a[:, None] & day & ~truth.land & (truth.cloud_fraction == 0)
    assert 1.0 < np.median(obs.refl3a[clear_sea]) < 4.0  # water: about 2 % at 1.6 um
    snow = on_3a[:, None] & day & (truth.snow_fraction == 1) & (truth.cloud_fraction == 0)
    assert snow.sum() > 10000
    assert 6.0 < np.median(obs.refl3a[snow]) < 10.0  # snow: 8 % at 1.6 um
    assert np.median(obs.refl1[snow]) > 70.0  # and bright in the visible
    # the per-line switch is honoured: the 3.7 um test never fires where 3b was not sent,
    # the 1.6 um test never where it was
    assert not (obs.cloud[on_3a] & CH3_CH4).any()
    assert not (obs.cloud[~on_3a] & NEAR_IR).any()
    assert (obs.cloud[on_3a] & NEAR_IR).any()
    assert (obs.cloud[~on_3a] & CH3_CH4).any()


def test_channel_3a_equals_pygac_calibrate_solar():
    from pygac.calibration.noaa import Calibrator, calibrate_solar

    lines = 60
    rng = np.random.default_rng(5)
    counts = rng.integers(0, 1024, (5, lines, 409)).astype(np.uint16)
    switch = np.where(np.arange(lines) < 40, CH3A, CH3B).astype(np.uint8)
    switch[40] = 2  # a transition line carries neither
    times = np.datetime64("2012-12-12T04:00", "ms") + np.arange(lines) * np.timedelta64(500, "ms")
    prt = np.where(np.arange(lines) % 5 == 0, 0.0, 260.0)
    ict = np.tile([780.0, 480.0, 500.0], (lines, 1))
    space = np.tile([990.0, 992.0, 991.0], (lines, 1))
    ict[switch == CH3A, 0], space[switch == CH3A, 0] = 41.0, 41.0
    cal = line_calibration(Telemetry(times, prt, ict, space, switch), "metopa")
    calibrated = calibrate(counts, cal)
    reflectance = channel3a(counts, cal, calibrated)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        theirs = calibrate_solar(counts[2].astype(float), 2, 2012, 347, Calibrator("metopa"))
    on_3a = switch == CH3A
    np.testing.assert_allclose(reflectance[on_3a], theirs[on_3a], rtol=1e-4, equal_nan=True)
    assert np.isnan(reflectance[~on_3a]).all()
    assert np.isnan(calibrated[2][switch != CH3B]).all()
    assert np.isfinite(calibrated[2][switch == CH3B]).any()


def test_the_1_6_um_tests_on_known_pixels():
    """Columns: snow, partly snowy land, ice cloud over land, bright water cloud over land,
    clear sea, cloud over sea; line 0 carries 3a, line 1 the same scene in 3b."""
    refl1 = np.array([80.0, 45.0, 55.0, 60.0, 4.0, 50.0], np.float32)
    refl2 = np.array([74.0, 44.0, 54.0, 59.0, 2.5, 49.0], np.float32)
    refl3a = np.array([8.0, 16.0, 20.0, 55.0, 2.0, 20.0], np.float32)
    bt4 = np.array([262.0, 276.0, 225.0, 262.0, 290.0, 250.0], np.float32)
    land = np.array([True, True, True, True, False, False])
    bt3 = bt4 + np.array([4.0, 8.0, 30.0, 30.0, 5.0, 30.0], np.float32)
    both = lambda row, other: np.stack([row, other])  # noqa: E731 - line 0 3a, line 1 3b
    nan = np.full_like(bt3, np.nan)
    channels = (both(refl1, refl1), both(refl2, refl2), both(nan, bt3), both(bt4, bt4),
                both(bt4 - 0.5, bt4 - 0.5))  # fmt: skip
    sun = np.full((2, 6), 40.0, np.float32)
    lands = both(land, land)
    flags = cloud_tests(channels, sun, lands, rel_azimuth=np.zeros((2, 6)))
    near_infrared_tests(flags, channels[0], both(refl3a, nan), channels[3], sun, lands)
    # the pixel tests alone: the neighbour tests see unrelated scenes side by side here
    line_3a, line_3b = flags & ~np.uint8(UNIFORMITY | CONTRAST)
    assert not line_3a[0]  # snow: bright, but dark at 1.6 um and cold: not cloud
    assert line_3b[0] == REFLECTANCE  # the same snow on a 3b line: called cloud
    assert line_3a[1] & REFLECTANCE  # half snow: NDSI 0.48, below CLAVR-x's 0.6
    assert line_3a[2] & REFLECTANCE
    assert not line_3a[2] & NEAR_IR
    assert line_3a[3] & NEAR_IR  # a water cloud brighter at 1.6 um than any land
    assert not line_3a[4]  # clear sea
    assert line_3a[5] & NEAR_IR
    assert not line_3a[5] & CH3_CH4
    assert line_3b[5] & CH3_CH4
    assert not line_3b[5] & NEAR_IR


def test_the_mask_meets_the_targets_on_a_3a_day(slice_path):
    mask = score_day([slice_path]).mask
    for name in ("land day", "sea day"):
        counts = mask.surfaces[name]
        assert min(counts.cloudy, counts.clear) > 20000, name
        assert counts.hit_rate >= 0.95, name
        assert counts.false_alarm_rate <= 0.05, name
    snow = mask.surfaces["snow day"]
    assert snow.cloudy > 50000  # about 100,000 under the day's coherent clouds
    assert snow.clear > 10000
    assert snow.hit_rate >= 0.95
    assert snow.false_alarm_rate <= 0.05  # under 0.1 %: full cover; margins are elsewhere


def test_level_1b_carries_the_switch_through_pygac(slice_path, tmp_path):
    """The KLM writer puts the switch in each scan line's bit field; pygac's reader finds it
    and nearline joins its split channel 3a/3b back into the one slot, as in the netCDF."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        (path,) = synthesize_day(
            "2012-12-12", 1, tmp_path, satellite="metopa", lines_per_orbit=LINES,
            file_format="l1b", snow=True,
        )  # fmt: skip
    with open_granule(path) as level_1b, open_granule(slice_path) as netcdf:
        assert level_1b.reader == "avhrr-gac"
        assert level_1b.platform == "metopa"
        np.testing.assert_array_equal(
            level_1b.read_telemetry().ch3_select, netcdf.read_telemetry().ch3_select
        )
        np.testing.assert_array_equal(level_1b.read(0, LINES).counts, netcdf.read(0, LINES).counts)

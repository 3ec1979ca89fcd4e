"""Synthetic counts go back through pygac's own calibration to the scene that made them."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime

import numpy as np
import pytest
from pygac.calibration.noaa import calibrate_solar, calibrate_thermal

from nearline.swath import interpolate_tiepoints, lonlat, open_granule
from nearline.swath._maps import is_land, land_bits
from nearline.swath._synth import calibrator, count_tables, synthesize_orbit, to_counts

# NOAA-19 crosses 12 S going north over the Congo basin at 12:08 UTC on 2012-12-12 (early
# afternoon locally): 1200 lines reach from Angola across the Congo to the Sahara's edge;
# with seed 0 about three tenths of it is under cloud.
AFRICA = datetime(2012, 12, 12, 12, 8, tzinfo=UTC)


@pytest.fixture(scope="module")
def africa(tmp_path_factory):
    path = synthesize_orbit(
        AFRICA, 1200, tmp_path_factory.mktemp("africa"), platform="noaa19", seed=0
    )
    with open_granule(path) as granule:
        return granule.read(0, granule.n_lines), granule.read_telemetry()


def _pygac(block, telemetry):
    """Reflectances (%) and brightness temperatures (K) as pygac calibrates the counts."""
    cal = calibrator("noaa19")
    year, jday = AFRICA.year, AFRICA.timetuple().tm_yday
    lines = np.arange(block.n_lines)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        refl = [calibrate_solar(block.counts[c].astype(float), c, year, jday, cal) for c in (0, 1)]
        bts = [
            calibrate_thermal(
                block.counts[index + 2].astype(float),
                telemetry.prt_counts.copy(),
                telemetry.ict_counts[:, index].copy(),
                telemetry.space_counts[:, index].copy(),
                lines,
                channel,
                cal,
            )
            for index, channel in enumerate((3, 4, 5))
        ]
    return refl, bts


def test_inverted_tables_round_trip_within_one_count_step():
    tables = count_tables("noaa19", AFRICA)
    for channel, (physical, counts) in enumerate(tables):
        low, high = physical[0], physical[-1]
        wanted = np.linspace(low, high, 997)
        got_counts = to_counts(wanted, (physical, counts))
        assert got_counts.dtype == np.uint16
        assert got_counts.max() < 1024
        back = np.interp(got_counts, counts[np.argsort(counts)], physical[np.argsort(counts)])
        step = np.abs(np.diff(physical)).max()
        assert np.abs(back - wanted).max() <= step, channel


def test_telemetry_is_what_pygac_expects(africa):
    _, telemetry = africa
    prt = telemetry.prt_counts
    assert np.all(prt[::5] == 0)  # pygac finds PRT sets by the zero line
    assert np.all(prt[np.arange(prt.size) % 5 != 0] > 100)  # above its 50/100 thresholds
    assert telemetry.ict_counts.shape == telemetry.space_counts.shape == (prt.size, 3)


def test_thermal_counts_calibrate_with_the_granules_own_telemetry(africa):
    block, telemetry = africa
    _, (bt3, bt4, bt5) = _pygac(block, telemetry)
    tables = count_tables("noaa19", AFRICA)
    for index, bt in enumerate((bt3, bt4, bt5)):
        physical, counts = tables[index + 2]
        lookup = np.full(1024, np.nan)
        lookup[counts.astype(int)] = physical
        nominal = lookup[block.counts[index + 2]]
        both = np.isfinite(bt) & np.isfinite(nominal)
        assert both.mean() > 0.99
        # the per-line telemetry noise moves pygac's answer by far less than a count step
        assert np.abs(bt[both] - nominal[both]).max() < 0.1
    assert np.nanmin(bt4) > 180
    assert np.nanmax(bt4) < 330


def test_the_scene_is_green_over_the_congo_dark_over_the_sea_and_clouds_are_cold(africa):
    block, telemetry = africa
    (red, nir), (_, bt4, _) = _pygac(block, telemetry)
    lon, lat = lonlat(block)
    sun = interpolate_tiepoints(block.tie_sun_zenith)
    land = is_land(land_bits(), lon, lat)
    ndvi = (nir - red) / (nir + red)
    clear = (bt4 > 270) & (red < 30) & (sun < 70)
    tropics = clear & land & (np.abs(lat) < 5)
    sea = clear & ~land
    assert tropics.sum() > 1000
    assert sea.sum() > 1000
    assert 0.5 < np.median(ndvi[tropics]) < 0.85
    assert np.percentile(ndvi[clear & land], 1) > 0.0
    assert np.percentile(ndvi[clear & land], 99) < 0.9
    assert np.percentile(ndvi[sea], 99) < 0.0
    cloudy = bt4 < 260
    assert 0.05 < cloudy.mean() < 0.7
    assert np.median(red[cloudy & (sun < 70)]) > 3 * np.median(red[clear])  # bright
    assert np.median(bt4[cloudy]) < np.median(bt4[clear]) - 40  # cold

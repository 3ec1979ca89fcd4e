"""Tie points to every pixel: exact at the tie columns, right across the date line and poles."""

from __future__ import annotations

import numpy as np
import pytest

from nearline.swath import N_PIXELS, TIE_COLUMNS, SwathBlock, interpolate_tiepoints, lonlat


def _block(tie_lon: np.ndarray, tie_lat: np.ndarray) -> SwathBlock:
    n = tie_lon.shape[0]
    zeros = np.zeros((n, 51), np.float32)
    return SwathBlock(
        granule="g",
        platform="noaa19",
        first_line=0,
        times=np.zeros(n, "datetime64[ms]"),
        counts=np.zeros((5, n, N_PIXELS), np.uint16),
        tie_lat=tie_lat.astype(np.float32),
        tie_lon=tie_lon.astype(np.float32),
        tie_sat_zenith=zeros,
        tie_sun_zenith=zeros,
        tie_rel_azimuth=zeros,
        prt_counts=np.zeros(n),
        ict_counts=np.zeros((n, 3)),
        space_counts=np.zeros((n, 3)),
    )


def test_tie_columns_give_back_the_tie_values():
    rng = np.random.default_rng(1)
    tie = rng.uniform(0, 90, (7, 51)).astype(np.float32)
    full = interpolate_tiepoints(tie)
    assert full.shape == (7, N_PIXELS)
    assert full.dtype == np.float32
    np.testing.assert_array_equal(full[:, TIE_COLUMNS], tie)
    # lon/lat on a smooth mid-latitude line: exact at the tie columns too
    tie_lon = np.linspace(-20, 20, 51)[None, :].repeat(3, 0) + np.arange(3)[:, None]
    tie_lat = np.full((3, 51), 40.0) + np.linspace(-1, 1, 51)[None, :]
    lon, lat = lonlat(_block(tie_lon, tie_lat))
    np.testing.assert_allclose(lon[:, TIE_COLUMNS], tie_lon, atol=1e-5)
    np.testing.assert_allclose(lat[:, TIE_COLUMNS], tie_lat, atol=1e-5)


def test_a_field_linear_in_column_is_exact_everywhere_including_the_scan_ends():
    columns = np.arange(N_PIXELS, dtype=np.float64)
    truth = 10.0 + 0.1 * columns  # e.g. 10.4 at column 4, 50.8 at column 408
    full = interpolate_tiepoints(truth[TIE_COLUMNS][None, :])
    np.testing.assert_allclose(full[0], truth, atol=1e-4)
    assert full[0, 0] == pytest.approx(10.0, abs=1e-5)  # extrapolated, not clamped
    assert full[0, 408] == pytest.approx(50.8, abs=1e-4)


def test_a_line_across_the_date_line_stays_in_range_without_a_jump():
    unwrapped = np.linspace(160.0, 200.0, 51)  # 160 E .. 160 W, 0.8 degrees per tie point
    tie_lon = ((unwrapped + 180) % 360 - 180)[None, :]
    tie_lat = np.full((1, 51), 10.0)
    lon, lat = lonlat(_block(tie_lon, tie_lat))
    plain = interpolate_tiepoints(tie_lon, longitude=True)
    for values in (lon[0], plain[0]):
        assert np.all(values >= -180)
        assert np.all(values <= 180)
        steps = (np.diff(values.astype(np.float64)) + 180) % 360 - 180
        np.testing.assert_allclose(steps, 0.1, atol=1e-3)  # never a swing through 0
    # pixel 204 sits on the tie point at 180 (column 204 = tie 25)
    assert abs(lon[0, 204]) == pytest.approx(180.0, abs=1e-4)
    np.testing.assert_allclose(lat, 10.0, atol=1e-4)


def test_a_line_over_the_pole_stays_on_the_globe():
    # a scan line straight over the north pole along the 0/180 meridian
    along = np.linspace(80.0, 100.0, 51)  # "latitude" past 90 means over the top
    tie_lat = np.where(along <= 90, along, 180 - along)[None, :]
    tie_lon = np.where(along <= 90, 0.0, 180.0)[None, :]
    lon, lat = lonlat(_block(tie_lon, tie_lat))
    assert np.all(np.isfinite(lon))
    assert np.all(np.isfinite(lat))
    assert lat.max() <= 90.0
    assert lat[0, 204] == pytest.approx(90.0, abs=1e-3)
    # each side of the pole keeps its meridian
    assert np.all(np.abs(lon[0, 8:200]) < 1e-3)
    assert np.all(np.abs(np.abs(lon[0, 210:400]) - 180) < 1e-3)


def test_a_field_of_the_wrong_shape_is_refused():
    with pytest.raises(ValueError, match=r"\(lines, 51\)"):
        interpolate_tiepoints(np.zeros((3, 50)))

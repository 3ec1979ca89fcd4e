"""nearline's Interrupted Goode Homolosine against PROJ's ``+proj=igh``: metres, lobes, gaps."""

from __future__ import annotations

import math

import numpy as np
import pyproj
import pytest

from nearline.grid import EARTH_RADIUS, IGH_CRS, get_grid
from nearline.grid import _igh as igh
from tests.grid.points import BOUNDARY, LOBE_EDGES, TINY, awkward_points

TO_IGH = pyproj.Transformer.from_crs("EPSG:4326", IGH_CRS, always_xy=True)


def test_exact_forward_agrees_with_pyproj_to_a_millimetre_except_on_the_poles():
    lon, lat = awkward_points(100_000, seed=1)
    want_x, want_y = TO_IGH.transform(lon, lat)
    x, y = get_grid("igh-8km").forward(lon, lat)
    pole = np.abs(lat) == 90
    assert np.max(np.abs(x - want_x)[~pole]) < 1e-3
    assert np.max(np.abs(y - want_y)) < 1e-3
    # on a pole PROJ's Newton iteration for the Mollweide angle stops short (up to 94 m in
    # x); nearline puts the pole on the lobe's central meridian, where it belongs. Both are
    # beyond the published extent, so no cell holds a pole either way.
    lam0 = np.select([lat > 0, lon <= -100, lon <= -20, lon <= 80], [0, -160, -60, 20], 140)
    lam0 = np.where((lat > 0) & (lon <= -40), -100, np.where(lat > 0, 30, lam0))
    np.testing.assert_allclose(x[pole], EARTH_RADIUS * np.radians(lam0[pole]), atol=1e-6)
    assert np.max(np.abs(x - want_x)[pole]) < 100


def test_the_tabulated_kernel_behind_cell_index_agrees_with_pyproj_to_a_metre():
    lon, lat = awkward_points(100_000, seed=2)
    polar = np.concatenate([np.linspace(-90, -88, 20_001), np.linspace(88, 90, 20_001)])
    lon = np.concatenate([lon, np.resize([-179.9, -100, -40.1, 0, 79.9, 179.9], polar.size)])
    lat = np.concatenate([lat, polar])
    want_x, want_y = TO_IGH.transform(lon, lat)
    x, y = np.empty(lon.size), np.empty(lon.size)
    igh.forward_tabulated(lon, lat, x, y)
    error = np.hypot(x - want_x, y - want_y)
    pole = np.abs(lat) == 90  # see the test above
    assert error[~pole].max() < 0.15


def test_points_pyproj_cannot_project_are_nan():
    lon = np.array([0.0, np.nan, 0.0, np.inf, 10.0])
    lat = np.array([90.5, 0.0, np.nan, 0.0, -91.0])
    assert not np.any(np.isfinite(TO_IGH.transform(lon, lat, errcheck=False)[0]))
    x, y = get_grid("igh-8km").forward(lon, lat)
    assert np.all(np.isnan(x))
    assert np.all(np.isnan(y))


def test_longitudes_beyond_180_wrap_as_in_proj():
    lon = np.array([190.0, -190.0, 540.0, 359.0, -360.0])
    lat = np.array([10.0, -50.0, 20.0, 70.0, -10.0])
    x, y = get_grid("igh-8km").forward(lon, lat)
    want_x, want_y = TO_IGH.transform(lon, lat)
    np.testing.assert_allclose(x, want_x, atol=1e-3)
    np.testing.assert_allclose(y, want_y, atol=1e-3)


def test_y_depends_on_latitude_alone_sinusoidal_then_shifted_mollweide():
    grid = get_grid("igh-8km")
    lat = np.array([-90, -60, -BOUNDARY, -20, 0, 20, BOUNDARY, 60, 90])
    y = grid.northing(lat)
    for lon in (-170.0, -50.0, 0.0, 100.0):
        np.testing.assert_allclose(grid.forward(np.full(lat.size, lon), lat)[1], y, atol=1e-6)
    np.testing.assert_allclose(y[2:7], EARTH_RADIUS * np.radians(lat[2:7]), rtol=1e-12)
    assert pytest.approx(-0.0528, abs=5e-5) == igh.MOLLWEIDE_SHIFT  # the 0.0528 R of Goode
    pole = EARTH_RADIUS * (math.sqrt(2) + igh.MOLLWEIDE_SHIFT)
    np.testing.assert_allclose(y[[0, -1]], [-pole, pole], rtol=1e-12)
    np.testing.assert_allclose(igh.latitude_of_northing(y), lat, atol=1e-9)


def test_the_published_extent_holds_every_lobe_corner_pyproj_draws():
    xmin, ymin, xmax, ymax = get_grid("igh-8km").extent
    corners_lon = np.array([e + d for e in LOBE_EDGES for d in (-TINY, TINY)])
    corners_lon = corners_lon[np.abs(corners_lon) <= 180]
    corners = [(lon, lat) for lon in corners_lon for lat in (0.0, BOUNDARY, -BOUNDARY, 89.8, -89.8)]
    x, y = TO_IGH.transform(*np.array(corners).T)
    assert np.all((x > xmin) & (x < xmax) & (y > ymin) & (y < ymax))
    widest, _ = TO_IGH.transform(180.0, 0.0)  # the equator is the widest line: pi R
    assert widest == pytest.approx(math.pi * EARTH_RADIUS)
    assert 0 < xmax - widest < 1000
    assert xmax == -xmin
    _, pole = TO_IGH.transform(0.0, 90.0)  # the poles are 1.5 km beyond ymax: not in the grid
    assert 0 < pole - ymax < 2000
    assert ymax == -ymin
    last = igh.latitude_of_northing(np.array([ymax]))[0]
    assert 89.8 < last < 89.9


def test_domain_mask_marks_the_interruptions_pyproj_leaves_empty():
    grid = get_grid("igh-8km")
    x, y, _ = grid.coordinates()
    x, y = x[::7], y[::5]
    mask = igh.domain_mask(x, y)
    xx, yy = np.meshgrid(x, y)
    to_lonlat = pyproj.Transformer.from_crs(IGH_CRS, "EPSG:4326", always_xy=True)
    lon, lat = to_lonlat.transform(xx, yy, errcheck=False)
    # PROJ's inverse also draws Greenland's lon -40..-10, lat >= 60 in the western lobe,
    # where its forward (and nearline's) never puts a point: count a cell when it round-trips
    back_x, back_y = grid.forward(lon, lat)
    on_earth = np.isfinite(lon) & (np.abs(back_x - xx) < 1) & (np.abs(back_y - yy) < 1)
    np.testing.assert_array_equal(mask, on_earth)
    assert 0.25 < 1 - mask.mean() < 0.45  # the gaps and corners: about a third of the grid
    band = grid.domain_mask(rows=(1900, 1910))  # far south: four lobes, gaps between
    assert band.shape == (10, grid.width)
    x, y, _ = grid.coordinates()
    np.testing.assert_array_equal(band, igh.domain_mask(x, y[1900:1910]))
    assert np.count_nonzero(np.diff(band.astype(int), axis=1) == 1) == 10 * 4

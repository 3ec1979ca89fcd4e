"""Interrupted Goode Homolosine on the sphere, as PROJ's ``+proj=igh`` draws it.

Between 40°44'11.8" N and S the projection is sinusoidal; poleward it is Mollweide, shifted
in y so that the two meet at that latitude. The world is cut into 12 lobes, each with its own
central meridian: two in the north (-100° for the Americas, 30° for Eurasia-Africa) and four
in the south (-160°, -60°, 20°, 140°), so the continents keep their shapes and the oceans
are torn. The kernels here are compiled with numba and used on millions of points a second;
the tests hold them to pyproj's answers.
"""

from __future__ import annotations

import math

import numba
import numpy as np

EARTH_RADIUS = 6370997.0
BOUNDARY_LATITUDE = math.radians(40 + 44 / 60 + 11.8 / 3600)
_SQRT2 = math.sqrt(2.0)


@numba.njit(cache=True, nogil=True)
def _mollweide_theta(phi: float) -> float:
    """Solve 2 theta + sin(2 theta) = pi sin(phi) by Newton's method."""
    if abs(abs(phi) - math.pi / 2) < 1e-12:
        return math.copysign(math.pi / 2, phi)
    k = math.pi * math.sin(phi)
    theta = phi
    for _ in range(30):
        delta = (2 * theta + math.sin(2 * theta) - k) / (2 + 2 * math.cos(2 * theta))
        theta -= delta
        if abs(delta) < 1e-12:
            break
    return theta


@numba.njit(cache=True, nogil=True)
def _mollweide_y(phi: float) -> float:
    return _SQRT2 * math.sin(_mollweide_theta(phi))


# y offset that joins the Mollweide lobes to the sinusoidal band at the boundary latitude
MOLLWEIDE_SHIFT = BOUNDARY_LATITUDE - float(_mollweide_y(BOUNDARY_LATITUDE))


@numba.njit(cache=True, nogil=True)
def central_meridian(lam: float, phi: float) -> float:
    """Central meridian (radians) of the lobe holding the point (radians)."""
    if phi >= 0:
        return math.radians(-100.0) if lam <= math.radians(-40.0) else math.radians(30.0)
    if lam <= math.radians(-100.0):
        return math.radians(-160.0)
    if lam <= math.radians(-20.0):
        return math.radians(-60.0)
    if lam <= math.radians(80.0):
        return math.radians(20.0)
    return math.radians(140.0)


@numba.njit(cache=True, nogil=True)
def forward_point(lon: float, lat: float) -> tuple[float, float]:
    """(x, y) in metres of one point given in degrees; NaN for a NaN input."""
    lam = math.radians(lon)
    phi = math.radians(lat)
    lam0 = central_meridian(lam, phi)
    dlam = lam - lam0
    if abs(phi) <= BOUNDARY_LATITUDE:
        x = dlam * math.cos(phi)
        y = phi
    else:
        theta = _mollweide_theta(phi)
        x = 2 * _SQRT2 / math.pi * dlam * math.cos(theta)
        y = _SQRT2 * math.sin(theta) + (MOLLWEIDE_SHIFT if phi > 0 else -MOLLWEIDE_SHIFT)
    return EARTH_RADIUS * (x + lam0), EARTH_RADIUS * y


@numba.njit(cache=True, nogil=True)
def northing(lat: float) -> float:
    """y (metres) of a latitude (degrees): in IGH it depends on latitude alone."""
    phi = math.radians(lat)
    if abs(phi) <= BOUNDARY_LATITUDE:
        return EARTH_RADIUS * phi
    return EARTH_RADIUS * (_mollweide_y(phi) + (MOLLWEIDE_SHIFT if phi > 0 else -MOLLWEIDE_SHIFT))


@numba.njit(cache=True, nogil=True)
def forward(lon: np.ndarray, lat: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
    """Project flat arrays of degrees into ``x`` and ``y`` (metres)."""
    for i in range(lon.size):
        x[i], y[i] = forward_point(lon[i], lat[i])


# Mollweide lobes through a table: x scale and northing against latitude, from the boundary
# latitude to the pole in steps of 0.002 degrees, linearly interpolated (error < 1 cm),
# so the hot loop has no Newton iteration and no trigonometry beyond one cosine.
_STEP = math.radians(0.002)
_NODES = math.ceil((math.pi / 2 - BOUNDARY_LATITUDE) / _STEP) + 2


def _mollweide_table() -> tuple[np.ndarray, np.ndarray]:
    phi = BOUNDARY_LATITUDE + _STEP * np.arange(_NODES)
    phi = np.minimum(phi, math.pi / 2)
    theta = np.array([_mollweide_theta(p) for p in phi])
    scale = 2 * _SQRT2 / math.pi * np.cos(theta)
    north = _SQRT2 * np.sin(theta) + MOLLWEIDE_SHIFT
    return scale, north


MOLLWEIDE_SCALE, MOLLWEIDE_NORTH = _mollweide_table()


@numba.njit(cache=True, nogil=True)
def cell_indices(
    lon: np.ndarray,
    lat: np.ndarray,
    out: np.ndarray,
    xmin: float,
    ymax: float,
    dx: float,
    dy: float,
    width: int,
    first_row: int,
    stop_row: int,
    scale_table: np.ndarray,
    north_table: np.ndarray,
) -> None:
    """Flat cell index (relative to ``first_row``) of each point, -1 outside rows or grid."""
    deg = math.pi / 180.0
    for i in range(lon.size):
        lam = lon[i] * deg
        phi = lat[i] * deg
        if not (abs(phi) <= math.pi / 2 and abs(lam) <= math.pi):
            out[i] = -1
            continue
        lam0 = central_meridian(lam, phi)
        a = abs(phi)
        if a <= BOUNDARY_LATITUDE:
            x = (lam - lam0) * math.cos(phi) + lam0
            y = phi
        else:
            position = (a - BOUNDARY_LATITUDE) / _STEP
            k = min(int(position), _NODES - 2)
            w = position - k
            scale = scale_table[k] + w * (scale_table[k + 1] - scale_table[k])
            north = north_table[k] + w * (north_table[k + 1] - north_table[k])
            x = (lam - lam0) * scale + lam0
            y = north if phi > 0 else -north
        col = math.floor((EARTH_RADIUS * x - xmin) / dx)
        row = math.floor((ymax - EARTH_RADIUS * y) / dy)
        if col < 0 or col >= width or row < first_row or row >= stop_row:
            out[i] = -1
        else:
            out[i] = (row - first_row) * width + col

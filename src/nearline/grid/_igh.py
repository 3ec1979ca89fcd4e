"""Interrupted Goode Homolosine on the sphere, as PROJ's ``+proj=igh`` draws it.

Between 40°44'11.8" N and S the projection is sinusoidal (y = R phi); poleward it is
Mollweide, shifted in y by -0.0528 R in the north and +0.0528 R in the south so the two meet
at that latitude. The world is cut into 12 pieces (2 sinusoidal + 2 Mollweide in the north,
4 + 4 in the south), each drawn about its lobe's central meridian:
-100° (the Americas) and 30° (Eurasia, Africa) in the north, -160°, -60°, 20° and 140° in the
south. The lobe edges are at -40° in the north and -100°, -20° and 80° in the south; a point
on an edge belongs to the lobe west of it, as in PROJ. Only x depends on the lobe: y is a
function of latitude alone.

The kernels are numba-compiled; ``cell_indices`` is the registration hot path. The tests hold
them to pyproj's answers (< 1 m).
"""

from __future__ import annotations

import math

import numba
import numpy as np

EARTH_RADIUS = 6370997.0
BOUNDARY_LATITUDE = math.radians(40 + 44 / 60 + 11.8 / 3600)
_SQRT2 = math.sqrt(2.0)
_DEG = math.pi / 180.0

# central meridian (degrees) of the lobe holding longitude bin k = ceil((lon + 180) / 20) - 1,
# k in 0..17, north then south (+18): every lobe edge is a multiple of 20 degrees
LOBE_MERIDIANS = np.array(
    [-100.0] * 7 + [30.0] * 11 + [-160.0] * 4 + [-60.0] * 4 + [20.0] * 5 + [140.0] * 5
)
# (west edge, central meridian, east edge) of each lobe, degrees, north then south
NORTH_LOBES = ((-180.0, -100.0, -40.0), (-40.0, 30.0, 180.0))
SOUTH_LOBES = (
    (-180.0, -160.0, -100.0),
    (-100.0, -60.0, -20.0),
    (-20.0, 20.0, 80.0),
    (80.0, 140.0, 180.0),
)


@numba.njit(cache=True, nogil=True)
def _mollweide_theta(phi: float) -> float:
    """Solve 2 theta + sin(2 theta) = pi sin(phi) by Newton's method."""
    if abs(abs(phi) - math.pi / 2) < 1e-12:
        return math.copysign(math.pi / 2, phi)
    k = math.pi * math.sin(phi)
    theta = phi
    for _ in range(60):
        delta = (2 * theta + math.sin(2 * theta) - k) / (2 + 2 * math.cos(2 * theta))
        theta -= delta
        if abs(delta) < 1e-14:
            break
    return theta


def _mollweide_thetas(phi: np.ndarray) -> np.ndarray:
    """:func:`_mollweide_theta` of each latitude (radians, short of the poles) in numpy, for
    the tables made at import: calling the kernel 24,000 times there cost every process that
    imports the grids 0.2 s (and, with no cache yet, compiled it)."""
    k = np.pi * np.sin(phi)
    theta = phi.copy()
    going = np.ones(phi.shape, dtype=bool)
    for _ in range(60):
        delta = (2 * theta + np.sin(2 * theta) - k) / (2 + 2 * np.cos(2 * theta))
        theta = np.where(going, theta - delta, theta)
        going &= np.abs(delta) >= 1e-14
        if not going.any():
            break
    return theta


# y offset (in units of R) that joins the northern Mollweide lobes to the sinusoidal band
MOLLWEIDE_SHIFT = BOUNDARY_LATITUDE - _SQRT2 * math.sin(
    float(_mollweide_thetas(np.array([BOUNDARY_LATITUDE]))[0])
)


@numba.njit(cache=True, nogil=True)
def _lobe_meridian(lon: float, lat: float, meridians: np.ndarray) -> float:
    """Central meridian (degrees) of the lobe holding a point with lon in [-180, 180]."""
    k = max(math.ceil((lon + 180.0) / 20.0) - 1, 0)
    if lat < 0:
        k += 18
    return meridians[k]


@numba.njit(cache=True, nogil=True)
def _wrap(lon: float) -> float:
    """Longitude into [-180, 180] as PROJ does (inf and NaN stay non-finite)."""
    if lon >= -180.0 and lon <= 180.0:
        return lon
    return lon - 360.0 * math.floor((lon + 180.0) / 360.0)


@numba.njit(cache=True, nogil=True)
def forward_point(lon: float, lat: float, meridians: np.ndarray) -> tuple[float, float]:
    """(x, y) in metres of one point in degrees, exactly; NaN outside the domain."""
    if not (lat >= -90.0 and lat <= 90.0 and abs(lon) < math.inf):
        return math.nan, math.nan
    lon = _wrap(lon)
    lam0 = _lobe_meridian(lon, lat, meridians)
    phi = lat * _DEG
    dlam = (lon - lam0) * _DEG
    if -BOUNDARY_LATITUDE <= phi < BOUNDARY_LATITUDE:  # PROJ's choice on the boundary
        x = dlam * math.cos(phi)
        y = phi
    else:
        theta = _mollweide_theta(phi)
        x = 2 * _SQRT2 / math.pi * dlam * math.cos(theta)
        y = _SQRT2 * math.sin(theta) + (MOLLWEIDE_SHIFT if phi > 0 else -MOLLWEIDE_SHIFT)
    return EARTH_RADIUS * (x + lam0 * _DEG), EARTH_RADIUS * y


@numba.njit(cache=True, nogil=True)
def forward(lon: np.ndarray, lat: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
    """Project flat arrays of degrees into ``x`` and ``y`` (metres), exactly."""
    for i in range(lon.size):
        x[i], y[i] = forward_point(np.float64(lon[i]), np.float64(lat[i]), LOBE_MERIDIANS)


@numba.njit(cache=True, nogil=True)
def northing(lat: np.ndarray, y: np.ndarray) -> None:
    """y (metres) of each latitude (degrees); NaN outside [-90, 90]."""
    for i in range(lat.size):
        y[i] = forward_point(0.0, np.float64(lat[i]), LOBE_MERIDIANS)[1]


def latitude_of_northing(y: np.ndarray) -> np.ndarray:
    """Latitude (degrees) of each y (metres), the inverse of ``northing``, clipped to the
    poles (y beyond +-R (sqrt 2 - 0.0528) gives +-90)."""
    v = np.abs(np.asarray(y, dtype=np.float64)) / EARTH_RADIUS
    theta = np.arcsin(np.clip((v - MOLLWEIDE_SHIFT) / _SQRT2, -1.0, 1.0))
    mollweide = np.arcsin(np.minimum((2 * theta + np.sin(2 * theta)) / np.pi, 1.0))
    phi = np.where(v <= BOUNDARY_LATITUDE, v, mollweide)
    return np.copysign(np.degrees(phi), y)


def mollweide_scale(lat: np.ndarray) -> np.ndarray:
    """dx / dlambda (units of R) at each latitude (degrees): cos(phi), or Mollweide's."""
    phi = np.radians(np.asarray(lat, dtype=np.float64))
    theta = np.array([_mollweide_theta(p) for p in np.ravel(phi)]).reshape(phi.shape)
    return np.where(
        np.abs(phi) <= BOUNDARY_LATITUDE, np.cos(phi), 2 * _SQRT2 / np.pi * np.cos(theta)
    )


# The hot loop reads the Mollweide lobes from a table of x scale and northing against
# latitude, every 0.002 degrees from the boundary latitude to 89 degrees, linearly
# interpolated: no Newton iteration, and no trigonometry but one cosine in the sinusoidal
# band; the interpolation error is below 0.12 m. Within a degree of the poles x scale goes
# like (pole distance)^(2/3), which no table follows, so those rare points are solved exactly.
_STEP = math.radians(0.002)
_TABLE_END = 89.0
_NODES = math.ceil((math.radians(_TABLE_END) - BOUNDARY_LATITUDE) / _STEP) + 2


def _mollweide_table() -> tuple[np.ndarray, np.ndarray]:
    phi = BOUNDARY_LATITUDE + _STEP * np.arange(_NODES)
    theta = _mollweide_thetas(phi)
    return 2 * _SQRT2 / math.pi * np.cos(theta), _SQRT2 * np.sin(theta) + MOLLWEIDE_SHIFT


MOLLWEIDE_SCALE, MOLLWEIDE_NORTH = _mollweide_table()


@numba.njit(cache=True, nogil=True)
def scale_northing(lat: float, scale: np.ndarray, north: np.ndarray) -> tuple[float, float]:
    """(dx / dlambda, y), both in units of R, at a latitude in degrees within [-90, 90]:
    x = R (lambda0 + scale (lambda - lambda0)) in any lobe's frame, y = R northing."""
    phi = lat * _DEG
    a = abs(lat)
    if -BOUNDARY_LATITUDE <= phi < BOUNDARY_LATITUDE:  # PROJ's choice on the boundary
        return math.cos(phi), phi
    if a > _TABLE_END:
        theta = _mollweide_theta(a * _DEG)
        s = 2 * _SQRT2 / math.pi * math.cos(theta)
        n = _SQRT2 * math.sin(theta) + MOLLWEIDE_SHIFT
    else:
        position = (abs(phi) - BOUNDARY_LATITUDE) / _STEP
        k = int(position)
        w = position - k
        s = scale[k] + w * (scale[k + 1] - scale[k])
        n = north[k] + w * (north[k + 1] - north[k])
    return s, (n if lat > 0 else -n)


@numba.njit(cache=True, nogil=True)
def _tabulated(
    lon: float, lat: float, meridians: np.ndarray, scale: np.ndarray, north: np.ndarray
) -> tuple[float, float]:
    """(x, y) in units of R of a point already checked to be in the domain."""
    lam0 = _lobe_meridian(lon, lat, meridians)
    s, y = scale_northing(lat, scale, north)
    return (lon - lam0) * _DEG * s + lam0 * _DEG, y


@numba.njit(cache=True, nogil=True)
def forward_tabulated(lon: np.ndarray, lat: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
    """``forward`` as ``cell_indices`` computes it (for the tests); NaN outside the domain."""
    for i in range(lon.size):
        lo, la = np.float64(lon[i]), np.float64(lat[i])
        if not (la >= -90.0 and la <= 90.0 and abs(lo) < math.inf):
            x[i], y[i] = math.nan, math.nan
        else:
            u, v = _tabulated(_wrap(lo), la, LOBE_MERIDIANS, MOLLWEIDE_SCALE, MOLLWEIDE_NORTH)
            x[i], y[i] = EARTH_RADIUS * u, EARTH_RADIUS * v


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
) -> None:
    """Flat cell index (relative to ``first_row``) of each point, -1 outside rows or grid.

    Column ``floor((x - xmin) / dx)``, row ``floor((ymax - y) / dy)``, with x, y in metres.
    """
    rx, ry = EARTH_RADIUS / dx, EARTH_RADIUS / dy
    x0, y0 = xmin / dx, ymax / dy
    for i in range(lon.size):
        out[i] = point_cell(
            np.float64(lon[i]), np.float64(lat[i]), rx, ry, x0, y0, width, first_row, stop_row
        )


@numba.njit(cache=True, nogil=True, inline="always")
def point_cell(
    lo: float, la: float, rx: float, ry: float, x0: float, y0: float, width: int,
    first_row: int, stop_row: int,
) -> int:  # fmt: skip
    """``cell_indices`` of one point; rx = R / dx, ry = R / dy, x0 = xmin / dx, y0 = ymax / dy."""
    if not (la >= -90.0 and la <= 90.0 and abs(lo) < math.inf):  # NaN fails too
        return -1
    x, y = _tabulated(_wrap(lo), la, LOBE_MERIDIANS, MOLLWEIDE_SCALE, MOLLWEIDE_NORTH)
    col = math.floor(x * rx - x0)
    row = math.floor(y0 - y * ry)
    if col < 0 or col >= width or row < first_row or row >= stop_row:
        return -1
    return (row - first_row) * width + col


def domain_mask(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(len(y), len(x)) booleans: True where (x, y) metres lies on a lobe, False in the gaps
    and beyond the poles; ``x`` and ``y`` are 1-D (cell centres, say)."""
    x = np.asarray(x, dtype=np.float64)[None, :]
    y = np.asarray(y, dtype=np.float64)[:, None]
    scale = mollweide_scale(latitude_of_northing(y))
    on_earth = np.abs(y) <= EARTH_RADIUS * (_SQRT2 + MOLLWEIDE_SHIFT)
    inside = np.zeros((y.shape[0], x.shape[1]), dtype=bool)
    for lobes, hemisphere in ((NORTH_LOBES, y >= 0), (SOUTH_LOBES, y < 0)):
        for west, middle, east in lobes:
            west_x = EARTH_RADIUS * _DEG * (middle + (west - middle) * scale)
            east_x = EARTH_RADIUS * _DEG * (middle + (east - middle) * scale)
            inside |= hemisphere & (x >= west_x) & (x <= east_x)
    return inside & on_earth


def inverse(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Longitude and latitude (degrees, (len(y), len(x))) of the points (x, y) metres, for
    1-D ``x`` and ``y``; NaN in the gaps between lobes and beyond the poles."""
    x = np.asarray(x, dtype=np.float64)[None, :]
    y = np.asarray(y, dtype=np.float64)[:, None]
    lat = latitude_of_northing(y)
    scale = mollweide_scale(lat)
    u = x / (EARTH_RADIUS * _DEG)
    lon = np.full((y.shape[0], x.shape[1]), np.nan)
    for lobes, hemisphere in ((NORTH_LOBES, y >= 0), (SOUTH_LOBES, y < 0)):
        for west, middle, east in lobes:
            with np.errstate(divide="ignore", invalid="ignore"):
                candidate = middle + (u - middle) / scale
            inside = hemisphere & (candidate >= west) & (candidate <= east)
            lon = np.where(inside & np.isnan(lon), candidate, lon)
    on_earth = np.abs(y) <= EARTH_RADIUS * (_SQRT2 + MOLLWEIDE_SHIFT)
    lat = np.where(on_earth & ~np.isnan(lon), np.broadcast_to(lat, lon.shape), np.nan)
    return np.where(np.isnan(lat), np.nan, lon), lat

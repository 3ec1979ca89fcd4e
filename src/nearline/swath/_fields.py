"""Smooth random fields on the sphere, for the synthetic scene's clouds and land cover.

:class:`SphereNoise` sums octaves of gradient noise (Perlin's improved noise, 2002) evaluated
at the point's unit vector, so its features have the same size and shape everywhere on the
globe, poles included, and nothing lines up with meridians or parallels: each octave's
lattice is turned by a random rotation. Given ``hours``, each octave's lattice also slides
slowly through the sphere, so the pattern changes shape with time (small features faster
than large ones), rather than only moving. :func:`sample` reads a global latitude-longitude
raster at any points (bilinear), for fields cheap to keep on a grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

EARTH_RADIUS_KM = 6371.0
_TABLE = 1024  # the lattice repeats every this many cells
# the twelve cube edges (Perlin 2002), four repeated to make sixteen
_GRADIENTS = np.array(
    [[1, 1, 0], [-1, 1, 0], [1, -1, 0], [-1, -1, 0], [1, 0, 1], [-1, 0, 1], [1, 0, -1],
     [-1, 0, -1], [0, 1, 1], [0, -1, 1], [0, 1, -1], [0, -1, -1], [1, 1, 0], [0, -1, 1],
     [-1, 1, 0], [0, -1, -1]],
    np.float64,
)  # fmt: skip
_OCTAVE_STD = 0.268  # the standard deviation of one octave of this noise (measured)
DEG = math.pi / 180.0


@numba.njit(cache=True, nogil=True, inline="always", fastmath=True)
def _fade(t):
    return t * t * t * (t * (t * 6.0 - 15.0) + 10.0)


@numba.njit(cache=True, nogil=True, inline="always", fastmath=True)
def _corner(perm, hashed, x, y, z):
    g = _GRADIENTS[perm[hashed] & 15]
    return g[0] * x + g[1] * y + g[2] * z


@numba.njit(cache=True, nogil=True, inline="always", fastmath=True)
def _noise(perm, x, y, z):
    """Gradient noise at (x, y, z): 0 on the lattice points, about [-1, 1] between them."""
    fx, fy, fz = math.floor(x), math.floor(y), math.floor(z)
    i, j, k = int(fx) & (_TABLE - 1), int(fy) & (_TABLE - 1), int(fz) & (_TABLE - 1)
    x, y, z = x - fx, y - fy, z - fz
    u, v, w = _fade(x), _fade(y), _fade(z)
    a, b = perm[i] + j, perm[i + 1] + j
    aa, ab, ba, bb = perm[a] + k, perm[a + 1] + k, perm[b] + k, perm[b + 1] + k
    n00 = _corner(perm, aa, x, y, z)
    n00 += u * (_corner(perm, ba, x - 1, y, z) - n00)
    n10 = _corner(perm, ab, x, y - 1, z)
    n10 += u * (_corner(perm, bb, x - 1, y - 1, z) - n10)
    n01 = _corner(perm, aa + 1, x, y, z - 1)
    n01 += u * (_corner(perm, ba + 1, x - 1, y, z - 1) - n01)
    n11 = _corner(perm, ab + 1, x, y - 1, z - 1)
    n11 += u * (_corner(perm, bb + 1, x - 1, y - 1, z - 1) - n11)
    near = n00 + v * (n10 - n00)
    far = n01 + v * (n11 - n01)
    return near + w * (far - near)


@numba.njit(cache=True, nogil=True, fastmath=True)
def _octaves(lon, lat, hours, perm, turns, frequencies, amplitudes, rates, out):
    for n in range(lon.size):
        cos_lat = math.cos(lat[n] * DEG)
        x = cos_lat * math.cos(lon[n] * DEG)
        y = cos_lat * math.sin(lon[n] * DEG)
        z = math.sin(lat[n] * DEG)
        total = 0.0
        for o in range(frequencies.size):
            r, f = turns[o], frequencies[o]
            total += amplitudes[o] * _noise(
                perm,
                f * (r[0, 0] * x + r[0, 1] * y + r[0, 2] * z),
                f * (r[1, 0] * x + r[1, 1] * y + r[1, 2] * z),
                f * (r[2, 0] * x + r[2, 1] * y + r[2, 2] * z) + rates[o] * hours[n],
            )
        out[n] = total


@dataclass(frozen=True, eq=False)
class SphereNoise:
    """Octaves of gradient noise on the sphere, scaled to a standard deviation of about 1.

    Octave ``o`` has lattice cells ``largest_km / 2**o`` across; its amplitude is ``gain**o``
    (0.5: each octave half the last, a fractal surface); given ``hours``, its pattern
    renews over ``lifetime_hours * (cell / largest cell)**(2/3)`` (small eddies live
    shorter, as in turbulence).
    """

    perm: np.ndarray
    turns: np.ndarray  # (octaves, 3, 3) rotations
    frequencies: np.ndarray  # lattice cells per Earth radius
    amplitudes: np.ndarray
    rates: np.ndarray  # lattice cells per hour along the rotated z axis

    @classmethod
    def make(
        cls,
        seed: int | tuple[int, ...],
        *,
        largest_km: float,
        octaves: int,
        gain: float = 0.5,
        lifetime_hours: float = math.inf,
    ) -> SphereNoise:
        """The field drawn by ``seed``: octaves from ``largest_km`` down by halves."""
        rng = np.random.default_rng(seed)
        perm = rng.permutation(_TABLE)
        turns = np.stack([np.linalg.qr(rng.normal(size=(3, 3)))[0] for _ in range(octaves)])
        sizes = largest_km / 2.0 ** np.arange(octaves)
        amplitudes = gain ** np.arange(octaves)
        amplitudes /= _OCTAVE_STD * np.sqrt(np.sum(amplitudes**2))
        lifetimes = lifetime_hours * (sizes / largest_km) ** (2.0 / 3.0)
        return cls(
            np.concatenate([perm, perm, perm[:2]]).astype(np.int32),
            np.ascontiguousarray(turns),
            EARTH_RADIUS_KM / sizes,
            amplitudes,
            1.0 / lifetimes,
        )

    def __call__(self, lon: np.ndarray, lat: np.ndarray, hours=None) -> np.ndarray:
        """The field at each point (float32, the shape of ``lon``); ``hours`` (broadcast to
        it) move the pattern on, none keeps it as at hour 0."""
        shape = np.shape(lon)
        when = np.zeros(shape) if hours is None else np.broadcast_to(hours, shape)
        out = np.empty(shape, np.float32)
        _octaves(_flat(lon), _flat(lat), _flat(when), self.perm, self.turns,
                 self.frequencies, self.amplitudes, self.rates, out.reshape(-1))  # fmt: skip
        return out


def _flat(values) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64).reshape(-1)


@numba.njit(cache=True, nogil=True)
def _bilinear(raster, lon, lat, out):
    rows, columns = raster.shape
    for n in range(lon.size):
        y = min(max((90.0 - lat[n]) * rows / 180.0 - 0.5, 0.0), rows - 1.0)
        x = ((lon[n] + 180.0) * columns / 360.0 - 0.5) % columns
        i, j = min(int(y), rows - 2), int(x)
        dy, dx = y - i, x - j
        right = (j + 1) % columns
        top = raster[i, j] + dx * (raster[i, right] - raster[i, j])
        bottom = raster[i + 1, j] + dx * (raster[i + 1, right] - raster[i + 1, j])
        out[n] = top + dy * (bottom - top)


def sample(raster: np.ndarray, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """A global raster (row 0 along 90 N, column 0 at 180 W, values at cell centres) at each
    point, interpolated bilinearly (across 180 degrees too); float32 in the shape of ``lon``."""
    out = np.empty(np.shape(lon), np.float32)
    _bilinear(np.ascontiguousarray(raster, np.float32), _flat(lon), _flat(lat), out.reshape(-1))
    return out


def raster_lonlat(rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Cell-centre longitudes and latitudes (each (rows, 2 rows)) of a global raster."""
    lat = 90.0 - (np.arange(rows) + 0.5) * 180.0 / rows
    lon = -180.0 + (np.arange(2 * rows) + 0.5) * 180.0 / rows
    return np.meshgrid(lon, lat)

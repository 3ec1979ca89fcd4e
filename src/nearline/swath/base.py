"""The contract between granule formats and the compositing chain.

A :class:`Reader` knows one format: ``can_open`` sniffs a file, ``open`` gives a
:class:`Granule`. A granule hands out :class:`SwathBlock` s of contiguous scan lines in large
reads, plus two small things the compositor needs up front: the tie-point latitudes (to map
lines to latitude bands by sampling) and the calibration telemetry of the whole granule.

AVHRR GAC has 409 pixels per line; geolocation comes at 51 tie points per line (pixels
5, 13, ..., 405 counting from 1, as in the Level 1b files), and :func:`lonlat` interpolates
it to every pixel as the GAC readers do.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, fields, replace
from datetime import datetime
from pathlib import Path
from typing import ClassVar

import numba
import numpy as np

N_PIXELS = 409
TIE_COLUMNS = np.arange(4, N_PIXELS, 8)  # 51 tie points, 0-based
CHANNELS = ("1", "2", "3b", "4", "5")

_PER_LINE = (
    "times", "tie_lat", "tie_lon", "tie_sat_zenith", "tie_sun_zenith", "tie_rel_azimuth",
    "prt_counts", "ict_counts", "space_counts",
)  # fmt: skip


@dataclass
class SwathBlock:
    """Scan lines ``[first_line, first_line + n)`` of one granule, as read.

    ``counts`` are raw 10-bit counts, channel-major (5, n, 409) so each channel is one
    contiguous piece. Tie-point arrays are (n, 51) float32 degrees. Telemetry, per line as
    pygac's readers give it: ``prt_counts`` (n,) (0 every fifth line), ``ict_counts`` and
    ``space_counts`` (n, 3) for channels 3b, 4, 5.
    """

    granule: str
    platform: str
    first_line: int
    times: np.ndarray
    counts: np.ndarray
    tie_lat: np.ndarray
    tie_lon: np.ndarray
    tie_sat_zenith: np.ndarray
    tie_sun_zenith: np.ndarray
    tie_rel_azimuth: np.ndarray
    prt_counts: np.ndarray
    ict_counts: np.ndarray
    space_counts: np.ndarray

    @property
    def n_lines(self) -> int:
        return int(self.times.shape[0])

    def slice(self, start: int, stop: int) -> SwathBlock:
        """Lines ``[start, stop)`` of this block (relative), as views."""
        parts = {name: getattr(self, name)[start:stop] for name in _PER_LINE}
        return replace(
            self, first_line=self.first_line + start, counts=self.counts[:, start:stop], **parts
        )

    def nbytes(self) -> int:
        return sum(
            getattr(self, f.name).nbytes
            for f in fields(self)
            if isinstance(getattr(self, f.name), np.ndarray)
        )


@dataclass(frozen=True)
class Telemetry:
    """What the thermal calibration needs from a whole granule, line by line."""

    times: np.ndarray  # datetime64[ms] (n,)
    prt_counts: np.ndarray  # (n,)
    ict_counts: np.ndarray  # (n, 3)
    space_counts: np.ndarray  # (n, 3)


class Granule(ABC):
    """One open granule. Implementations keep these true:

    - ``read(start, stop)`` returns exactly lines ``[start, stop)``, reading each variable
      in one request; it raises :class:`~nearline.errors.GranuleError` naming the file if
      the bytes are not there.
    - ``platform`` is pygac's spacecraft name ("noaa19", "metopb", ...).
    """

    path: Path
    platform: str
    n_lines: int
    start_time: datetime  # UTC, of the first line
    end_time: datetime  # UTC, of the last line

    @abstractmethod
    def read_tie_latitudes(self) -> np.ndarray:
        """Tie-point latitudes of every line, (n_lines, 51) float32."""

    @abstractmethod
    def read_telemetry(self) -> Telemetry:
        """Calibration telemetry of every line."""

    @abstractmethod
    def read(self, start: int, stop: int) -> SwathBlock:
        """Lines ``[start, stop)``."""

    def read_into(self, start: int, stop: int, buffer: np.ndarray) -> int:
        """Lines ``[start, stop)`` packed into ``buffer`` in the wire layout; bytes used.

        Formats stored contiguously override this to read straight into the buffer.
        """
        from nearline.swath.wire import pack_block

        return pack_block(self.read(start, stop), buffer)

    def prefetch(self, start: int, stop: int) -> None:  # noqa: B027 - a hint; may do nothing
        """Hint that lines ``[start, stop)`` will be read soon (read-ahead)."""

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release the file."""

    def __enter__(self) -> Granule:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Reader(ABC):
    """A granule format, found by sniffing."""

    name: ClassVar[str]

    @classmethod
    @abstractmethod
    def can_open(cls, path: Path) -> bool:
        """True if ``path`` looks like this format (by its bytes, not its name)."""

    @abstractmethod
    def open(self, path: Path) -> Granule:
        """Open ``path``; raise GranuleError naming it if it is truncated or corrupt."""


@numba.njit(cache=True, nogil=True, inline="always")
def _wrap(d):
    if d > 180.0:
        return d - 360.0
    if d < -180.0:
        return d + 360.0
    return d


@numba.njit(cache=True, nogil=True, inline="always")
def _quadratic(a, b, c, t):
    """The parabola through (0, a), (1, b), (2, c) at ``t``."""
    return a * (t - 1) * (t - 2) / 2 - b * t * (t - 2) + c * t * (t - 1) / 2


@numba.njit(cache=True, nogil=True)
def _interpolate_line(tie_lon, tie_lat, columns, out_lon, out_lat):
    n_tie = tie_lon.size
    step = columns[1] - columns[0]
    polar = False
    for k in range(n_tie):
        if abs(tie_lat[k]) > 75.0:
            polar = True
    deg = np.pi / 180.0
    for j in range(out_lon.size):
        if not polar:
            # on a parabola through the three nearest tie points: pixels spread faster
            # toward the scan edges, and a straight line between tie points misses by km
            k = min(max(round((j - columns[0]) / step) - 1, 0), n_tie - 3)
            t = (j - columns[k]) / step
            base = tie_lon[k + 1]
            lon = base + _quadratic(_wrap(tie_lon[k] - base), 0.0, _wrap(tie_lon[k + 2] - base), t)
            out_lon[j] = _wrap(lon)
            lat = _quadratic(tie_lat[k], tie_lat[k + 1], tie_lat[k + 2], t)
            out_lat[j] = min(90.0, max(-90.0, lat))
            continue
        # near a pole, on the unit sphere: longitudes swing fast there
        k = min(max((j - columns[0]) // step, 0), n_tie - 2)
        w = (j - columns[k]) / step
        x0 = np.cos(tie_lat[k] * deg) * np.cos(tie_lon[k] * deg)
        y0 = np.cos(tie_lat[k] * deg) * np.sin(tie_lon[k] * deg)
        z0 = np.sin(tie_lat[k] * deg)
        x1 = np.cos(tie_lat[k + 1] * deg) * np.cos(tie_lon[k + 1] * deg)
        y1 = np.cos(tie_lat[k + 1] * deg) * np.sin(tie_lon[k + 1] * deg)
        z1 = np.sin(tie_lat[k + 1] * deg)
        x = x0 + w * (x1 - x0)
        y = y0 + w * (y1 - y0)
        z = z0 + w * (z1 - z0)
        out_lon[j] = np.arctan2(y, x) / deg
        out_lat[j] = np.arctan2(z, np.sqrt(x * x + y * y)) / deg


@numba.njit(cache=True, nogil=True)
def _interpolate(tie_lon, tie_lat, columns, out_lon, out_lat):
    for i in range(tie_lon.shape[0]):
        _interpolate_line(tie_lon[i], tie_lat[i], columns, out_lon[i], out_lat[i])


@numba.njit(cache=True, nogil=True)
def _interpolate_plain(tie, columns, longitude, out):
    n_tie = columns.size
    for i in range(tie.shape[0]):
        for j in range(out.shape[1]):
            k = min(max((j - columns[0]) // (columns[1] - columns[0]), 0), n_tie - 2)
            w = (j - columns[k]) / (columns[k + 1] - columns[k])
            if longitude:  # the short way round, then back into -180..180
                out[i, j] = _wrap(tie[i, k] + w * _wrap(tie[i, k + 1] - tie[i, k]))
            else:
                out[i, j] = (1.0 - w) * tie[i, k] + w * tie[i, k + 1]  # exact at both ends


def lonlat(block: SwathBlock) -> tuple[np.ndarray, np.ndarray]:
    """Longitude and latitude of every pixel, (n, 409) float32, from the tie points.

    On a parabola through the three nearest tie points along the scan line, longitudes
    unwrapped across the date line; for lines reaching beyond 75 degrees latitude, linearly
    on the unit sphere.
    """
    shape = (block.n_lines, N_PIXELS)
    lon, lat = np.empty(shape, np.float32), np.empty(shape, np.float32)
    _interpolate(block.tie_lon, block.tie_lat, TIE_COLUMNS, lon, lat)
    return lon, lat


def interpolate_tiepoints(tie: np.ndarray, *, longitude: bool = False) -> np.ndarray:
    """Any smooth tie-point field (angles) to every pixel, (n, 51) -> (n, 409) float32.

    Linear between tie points and linearly extrapolated to columns 0-3 and 405-408. With
    ``longitude=True`` each step goes the short way round, so a line crossing the date line
    stays in -180..180 without a jump through zero. For geolocation prefer :func:`lonlat`,
    which follows the curvature of the scan (linear is off by up to 2 km between tie points).
    """
    tie = np.asarray(tie)
    if tie.ndim != 2 or tie.shape[1] != TIE_COLUMNS.size:
        raise ValueError(f"tie-point field of shape {tie.shape}; expected (lines, 51)")
    out = np.empty((tie.shape[0], N_PIXELS), np.float32)
    _interpolate_plain(tie, TIE_COLUMNS, longitude, out)
    return out

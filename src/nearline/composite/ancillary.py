"""Ancillary maps the chain needs per pixel: land/sea, surface height, ozone.

- **Land/sea** — the GLOBE 30 arc-second (about 1 km) mask shipped by ``global-land-mask``
  (21600 x 43200; lakes count as land), kept as packed bits (117 MB) in the cache folder
  (``NEARLINE_CACHE``, default ``~/.cache/nearline``) and memory-mapped, so every worker
  process shares one copy through the page cache. Building it once takes a few seconds
  (the shipped file decompresses to 933 MB). Lookup: the cell ``global_land_mask.is_land``
  uses, row ``floor((90 - lat) * 120)``, column ``floor((lon + 180) * 120)``.
- **Surface height** — pvlib's ``data/Altitude.h5`` (dataset ``Altitude``, 2160 x 4320
  uint8, 5 arc-minutes, about 9 km; row 0 at 90 N, column 0 at 180 W; value ``v`` means
  ``28 v - 450`` m, 255 = no data read as 0 m, as ``pvlib.location.lookup_altitude``).
  Assembled by Mapzen from SRTM, GMTED2010 and ETOPO1; coarse (errors of 100 m and more).
- **Ozone** — :data:`OZONE_DU`, a constant climatological total column of 300 Dobson units
  (no ozone field is read). It is used in one place: channel 1 (0.58-0.68 um) lies in the
  Chappuis band, and :mod:`~nearline.composite.observe` divides its reflectance by the two-way
  transmittance ``exp(-tau (1/mu0 + 1/mu))`` with ``tau = OZONE_DU / 1000 *``
  :data:`OZONE_ABSORPTION_CH1` (0.09 per atm-cm: tau = 0.027, about 5-8 % of the signal at
  typical angles). Channel 2 has no ozone absorption worth correcting.

Lookups are numba kernels taking whole arrays: no Python work per pixel.
"""

from __future__ import annotations

import importlib.util
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

from nearline.errors import CompositeError

OZONE_DU = 300.0  # Dobson units, a constant climatological total column
OZONE_ABSORPTION_CH1 = 0.09  # per atm-cm (1000 DU): AVHRR channel 1 in the Chappuis band
LAND_ROWS, LAND_COLUMNS = 21600, 43200  # GLOBE, 120 cells per degree
HEIGHT_ROWS, HEIGHT_COLUMNS = 2160, 4320  # pvlib Altitude.h5, 12 cells per degree
LAND_FILE = "globe-land-bits.npy"


@numba.njit(cache=True, nogil=True, inline="always")
def land_at(bits, lon, lat):
    """True if (lon, lat) is land in the packed GLOBE mask ``bits`` (21600, 5400) uint8."""
    row = min(max(math.floor((90.0 - lat) * 120.0), 0), LAND_ROWS - 1)
    col = min(max(math.floor((lon + 180.0) * 120.0), 0), LAND_COLUMNS - 1)
    return (bits[row, col >> 3] >> (7 - (col & 7))) & 1 == 1


@numba.njit(cache=True, nogil=True, inline="always")
def height_at(codes, lon, lat):
    """Surface height (m) at (lon, lat) from pvlib's coded altitude grid."""
    row = min(max(math.floor((90.0 - lat) * 12.0), 0), HEIGHT_ROWS - 1)
    col = min(max(math.floor((lon + 180.0) * 12.0), 0), HEIGHT_COLUMNS - 1)
    code = codes[row, col]
    if code == 255:
        return 0.0
    return 28.0 * code - 450.0


@numba.njit(cache=True, nogil=True)
def _land(bits, lon, lat, out):
    for i in range(lon.size):
        out[i] = land_at(bits, lon[i], lat[i])


@numba.njit(cache=True, nogil=True)
def _height(codes, lon, lat, out):
    for i in range(lon.size):
        out[i] = height_at(codes, lon[i], lat[i])


@dataclass(frozen=True, eq=False)
class Ancillary:
    """The ancillary maps, loaded once per process (:meth:`load`) and passed explicitly.

    ``land_bits``: GLOBE land mask packed 8 columns per byte, most significant bit first;
    ``height_codes``: pvlib's coded altitude grid; ``ozone_du``: see :data:`OZONE_DU`.
    ``ozone_depth``: channel 1's ozone optical depth (vertical) from ``ozone_du``.
    Pickling sends only the cache folder: the receiving process maps the files itself.
    """

    land_bits: np.ndarray
    height_codes: np.ndarray
    ozone_du: float = OZONE_DU
    cache: Path | None = None

    @classmethod
    def load(cls, cache: Path | None = None) -> Ancillary:
        """Map the land mask (building it on first use) and read the altitude grid."""
        folder = Path(cache) if cache is not None else cache_folder()
        return cls(_land_bits(folder), _height_codes(), OZONE_DU, folder)

    @property
    def ozone_depth(self) -> float:
        return self.ozone_du / 1000.0 * OZONE_ABSORPTION_CH1

    def __reduce__(self) -> tuple:
        return (Ancillary.load, (self.cache,))

    def is_land(self, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
        """Boolean land mask at each point (same shape as ``lon``)."""
        out = np.empty(np.shape(lon), np.bool_)
        _land(self.land_bits, _flat(lon), _flat(lat), out.reshape(-1))
        return out

    def height(self, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
        """Surface height in metres at each point, float32."""
        out = np.empty(np.shape(lon), np.float32)
        _height(self.height_codes, _flat(lon), _flat(lat), out.reshape(-1))
        return out


def _flat(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64).reshape(-1)


def cache_folder() -> Path:
    """Where derived ancillary files are kept (``NEARLINE_CACHE`` or ``~/.cache/nearline``)."""
    folder = Path(os.environ.get("NEARLINE_CACHE", Path.home() / ".cache" / "nearline"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _land_bits(folder: Path) -> np.ndarray:
    path = folder / LAND_FILE
    if not path.exists():
        source = _package_folder("global_land_mask") / "globe_combined_mask_compressed.npz"
        with np.load(source) as data:
            ocean = data["mask"]  # True over the ocean, row 0 at 90 N, column 0 at 180 W
        if ocean.shape != (LAND_ROWS, LAND_COLUMNS):
            raise CompositeError(f"{source} holds a {ocean.shape} mask; expected GLOBE's")
        bits = np.packbits(~ocean, axis=1)
        del ocean
        temporary = path.with_name(f".{path.name}.{os.getpid()}.partial.npy")
        np.save(temporary, bits)
        os.replace(temporary, path)
    return np.load(path, mmap_mode="r").view(np.ndarray)


def _height_codes() -> np.ndarray:
    import h5py

    path = _package_folder("pvlib") / "data" / "Altitude.h5"
    with h5py.File(path, "r") as handle:
        codes = handle["Altitude"][...]
    if codes.shape != (HEIGHT_ROWS, HEIGHT_COLUMNS) or codes.dtype != np.uint8:
        raise CompositeError(f"{path} holds {codes.shape} {codes.dtype}; expected 2160x4320 uint8")
    return codes


def _package_folder(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise CompositeError(f"the {name} package is missing; reinstall nearline's dependencies")
    return Path(spec.origin).parent

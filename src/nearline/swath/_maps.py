"""Global ancillary maps from packages that ship real data, looked up per pixel in numba.

- **Land/sea** — the GLOBE 30 arc-second (about 1 km) mask shipped by ``global-land-mask``
  (21600 x 43200; lakes count as land), kept as packed bits (117 MB) in the cache folder
  (``NEARLINE_CACHE``, default ``~/.cache/nearline``) and memory-mapped, so every process
  shares one copy through the page cache. Building it once takes a few seconds (the shipped
  file decompresses to 933 MB). Lookup: the cell ``global_land_mask.is_land`` uses, row
  ``floor((90 - lat) * 120)``, column ``floor((lon + 180) * 120)``.
- **Surface height** — pvlib's ``data/Altitude.h5`` (dataset ``Altitude``, 2160 x 4320
  uint8, 5 arc-minutes, about 9 km; row 0 at 90 N, column 0 at 180 W; value ``v`` means
  ``28 v - 450`` m, 255 = no data read as 0 m, as ``pvlib.location.lookup_altitude``).
  Assembled by Mapzen from SRTM, GMTED2010 and ETOPO1; coarse (errors of 100 m and more).

The synthetic scene and the compositing chain read the same maps.
"""

from __future__ import annotations

import importlib.util
import math
import os
from pathlib import Path

import numba
import numpy as np

from nearline.errors import SwathError

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


def is_land(bits: np.ndarray, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """Boolean land mask at each point (same shape as ``lon``)."""
    out = np.empty(np.shape(lon), np.bool_)
    _land(bits, _flat(lon), _flat(lat), out.reshape(-1))
    return out


def height(codes: np.ndarray, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """Surface height in metres at each point, float32."""
    out = np.empty(np.shape(lon), np.float32)
    _height(codes, _flat(lon), _flat(lat), out.reshape(-1))
    return out


def _flat(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64).reshape(-1)


def cache_folder() -> Path:
    """Where derived ancillary files are kept (``NEARLINE_CACHE`` or ``~/.cache/nearline``)."""
    folder = Path(os.environ.get("NEARLINE_CACHE", Path.home() / ".cache" / "nearline"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def land_bits(folder: Path | None = None) -> np.ndarray:
    path = (folder or cache_folder()) / LAND_FILE
    if not path.exists():
        source = package_folder("global_land_mask") / "globe_combined_mask_compressed.npz"
        with np.load(source) as data:
            ocean = data["mask"]  # True over the ocean, row 0 at 90 N, column 0 at 180 W
        if ocean.shape != (LAND_ROWS, LAND_COLUMNS):
            raise SwathError(f"{source} holds a {ocean.shape} mask; expected GLOBE's")
        bits = np.packbits(~ocean, axis=1)
        del ocean
        temporary = path.with_name(f".{path.name}.{os.getpid()}.partial.npy")
        np.save(temporary, bits)
        os.replace(temporary, path)
    return np.load(path, mmap_mode="r").view(np.ndarray)


def height_codes() -> np.ndarray:
    import h5py

    path = package_folder("pvlib") / "data" / "Altitude.h5"
    with h5py.File(path, "r") as handle:
        codes = handle["Altitude"][...]
    if codes.shape != (HEIGHT_ROWS, HEIGHT_COLUMNS) or codes.dtype != np.uint8:
        raise SwathError(f"{path} holds {codes.shape} {codes.dtype}; expected 2160x4320 uint8")
    return codes


def package_folder(name: str) -> Path:
    """The folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise SwathError(f"the {name} package is missing; reinstall nearline's dependencies")
    return Path(spec.origin).parent

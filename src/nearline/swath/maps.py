"""Global ancillary maps from packages that ship real data, looked up by nearest cell.

- Land/sea: the GLOBE 1 km mask shipped by ``global-land-mask``, thinned once to 1/30
  degree (about 4 km, finer than a GAC pixel) and kept in the cache folder
  (``NEARLINE_CACHE``, default ``~/.cache/nearline``): loading the 1 km mask takes 2-3 s and
  900 MB, the thinned one 60 MB read in well under a second.
- Elevation: pvlib's global altitude map (5 arc-minutes, about 9 km; 28 m steps from -450 m,
  no data read as 0; assembled by Mapzen from SRTM, GMTED and ETOPO1).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

from nearline.errors import SwathError

LAND_THINNING = 4


@dataclass(frozen=True)
class GlobalMap:
    """A lat-lon raster whose row 0 starts at 90 N and column 0 at 180 W."""

    values: np.ndarray  # (rows, columns)

    def sample(self, lon: np.ndarray, lat: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Value of the cell holding each point (same shape as ``lon``)."""
        result = np.empty(np.shape(lon), self.values.dtype) if out is None else out
        _sample(self.values, np.ravel(lon), np.ravel(lat), result.reshape(-1))
        return result


@numba.njit(cache=True, nogil=True)
def _sample(values, lon, lat, out):
    rows, columns = values.shape
    for i in range(lon.size):
        row = int((90.0 - lat[i]) * rows / 180.0)
        col = int((lon[i] + 180.0) * columns / 360.0)
        row = min(max(row, 0), rows - 1)
        col = col % columns
        out[i] = values[row, col]


def cache_folder() -> Path:
    folder = Path(os.environ.get("NEARLINE_CACHE", Path.home() / ".cache" / "nearline"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def land_mask() -> GlobalMap:
    """True over land (GLOBE, thinned to about 4 km)."""
    cached = cache_folder() / f"globe-land-{LAND_THINNING}.npy"
    if not cached.exists():
        source = _package_folder("global_land_mask") / "globe_combined_mask_compressed.npz"
        with np.load(source) as data:
            # the shipped array says "ocean"; nearline keeps "land"
            thin = ~data["mask"][::LAND_THINNING, ::LAND_THINNING]
        temporary = cached.with_name(f".{cached.name}.{os.getpid()}.partial.npy")
        np.save(temporary, thin)
        os.replace(temporary, cached)
    return GlobalMap(np.load(cached))


def elevation() -> GlobalMap:
    """Surface height in metres (pvlib's altitude map)."""
    import h5py

    path = _package_folder("pvlib") / "data" / "Altitude.h5"
    with h5py.File(path, "r") as handle:
        coded = handle["Altitude"][...]
    metres = coded.astype(np.float32) * 28.0 - 450.0
    metres[coded == 255] = 0.0
    return GlobalMap(metres)


def _package_folder(name: str) -> Path:
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise SwathError(f"the {name} package is missing; reinstall nearline's dependencies")
    return Path(spec.origin).parent

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
  Chappuis band, and :mod:`~nearline.composite._observe` divides its reflectance by the two-way
  transmittance ``exp(-tau (1/mu0 + 1/mu))`` with ``tau = OZONE_DU / 1000 *``
  :data:`OZONE_ABSORPTION_CH1` (0.09 per atm-cm: tau = 0.027, about 5-8 % of the signal at
  typical angles). Channel 2 has no ozone absorption worth correcting.

Lookups are numba kernels taking whole arrays: no Python work per pixel.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nearline.swath import cache_folder, height, height_at, height_codes, is_land, land_at
from nearline.swath import land_bits as load_land_bits

OZONE_DU = 300.0  # Dobson units, a constant climatological total column
OZONE_ABSORPTION_CH1 = 0.09  # per atm-cm (1000 DU): AVHRR channel 1 in the Chappuis band

__all__ = ["Ancillary", "height_at", "land_at"]


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
        return cls(load_land_bits(folder), height_codes(), OZONE_DU, folder)

    @property
    def ozone_depth(self) -> float:
        return self.ozone_du / 1000.0 * OZONE_ABSORPTION_CH1

    def __reduce__(self) -> tuple:
        return (Ancillary.load, (self.cache,))

    def is_land(self, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
        """Boolean land mask at each point (same shape as ``lon``)."""
        return is_land(self.land_bits, lon, lat)

    def height(self, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
        """Surface height in metres at each point, float32."""
        return height(self.height_codes, lon, lat)

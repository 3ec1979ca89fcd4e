"""What a synthetic granule really shows, per pixel, next to it: the truth a cloud mask and
a composite are scored against.

``nearline synth avhrr --truth`` writes, for granule ``DIR/NAME``, the file
``DIR/truth/NAME.truth.nc`` (in a sub-folder, so a folder of granules given to ``nearline
composite`` does not take it for a granule) with three (line, pixel) variables on the
granule's lines and pixels:

- ``cloud_fraction`` (0-1): the part of the pixel the generator covered with cloud, thick
  or thin (the synthetic clouds' edges are broken: partly covered pixels are the rule
  there);
- ``cloud_optical_depth``: the visible optical depth of that cloud (0 where none; up to 40
  in the cores, below 1 for the thin cirrus at the edges; truth written before the clouds
  had edges has none, read as None);
- ``surface_ndvi``: NDVI of the surface alone (before clouds, ozone and the sensor);
- ``land`` (0/1): the surface the generator drew (GLOBE land mask at the ellipsoid position);
- ``snow_fraction`` (0-1): the part of the surface under snow (``--snow``; truth written
  before snow existed has none, read as 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nearline.errors import GranuleError

TRUTH_FOLDER = "truth"
SUFFIX = ".truth.nc"


@dataclass(frozen=True)
class Truth:
    """Per-pixel truth of one granule; each (lines, 409)."""

    cloud_fraction: np.ndarray  # float32 0-1
    surface_ndvi: np.ndarray  # float32
    land: np.ndarray  # bool
    snow_fraction: np.ndarray | None = None  # float32 0-1; None: no snow
    optical_depth: np.ndarray | None = None  # float32, of the cloud; None: not written

    def slice(self, start: int, stop: int) -> Truth:
        """Lines ``[start, stop)``."""
        snow, depth = (None if a is None else a[start:stop]
                       for a in (self.snow_fraction, self.optical_depth))  # fmt: skip
        return Truth(
            self.cloud_fraction[start:stop],
            self.surface_ndvi[start:stop],
            self.land[start:stop],
            snow,
            depth,
        )


def truth_path(granule: str | Path, folder: str | Path | None = None) -> Path:
    """Where the truth of ``granule`` lives: in ``folder`` if given, else in the ``truth``
    folder next to it."""
    granule = Path(granule)
    folder = granule.parent / TRUTH_FOLDER if folder is None else Path(folder)
    return folder / (granule.name + SUFFIX)


def write_truth(path: Path, truth: Truth) -> None:
    """Write ``truth`` to ``path`` (netCDF-4, zlib-compressed)."""
    import netCDF4

    with netCDF4.Dataset(path, "w", format="NETCDF4") as dataset:
        dataset.setncatts({"Conventions": "CF-1.10", "title": "synthetic AVHRR GAC truth"})
        dataset.createDimension("line", truth.land.shape[0])
        dataset.createDimension("pixel", truth.land.shape[1])
        for name, values, dtype, meaning in (
            ("cloud_fraction", truth.cloud_fraction, "f4", "fraction of the pixel under cloud"),
            ("surface_ndvi", truth.surface_ndvi, "f4", "NDVI of the surface before clouds"),
            ("land", truth.land.astype(np.uint8), "u1", "1 land, 0 sea (as drawn)"),
            ("snow_fraction", truth.snow_fraction, "f4", "fraction of the surface under snow"),
            ("cloud_optical_depth", truth.optical_depth, "f4", "visible optical depth"),
        ):
            if values is None:
                continue
            variable = dataset.createVariable(name, dtype, ("line", "pixel"), zlib=True)
            variable.long_name = meaning
            variable[:] = values


def read_truth(granule: str | Path, folder: str | Path | None = None) -> Truth:
    """The truth of ``granule`` written by ``nearline synth avhrr --truth`` (see
    :func:`truth_path`)."""
    import netCDF4

    path = truth_path(granule, folder)
    if not path.is_file():
        raise GranuleError(
            f"no truth for granule {granule}: expected {path} (write the day with "
            "`nearline synth avhrr --truth`)"
        )
    with netCDF4.Dataset(path) as dataset:
        dataset.set_auto_mask(False)
        snow, depth = (dataset.variables.get(name)
                       for name in ("snow_fraction", "cloud_optical_depth"))  # fmt: skip
        return Truth(
            np.asarray(dataset["cloud_fraction"][:], np.float32),
            np.asarray(dataset["surface_ndvi"][:], np.float32),
            np.asarray(dataset["land"][:]).astype(bool),
            None if snow is None else np.asarray(snow[:], np.float32),
            None if depth is None else np.asarray(depth[:], np.float32),
        )

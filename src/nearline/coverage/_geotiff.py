"""A subset of one time as a Cloud-Optimized GeoTIFF (rasterio fills a dataset in memory,
GDAL's COG driver lays it out; rio-cogeo's validator passes it): float32 physical values
(packing undone, NaN where there is none), one raster band per coverage band named after it,
the grid's CRS as WKT, tiles of 256 and overviews.

The dataset in memory is GDAL's MEM, not a GeoTIFF: GDAL writes a CRS GeoTIFF has no code for
(IGH) as an ESRI citation, looking its unnamed parts up in PROJ's database, some 10 ms a
time, and a GeoTIFF in memory copied to the COG had it written twice."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nearline.coverage._subset import Subset
from nearline.durable import publishing
from nearline.errors import CoverageError

BLOCK = 256


def write_geotiff(subset: Subset, path: Path) -> Path:
    """Write ``subset`` (one layer) to ``path`` as a Cloud-Optimized GeoTIFF.

    Parameters
    ----------
    subset
        What :func:`~nearline.coverage.read_subset` read, of one time.
    path
        The file to write; replaced if it exists.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    CoverageError
        The subset holds several times (GeoTIFF has no time axis).
    """
    import pyproj
    import rasterio
    from rasterio.crs import CRS
    from rasterio.io import MemoryFile
    from rasterio.shutil import copy
    from rasterio.transform import Affine

    if len(subset.layers) != 1:
        raise CoverageError(
            f"GeoTIFF holds one time, and this request covers {len(subset.layers)} items "
            f"({subset.layers[0].name} ...); narrow the time to one, or ask for netCDF"
        )
    target = subset.target
    xmin, ymin, xmax, ymax = target.extent
    wkt = pyproj.CRS.from_user_input(subset.grid.crs).to_wkt()
    profile = {
        "driver": "MEM", "dtype": "float32", "count": len(subset.bands),
        "width": target.width, "height": target.height, "crs": CRS.from_wkt(wkt),
        "transform": Affine(
            (xmax - xmin) / target.width, 0.0, xmin, 0.0, (ymin - ymax) / target.height, ymax
        ),
        "nodata": np.nan,
    }  # fmt: skip
    with (
        publishing(path) as temporary,
        rasterio.Env(GDAL_NUM_THREADS="1"),
        MemoryFile() as memory,
        memory.open(**profile) as raster,
    ):
        for number, (name, info) in enumerate(subset.bands.items(), 1):
            raster.write(info.physical(subset.values[name][0]).astype(np.float32), number)
            raster.set_band_description(number, name)
            raster.update_tags(number, long_name=info.long_name, units=info.units)
        copy(raster, str(temporary), driver="COG", COMPRESS="DEFLATE",
             BLOCKSIZE=str(BLOCK), NUM_THREADS="1")  # fmt: skip
    return path

"""A subset of one time as a Cloud-Optimized GeoTIFF (rasterio fills a dataset in memory,
GDAL's COG driver lays it out; rio-cogeo's validator passes it): float32 physical values
(packing undone, NaN where there is none), one raster band per coverage band named after it,
the grid's CRS as WKT, tiles of 256 and overviews.

GDAL writes a CRS GeoTIFF has no code for (IGH) as an ESRI citation, looking the name of each
of its parts up in PROJ's database: an unnamed ("unknown") datum and ellipsoid took some 10 ms
a time, as much as the rest of a small subset's file. So the grid's sphere is named as EPSG
names it when it is one of EPSG's (the same CRS, its parts found at once), and the dataset in
memory is GDAL's MEM, not a GeoTIFF, which had the CRS written twice."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from nearline.coverage._subset import Subset
from nearline.durable import publishing
from nearline.errors import CoverageError

BLOCK = 256
# EPSG's geographic CRSs a grid's unnamed one may be: the Clarke 1866 authalic sphere
# (6,370,997 m, the Pathfinder grids'), the 6,371,007 m authalic sphere, WGS 84
NAMED_GEOGRAPHIC = (4052, 4047, 4326)


@functools.lru_cache(maxsize=16)  # a few grids; finding the name takes a few ms
def named_crs(crs: str) -> str:
    """``crs`` as WKT, its geographic CRS named as EPSG names it if it is one of
    NAMED_GEOGRAPHIC and has no name of its own (see the module's note).

    Parameters
    ----------
    crs
        A CRS as PROJ takes it (a grid's ``crs``).

    Returns
    -------
    str
        WKT2 of the same CRS.
    """
    import pyproj

    found = pyproj.CRS.from_user_input(crs)
    geographic = found.geodetic_crs
    if not found.is_projected or geographic is None or geographic.name != "unknown":
        return found.to_wkt()
    for code in NAMED_GEOGRAPHIC:
        candidate = pyproj.CRS.from_epsg(code)
        if candidate.equals(geographic, ignore_axis_order=True):
            described = found.to_json_dict()
            described["base_crs"] = {
                key: value for key, value in candidate.to_json_dict().items() if key != "$schema"
            }
            return pyproj.CRS.from_json_dict(described).to_wkt()
    return found.to_wkt()


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
    wkt = named_crs(subset.grid.crs)
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

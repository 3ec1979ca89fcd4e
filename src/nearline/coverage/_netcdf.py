"""A subset as CF netCDF-4: (time, y, x) bands packed as the source stores them, with their
attributes, the time of each layer (and its period as bounds) and the grid's ``crs`` variable
(``crs_wkt``, ``GeoTransform``), so xarray, GDAL and Panoply place it.

Written under a hidden name and published by rename: a failure leaves no file that looks
complete."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nearline.coverage._subset import Subset
from nearline.durable import publishing
from nearline.hdf_lock import HDF_LOCK

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
TIME_UNITS = "seconds since 1970-01-01 00:00:00"
TYPED_ATTRIBUTES = ("valid_range", "valid_min", "valid_max", "flag_masks", "flag_values")
PRODUCT = "nearline-coverage-subset"


def write_netcdf(subset: Subset, path: Path) -> Path:
    """Write ``subset`` to ``path`` as CF netCDF-4.

    Parameters
    ----------
    subset
        What :func:`~nearline.coverage.read_subset` read.
    path
        The file to write; replaced if it exists.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    import netCDF4

    # a server writes subsets on several threads, beside tiles read with netCDF4 too
    with HDF_LOCK, publishing(path) as temporary, netCDF4.Dataset(temporary, "w") as dataset:
        _define(netCDF4, dataset, subset)
    return path


def _define(netCDF4: Any, dataset: Any, subset: Subset) -> None:
    grid = subset.output_grid
    x, y, crs_attrs = grid.coordinates()
    x_attrs, y_attrs = grid.axis_attributes()
    dataset.setncatts({
        "Conventions": "CF-1.10",
        "product": PRODUCT,
        "title": f"subset of {', '.join(layer.name for layer in subset.layers)}",
        "source": f"nearline coverage of the grid {subset.grid.name}",
    })  # fmt: skip
    dataset.createDimension("time", len(subset.layers))
    dataset.createDimension("bounds", 2)
    dataset.createDimension("y", grid.height)
    dataset.createDimension("x", grid.width)
    for name, values, attrs in (("x", x, x_attrs), ("y", y, y_attrs)):
        variable = dataset.createVariable(name, "f8", (name,))
        variable.setncatts(attrs)
        variable[:] = values
    seconds = [
        [(layer.start - EPOCH).total_seconds(), (layer.end - EPOCH).total_seconds()]
        for layer in subset.layers
    ]
    time = dataset.createVariable("time", "f8", ("time",))
    time.setncatts({"standard_name": "time", "units": TIME_UNITS, "calendar": "standard",
                    "axis": "T", "bounds": "time_bounds"})  # fmt: skip
    time[:] = [start for start, _ in seconds]
    dataset.createVariable("time_bounds", "f8", ("time", "bounds"))[:] = seconds
    crs = dataset.createVariable("crs", "i4", ())
    crs.setncatts(crs_attrs)
    height, width = grid.height, grid.width
    for name, info in subset.bands.items():
        variable = dataset.createVariable(
            name, info.dtype, ("time", "y", "x"), fill_value=info.fill, zlib=True, complevel=1,
            chunksizes=(1, min(height, 256), min(width, 256)),
        )  # fmt: skip
        variable.set_auto_maskandscale(False)
        attrs = {key: _typed(key, value, info.dtype) for key, value in info.attrs.items()}
        if info.scale != 1.0:
            attrs["scale_factor"] = info.scale
        if info.offset != 0.0:
            attrs["add_offset"] = info.offset
        variable.setncatts({**attrs, "grid_mapping": "crs"})
        variable[...] = subset.values[name]


def _typed(key: str, value: Any, dtype: np.dtype) -> Any:
    """An attribute CF wants in the variable's own type (valid_range, flag_masks, ...)."""
    return np.asarray(value, dtype) if key in TYPED_ATTRIBUTES else value

"""``save_result``: a cube written as netCDF (one variable a band, CF coordinates and the
grid mapping GDAL, xarray and rioxarray read) or as GeoTIFF (one raster, a band a layer),
published by rename so that nothing half-written looks complete."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from nearline.errors import OpenEOError

FORMATS = {  # what a client names (openEO's names are case-insensitive) -> ours
    "netcdf": "netCDF",
    "nc": "netCDF",
    "gtiff": "GTiff",
    "geotiff": "GTiff",
    "json": "JSON",
}
MEDIA_TYPES = {
    "netCDF": "application/x-netcdf",
    "GTiff": "image/tiff; application=geotiff",
    "JSON": "application/json",
}
SUFFIXES = {"netCDF": ".nc", "GTiff": ".tif", "JSON": ".json"}


@dataclass(frozen=True)
class Saved:
    """A result file: where it lies, its format and its media type."""

    path: Path
    format: str

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.format]


def output_format(name: Any) -> str:
    """The format ``name`` stands for (``netCDF``, ``GTiff``, ``JSON``).

    Raises
    ------
    OpenEOError
        A format nearline does not write (``FormatUnsuitable``, 400).
    """
    found = FORMATS.get(str(name).lower())
    if found is None:
        raise OpenEOError(
            f"save_result: format {name!r} is not written here; GET /file_formats lists "
            "netCDF and GTiff", status=400, openeo_code="FormatUnsuitable",
        )  # fmt: skip
    return found


def save(data: Any, format_name: Any, folder: Path, *, stem: str = "result") -> Saved:
    """Write ``data`` (a cube, or a plain value for JSON) in ``format_name`` into ``folder``.

    Parameters
    ----------
    data
        An ``xarray.DataArray`` cube (``t``, ``bands``, ``y``, ``x``, any of them reduced
        away), or a number or list for JSON.
    format_name
        netCDF, GTiff or JSON, as a client names it.
    folder
        Where the file goes.
    stem
        The file's name without its suffix.

    Raises
    ------
    OpenEOError
        An unknown format, an empty cube (``DataCubeEmpty``), or a cube GeoTIFF cannot hold
        (``FormatUnsuitable``: more than one time, or no x and y).
    """
    chosen = output_format(format_name)
    final = folder / f"{stem}{SUFFIXES[chosen]}"
    partial = folder / f".{stem}{SUFFIXES[chosen]}.partial"
    if chosen == "JSON" or not isinstance(data, xr.DataArray):
        partial.write_text(json.dumps(_plain(data)))
        os.replace(partial, final)
        return Saved(final, "JSON")
    if data.size == 0:
        raise OpenEOError("save_result: the cube is empty: widen its extents",
                          status=400, openeo_code="DataCubeEmpty")  # fmt: skip
    if chosen == "GTiff":
        _write_geotiff(data, partial)
    else:
        _dataset(data).to_netcdf(partial, engine="netcdf4")
    os.replace(partial, final)
    return Saved(final, chosen)


def _dataset(cube: xr.DataArray) -> xr.Dataset:
    """The cube as a Dataset: a variable a band (``data`` if it has no bands), with the CRS
    written as CF's grid mapping (rioxarray's ``spatial_ref``)."""
    crs = cube.rio.crs
    cube = cube.drop_vars(["spatial_ref", "common_name"], errors="ignore")
    cube.attrs = {key: value for key, value in cube.attrs.items() if _attribute(value)}
    if "bands" in cube.dims:
        dataset = cube.to_dataset(dim="bands")
        dataset = dataset.rename({name: str(name) for name in dataset.data_vars})
    else:
        dataset = cube.to_dataset(name="data")
    if crs is not None and {"x", "y"} <= set(cube.dims):
        dataset = dataset.rio.write_crs(crs).rio.write_coordinate_system()
    dataset.attrs["Conventions"] = "CF-1.8"
    dataset.attrs["source"] = "nearline openEO back-end"
    return dataset


def _write_geotiff(cube: xr.DataArray, path: Path) -> None:
    if "t" in cube.dims:
        if cube.sizes["t"] != 1:
            raise OpenEOError(
                f"save_result: GTiff holds one raster, and this cube has {cube.sizes['t']} "
                "times; reduce the t dimension first, or save it as netCDF",
                status=400, openeo_code="FormatUnsuitable",
            )  # fmt: skip
        cube = cube.isel(t=0, drop=True)
    if not {"x", "y"} <= set(cube.dims):
        raise OpenEOError("save_result: GTiff needs a cube with x and y dimensions",
                          status=400, openeo_code="FormatUnsuitable")  # fmt: skip
    names = [str(name) for name in cube["bands"].values] if "bands" in cube.dims else ["data"]
    raster = cube.transpose("bands", "y", "x") if "bands" in cube.dims else cube
    raster = raster.astype(np.float32)
    raster.attrs = {"long_name": tuple(names)}  # rioxarray's band descriptions
    raster.rio.to_raster(path, driver="GTiff", tiled=True, compress="deflate")


def _attribute(value: Any) -> bool:
    return isinstance(value, str | int | float | np.number)


def _plain(value: Any) -> Any:
    """A process's result as JSON values."""
    if isinstance(value, xr.DataArray | np.ndarray):
        return _plain(np.asarray(value).tolist())
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value

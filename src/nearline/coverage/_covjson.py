"""Samples as CoverageJSON (OGC Community Standard 21-069r2), EDR's own format, and as CF
netCDF on longitude and latitude.

A lattice is a ``Grid`` coverage (axes x, y, t); one point a ``PointSeries``; several points
a ``CoverageCollection`` of point series. Values are physical (packing undone), ``null``
where there is none; longitudes and latitudes are CRS84.
"""

from __future__ import annotations

import math
from datetime import UTC
from pathlib import Path
from typing import Any

import numpy as np

from nearline.coverage._layers import BandInfo
from nearline.coverage._samples import Samples
from nearline.durable import publishing

CRS84 = "http://www.opengis.net/def/crs/OGC/1.3/CRS84"
MEDIA_TYPE = "application/prs.coverage+json"


def _iso(moment: Any) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _numbers(values: np.ndarray) -> list[float | None]:
    return [None if math.isnan(v) else v for v in values.ravel().tolist()]


def _parameter(info: BandInfo) -> dict[str, Any]:
    return {
        "type": "Parameter",
        "description": {"en": info.long_name},
        "unit": {"symbol": info.units},
        "observedProperty": {"id": info.name, "label": {"en": info.long_name}},
    }


def _referencing(*, temporal: bool = True) -> list[dict[str, Any]]:
    found = [{"coordinates": ["x", "y"], "system": {"type": "GeographicCRS", "id": CRS84}}]
    if temporal:
        found.append({"coordinates": ["t"], "system": {"type": "TemporalRS",
                                                       "calendar": "Gregorian"}})  # fmt: skip
    return found


def coveragejson(samples: Samples) -> dict[str, Any]:
    """The samples as a CoverageJSON document (a dict for a JSON encoder).

    Parameters
    ----------
    samples
        What :func:`~nearline.coverage.sample_points` read: a lattice (2-D ``shape``) or
        points.
    """
    times = [_iso(layer.start) for layer in samples.layers]
    parameters = {name: _parameter(info) for name, info in samples.bands.items()}
    physical = {name: info.physical(samples.values[name]) for name, info in samples.bands.items()}
    if len(samples.shape) == 2:
        rows, cols = samples.shape
        lon = samples.lon.reshape(samples.shape)[0]
        lat = samples.lat.reshape(samples.shape)[:, 0]
        domain = {"type": "Domain", "domainType": "Grid", "axes": {
            "x": {"values": lon.tolist()}, "y": {"values": lat.tolist()}, "t": {"values": times},
        }, "referencing": _referencing()}  # fmt: skip
        ranges = {
            name: {"type": "NdArray", "dataType": "float", "axisNames": ["t", "y", "x"],
                   "shape": [len(times), rows, cols], "values": _numbers(values)}
            for name, values in physical.items()
        }  # fmt: skip
        return {"type": "Coverage", "domain": domain, "parameters": parameters,
                "ranges": ranges}  # fmt: skip
    coverages = []
    for point in range(samples.lon.size):
        domain = {"type": "Domain", "domainType": "PointSeries", "axes": {
            "x": {"values": [float(samples.lon[point])]},
            "y": {"values": [float(samples.lat[point])]},
            "t": {"values": times},
        }, "referencing": _referencing()}  # fmt: skip
        ranges = {
            name: {"type": "NdArray", "dataType": "float", "axisNames": ["t"],
                   "shape": [len(times)], "values": _numbers(values[:, point])}
            for name, values in physical.items()
        }  # fmt: skip
        coverages.append({"type": "Coverage", "domain": domain, "ranges": ranges})
    if len(coverages) == 1:
        return {**coverages[0], "parameters": parameters}
    return {"type": "CoverageCollection", "domainType": "PointSeries", "parameters": parameters,
            "referencing": _referencing(), "coverages": coverages}  # fmt: skip


def write_samples_netcdf(samples: Samples, path: Path) -> Path:
    """The samples as CF netCDF-4 (xarray writes it): bands over (time, lat, lon) for a
    lattice, (time, point) with ``lon``/``lat`` coordinates for points; physical values,
    NaN where there is none. Published by rename, as every output is.

    Parameters
    ----------
    samples
        What :func:`~nearline.coverage.sample_points` read.
    path
        The file to write.
    """
    import pandas as pd
    import xarray as xr

    times = pd.DatetimeIndex([layer.start for layer in samples.layers]).tz_convert(None)
    variables, coords = {}, {"time": ("time", times)}
    lattice = len(samples.shape) == 2
    if lattice:
        coords["lat"] = ("lat", samples.lat.reshape(samples.shape)[:, 0])
        coords["lon"] = ("lon", samples.lon.reshape(samples.shape)[0])
    else:
        coords["lat"] = ("point", samples.lat)
        coords["lon"] = ("point", samples.lon)
    dims = ("time", "lat", "lon") if lattice else ("time", "point")
    for name, info in samples.bands.items():
        values = info.physical(samples.values[name]).reshape(len(times), *samples.shape)
        attrs = {"long_name": info.long_name, "units": info.units}
        variables[name] = (dims, values.astype(np.float32), attrs)
    dataset = xr.Dataset(variables, coords=coords, attrs={"Conventions": "CF-1.10"})
    dataset["lat"].attrs.update(standard_name="latitude", units="degrees_north")
    dataset["lon"].attrs.update(standard_name="longitude", units="degrees_east")
    with publishing(path) as temporary:
        dataset.to_netcdf(temporary, engine="netcdf4")
    return path

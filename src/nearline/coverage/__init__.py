"""coverage: parts of gridded collections (nearline's composites, any file of 2-D bands on
a named grid) read by box, band, time and scale, reading only the chunks a request needs,
and written as CF netCDF-4, Cloud-Optimized GeoTIFF or CoverageJSON. A library with no HTTP:
the service's OGC API - Coverages and EDR routes (``nearline.api``) call it."""

from __future__ import annotations

from nearline.coverage._covjson import MEDIA_TYPE as COVERAGEJSON
from nearline.coverage._covjson import coveragejson, write_samples_netcdf
from nearline.coverage._geotiff import named_crs, write_geotiff
from nearline.coverage._layers import (
    BandInfo,
    CountingFile,
    Layer,
    read_attributes,
    read_bands,
    read_window,
)
from nearline.coverage._netcdf import write_netcdf
from nearline.coverage._samples import Samples, lattice, sample_points
from nearline.coverage._subset import (
    DEFAULT_MAX_VALUES,
    LIMIT_SETTING,
    Subset,
    check_limit,
    choose_bands,
    read_subset,
)
from nearline.coverage._target import (
    Box,
    Target,
    box_target,
    cell_degrees,
    native_target,
    whole_grid,
    window_target,
)

__all__ = [
    "COVERAGEJSON",
    "DEFAULT_MAX_VALUES",
    "LIMIT_SETTING",
    "BandInfo",
    "Box",
    "CountingFile",
    "Layer",
    "Samples",
    "Subset",
    "Target",
    "box_target",
    "cell_degrees",
    "check_limit",
    "choose_bands",
    "coveragejson",
    "lattice",
    "named_crs",
    "native_target",
    "read_attributes",
    "read_bands",
    "read_subset",
    "read_window",
    "sample_points",
    "whole_grid",
    "window_target",
    "write_geotiff",
    "write_netcdf",
    "write_samples_netcdf",
]

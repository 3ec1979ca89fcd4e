"""netCDF-4 files following CF: what most Earth-science tools open without being told how.

Written uncompressed and contiguous for speed, unless a variable's encoding asks for chunks
and compression; no fill pass (every byte gets written by the
blocks) and no mask/scale conversions, so values round-trip bit for bit. The output step is a
scalar ``step`` coordinate that every data variable names in its ``coordinates`` attribute.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nearline.burst._base import Sink, SinkFile, VariableSpec
from nearline.errors import BurstError
from nearline.hdf_lock import HDF_LOCK

STEP = "step"


def _storage(spec: VariableSpec, dataset: Any) -> dict[str, Any]:
    """createVariable's storage keywords: contiguous unless the spec asks for chunks."""
    encoding = dict(spec.encoding)
    chunks = encoding.get("chunksizes")
    if chunks is None:
        contiguous = not any(dataset.dimensions[dim].isunlimited() for dim in spec.dims)
        return {"contiguous": contiguous}
    storage: dict[str, Any] = {"chunksizes": tuple(int(c) for c in chunks)}
    if encoding.get("compression"):
        storage["compression"] = encoding["compression"]
        storage["complevel"] = int(encoding.get("complevel", 1))
        storage["shuffle"] = bool(encoding.get("shuffle", True))
    return storage


class NetCDFSink(Sink):
    """CF-1.10 netCDF-4 files written with netCDF4-python."""

    name = "netcdf"
    extension = "nc"

    def create(self, path: Path, *, step: int) -> SinkFile:
        return _NetCDFFile(path, step)


class _NetCDFFile(SinkFile):
    def __init__(self, path: Path, step: int) -> None:
        import netCDF4

        self._path = path
        self._variables: dict[str, Any] = {}
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with HDF_LOCK:
            self._dataset = netCDF4.Dataset(path, "w", format="NETCDF4")
            self._dataset.setncatts(
                {"Conventions": "CF-1.10", "history": f"{stamp} written by nearline burst"}
            )
            coordinate = self._dataset.createVariable(STEP, "i8", (), fill_value=False)
            coordinate.long_name = "output step"
            coordinate.assignValue(np.int64(step))

    def define(self, spec: VariableSpec) -> None:
        with HDF_LOCK:
            self._define(spec)

    def _define(self, spec: VariableSpec) -> None:
        dataset = self._dataset
        for dim, size in zip(spec.dims, spec.shape, strict=True):
            if dim == STEP:
                raise BurstError(
                    f"variable {spec.name!r} of {self._path}: the dimension name 'step' is "
                    "taken by the step coordinate; pass other `dims`"
                )
            existing = dataset.dimensions.get(dim)
            if existing is None:
                dataset.createDimension(dim, size)  # size 0 makes it unlimited, still empty
            elif len(existing) != size:
                raise BurstError(
                    f"variable {spec.name!r} of {self._path}: dimension {dim!r} already has "
                    f"size {len(existing)}, but this variable needs size {size} along it; "
                    "pass distinct `dims` for axes of different lengths"
                )
        attrs = dict(spec.attrs)
        fill = attrs.pop("_FillValue", False)  # netCDF only accepts it at creation
        storage = _storage(spec, dataset)
        variable = dataset.createVariable(
            spec.name, np.dtype(spec.dtype), spec.dims, fill_value=fill, **storage
        )
        variable.set_auto_maskandscale(False)
        coordinates = attrs.pop("coordinates", "")
        attrs["coordinates"] = f"{coordinates} {STEP}".strip()
        for key, value in attrs.items():
            try:  # netCDF has no booleans: store them as 0/1 bytes, as xarray does
                variable.setncattr(key, np.int8(value) if isinstance(value, bool) else value)
            except TypeError:
                raise BurstError(
                    f"variable {spec.name!r}: attribute {key}={value!r} cannot be stored in "
                    "netCDF; use a string, a number or a list of them"
                ) from None
        self._variables[spec.name] = variable

    def set_attributes(self, attrs: Mapping[str, Any]) -> None:
        with HDF_LOCK:
            self._dataset.setncatts(dict(attrs))

    def write(self, name: str, data: np.ndarray, *, start: tuple[int, ...]) -> None:
        if data.size == 0:
            return
        variable = self._variables[name]
        slices = tuple(slice(s, s + n) for s, n in zip(start, data.shape, strict=True))
        with HDF_LOCK:
            if data.ndim == 0:
                variable.assignValue(data)
            else:
                variable[slices] = data

    def close(self) -> None:
        with HDF_LOCK:
            if self._dataset.isopen():
                self._dataset.close()

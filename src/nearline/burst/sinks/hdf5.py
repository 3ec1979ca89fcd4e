"""Plain HDF5 files: one contiguous dataset per variable, for tools that speak h5py or C HDF5.

HDF5 has no standard for dimension names short of netCDF's dimension scales, so each dataset
carries its names in a ``dims`` attribute; the root carries the output ``step``. Datasets are
contiguous, uncompressed and never pre-filled, since the blocks write every byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from nearline.burst._base import Sink, SinkFile, VariableSpec
from nearline.errors import BurstError


class HDF5Sink(Sink):
    """HDF5 files written with h5py (latest file format, creation order kept)."""

    name = "hdf5"
    extension = "h5"

    def create(self, path: Path, *, step: int) -> SinkFile:
        return _HDF5File(path, step)


class _HDF5File(SinkFile):
    def __init__(self, path: Path, step: int) -> None:
        import h5py

        self._h5py = h5py
        self._file = h5py.File(path, "w", libver="latest", track_order=True)
        self._file.attrs["step"] = np.int64(step)
        self._datasets: dict[str, Any] = {}

    def define(self, spec: VariableSpec) -> None:
        dataset = self._file.create_dataset(
            spec.name, shape=spec.shape, dtype=np.dtype(spec.dtype), fill_time="never"
        )
        for key, value in spec.attrs.items():
            try:
                dataset.attrs[key] = value
            except TypeError:
                raise BurstError(
                    f"variable {spec.name!r}: attribute {key}={value!r} cannot be stored in "
                    "HDF5; use a string, a number or a list of them"
                ) from None
        dataset.attrs["dims"] = np.array(spec.dims, dtype=self._h5py.string_dtype())
        self._datasets[spec.name] = dataset

    def write(self, name: str, data: np.ndarray, *, start: tuple[int, ...]) -> None:
        dataset = self._datasets[name]
        if data.size == 0:
            return
        if data.ndim == 0:
            dataset[()] = data
            return
        slices = tuple(slice(s, s + n) for s, n in zip(start, data.shape, strict=True))
        if data.flags.c_contiguous and data.dtype == dataset.dtype:
            dataset.write_direct(data, dest_sel=slices)
        else:
            dataset[slices] = data

    def close(self) -> None:
        if self._file.id.valid:
            self._file.close()

"""The composite as one CF netCDF-4 file, defined through burst's netCDF sink.

burst's netCDF sink lays the file out (dimensions, coordinates, the ``crs`` variable, every
band chunked 128 x 1024 and deflate-compressed, CF attributes). The bands' data then arrive
as chunks the band owners already compressed (:mod:`nearline.composite._chunks`), in any
order, and go into the file with HDF5's direct chunk write. The file is written under a
hidden temporary name and published by rename only when every band is in: a failed run
leaves nothing that looks complete.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from nearline.burst import VariableSpec, get_sink
from nearline.composite._chunks import chunk_shape, read_chunks
from nearline.durable import discard, publish, temporary_path
from nearline.grid import Grid
from nearline.swath import HDF5_MAGIC

PRODUCT = "nearline-composite"


class CompositeFile:
    """One output file being written; ``variables`` are the reducer's output variables."""

    def __init__(
        self,
        path: Path,
        grid: Grid,
        variables: list[Any],
        *,
        attrs: Mapping[str, Any],
        chunk_rows: int,
    ) -> None:
        self.path = path
        self._chunks = chunk_shape(grid.height, grid.width, chunk_rows)
        self._grid = grid
        self._variables = variables
        self._temporary = temporary_path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        discard(self._temporary)
        self._file = get_sink("netcdf").create(self._temporary, step=0)
        self._hdf5: Any = None
        try:
            self._define(attrs)
            self._file.close()
            import h5py

            self._hdf5 = h5py.File(self._temporary, "r+")
        except BaseException:
            self.abort()
            raise

    def _define(self, attrs: Mapping[str, Any]) -> None:
        grid, sink = self._grid, self._file
        sink.set_attributes({"product": PRODUCT, "grid": grid.name, **attrs})
        x, y, crs_attrs = grid.coordinates()
        for name, values in (("x", x), ("y", y)):
            axis_attrs = {
                "standard_name": f"projection_{name}_coordinate",
                "units": "m" if grid.crs_is_projected else "degrees",
                "axis": name.upper(),
            }
            sink.define(VariableSpec(name, values.dtype, values.shape, (name,), axis_attrs))
            sink.write(name, values, start=(0,))
        sink.define(VariableSpec("crs", np.dtype(np.int32), (), (), dict(crs_attrs)))
        sink.write("crs", np.array(0, dtype=np.int32), start=())
        encoding = {
            "chunksizes": self._chunks,
            "compression": "zlib",
            "complevel": 1,
            "shuffle": True,
        }
        for variable in self._variables:
            variable_attrs = {**variable.attrs, "grid_mapping": "crs"}
            if variable.fill is not None:
                variable_attrs["_FillValue"] = np.array(variable.fill, dtype=variable.dtype)
            sink.define(
                VariableSpec(
                    variable.name,
                    np.dtype(variable.dtype),
                    (grid.height, grid.width),
                    ("y", "x"),
                    variable_attrs,
                    encoding,
                )
            )

    def write_band(self, band_path: Path) -> None:
        """Copy one band's compressed chunks (a band owner's file) into the output."""
        datasets = [self._hdf5[variable.name] for variable in self._variables]
        for number, origin, data in read_chunks(band_path):
            datasets[number].id.write_direct_chunk(origin, data)

    def close(self) -> None:
        """Finish the file and publish it under its final name."""
        self._hdf5.close()
        publish(self._temporary, self.path)

    def abort(self) -> None:
        """Drop the temporary file after a failure."""
        if self._hdf5 is not None:
            self._hdf5.close()
        self._file.abort()
        discard(self._temporary)


def is_composite_file(path: Path) -> bool:
    """True if ``path`` is a composite nearline wrote (a daily input to Climate)."""
    try:
        with open(path, "rb") as handle:
            if handle.read(len(HDF5_MAGIC)) != HDF5_MAGIC:
                return False
        import netCDF4

        with netCDF4.Dataset(path) as dataset:
            return getattr(dataset, "product", None) == PRODUCT
    except OSError:
        return False

"""The composite as one CF netCDF-4 file, written through burst's netCDF sink.

Bands arrive as they finish, in any order, and are written as whole chunk rows (bands are
aligned to the chunk height), chunked and zlib-compressed so that a 1 km world of mostly
fill stays small. The file is written under a hidden temporary name and published by
rename only when every band is in: a failed run leaves nothing that looks complete.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from nearline.burst import VariableSpec, get_sink
from nearline.composite.plan import CHUNK_ROWS
from nearline.durable import discard, publish, temporary_path
from nearline.grid import Band, Grid

CHUNK_COLUMNS = 1024
PRODUCT = "nearline-composite"


class CompositeFile:
    """One output file being written; ``variables`` are the reducer's output variables."""

    def __init__(
        self, path: Path, grid: Grid, variables: list[Any], *, attrs: Mapping[str, Any]
    ) -> None:
        self.path = path
        self._grid = grid
        self._variables = variables
        self._temporary = temporary_path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        discard(self._temporary)
        self._file = get_sink("netcdf").create(self._temporary, step=0)
        try:
            self._define(attrs)
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
        chunks = (min(grid.height, CHUNK_ROWS), min(grid.width, CHUNK_COLUMNS))
        encoding = {"chunksizes": chunks, "compression": "zlib", "complevel": 1, "shuffle": True}
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

    def write_band(self, band: Band, arrays: Mapping[str, np.ndarray]) -> None:
        """Write every variable of one finished band."""
        rows = band.rows[1] - band.rows[0]
        for variable in self._variables:
            block = arrays[variable.name].reshape(rows, self._grid.width)
            self._file.write(variable.name, block, start=(band.rows[0], 0))

    def close(self) -> None:
        """Finish the file and publish it under its final name."""
        self._file.close()
        publish(self._temporary, self.path)

    def abort(self) -> None:
        """Drop the temporary file after a failure."""
        self._file.abort()
        discard(self._temporary)

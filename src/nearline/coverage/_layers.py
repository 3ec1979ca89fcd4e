"""One gridded file of a collection (a layer: a time step), read a window at a time.

A layer is read through h5py on a file object that counts the bytes it hands out: HDF5
reads the superblock, the variables' headers and B-trees, and only the chunks a window
touches, so the count shows what a request cost (a box of 1% of the globe reads a few
percent of a composite, not all of it).

A band is any variable of the grid's shape (``Grid.holds``: a composite's (y, x), a GEOS-5
reduction's (time, lat, lon) with one time). Windows are asked for in the grid's rows,
counted from the north; a file that stores its rows south to north (its rows' coordinate
increases, as CF files' latitudes usually do) is read upside down, and only the rows asked.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, BinaryIO

import numpy as np

from nearline.errors import CoverageError, ServiceError
from nearline.grid import Grid

# HDF5 and netCDF bookkeeping that says nothing about a band's values
HIDDEN_ATTRIBUTES = frozenset(
    {"DIMENSION_LIST", "REFERENCE_LIST", "CLASS", "NAME", "_Netcdf4Dimid",
     "_Netcdf4Coordinates", "coordinates", "grid_mapping", "_nc3_strict"}
)  # fmt: skip


class CountingFile(io.RawIOBase):
    """A binary file object that counts the bytes read through it.

    Parameters
    ----------
    raw
        Seekable, binary (a local file, an object store's ranged reader).
    """

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        self._raw = raw
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._raw.read(len(buffer))
        buffer[: len(data)] = data
        self.bytes_read += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def close(self) -> None:
        self._raw.close()
        super().close()


@dataclass(frozen=True)
class Layer:
    """One file of a gridded collection: its period and how to open its bytes.

    Parameters
    ----------
    name
        The item's id, for messages and outputs.
    start, end
        The period it covers (UTC).
    open
        Opens the file for reading (a new binary file object each call).
    """

    name: str
    start: datetime
    end: datetime
    open: Callable[[], BinaryIO] = field(compare=False, repr=False)


@dataclass(frozen=True)
class BandInfo:
    """What a band holds: its stored type, its CF packing and its descriptive attributes."""

    name: str
    dtype: np.dtype
    fill: float | None
    scale: float
    offset: float
    attrs: Mapping[str, Any]

    @property
    def long_name(self) -> str:
        return str(self.attrs.get("long_name", self.name))

    @property
    def units(self) -> str:
        return str(self.attrs.get("units", "1"))

    def physical(self, stored: np.ndarray) -> np.ndarray:
        """Stored values unpacked (``stored * scale + offset``), NaN where they are fill."""
        values = stored.astype(np.float64) * self.scale + self.offset
        if self.fill is not None:
            values[stored == self.fill] = np.nan
        return values


def _plain(value: Any) -> Any:
    """An HDF5 attribute as a plain value: text decoded, one-element arrays unwrapped."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, np.ndarray):
        return value.item() if value.size == 1 else value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def band_info(name: str, dataset: Any) -> BandInfo:
    """A band's :class:`BandInfo` from its open h5py dataset."""
    attrs = {  # the hidden ones are never read: netCDF's dimension lists are slow to
        key: _plain(dataset.attrs[key])  # (object references)
        for key in dataset.attrs
        if key not in HIDDEN_ATTRIBUTES
    }
    fill = attrs.pop("_FillValue", None)
    return BandInfo(
        name=name,
        dtype=dataset.dtype,
        fill=fill,
        scale=float(attrs.pop("scale_factor", 1.0)),
        offset=float(attrs.pop("add_offset", 0.0)),
        attrs=attrs,
    )


def read_attributes(layer: Layer) -> dict[str, Any]:
    """The file's global attributes, as plain values (text decoded).

    Parameters
    ----------
    layer
        The file.
    """
    with _opened(layer) as (_, hdf5):
        return {
            key: _plain(value) for key, value in hdf5.attrs.items() if key not in HIDDEN_ATTRIBUTES
        }


def read_bands(
    layer: Layer, grid: Grid, wanted: Iterable[str] | None = None
) -> dict[str, BandInfo]:
    """The bands of ``layer``: its variables on ``grid`` (``Grid.holds``), in file order.

    Parameters
    ----------
    layer
        The file.
    grid
        Its collection's grid.
    wanted
        Only these of them, in this order (None: all). A band's attributes are what reading
        it costs, a dozen bands' some milliseconds, so a request looks only at those it asks
        for.
    """
    import h5py

    with _opened(layer) as (_, hdf5):
        names = list(hdf5) if wanted is None else [n for n in dict.fromkeys(wanted) if n in hdf5]
        found = {}
        for name in names:
            dataset = hdf5[name]
            if isinstance(dataset, h5py.Dataset) and grid.holds(dataset.shape):
                found[name] = band_info(name, dataset)
        return found


def read_window(
    layer: Layer,
    bands: Iterable[str],
    rows: slice | np.ndarray,
    cols: slice,
    grid: Grid,
) -> tuple[dict[str, np.ndarray], int]:
    """Each band's stored values in ``rows`` x ``cols``, and the bytes read for them.

    Parameters
    ----------
    layer
        The file.
    bands
        Band names it holds.
    rows, cols
        The window, in the grid's cells (rows from the north); ``rows`` may be increasing
        row numbers instead (a coarse target's: HDF5 reads the chunks holding them, and
        only they are kept).
    grid
        The grid every band must lie on.

    Raises
    ------
    CoverageError
        A band is missing from this layer, or not on the grid.
    """
    with _opened(layer) as (counted, hdf5):
        values = {}
        for name in bands:
            values[name] = _band(layer, hdf5, name, grid).window(rows, cols)
        return values, counted.bytes_read


def read_cells(
    layer: Layer, bands: Iterable[str], rows: np.ndarray, cols: np.ndarray, grid: Grid
) -> tuple[dict[str, np.ndarray], int]:
    """Each band's stored value in each cell (``rows[i]``, ``cols[i]``), read cell by cell
    (only the chunks holding them), and the bytes read. Raises as :func:`read_window`."""
    with _opened(layer) as (counted, hdf5):
        values = {}
        for name in bands:
            band = _band(layer, hdf5, name, grid)
            values[name] = np.array(
                [band.cell(row, col) for row, col in zip(rows, cols, strict=True)],
                band.dataset.dtype,
            )
        return values, counted.bytes_read


@dataclass(frozen=True)
class _Placed:
    """A band's dataset as the grid sees it: the leading unit dimensions dropped, and its
    rows turned north to south if the file stores them south to north."""

    dataset: Any
    lead: tuple[int, ...]
    south_up: bool

    @property
    def height(self) -> int:
        return int(self.dataset.shape[-2])

    def window(self, rows: slice | np.ndarray, cols: slice) -> np.ndarray:
        if not self.south_up:
            return self.dataset[(*self.lead, rows, cols)]
        if isinstance(rows, slice):
            start, stop, step = rows.indices(self.height)
            if step == 1:
                stored = slice(self.height - stop, self.height - start)
                return self.dataset[(*self.lead, stored, cols)][::-1]
            rows = np.arange(start, stop, step)
        stored_rows = (self.height - 1 - np.asarray(rows))[::-1]  # increasing, as h5py needs
        return self.dataset[(*self.lead, stored_rows, cols)][::-1]

    def cell(self, row: int, col: int) -> Any:
        stored = self.height - 1 - row if self.south_up else row
        return self.dataset[(*self.lead, stored, col)]


def _band(layer: Layer, hdf5: Any, name: str, grid: Grid) -> _Placed:
    if name not in hdf5 or not grid.holds(hdf5[name].shape):
        raise CoverageError(
            f"item {layer.name} holds no band {name!r} of {grid.height} x {grid.width} cells; "
            "its collection's items differ: ask for the bands they share"
        )
    dataset = hdf5[name]
    return _Placed(dataset, (0,) * (dataset.ndim - 2), _south_up(dataset))


def _south_up(dataset: Any) -> bool:
    """Whether the dataset's rows run south to north: its rows' dimension scale (a CF
    coordinate, as netCDF-4 attaches one) increases. Without one, rows run as the grid's."""
    scales = dataset.dims[dataset.ndim - 2]
    if len(scales) == 0 or scales[0].ndim != 1 or scales[0].shape[0] < 2:
        return False
    coordinate = scales[0]
    return bool(coordinate[0] < coordinate[-1])


class _opened:
    """``with _opened(layer) as (counted, hdf5)``: the layer open through a counting file;
    a file HDF5 cannot read is a ServiceError (500) naming the item."""

    def __init__(self, layer: Layer) -> None:
        self.layer = layer

    def __enter__(self) -> tuple[CountingFile, Any]:
        import h5py

        self.counted = CountingFile(self.layer.open())
        try:
            self.hdf5 = h5py.File(self.counted, "r")
        except OSError as error:
            self.counted.close()
            raise ServiceError(  # the archive's fault, not the request's: a 500 saying so
                f"item {self.layer.name}'s file cannot be read as HDF5 ({error})", status=500
            ) from None
        return self.counted, self.hdf5

    def __exit__(self, *exc: object) -> None:
        self.hdf5.close()
        self.counted.close()

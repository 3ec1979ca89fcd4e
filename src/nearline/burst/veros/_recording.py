"""Stand-ins for the h5netcdf and h5py files Veros writes into.

Veros's own functions (``initialize_variable``, ``write_variable``, ``advance_time``,
``write_to_h5``) are called with these instead of real files, so Veros itself still decides
every name, dimension, attribute, mask, fill value and dtype. What they record is a list of
operations, the same on every compute rank, and the blocks of data this rank holds; both go
to the I/O rank through burst, which replays the operations on a real file
(``_replay.py``).

A block that several ranks hold alike (a 1-D x coordinate is held by every rank of a column
of the decomposition) is handed over by one of them only: the rank with proc index 0 along
each scattered axis the variable lacks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from nearline.errors import BurstError

HEADER = "header"  # the burst variable holding a step's operations (JSON, uint8)
SCATTERED = (("xt", "xu"), ("yt", "yu"))  # as veros.distributed.SCATTERED_DIMENSIONS


def _plain(value: Any) -> Any:
    """A JSON value for an attribute or argument; numpy values keep their dtype."""
    if isinstance(value, np.ndarray | np.generic):
        return {"$dtype": value.dtype.str, "$value": value.tolist()}
    if isinstance(value, type):
        return {"$dtype": np.dtype(value).str, "$type": True}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class Recording:
    """One burst step of one Veros file: the operations to replay, and this rank's blocks."""

    def __init__(self, path: str, kind: str, mode: str, proc_index: tuple[int, int]) -> None:
        self.header: dict[str, Any] = {"path": path, "format": kind, "mode": mode, "ops": []}
        self.blocks: list[tuple[str, np.ndarray, tuple[int, ...], tuple[int, ...]]] = []
        self.proc_index = proc_index
        self._writes = 0
        self._masks: dict[Any, str] = {}  # each grid mask of this step: its burst name

    def op(self, *args: Any) -> None:
        self.header["ops"].append(_plain(list(args)))

    def write(
        self,
        target: str,
        dims: Sequence[str],
        sizes: Sequence[int],
        key: Any,
        value: Any,
    ) -> None:
        """Record ``target[key] = value``: an operation for every rank, a block for owners."""
        name = self._name()
        block = np.asarray(value)
        index, start, shape = _placement(target, key, sizes)
        self.op("write", target, index, name, shape)
        if not self._owns(dims):
            return
        if not shape:  # burst carries arrays: a scalar travels as one element
            block, start, shape = block.reshape(1), [0], [1]
        self.blocks.append((name, block, tuple(start), tuple(shape)))

    def write_unprepared(
        self,
        target: str,
        dims: Sequence[str],
        sizes: Sequence[int],
        key: Any,
        held: np.ndarray,
        *,
        scale: Any,
        mask: tuple[Any, np.ndarray] | None,
        fill: Any,
    ) -> None:
        """Record Veros's ``write_variable`` before its preparation, which the I/O rank does.

        ``held`` is the variable as the model holds it, its ghost cells and time levels left
        out (a view: burst copies it once, into its queue), its axes in Veros's order, the
        reverse of the file's. ``mask`` is ``(token, grid mask)``, the mask without ghost
        cells; the masks of a step travel once each (``token`` names one, the function
        that gives it). Scaling, masking and transposing a 100 MB record on the compute rank
        took most of its pause; on the I/O rank they overlap the model's next steps.
        """
        name = self._name()
        index, start, shape = _placement(target, key, sizes)
        mask_name = None
        if mask is not None:
            token, grid = mask
            mask_name = self._masks.get(token)
            if mask_name is None:
                mask_name = self._masks[token] = f"m{len(self._masks)}"
                # a mask covers the leading (horizontal) axes of the variables it masks
                self.blocks.append(
                    (mask_name, grid, tuple(start[::-1][: grid.ndim]),
                     tuple(shape[::-1][: grid.ndim]))
                )  # fmt: skip
        self.op("prepare", target, index, name, shape, scale, mask_name, fill)
        if self._owns(dims):
            self.blocks.append((name, held, tuple(start[::-1]), tuple(shape[::-1])))

    def _name(self) -> str:
        self._writes += 1
        return f"v{self._writes - 1}"

    def _owns(self, dims: Sequence[str]) -> bool:
        return all(
            any(dim in group for dim in dims) or index == 0
            for group, index in zip(SCATTERED, self.proc_index, strict=True)
        )

    def encoded_header(self) -> np.ndarray:
        return np.frombuffer(json.dumps(self.header).encode(), dtype=np.uint8)


def _placement(
    target: str, key: Any, sizes: Sequence[int]
) -> tuple[list[int], list[int], list[int]]:
    """``target[key]``'s leading indices (a record), then its block's start and shape."""
    key = key if isinstance(key, tuple) else (key,)
    if key == (Ellipsis,):
        key = (slice(None),) * len(sizes)
    index, start, shape = [], [], []
    for axis, (entry, size) in enumerate(zip(key, sizes, strict=True)):
        if isinstance(entry, slice):
            start.append(entry.start or 0)
            shape.append(size)
        else:  # an integer picks one record, as Veros's time_step does
            index.append(int(entry) + size if int(entry) < 0 else int(entry))
            if axis != len(index) - 1:
                raise BurstError(f"{target}: only leading axes may be indexed, got {key}")
    return index, start, shape


class _Attributes(dict):
    """A variable's or file's attributes: updates are recorded as operations."""

    def __init__(self, recording: Recording | None, *where: str) -> None:
        super().__init__()
        self._recording = recording
        self._where = where

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        values = dict(*args, **kwargs)
        super().update(values)
        if self._recording is not None:
            self._recording.op("attrs", *self._where, values)

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})


class _Variable:
    """What ``ncfile.variables[key]`` gives Veros: its dimensions, and a place to write."""

    def __init__(self, file: NetCDFRecorder, name: str, dims: tuple[str, ...]) -> None:
        self._file = file
        self.name = name
        self.dimensions = dims
        self.attrs = _Attributes(file.recording, name)

    def __len__(self) -> int:
        return self._file.dimensions[self.dimensions[0]] or 0

    def __setitem__(self, key: Any, value: Any) -> None:
        sizes = [self._file.dimensions[d] or 0 for d in self.dimensions]
        self._file.recording.write(self.name, self.dimensions, sizes, key, value)


class NetCDFRecorder:
    """Stands in for Veros's ``h5netcdf.File`` through a run; ``begin`` starts each step.

    ``chunks`` gives a variable's chunk shape as Veros chooses it in a serial run, where the
    whole domain is one chunk (under MPI Veros would pick one rank's part); ``compression``
    the keywords a serial run passes (none under MPI)."""

    def __init__(self, chunks: Any, compression: Mapping[str, Any]) -> None:
        self.dimensions: dict[str, int | None] = {}
        self.variables: dict[str, _Variable] = {}
        self._chunks = chunks
        self._compression = dict(compression)
        self.recording: Recording | None = None
        self.attrs = _Attributes(None)

    def begin(self, recording: Recording) -> None:
        self.recording = recording
        self.attrs = _Attributes(recording)
        self.dimensions = _Dimensions(recording, self.dimensions)
        for variable in self.variables.values():
            variable.attrs = _Attributes(recording, variable.name)

    def create_variable(
        self, name: str, dims: tuple[str, ...], dtype: Any, **kwargs: Any
    ) -> _Variable:
        dims = tuple(dims)
        if "chunks" in kwargs:
            kwargs = {**kwargs, "chunks": self._chunks(dims), **self._compression}
        assert self.recording is not None
        self.recording.op("variable", name, dims, dtype, kwargs)
        variable = _Variable(self, name, dims)
        self.variables[name] = variable
        return variable

    def resize_dimension(self, dim: str, size: int) -> None:
        assert self.recording is not None
        self.recording.op("resize", dim, size)
        dict.__setitem__(self.dimensions, dim, size)


class _Dimensions(dict):
    """``ncfile.dimensions``: a new dimension is recorded; ``None`` makes it unlimited."""

    def __init__(self, recording: Recording, existing: Mapping[str, int | None]) -> None:
        super().__init__(existing)
        self._recording = recording

    def __setitem__(self, name: str, size: int | None) -> None:
        self._recording.op("dimension", name, size)
        super().__setitem__(name, size)


class _Dataset:
    """What ``group[key]`` gives Veros's ``write_to_h5``: a place to write."""

    def __init__(self, recording: Recording, path: str, shape: tuple[int, ...], dims) -> None:
        self._recording = recording
        self._path = path
        self.shape = shape
        self._dims = tuple(dims or ())

    def __setitem__(self, key: Any, value: Any) -> None:
        self._recording.write(self._path, self._dims, self.shape, key, value)


class _Group:
    def __init__(self, recording: Recording, name: str, dims_of, chunks, compression) -> None:
        self._recording = recording
        self._name = name
        self._datasets: dict[str, _Dataset] = {}
        self._dims_of = dims_of
        self._chunks = chunks
        self._compression = compression
        self.attrs = _Attributes(recording, name)

    def require_dataset(self, key: str, shape: Any, dtype: Any, **kwargs: Any) -> _Dataset:
        dims = self._dims_of(self._name, key)
        if "chunks" in kwargs:
            kwargs = {**kwargs, "chunks": self._chunks(self._name, dims), **self._compression}
        shape = tuple(int(n) for n in shape)
        self._recording.op("dataset", self._name, key, shape, np.dtype(dtype).str, kwargs)
        dataset = _Dataset(self._recording, f"{self._name}/{key}", shape, dims)
        self._datasets[key] = dataset
        return dataset

    def __getitem__(self, key: str) -> _Dataset:
        return self._datasets[key]


class HDF5Recorder:
    """Stands in for the ``h5py.File`` of one restart file.

    ``dims_of(group, key)`` names a dataset's Veros dimensions, which ``write_to_h5`` does
    not pass on, for its serial chunk shape and for which rank hands a block over."""

    def __init__(self, recording: Recording, dims_of, chunks, compression) -> None:
        self.recording = recording
        self._groups: dict[str, _Group] = {}
        self._dims_of = dims_of
        self._chunks = chunks
        self._compression = dict(compression)

    def require_group(self, name: str) -> _Group:
        if name not in self._groups:
            self.recording.op("group", name)
            self._groups[name] = _Group(
                self.recording, name, self._dims_of, self._chunks, self._compression
            )
        return self._groups[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._groups)

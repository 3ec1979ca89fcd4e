"""The I/O rank's side: a burst sink that writes Veros's own files.

Each burst step of a Veros file carries the operations Veros's functions made on the
stand-in files (``_recording.py``) and the blocks of data they wrote. The sink assembles
the blocks in memory and, when burst closes the step, replays the operations on the real
file with the libraries Veros uses (h5netcdf for diagnostics, h5py for restarts), serially,
so the file is what a serial Veros run writes. The step creates nothing at burst's own path:
its completion marker names this sink as the consumer, and burst's tree holds only markers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from nearline.burst._base import Sink, SinkFile, VariableSpec
from nearline.burst.veros._deflate import write_deflated
from nearline.burst.veros._pool import LIMIT, ArrayPool
from nearline.burst.veros._recording import HEADER
from nearline.errors import BurstError

CONSUMER = "nearline.burst.veros"


def _value(value: Any) -> Any:
    """Undo ``_recording._plain``: numpy values and types come back with their dtype."""
    if isinstance(value, dict):
        if "$dtype" in value:
            dtype = np.dtype(value["$dtype"])
            if value.get("$type"):
                return dtype
            return np.asarray(value["$value"], dtype=dtype)[()]
        return {k: _value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_value(v) for v in value]
    return value


def _netcdf_target(handle: Any, name: str) -> Any:
    return handle.variables[name]


def _hdf5_target(handle: Any, name: str) -> Any:
    return handle[name]


def _open(kind: str, path: Path, mode: str) -> tuple[Any, Any]:
    """The file as Veros opens it (io_tools.netcdf / io_tools.hdf5, serial)."""
    if kind == "netcdf":
        import h5netcdf

        return h5netcdf.File(path, mode, decode_vlen_strings=True), _netcdf_target
    import h5py

    return h5py.File(path, mode), _hdf5_target


def replay(
    header: dict[str, Any], arrays: dict[str, np.ndarray], pool: ArrayPool | None = None
) -> None:
    """Apply one step's operations to its file, then make the file durable.

    Parameters
    ----------
    header
        The step's operations and its file's path, format and mode (``Recording.header``).
    arrays
        The step's blocks, assembled, by their burst names.
    pool
        Arrays kept from earlier steps, for the chunk buffers (a new pool if None).
    """
    path = Path(header["path"])
    handle, target = _open(header["format"], path, header["mode"])
    pool = ArrayPool() if pool is None else pool
    try:
        for op in header["ops"]:
            _apply(handle, target, _value(op), arrays, pool)
    finally:
        handle.close()
    with open(path, "rb") as file:
        os.fsync(file.fileno())


def _store(owner: Any, index: list[int], value: np.ndarray, pool: ArrayPool) -> None:
    """``owner[index] = value``: deflated chunks written directly where that applies."""
    dataset = getattr(owner, "_h5ds", owner)  # an h5netcdf variable wraps an h5py dataset
    if not write_deflated(dataset, tuple(index), value, pool):
        owner[tuple(index) or ...] = value


def _apply(
    handle: Any, target: Any, op: list[Any], arrays: dict[str, np.ndarray], pool: ArrayPool
) -> None:
    kind, *args = op
    if kind == "write":
        name, index, burst_name, shape = args
        _store(target(handle, name), index, arrays[burst_name].reshape(shape), pool)
    elif kind == "prepare":
        name, index, burst_name, shape, scale, mask_name, fill = args
        masks = None if mask_name is None else arrays[mask_name].view(bool)
        prepared = prepare(arrays[burst_name].reshape(shape[::-1]), scale, masks, fill)
        _store(target(handle, name), index, prepared.T, pool)
    elif kind == "attrs":
        *where, values = args
        owner = target(handle, where[0]) if where else handle  # a variable, a group, the file
        owner.attrs.update(values)
    elif kind == "dimension":
        handle.dimensions[args[0]] = args[1]
    elif kind == "variable":
        name, dims, dtype, kwargs = args
        if "chunks" in kwargs:
            kwargs["chunks"] = tuple(kwargs["chunks"])
        handle.create_variable(name, tuple(dims), dtype, **kwargs)
    elif kind == "resize":
        handle.resize_dimension(*args)
    elif kind == "group":
        handle.require_group(args[0])
    elif kind == "dataset":
        group, key, shape, dtype, kwargs = args
        if "chunks" in kwargs:
            kwargs["chunks"] = tuple(kwargs["chunks"])
        handle[group].require_dataset(key, tuple(shape), dtype, **kwargs)
    else:
        raise BurstError(f"{CONSUMER}: unknown operation {kind!r} for {handle.filename}")


def prepare(held: np.ndarray, scale: Any, mask: np.ndarray | None, fill: Any) -> np.ndarray:
    """What Veros's ``write_variable`` does to a variable before writing it (scale, then
    land masked to the fill value), in place where the dtype allows: ``held`` is this
    step's own array, and a new 100 MB array is slow to touch on these machines."""
    scaled_dtype = np.result_type(held.dtype, scale)
    if scaled_dtype == held.dtype:
        np.multiply(held, scale, out=held)
    else:
        held = held * scale
    if mask is None:
        return held
    mask = mask[(...,) + (np.newaxis,) * (held.ndim - mask.ndim)]
    if np.result_type(held.dtype, fill) == held.dtype:
        np.copyto(held, fill, where=~mask)
        return held
    return np.where(mask, held, fill)


class VerosSink(Sink):
    """Writes the Veros files that the compute ranks' stand-ins recorded."""

    name = "veros"
    extension = "nc"

    def __init__(self) -> None:
        # one writer thread per I/O server, never two at once; the reserve is touched
        # while Veros sets itself up, before the first record arrives
        self._pool = ArrayPool(reserve=LIMIT)

    def create(self, path: Path, *, step: int) -> SinkFile:
        return _VerosStep(self._pool)


class _VerosStep(SinkFile):
    """One step of one Veros file: blocks assembled in memory (arrays from the sink's pool,
    given back when the step is written or dropped), replayed at close."""

    def __init__(self, pool: ArrayPool) -> None:
        self._arrays: dict[str, np.ndarray] = {}
        self._pool = pool
        self.consumed_by: str | None = None

    def define(self, spec: VariableSpec) -> None:
        self._arrays[spec.name] = self._pool.take(spec.shape, spec.dtype)

    def write(self, name: str, data: np.ndarray, *, start: tuple[int, ...]) -> None:
        slices = tuple(slice(s, s + n) for s, n in zip(start, data.shape, strict=True))
        self._arrays[name][slices] = data

    def close(self) -> None:
        arrays, self._arrays = self._arrays, {}
        if HEADER not in arrays:
            raise BurstError(f"{CONSUMER}: a step arrived without its operations")
        header = json.loads(arrays.pop(HEADER).tobytes())  # its length varies: not kept
        try:
            replay(header, arrays, self._pool)
        except Exception as error:
            raise BurstError(
                f"{CONSUMER}: writing {header['path']} failed: {type(error).__name__}: {error}"
            ) from error
        finally:
            self._give_back(arrays)
        self.consumed_by = CONSUMER

    def abort(self) -> None:
        arrays, self._arrays = self._arrays, {}
        arrays.pop(HEADER, None)
        self._give_back(arrays)

    def _give_back(self, arrays: dict[str, np.ndarray]) -> None:
        for array in arrays.values():
            self._pool.give(array)

"""Zarr v3 stores: a folder that cloud and Dask tools read chunk by chunk.

One uncompressed array per variable (with ``dimension_names``), the output ``step`` as a group
attribute. A variable is one chunk up to :data:`CHUNK_BYTES`; bigger ones are cut along their
leading axes so a chunk stays under it, keeping a block's read-modify-write bounded.
"""

from __future__ import annotations

from math import prod
from pathlib import Path
from typing import Any

import numpy as np

from nearline.burst._base import Sink, SinkFile, VariableSpec

CHUNK_BYTES = 64 * 2**20
"""Largest chunk in bytes; bigger variables are cut by :func:`chunk_shape`."""


def chunk_shape(shape: tuple[int, ...], itemsize: int, limit: int) -> tuple[int, ...]:
    """The whole ``shape``, cut along leading axes until a chunk holds at most ``limit`` bytes."""
    chunks = [max(1, n) for n in shape]
    for axis in range(len(chunks)):
        inner = itemsize * prod(chunks[axis + 1 :])
        if inner * chunks[axis] <= limit:
            break
        chunks[axis] = max(1, limit // inner)
    return tuple(chunks)


class ZarrSink(Sink):
    """Zarr format 3 folders written with zarr-python."""

    name = "zarr"
    extension = "zarr"
    is_directory = True

    def create(self, path: Path, *, step: int) -> SinkFile:
        return _ZarrFile(path, step)


class _ZarrFile(SinkFile):
    def __init__(self, path: Path, step: int) -> None:
        import zarr

        self._group = zarr.open_group(
            str(path), mode="w", zarr_format=3, attributes={"step": int(step)}
        )
        self._arrays: dict[str, Any] = {}

    def define(self, spec: VariableSpec) -> None:
        dtype = np.dtype(spec.dtype)
        self._arrays[spec.name] = self._group.create_array(
            spec.name,
            shape=spec.shape,
            dtype=dtype,
            chunks=chunk_shape(spec.shape, dtype.itemsize, CHUNK_BYTES),
            compressors=None,
            fill_value=0,
            dimension_names=spec.dims,
            attributes=dict(spec.attrs),
            # Blocks write every chunk anyway: skip zarr's scan for chunks of fill values.
            config={"write_empty_chunks": True},
        )

    def write(self, name: str, data: np.ndarray, *, start: tuple[int, ...]) -> None:
        if data.size == 0:
            return
        slices = tuple(slice(s, s + n) for s, n in zip(start, data.shape, strict=True))
        self._arrays[name][slices] = data

    def close(self) -> None:
        self._arrays.clear()

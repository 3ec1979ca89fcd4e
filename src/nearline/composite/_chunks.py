"""Finished bands as compressed HDF5 chunks, made by the band owners in parallel.

The output is chunked (128 rows x 1024 columns) and deflate-compressed with the byte
shuffle, as netCDF-4 writes it. Compressing is the costly part of writing it, so each band
owner compresses its own band's chunks (bands start on chunk rows) and leaves them on local
disk with an index; the driver then only copies the bytes into the file with HDF5's direct
chunk write. The chunks are zlib streams of shuffled bytes, as the HDF5 library's deflate
filter makes and reads them: any netCDF or HDF5 reader opens the file. They are made with
ISA-L's deflate (``isal``), level 1: about 5x faster than zlib's level 1 here, for chunks
about 4 % larger. Chunks holding nothing but the fill value are not written at all: HDF5
reads an unwritten chunk as the fill value, and a day of orbits leaves many empty.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from isal import isal_zlib

CHUNK_ROWS = 128
CHUNK_COLUMNS = 1024
DEFLATE_LEVEL = 1  # ISA-L's levels are 0-3
# index columns: variable number, first row, first column, byte offset, byte length
_INDEX_FIELDS = 5


def chunk_shape(height: int, width: int, rows: int = CHUNK_ROWS) -> tuple[int, int]:
    """Output chunk shape of a grid: ``rows`` x 1024 columns, or the grid if smaller."""
    return min(height, rows), min(width, CHUNK_COLUMNS)


def encode(block: np.ndarray, shape: tuple[int, int], fill: Any) -> bytes:
    """One chunk as HDF5 stores it: padded to full size, byte-shuffled, deflated (a zlib
    stream)."""
    if block.shape != shape:
        full = np.full(shape, fill if fill is not None else 0, dtype=block.dtype)
        full[: block.shape[0], : block.shape[1]] = block
        block = full
    raw = np.ascontiguousarray(block)
    itemsize = raw.dtype.itemsize
    shuffled = raw.view(np.uint8).reshape(-1, itemsize).T.tobytes() if itemsize > 1 else raw
    return isal_zlib.compress(shuffled, DEFLATE_LEVEL)


def write_chunks(
    path: Path,
    outputs: Mapping[str, np.ndarray],
    variables: list[Any],
    *,
    first_row: int,
    rows: int,
    height: int,
    width: int,
    chunk_rows: int = CHUNK_ROWS,
) -> None:
    """Compress a band's outputs (flat, ``rows`` x ``width``) into ``path`` and its index."""
    shape = chunk_shape(height, width, chunk_rows)
    index = []
    with open(path, "wb") as handle:
        offset = 0
        for number, variable in enumerate(variables):
            image = outputs[variable.name].reshape(rows, width)
            for r in range(0, rows, shape[0]):
                for c in range(0, width, shape[1]):
                    block = image[r : r + shape[0], c : c + shape[1]]
                    if variable.fill is not None and not (block != variable.fill).any():
                        continue
                    data = encode(block, shape, variable.fill)
                    handle.write(data)
                    index.append((number, first_row + r, c, offset, len(data)))
                    offset += len(data)
    np.save(index_path(path), np.array(index, dtype=np.int64).reshape(-1, _INDEX_FIELDS))


def index_path(path: Path) -> Path:
    return path.with_name(path.name + ".index.npy")


def read_chunks(path: Path) -> Iterator[tuple[int, tuple[int, int], bytes]]:
    """(variable number, chunk origin, compressed bytes) of every chunk in a band file."""
    index = np.load(index_path(path))
    data = path.read_bytes()
    for number, row, column, offset, length in index.tolist():
        yield number, (row, column), data[offset : offset + length]


def remove_chunks(path: Path) -> None:
    path.unlink(missing_ok=True)
    index_path(path).unlink(missing_ok=True)

"""Veros's gzip-compressed records written chunk by chunk, deflated with ISA-L.

Veros asks h5py for deflate level 1 (``compression="gzip", compression_opts=1``). The HDF5
library's own filter (zlib) deflated a 104 MB snapshot record at about 60 MB/s here and the
432 MB restart file at 55 MB/s: most of the I/O rank's time, taken from the core the model
shares, and after the model's last step most of what the job waited for. ISA-L's deflate at
level 1 makes zlib streams 5-10x faster, about 1-5 % larger, that any inflate reads, the
HDF5 library's filter included; they are written with HDF5's direct chunk write. Every
dataset keeps its deflate filter, level and chunk shape, so the file's objects and values
are those Veros writes; only the bytes of the compressed streams differ.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from isal import isal_zlib

from nearline.burst.veros._pool import ArrayPool

GZIP = 1  # HDF5's filter id for deflate
ISAL_LEVELS = 3  # ISA-L's levels are 0-3; zlib's higher ones map to its highest


def deflate_only(dataset: Any) -> int | None:
    """The deflate level of ``dataset`` if deflate is its one filter, else None."""
    if dataset.chunks is None:
        return None
    plist = dataset.id.get_create_plist()
    if plist.get_nfilters() != 1:
        return None
    code, _, values, _ = plist.get_filter(0)
    return min(int(values[0]), ISAL_LEVELS) if code == GZIP and values else None


def write_deflated(
    dataset: Any, index: tuple[int, ...], value: np.ndarray, pool: ArrayPool
) -> bool:
    """``dataset[index] = value``, its chunks deflated here and written directly.

    ``index`` picks records along leading axes whose chunks are 1 long (Veros's Time);
    ``value`` covers the trailing axes whole. Returns False, having written nothing, for a
    dataset or selection this does not cover (another filter, a conversion of dtype, a
    partial selection, a scalar record): the caller then writes through h5py.
    """
    level = deflate_only(dataset)
    lead = len(index)
    chunks = dataset.chunks
    if (
        level is None
        or value.ndim == 0  # a scalar record: small, and h5py's path is as quick
        or value.dtype != dataset.dtype
        or value.shape != dataset.shape[lead:]
        or any(n != 1 for n in (chunks or ())[:lead])
    ):
        return False
    trailing = chunks[lead:]
    fill = dataset.fillvalue
    chunk = pool.take(trailing, value.dtype)
    for corner in itertools.product(
        *(range(0, n, c) for n, c in zip(value.shape, trailing, strict=True))
    ):
        part = value[tuple(slice(s, s + c) for s, c in zip(corner, trailing, strict=True))]
        if part.shape != trailing:  # an edge chunk: HDF5 stores it whole, padded
            chunk[...] = fill
        np.copyto(chunk[tuple(slice(0, n) for n in part.shape)], part)
        stream = isal_zlib.compress(chunk.reshape(-1).view(np.uint8), level)
        dataset.id.write_direct_chunk((*index, *corner), stream)
    pool.give(chunk)
    return True

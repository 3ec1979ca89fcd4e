"""Kerchunk references to a netCDF4/HDF5 asset: each chunk of each variable named by its byte
range in the asset's own download URL, so xarray (``engine="kerchunk"``) or zarr opens the
file as a virtual Zarr store and reads only the chunks it needs, by range requests.

References are made on first request, not at ingest: a granule ingested from a folder, a
bucket or a bundle and a job's output all get them through this one path, and a file nobody
asks about costs nothing. They are kept by the data's SHA-256 with a placeholder for the URL
(``{{u}}``), so they hold no path and no user, never go stale (other bytes, another name) and
are shared by every item with the same bytes; each answer puts in the URL of the item asked
about, under the server's public base URL.
"""

from __future__ import annotations

import itertools
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import orjson

from nearline.durable import publish
from nearline.errors import ItemNotFound

URL = "{{u}}"  # stands for the data asset's URL in kept references
PIECE = 256 * 1024  # bytes: about what a contiguous variable's virtual chunks hold
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"  # netCDF4 is HDF5; netCDF classic is not
References = dict[str, Any]


def make_references(source: BinaryIO, *, name: str) -> References:
    """Kerchunk references (version 1) to the HDF5 file ``source``, its chunks at ``{{u}}``.

    A variable without a ``_FillValue`` gets none in Zarr either: HDF5's default fill (0)
    would otherwise be read as one and mask real zeros, which opening the file does not. A
    contiguous variable (HDF5's layout when it is not chunked: nearline's granules) is one
    chunk to kerchunk, so a slice of it would fetch it all; it is cut into virtual chunks of
    about 256 KiB along its outer axes (:func:`split_contiguous`).

    Parameters
    ----------
    source
        The file, open for reading (read, seek, tell).
    name
        The asset's name, for the message when it is not HDF5.
    """
    import h5py
    from kerchunk.hdf import SingleHdf5ToZarr

    if source.read(len(HDF5_SIGNATURE)) != HDF5_SIGNATURE:
        raise ItemNotFound(f"{name} is not netCDF4/HDF5 (netCDF classic?): it has no references")
    source.seek(0)
    references = SingleHdf5ToZarr(source, url=URL, inline_threshold=300).translate()
    refs = references["refs"]
    with h5py.File(source, "r") as hdf5:
        for key in [key for key in refs if key.endswith(".zarray")]:
            variable = key.removesuffix(".zarray").rstrip("/") or "/"
            if "_FillValue" not in hdf5[variable].attrs:
                refs[key] = orjson.dumps({**orjson.loads(refs[key]), "fill_value": None}).decode()
    for key in [key for key in refs if key.endswith("/.zarray")]:
        split_contiguous(refs, key.removesuffix("/.zarray"))
    return references


def split_contiguous(refs: dict[str, Any], variable: str, piece: int = PIECE) -> None:
    """Cut ``variable``'s one uncompressed chunk into chunks of about ``piece`` bytes, in
    place: whole rows of its inner axes, as many as divide its axis evenly (Zarr's edge
    chunks are full-sized, so a cut must divide), each a byte range of the one before.

    Parameters
    ----------
    refs
        The references' ``refs``.
    variable
        The variable's Zarr path.
    piece
        Bytes a chunk should hold, about.
    """
    meta = orjson.loads(refs[f"{variable}/.zarray"])
    shape, itemsize = meta["shape"], np.dtype(meta["dtype"]).itemsize
    whole = ".".join("0" * len(shape)) if shape else "0"
    found = refs.get(f"{variable}/{whole}")
    if (
        meta["chunks"] != shape
        or meta["compressor"] is not None
        or meta["filters"]
        or not isinstance(found, list)
        or len(found) != 3
        or math.prod(shape) * itemsize <= piece
    ):
        return
    chunks = list(shape)
    for axis, length in enumerate(shape):
        inner = math.prod(shape[axis + 1 :]) * itemsize
        if inner >= piece:
            chunks[axis] = 1
            continue
        wanted = max(1, piece // inner)
        chunks[axis] = max(d for d in range(1, min(wanted, length) + 1) if length % d == 0)
        break
    url, offset, _ = found
    del refs[f"{variable}/{whole}"]
    size = math.prod(chunks) * itemsize
    counts = [length // chunk for length, chunk in zip(shape, chunks, strict=True)]
    for number, index in enumerate(itertools.product(*map(range, counts))):
        refs[f"{variable}/{'.'.join(map(str, index))}"] = [url, offset + number * size, size]
    refs[f"{variable}/.zarray"] = orjson.dumps({**meta, "chunks": chunks}).decode()


def with_url(references: References, url: str) -> bytes:
    """Kept references as JSON with every chunk pointing at ``url``.

    Parameters
    ----------
    references
        As :func:`make_references` made them.
    url
        The data asset's download URL.
    """
    refs = {
        key: [url, *value[1:]] if isinstance(value, list) and value[0] == URL else value
        for key, value in references["refs"].items()
    }
    return orjson.dumps({**references, "refs": refs})


class ReferenceCache:
    """References kept as JSON files in ``folder``, by the SHA-256 of the bytes they index.

    Parameters
    ----------
    folder
        Where they are kept (two levels: the digest's first two hex digits, then the digest).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, sha256: str | None, make: Callable[[], References]) -> References:
        """The references kept for ``sha256``, made with ``make`` and kept if none are.

        Parameters
        ----------
        sha256
            The data's hex digest; None: made every time and never kept.
        make
            Makes them from the file.
        """
        if sha256 is None:
            return make()
        path = self.folder / sha256[:2] / f"{sha256}.json"
        if path.is_file():
            return orjson.loads(path.read_bytes())
        references = make()
        path.parent.mkdir(parents=True, exist_ok=True)
        # a name of its own: two servers (or threads) making the same references race harmlessly
        handle, temporary = tempfile.mkstemp(prefix=f".{sha256}.", dir=path.parent)
        with os.fdopen(handle, "wb") as kept:
            kept.write(orjson.dumps(references))
        publish(Path(temporary), path)
        return references

"""Fortran unformatted sequential files, byte for byte as gfortran writes them.

Each variable is one logical record, in define order. A record is one or more subrecords,
each framed by two 4-byte native-endian integer markers around its bytes (C order, native
endian). gfortran caps a subrecord at 2147483639 bytes (2 GiB - 9); a longer record is split
into full subrecords followed by the remainder. The absolute value of a marker is its
subrecord's length; a *negative leading* marker means another subrecord follows, a *negative
trailing* marker means one precedes (gfortran manual, "File format of unformatted sequential
files"). So a record of one subrecord is ``[n data n]``, and one of three is
``[-M data M] [-M data -M] [r data -M]``; a Fortran program reads either with ``read(u) x``.

Blocks arrive in any order, so :meth:`define` reserves a record at the end of the file by
writing its markers (the gaps stay holes until written) and :meth:`write` puts each
contiguous run of a block at its offset inside the record.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import BinaryIO

import numpy as np

from nearline.burst._base import Sink, SinkFile, VariableSpec
from nearline.errors import BurstError

MAX_SUBRECORD = 2**31 - 9
"""Most data bytes in one subrecord (gfortran's default; tests lower it to exercise splits)."""

_MARKER = struct.Struct("=i")


@dataclass(frozen=True)
class _Record:
    """Where one variable's record sits in the file and how it is split."""

    spec: VariableSpec
    offset: int  # file offset of the first leading marker
    subrecord: int  # data bytes of every subrecord but the last

    def file_offset(self, position: int) -> int:
        """File offset of data byte ``position`` of the record."""
        index = position // self.subrecord if self.subrecord else 0
        return (
            self.offset
            + index * (self.subrecord + 2 * _MARKER.size)
            + _MARKER.size
            + (position - index * self.subrecord)
        )


def _subrecord_lengths(length: int, limit: int) -> list[int]:
    full, rest = divmod(length, limit)
    return [limit] * full + ([rest] if rest or not full else [])


def _pwrite_all(fd: int, data: memoryview, offset: int) -> None:
    while data:
        written = os.pwrite(fd, data, offset)
        data, offset = data[written:], offset + written


class RawSink(Sink):
    """Fortran unformatted sequential files: one record per variable, no metadata."""

    name = "raw"
    extension = "dat"

    def create(self, path: Path, *, step: int) -> SinkFile:
        return _RawFile(path)


class _RawFile(SinkFile):
    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._end = 0
        self._records: dict[str, _Record] = {}

    def define(self, spec: VariableSpec) -> None:
        assert self._fd is not None
        length = np.dtype(spec.dtype).itemsize * prod(spec.shape)
        lengths = _subrecord_lengths(length, MAX_SUBRECORD)
        record = _Record(spec, self._end, lengths[0])
        position = self._end
        for index, size in enumerate(lengths):
            leading = -size if index < len(lengths) - 1 else size
            trailing = -size if index > 0 else size
            os.pwrite(self._fd, _MARKER.pack(leading), position)
            os.pwrite(self._fd, _MARKER.pack(trailing), position + _MARKER.size + size)
            position += size + 2 * _MARKER.size
        self._end = position
        self._records[spec.name] = record

    def write(self, name: str, data: np.ndarray, *, start: tuple[int, ...]) -> None:
        assert self._fd is not None
        record = self._records[name]
        shape = record.spec.shape
        block = np.ascontiguousarray(data, dtype=record.spec.dtype)
        flat = memoryview(block.reshape(-1).view(np.uint8))
        if not flat:
            return
        # Axes after `axis` are spanned whole, so each run covers the block's extent along
        # `axis` times everything after it; earlier axes are looped over.
        axis = max(len(shape) - 1, 0)
        while axis > 0 and block.shape[axis] == shape[axis]:
            axis -= 1
        itemsize = block.dtype.itemsize
        strides = [itemsize * prod(shape[i + 1 :]) for i in range(len(shape))]
        run = itemsize * prod(block.shape[axis:])
        base = sum(s * st for s, st in zip(start, strides, strict=True))
        for count, index in enumerate(np.ndindex(*block.shape[:axis])):
            position = base + sum(i * st for i, st in zip(index, strides, strict=False))
            self._place(record, position, flat[count * run : (count + 1) * run])

    def _place(self, record: _Record, position: int, data: memoryview) -> None:
        """Write record bytes ``position...`` which may straddle subrecord boundaries."""
        assert self._fd is not None
        while data:
            room = record.subrecord - position % record.subrecord
            piece = data[:room]
            _pwrite_all(self._fd, piece, record.file_offset(position))
            data, position = data[len(piece) :], position + len(piece)

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


def _read_marker(stream: BinaryIO, path: Path) -> int:
    raw = stream.read(_MARKER.size)
    if len(raw) != _MARKER.size:
        raise BurstError(f"{path}: truncated record marker at byte {stream.tell() - len(raw)}")
    return _MARKER.unpack(raw)[0]


def _next_record(stream: BinaryIO, path: Path) -> list[tuple[int, int]] | None:
    """(file offset, length) of each subrecord of the next record; None at end of file.

    Leaves ``stream`` after the record's last marker.
    """
    pieces: list[tuple[int, int]] = []
    while True:
        at = stream.tell()
        if not pieces and not stream.read(1):
            return None
        stream.seek(at)
        leading = _read_marker(stream, path)
        size = abs(leading)
        stream.seek(size, os.SEEK_CUR)
        trailing = _read_marker(stream, path)
        if abs(trailing) != size or (trailing < 0) != bool(pieces):
            raise BurstError(
                f"{path}: record markers at byte {at} do not match ({leading} then "
                f"{trailing}); the file is not a gfortran unformatted sequential file"
            )
        pieces.append((at + _MARKER.size, size))
        if leading >= 0:
            return pieces


def _read_into(stream: BinaryIO, pieces: list[tuple[int, int]], out: memoryview) -> None:
    """Copy a record's subrecords into ``out``, then leave ``stream`` after the record."""
    end = stream.tell()
    filled = 0
    for offset, size in pieces:
        stream.seek(offset)
        if stream.readinto(out[filled : filled + size]) != size:
            raise BurstError(f"record at byte {offset} ends early")
        filled += size
    stream.seek(end)


def read_records(path: Path | str) -> list[bytes]:
    """Every logical record of a Fortran unformatted sequential file, subrecords joined."""
    path = Path(path)
    records: list[bytes] = []
    with open(path, "rb") as stream:
        while (pieces := _next_record(stream, path)) is not None:
            buffer = bytearray(sum(size for _, size in pieces))
            _read_into(stream, pieces, memoryview(buffer))
            records.append(bytes(buffer))
    return records


def read_record_arrays(
    path: Path | str, specs: Sequence[tuple[np.dtype | str, tuple[int, ...]]]
) -> list[np.ndarray]:
    """Read the first ``len(specs)`` records as arrays of the given (dtype, shape), C order."""
    path = Path(path)
    arrays: list[np.ndarray] = []
    with open(path, "rb") as stream:
        for number, (dtype, shape) in enumerate(specs):
            pieces = _next_record(stream, path)
            if pieces is None:
                raise BurstError(
                    f"{path} holds {number} records, fewer than the {len(specs)} asked"
                )
            array = np.empty(shape, dtype=dtype)
            length = sum(size for _, size in pieces)
            if length != array.nbytes:
                raise BurstError(
                    f"{path}: record {number} holds {length} bytes, but {dtype} {shape} "
                    f"needs {array.nbytes}"
                )
            _read_into(stream, pieces, memoryview(array.reshape(-1).view(np.uint8)))
            arrays.append(array)
    return arrays

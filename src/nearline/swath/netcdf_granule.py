"""nearline's own AVHRR GAC granule format: netCDF-4, shaped like the Level 1b product.

Raw 10-bit counts of the five channels (channel-major, contiguous, so 1024 lines of one
channel are one 818 KiB request), latitude, longitude and the three angles at the 51 tie
points of each line, line times, and the calibration telemetry. ``nearline synth avhrr``
writes it; any netCDF tool reads it.

AVHRR/3 sends channel 3a (1.6 um) or 3b (3.7 um) in the same slot, chosen line by line: the
optional ``ch3_select`` (line) variable says which, with the codes of the Level 1b scan line
header (0 3b, 1 3a, 2 transition: neither). A file without it has 3b on every line.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from nearline.errors import GranuleError, NotThisFormat
from nearline.swath._base import Granule, Reader, tie_rows
from nearline.swath._block import (
    CH3_TRANSITION,
    CH3A,
    CH3B,
    N_PIXELS,
    SwathBlock,
    Telemetry,
)
from nearline.swath._wire import block_nbytes, field_offsets, layout

PRODUCT = "nearline-avhrr-gac"
READER = "nearline-avhrr"
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
TIE_VARIABLES = {
    "tie_lat": "latitude",
    "tie_lon": "longitude",
    "tie_sat_zenith": "satellite_zenith_angle",
    "tie_sun_zenith": "solar_zenith_angle",
    "tie_rel_azimuth": "relative_azimuth_angle",
}
PIECE_BYTES = 1 << 18  # a tie-point variable is read in pieces of 256 KiB (1,285 lines)
EPOCH = np.datetime64("1970-01-01T00:00:00", "ms")
CH3_SELECT = "ch3_select"


class NetCDFGranule(Granule):
    """An open nearline granule file.

    Read through h5py (the file is HDF5 underneath): opening it and reading its header take
    a sixth of what netCDF-C's open does, which reads every variable's metadata first.
    With ``stream`` (a seekable binary file object, such as an object store's ranged
    reader), the bytes come from it and ``path`` only names the granule in messages.
    """

    reader = READER
    media_type = "application/x-netcdf"
    product = PRODUCT

    def __init__(self, path: Path, *, stream: BinaryIO | None = None) -> None:
        import h5py

        self.path = path
        self._fd: int | None = None
        self._stream = stream
        self._file: Any = None  # the high-level h5py.File, made when a block is read
        self._offsets: dict[str, int] | None = None
        try:
            if stream is None:
                self._fid = h5py.h5f.open(os.fsencode(path), h5py.h5f.ACC_RDONLY)
            else:
                self._file = h5py.File(stream, "r")
                self._fid = self._file.id
        except OSError as error:
            raise GranuleError(
                f"granule {path}: cannot be opened ({error}); it is "
                "truncated or not a netCDF-4 file"
            ) from None
        try:
            if not h5py.h5a.exists(self._fid, b"product") or self._attribute("product") != PRODUCT:
                raise NotThisFormat(f"granule {path}: not a {PRODUCT} file")
            self.platform = self._attribute("platform")
            self.n_lines = int(h5py.h5d.open(self._fid, b"latitude").shape[0])
            self.start_time = datetime.fromisoformat(self._attribute("time_coverage_start"))
            self.end_time = datetime.fromisoformat(self._attribute("time_coverage_end"))
            if stream is None:
                self._fd = os.open(path, os.O_RDONLY)
        except GranuleError:  # first: NotThisFormat is a ValueError too, and must stay itself
            self.close()
            raise
        except (KeyError, ValueError, OSError) as error:
            self.close()
            raise GranuleError(f"granule {path}: header incomplete ({error})") from None

    def _attribute(self, name: str) -> Any:
        """A global attribute, text decoded (KeyError if there is none). Scalar fixed-length
        strings (what netCDF-C writes) are read through h5py's low-level calls: a third of
        what ``attrs`` costs."""
        import h5py

        attribute = h5py.h5a.open(self._fid, name.encode())
        kind = attribute.get_type()
        fixed_text = isinstance(kind, h5py.h5t.TypeStringID) and not kind.is_variable_str()
        if fixed_text and attribute.shape == ():
            value = np.empty((), f"S{kind.get_size()}")
            attribute.read(value, mtype=kind)
            return value.item().decode()
        value = self._handle().attrs[name]
        return value.decode() if isinstance(value, bytes) else value

    def _handle(self) -> Any:
        if self._file is None:
            import h5py

            self._file = h5py.File(self._fid)
        return self._file

    def _variable(self, name: str) -> Any:
        try:
            return self._handle()[name]
        except (KeyError, OSError) as error:
            raise GranuleError(
                f"granule {self.path}: variable {name!r} cannot be read ({error}); the file "
                "is truncated or corrupt"
            ) from None

    def _get(self, name: str, key: Any) -> np.ndarray:
        variable = self._variable(name)
        try:
            return np.asarray(variable[key])
        except (OSError, ValueError, IndexError) as error:
            raise GranuleError(
                f"granule {self.path}: variable {name!r} cannot be read ({error}); the file "
                "is truncated or corrupt"
            ) from None

    def _tie_variable(self, name: str, rows: np.ndarray | None = None) -> np.ndarray:
        """Lines ``rows`` (default all) of a (line, tie) float32 variable. Stored contiguous
        (as this format writes it), it is read by ``pread`` in pieces of at most
        :data:`PIECE_BYTES` through one small buffer; otherwise through HDF5."""
        import h5py

        try:
            variable = h5py.h5d.open(self._fid, name.encode())
        except KeyError as error:
            raise GranuleError(f"granule {self.path}: no variable {name!r} ({error})") from None
        offset = variable.get_offset()
        if offset is None or variable.dtype != np.dtype("<f4") or len(variable.shape) != 2:
            values = self._get(name, slice(None)).astype(np.float32, copy=False)
            return values if rows is None else values[rows]
        n_lines, columns = variable.shape
        piece_lines = max(1, PIECE_BYTES // (4 * columns))
        if rows is None or n_lines <= piece_lines:
            values = np.empty((n_lines, columns), np.float32)
            self._pread(values.reshape(-1).view(np.uint8), offset)
            return values if rows is None else values[rows]
        out = np.empty((rows.size, columns), np.float32)
        buffer = np.empty((piece_lines, columns), np.float32)
        done = 0
        for start in range(0, n_lines, piece_lines):
            wanted = rows[done : np.searchsorted(rows, start + piece_lines)]
            if wanted.size:  # read up to the last line wanted here, no further
                piece = buffer[: wanted[-1] + 1 - start]
                self._pread(piece.reshape(-1).view(np.uint8), offset + start * 4 * columns)
                out[done : done + wanted.size] = piece[wanted - start]
                done += wanted.size
        return out

    def read_tie_latitudes(self) -> np.ndarray:
        return self._tie_variable("latitude")

    def read_tie_sun_zenith(self) -> np.ndarray:
        return self._tie_variable(TIE_VARIABLES["tie_sun_zenith"])

    def read_tie_lonlat(self, step: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """The two variables alone; only the sampled lines are kept."""
        rows = tie_rows(self.n_lines, step)
        if rows.size == self.n_lines:
            return self._tie_variable("longitude"), self._tie_variable("latitude")
        return self._tie_variable("longitude", rows), self._tie_variable("latitude", rows)

    def read_telemetry(self) -> Telemetry:
        everything = slice(None)
        switch = None
        if CH3_SELECT in self._handle():  # written since channel 3a; older files are 3b only
            switch = self._get(CH3_SELECT, everything).astype(np.uint8)
        return Telemetry(
            times=EPOCH + self._get("time", everything).astype("timedelta64[ms]"),
            prt_counts=self._get("prt_counts", everything),
            ict_counts=self._get("ict_counts", everything),
            space_counts=self._get("space_counts", everything),
            ch3_select=switch,
        )

    def read(self, start: int, stop: int) -> SwathBlock:
        self.check_lines(start, stop)
        lines = slice(start, stop)
        ties = {field: self._get(name, lines) for field, name in TIE_VARIABLES.items()}
        return SwathBlock(
            granule=self.path.name,
            platform=self.platform,
            first_line=start,
            times=EPOCH + self._get("time", lines).astype("timedelta64[ms]"),
            counts=self._get("counts", (slice(None), lines)),
            prt_counts=self._get("prt_counts", lines),
            ict_counts=self._get("ict_counts", lines),
            space_counts=self._get("space_counts", lines),
            **ties,
        )

    def read_into(self, start: int, stop: int, buffer: np.ndarray) -> int:
        """Read lines ``[start, stop)`` straight into ``buffer`` in the wire layout.

        The variables are stored contiguous and uncompressed, so every field is one or five
        ``pread`` calls from the page cache (or disk) into the shipping buffer: no library
        decode, no intermediate copy. Returns the bytes used.
        """
        self.check_lines(start, stop)
        n = stop - start
        offsets = field_offsets(n)
        direct = self._direct_offsets()
        for field, dtype, shape in layout(n):
            name, row_bytes = direct[field]
            target = buffer[offsets[field] : offsets[field] + dtype.itemsize * int(np.prod(shape))]
            if field == "counts":  # (channel, line, pixel): one piece per channel
                per_channel = n * row_bytes
                for channel in range(shape[0]):
                    where = self._offsets[name] + (channel * self.n_lines + start) * row_bytes
                    piece = target[channel * per_channel : (channel + 1) * per_channel]
                    self._pread(piece, where)
            else:
                self._pread(target, self._offsets[name] + start * row_bytes)
        return block_nbytes(n)

    def prefetch(self, start: int, stop: int) -> None:
        """Ask the kernel to start reading the counts of lines ``[start, stop)`` now."""
        if self._offsets is None or self._fd is None or not hasattr(os, "posix_fadvise"):
            return
        row = N_PIXELS * 2
        for channel in range(5):
            where = self._offsets["counts"] + (channel * self.n_lines + start) * row
            os.posix_fadvise(self._fd, where, (stop - start) * row, os.POSIX_FADV_WILLNEED)

    def _direct_offsets(self) -> dict[str, tuple[str, int]]:
        """Where each wire field lives in the file: (variable, bytes per line)."""
        if self._offsets is None:
            self._offsets = {}
            for name in (*TIE_VARIABLES.values(), "counts", "time", "prt_counts",
                         "ict_counts", "space_counts"):  # fmt: skip
                variable = self._variable(name)
                offset = variable.id.get_offset()
                if offset is None or variable.compression is not None:
                    raise GranuleError(f"granule {self.path}: {name} is not contiguous")
                self._offsets[name] = offset
        fields = {field: (name, 51 * 4) for field, name in TIE_VARIABLES.items()}
        fields.update(
            counts=("counts", N_PIXELS * 2),
            times=("time", 8),
            prt_counts=("prt_counts", 8),
            ict_counts=("ict_counts", 24),
            space_counts=("space_counts", 24),
        )
        return fields

    def _pread(self, target: np.ndarray, offset: int) -> None:
        view = memoryview(target)
        done = 0
        if self._stream is not None:
            self._stream.seek(offset)
        while done < len(view):
            if self._stream is not None:
                got = self._stream.readinto(view[done:]) or 0
            else:
                got = os.preadv(self._fd, [view[done:]], offset + done)
            if got <= 0:
                raise GranuleError(
                    f"granule {self.path}: ends before byte {offset + len(view)}; it is truncated"
                )
            done += got

    def close(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            os.close(fd)
            self._fd = None
        handle = getattr(self, "_file", None)
        if handle is not None and handle.id.valid:
            handle.close()
        fid = getattr(self, "_fid", None)
        if fid is not None and fid.valid:
            fid.close()


class NetCDFGranuleReader(Reader):
    """Reads granules written by ``nearline synth avhrr``."""

    name = READER
    supports_streams = True

    @classmethod
    def can_open(cls, path: Path) -> bool:
        return _product(path)[0] == PRODUCT

    @classmethod
    def why_not(cls, path: Path) -> str:
        return _product(path)[1]

    def open(self, path: Path) -> Granule:
        return NetCDFGranule(Path(path))

    @classmethod
    def can_open_head(cls, head: bytes) -> bool:
        return head[:8] == HDF5_MAGIC

    def open_stream(self, stream: BinaryIO, *, name: str) -> Granule:
        return NetCDFGranule(Path(name), stream=stream)


def _product(path: Path) -> tuple[str | None, str]:
    """The ``product`` global attribute of an HDF5 file (None if it has none) and, when it is
    not this format's, what was found instead."""
    value, missing = hdf5_product(path)
    if value is None:
        return None, missing
    return value, f"its 'product' attribute is {value!r}, not {PRODUCT!r}"


def hdf5_product(path: Path) -> tuple[str | None, str]:
    """The ``product`` global attribute of an HDF5 file, read without netCDF-C (a sixth of
    its open), and ``""``; or None and what was found instead (a phrase for ``why_not``)."""
    found, missing = _hdf5_opened(path, lambda file: _text(file.attrs.get("product")))
    if missing:
        return None, missing
    if found is None:
        return None, "netCDF-4/HDF5 without a global attribute 'product'"
    return found, ""


def hdf5_grid_attributes(
    path: Path,
) -> tuple[str | None, str | None, list[tuple[int, ...]], str]:
    """An HDF5 file's ``product`` and ``grid`` global attributes (None where absent) and its
    top-level datasets' shapes, read without netCDF-C; and ``""``, or what was found
    instead of netCDF-4/HDF5 (a phrase for ``why_not``).

    Parameters
    ----------
    path
        Any file.
    """
    import h5py

    def read(file: Any) -> tuple[str | None, str | None, list[tuple[int, ...]]]:
        shapes = [item.shape for item in file.values() if isinstance(item, h5py.Dataset)]
        return _text(file.attrs.get("product")), _text(file.attrs.get("grid")), shapes

    found, missing = _hdf5_opened(path, read)
    if missing:
        return None, None, [], missing
    return (*found, "")


def _hdf5_opened(path: Path, read: Callable[[Any], Any]) -> tuple[Any, str]:
    """``read`` of the open HDF5 file, and ``""``; or None and why it is not one."""
    import h5py

    try:
        with open(path, "rb") as handle:
            if handle.read(8) != HDF5_MAGIC:
                return None, "not netCDF-4/HDF5"
        with h5py.File(path, "r") as file:
            return read(file), ""
    except (OSError, ValueError, RuntimeError, KeyError):  # h5py's errors on damaged metadata
        return None, "an HDF5 signature, but HDF5 cannot open it: truncated or corrupt"


def _text(value: Any) -> str | None:
    """An HDF5 attribute as text, or None if it is not text."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    return value if isinstance(value, str) else None


def write_granule(
    path: Path, block: SwathBlock, attrs: dict[str, Any], *, ch3_select: np.ndarray | None = None
) -> None:
    """Write one whole granule (``block`` holds every line) in this format; ``ch3_select``
    (per line, :attr:`~nearline.swath.Telemetry.ch3_select`'s codes) if any line
    carries channel 3a."""
    import netCDF4

    n = block.n_lines
    with netCDF4.Dataset(path, "w", format="NETCDF4") as dataset:
        dataset.setncatts({
            "product": PRODUCT,
            "Conventions": "CF-1.10",
            "platform": block.platform,
            "time_coverage_start": _iso(block.times[0]),
            "time_coverage_end": _iso(block.times[-1]),
            **attrs,
        })  # fmt: skip
        dataset.createDimension("channel", 5)
        dataset.createDimension("line", n)
        dataset.createDimension("pixel", block.counts.shape[2])
        dataset.createDimension("tie", block.tie_lat.shape[1])
        dataset.createDimension("thermal", 3)
        channel = dataset.createVariable("channel", str, ("channel",))
        third = "3b" if ch3_select is None else "3a/3b"  # by line: see ch3_select
        for index, name in enumerate(("1", "2", third, "4", "5")):
            channel[index] = name
        counts = dataset.createVariable(
            "counts", "u2", ("channel", "line", "pixel"), contiguous=True, fill_value=False
        )
        counts.long_name = "raw 10-bit AVHRR counts"
        counts[:] = block.counts
        for field, name in TIE_VARIABLES.items():
            variable = dataset.createVariable(
                name, "f4", ("line", "tie"), contiguous=True, fill_value=False
            )
            variable.units = "degrees"
            variable[:] = getattr(block, field)
        time = dataset.createVariable("time", "i8", ("line",), contiguous=True)
        time.units = "milliseconds since 1970-01-01 00:00:00"
        time[:] = (block.times.astype("datetime64[ms]") - EPOCH).astype(np.int64)
        for name, dims in (
            ("prt_counts", ("line",)),
            ("ict_counts", ("line", "thermal")),
            ("space_counts", ("line", "thermal")),
        ):
            variable = dataset.createVariable(name, "f8", dims, contiguous=True)
            variable[:] = getattr(block, name)
        if ch3_select is not None:
            switch = dataset.createVariable(CH3_SELECT, "u1", ("line",), contiguous=True)
            switch.long_name = "what the line's channel-3 slot of counts carries"
            switch.flag_values = np.array([CH3B, CH3A, CH3_TRANSITION], np.uint8)
            switch.flag_meanings = "channel_3b channel_3a transition"
            switch[:] = ch3_select


def _iso(value: np.datetime64) -> str:
    moment = value.astype("datetime64[ms]").astype(datetime).replace(tzinfo=UTC)
    return moment.isoformat()

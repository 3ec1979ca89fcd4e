"""nearline's own AVHRR GAC granule format: netCDF-4, shaped like the Level 1b product.

Raw 10-bit counts of the five channels (channel-major, contiguous, so 1024 lines of one
channel are one 818 KiB request), latitude, longitude and the three angles at the 51 tie
points of each line, line times, and the calibration telemetry. ``nearline synth avhrr``
writes it; any netCDF tool reads it.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nearline.errors import GranuleError
from nearline.swath.base import Granule, Reader
from nearline.swath.block import N_PIXELS, SwathBlock, Telemetry
from nearline.swath.wire import block_nbytes, field_offsets, layout

PRODUCT = "nearline-avhrr-gac"
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
TIE_VARIABLES = {
    "tie_lat": "latitude",
    "tie_lon": "longitude",
    "tie_sat_zenith": "satellite_zenith_angle",
    "tie_sun_zenith": "solar_zenith_angle",
    "tie_rel_azimuth": "relative_azimuth_angle",
}
EPOCH = np.datetime64("1970-01-01T00:00:00", "ms")


class NetCDFGranule(Granule):
    """An open nearline granule file."""

    def __init__(self, path: Path) -> None:
        import netCDF4

        self.path = path
        try:
            self._dataset = netCDF4.Dataset(path, "r")
        except OSError as error:
            raise GranuleError(
                f"granule {path}: cannot be opened ({error}); it is "
                "truncated or not a netCDF-4 file"
            ) from None
        self._dataset.set_auto_maskandscale(False)
        self._fd: int | None = os.open(path, os.O_RDONLY)
        self._offsets: dict[str, int] | None = None
        try:
            if getattr(self._dataset, "product", None) != PRODUCT:
                raise GranuleError(f"granule {path}: not a {PRODUCT} file")
            self.platform = str(self._dataset.platform)
            self.n_lines = len(self._dataset.dimensions["line"])
            self.start_time = datetime.fromisoformat(self._dataset.time_coverage_start)
            self.end_time = datetime.fromisoformat(self._dataset.time_coverage_end)
        except (AttributeError, KeyError, ValueError) as error:
            self.close()
            raise GranuleError(f"granule {path}: header incomplete ({error})") from None
        except GranuleError:
            self.close()
            raise

    def _get(self, name: str, key: Any) -> np.ndarray:
        try:
            return np.asarray(self._dataset.variables[name][key])
        except (KeyError, RuntimeError, OSError, IndexError) as error:
            raise GranuleError(
                f"granule {self.path}: variable {name!r} cannot be read ({error}); the file "
                "is truncated or corrupt"
            ) from None

    def read_tie_latitudes(self) -> np.ndarray:
        return self._get("latitude", slice(None)).astype(np.float32, copy=False)

    def read_telemetry(self) -> Telemetry:
        everything = slice(None)
        return Telemetry(
            times=EPOCH + self._get("time", everything).astype("timedelta64[ms]"),
            prt_counts=self._get("prt_counts", everything),
            ict_counts=self._get("ict_counts", everything),
            space_counts=self._get("space_counts", everything),
        )

    def read(self, start: int, stop: int) -> SwathBlock:
        if not 0 <= start <= stop <= self.n_lines:
            raise GranuleError(
                f"granule {self.path}: lines {start}..{stop} asked of {self.n_lines}"
            )
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
        if not 0 <= start <= stop <= self.n_lines:
            raise GranuleError(
                f"granule {self.path}: lines {start}..{stop} asked of {self.n_lines}"
            )
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
        if self._offsets is None or not hasattr(os, "posix_fadvise"):
            return
        row = N_PIXELS * 2
        for channel in range(5):
            where = self._offsets["counts"] + (channel * self.n_lines + start) * row
            os.posix_fadvise(self._fd, where, (stop - start) * row, os.POSIX_FADV_WILLNEED)

    def _direct_offsets(self) -> dict[str, tuple[str, int]]:
        """Where each wire field lives in the file: (variable, bytes per line)."""
        if self._offsets is None:
            import h5py

            with h5py.File(self.path, "r") as handle:
                self._offsets = {}
                for name in (*TIE_VARIABLES.values(), "counts", "time", "prt_counts",
                             "ict_counts", "space_counts"):  # fmt: skip
                    offset = handle[name].id.get_offset()
                    if offset is None or handle[name].compression is not None:
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
        while done < len(view):
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
        dataset = getattr(self, "_dataset", None)
        if dataset is not None and dataset.isopen():
            dataset.close()


class NetCDFGranuleReader(Reader):
    """Reads granules written by ``nearline synth avhrr``."""

    name = "nearline-avhrr"

    @classmethod
    def can_open(cls, path: Path) -> bool:
        try:
            with open(path, "rb") as handle:
                return handle.read(8) == HDF5_MAGIC
        except OSError:
            return False

    def open(self, path: Path) -> Granule:
        return NetCDFGranule(Path(path))


def write_granule(path: Path, block: SwathBlock, attrs: dict[str, Any]) -> None:
    """Write one whole granule (``block`` holds every line) in this format."""
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
        for index, name in enumerate(("1", "2", "3b", "4", "5")):
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


def _iso(value: np.datetime64) -> str:
    moment = value.astype("datetime64[ms]").astype(datetime).replace(tzinfo=UTC)
    return moment.isoformat()

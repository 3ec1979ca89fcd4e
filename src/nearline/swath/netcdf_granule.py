"""nearline's own AVHRR GAC granule format: netCDF-4, shaped like the Level 1b product.

Raw 10-bit counts of the five channels (channel-major, contiguous, so 1024 lines of one
channel are one 818 KiB request), latitude, longitude and the three angles at the 51 tie
points of each line, line times, and the calibration telemetry. ``nearline synth avhrr``
writes it; any netCDF tool reads it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nearline.errors import GranuleError
from nearline.swath.base import Granule, Reader, SwathBlock, Telemetry

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
        try:
            if getattr(self._dataset, "product", None) != PRODUCT:
                raise GranuleError(f"granule {path}: not a {PRODUCT} file")
            self.platform = str(self._dataset.platform)
            self.n_lines = len(self._dataset.dimensions["line"])
            self.start_time = datetime.fromisoformat(self._dataset.time_coverage_start)
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

    def close(self) -> None:
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

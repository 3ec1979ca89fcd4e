"""MODIS Level-2 swath granules (MOD11_L2, MOD06_L2, MOD05_L2 and Aqua's MYD twins), HDF4.

Everything is read from what the real products carry: the product's short name, platform and
time range from the ECS ``CoreMetadata.0`` attribute (ODL text), geolocation from the
``Latitude``/``Longitude`` SDS (5 km, every fifth 1 km line and frame starting at the third,
or where the ``Cell_Across_Swath_Sampling`` attribute says), and each field decoded with its
own ``scale_factor``, ``add_offset``, ``valid_range`` and ``_FillValue`` as MODIS defines
them: ``value = scale_factor * (stored - add_offset)``.

A Level-2 granule holds geophysical fields, not AVHRR counts: the AVHRR compositing calls
(``read``, ``read_telemetry``, ``read_tie_latitudes``) raise :class:`GranuleError` saying so.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nearline.errors import GranuleError
from nearline.swath._base import Granule, Reader, tie_rows
from nearline.swath._block import SwathBlock, Telemetry
from nearline.swath._modis_products import (
    FRAMES,
    GEO_FIRST,
    GEO_STEP,
    PLATFORMS,
    PRODUCTS,
    product_of,
)

READER = "modis-l2"
HDF4_MAGIC = b"\x0e\x03\x13\x01"
SHORT_NAMES = {prefix + name[3:] for name in PRODUCTS for prefix in PLATFORMS}


def ecs_value(text: str, name: str) -> str | None:
    """The VALUE of ODL object ``name`` in ECS metadata text (quotes removed), or None."""
    match = re.search(
        rf"OBJECT\s*=\s*{re.escape(name)}\s*$(.*?)END_OBJECT\s*=\s*{re.escape(name)}\s*$",
        text,
        re.MULTILINE | re.DOTALL,
    )
    if match is None:
        return None
    value = re.search(r"^\s*VALUE\s*=\s*(.*?)\s*$", match.group(1), re.MULTILINE)
    return None if value is None else value.group(1).strip('"() ')


def _open_sd(path: Path) -> Any:
    from pyhdf.error import HDF4Error
    from pyhdf.SD import SD, SDC

    try:
        return SD(str(path), SDC.READ)
    except HDF4Error as error:
        raise GranuleError(
            f"granule {path}: HDF4 cannot open it ({error}); it is truncated or corrupt"
        ) from None


def _short_name(sd: Any) -> str | None:
    core = sd.attributes().get("CoreMetadata.0")
    if not isinstance(core, str):
        return None
    name = ecs_value(core, "SHORTNAME")
    return name if name in SHORT_NAMES else None


class ModisGranule(Granule):
    """An open MODIS Level-2 granule.

    ``n_lines`` counts 1 km lines (2030 for a full 5-minute granule); the geolocation has
    one row every five of them (``geo_rows``), which is what the footprint samples.
    """

    reader = READER
    media_type = "application/x-hdf"
    instrument = "modis"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._sd = _open_sd(path)
        try:
            core = self._sd.attributes().get("CoreMetadata.0")
            short_name = _short_name(self._sd)
            if short_name is None:
                raise GranuleError(
                    f"granule {path}: no CoreMetadata.0 naming one of "
                    f"{', '.join(sorted(SHORT_NAMES))}"
                )
            self.short_name = short_name
            self.product = short_name
            self.product = product_of(short_name)
            self.platform = _platform(core, short_name)
            self.start_time = _ecs_time(core, "BEGINNING", path)
            self.end_time = _ecs_time(core, "ENDING", path)
            self.fields = tuple(f.name for f in self.product.fields if self._has(f.name))
            if not self.fields:
                raise GranuleError(f"granule {path}: holds none of {short_name}'s fields")
            self.geo_rows, self.geo_columns = self._shape("Latitude")
            self.n_lines = self._shape(self.fields[0])[0] * (
                GEO_STEP if self.product.field(self.fields[0]).grid == "5km" else 1
            )
            self.edge_reach = self._edge_reach()
        except GranuleError:
            self.close()
            raise

    def _has(self, name: str) -> bool:
        return name in self._sd.datasets()

    def _sds(self, name: str) -> Any:
        from pyhdf.error import HDF4Error

        try:
            return self._sd.select(name)
        except HDF4Error:
            raise GranuleError(f"granule {self.path}: has no SDS {name!r}") from None

    def _shape(self, name: str) -> tuple[int, int]:
        _, rank, dims, _, _ = self._sds(name).info()
        if rank < 2:
            raise GranuleError(f"granule {self.path}: SDS {name!r} has rank {rank}")
        return int(dims[0]), int(dims[1])

    def _get(self, name: str) -> tuple[np.ndarray, dict[str, Any]]:
        from pyhdf.error import HDF4Error

        sds = self._sds(name)
        try:
            return np.asarray(sds.get()), sds.attributes()
        except HDF4Error as error:
            raise GranuleError(
                f"granule {self.path}: SDS {name!r} cannot be read ({error}); the file is "
                "truncated or corrupt"
            ) from None

    def _edge_reach(self) -> float:
        """How far the swath's outermost frames lie beyond the outermost geolocation
        column, in geolocation steps (the footprint grows the swath by this much)."""
        _, frames = self.geo_pixels()
        step = frames[1] - frames[0] if frames.size > 1 else GEO_STEP
        return float(max(frames[0], FRAMES - 1 - frames[-1]) / step)

    # -- the geophysical fields --------------------------------------------------------------
    def read_field(self, name: str) -> np.ndarray:
        """Field ``name`` decoded: float32 with NaN where the file has its fill value or a
        value outside ``valid_range``; quality flags (``QC``, ``Quality_Assurance_*``) as
        stored."""
        if name not in self.fields:
            raise GranuleError(
                f"granule {self.path}: no field {name!r}; it holds {', '.join(self.fields)}"
            )
        stored, attrs = self._get(name)
        return stored if self.product.field(name).is_quality else decode(stored, attrs)

    def read_lonlat(self, grid: str = "5km") -> tuple[np.ndarray, np.ndarray]:
        """Longitude and latitude, float32 degrees, NaN where the file holds its fill value.

        ``grid="5km"``: the file's own (``geo_rows``, ``geo_columns``), sitting on the 1 km
        lines and frames ``geo_pixels()``; ``"1km"``: every 1 km line and frame
        (``n_lines``, 1354), interpolated linearly on the unit sphere between them.
        """
        lon, lat = self._geolocation("Longitude"), self._geolocation("Latitude")
        if grid == "5km":
            return lon, lat
        if grid != "1km":
            raise GranuleError(f"grid: expected '5km' or '1km', got {grid!r}")
        lines, frames = self.geo_pixels()
        phi, lam = np.radians(lat.astype(np.float64)), np.radians(lon.astype(np.float64))
        xyz = [np.cos(phi) * np.cos(lam), np.cos(phi) * np.sin(lam), np.sin(phi)]
        x, y, z = (interpolate(v, lines, frames, self.n_lines, FRAMES) for v in xyz)
        lon1 = np.degrees(np.arctan2(y, x)).astype(np.float32)
        lat1 = np.degrees(np.arctan2(z, np.hypot(x, y))).astype(np.float32)
        return lon1, lat1

    def geo_pixels(self) -> tuple[np.ndarray, np.ndarray]:
        """The 1 km lines and frames (0-based) the geolocation rows and columns sit on."""
        attrs = self._sds("Latitude").attributes()
        default = (GEO_FIRST + 1, 0, GEO_STEP)  # MOD11_L2 says nothing: the same sampling
        along = attrs.get("Cell_Along_Swath_Sampling", default)
        across = attrs.get("Cell_Across_Swath_Sampling", default)
        lines = along[0] - 1 + along[2] * np.arange(self.geo_rows)
        frames = across[0] - 1 + across[2] * np.arange(self.geo_columns)
        return lines, frames

    def _geolocation(self, name: str) -> np.ndarray:
        values, attrs = self._get(name)
        return decode(values.astype(np.float32), attrs)

    def read_tie_lonlat(self, step: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Geolocation rows ``0, step, 2 step, ...`` and the last (rows are 5 km apart)."""
        rows = tie_rows(self.geo_rows, step)
        lon, lat = self.read_lonlat()
        return lon[rows], lat[rows]

    # -- the AVHRR compositing contract does not apply ----------------------------------------
    def _not_avhrr(self) -> GranuleError:
        return GranuleError(
            f"granule {self.path}: a {self.short_name} Level-2 product holds geophysical "
            "fields, not AVHRR counts; read them with read_field()"
        )

    def read_tie_latitudes(self) -> np.ndarray:
        raise self._not_avhrr()

    def read_telemetry(self) -> Telemetry:
        raise self._not_avhrr()

    def read(self, start: int, stop: int) -> SwathBlock:
        raise self._not_avhrr()

    def close(self) -> None:
        sd = getattr(self, "_sd", None)
        if sd is not None:
            sd.end()
            self._sd = None


def interpolate(
    values: np.ndarray, lines: np.ndarray, frames: np.ndarray, n_lines: int, n_frames: int
) -> np.ndarray:
    """A field given on 1 km ``lines`` x ``frames`` to every 1 km line and frame, linearly,
    extrapolating linearly beyond the outermost ones (float64)."""
    return _along(_along(values, frames, n_frames, axis=1), lines, n_lines, axis=0)


def _along(values: np.ndarray, at: np.ndarray, size: int, *, axis: int) -> np.ndarray:
    position = (np.arange(size) - at[0]) / (at[1] - at[0]) if at.size > 1 else np.zeros(size)
    low = np.clip(np.floor(position).astype(int), 0, max(at.size - 2, 0))
    high = np.minimum(low + 1, at.size - 1)
    weight = position - low
    shape = [1, 1]
    shape[axis] = size
    weight = weight.reshape(shape)
    first, second = np.take(values, low, axis=axis), np.take(values, high, axis=axis)
    return first * (1 - weight) + second * weight


def decode(stored: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """MODIS's ``scale_factor * (stored - add_offset)`` as float32, NaN where ``stored`` is
    the fill value or outside ``valid_range``."""
    bad = np.zeros(stored.shape, bool)
    if "_FillValue" in attrs:
        bad |= stored == attrs["_FillValue"]
    if "valid_range" in attrs:
        low, high = attrs["valid_range"]
        bad |= (stored < low) | (stored > high)
    scale = float(attrs.get("scale_factor", 1.0))
    offset = float(attrs.get("add_offset", 0.0))
    values = (scale * (stored.astype(np.float64) - offset)).astype(np.float32)
    values[bad] = np.nan
    return values


def _platform(core: str, short_name: str) -> str:
    name = ecs_value(core, "ASSOCIATEDPLATFORMSHORTNAME")
    return name.lower() if name else PLATFORMS[short_name[:3]]


def _ecs_time(core: str, which: str, path: Path) -> datetime:
    day = ecs_value(core, f"RANGE{which}DATE")
    time = ecs_value(core, f"RANGE{which}TIME")
    if not day or not time:
        raise GranuleError(f"granule {path}: CoreMetadata.0 has no RANGE{which}DATE/TIME")
    try:
        return datetime.fromisoformat(f"{day}T{time}").replace(tzinfo=UTC)
    except ValueError:
        raise GranuleError(
            f"granule {path}: RANGE{which}DATE/TIME {day!r} {time!r} is not a date and time"
        ) from None


class ModisL2Reader(Reader):
    """MODIS Level-2 swath products in HDF4, recognised by the HDF4 signature and the short
    name in their ECS core metadata."""

    name = READER

    @classmethod
    def can_open(cls, path: Path) -> bool:
        try:
            with open(path, "rb") as handle:
                if handle.read(4) != HDF4_MAGIC:
                    return False
            sd = _open_sd(Path(path))
        except (OSError, GranuleError):
            return False
        try:
            return _short_name(sd) is not None
        finally:
            sd.end()

    @classmethod
    def why_not(cls, path: Path) -> str:
        try:
            with open(path, "rb") as handle:
                if handle.read(4) != HDF4_MAGIC:
                    return "not HDF4"
            sd = _open_sd(Path(path))
        except (OSError, GranuleError):
            return "HDF4 that the HDF4 library cannot open"
        try:
            core = sd.attributes().get("CoreMetadata.0")
        finally:
            sd.end()
        if not isinstance(core, str):
            return "HDF4 without ECS CoreMetadata.0"
        return f"CoreMetadata.0 names {ecs_value(core, 'SHORTNAME')!r}, not a Level-2 swath product"

    def open(self, path: Path) -> Granule:
        return ModisGranule(Path(path))

"""MODIS Level-2 swath granules onto a GEOS-5 grid: one day's mean, count and standard
deviation per cell, as CF-1.8 netCDF.

Shared by the Python reductions; an uploaded package stands alone (it may not import
nearline), so each carries its own identical copy of this file. Granules are read as the
real products are read: the SD interface of HDF4 (pyhdf), the day and product from the ECS
``CoreMetadata.0`` attribute, each field decoded with the file's own ``scale_factor``,
``add_offset``, ``_FillValue`` and ``valid_range`` (MODIS: ``scale_factor * (stored -
add_offset)``).

A day's valid observations are held at once (a cell index and a float32 value each, 8
bytes), so that the standard deviation is exact: a first pass sums each cell's values (in
double precision) for the mean, a second its squared deviations from that mean. Memory
therefore grows with the granules of a day; the days of an order are reduced one after the
other.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

GRIDS = {"geos5-0.5x0.625": (0.5, 0.625), "geos5-1x1.25": (1.0, 1.25)}
SCAN_LINES = 10  # 1 km lines in one MODIS scan
GEO_STEP = 5  # the geolocation's spacing in 1 km lines and frames
FLOAT_FILL = np.float32(9.969209968386869e36)  # netCDF's default float fill
EPOCH = date(1970, 1, 1)

Observations = tuple[str, np.ndarray, np.ndarray]  # variable, cell indices, values


class ReductionError(Exception):
    """A granule this reduction cannot use; the message names it and says why."""


@dataclass(frozen=True)
class Geos5Grid:
    """A GEOS-5 grid: cell centres on both poles (half cells there) and on 180 W.

    Cells are numbered ``row * nlon + col`` with row 0 at the south pole, as the output's
    ascending ``lat`` runs. A point's cell is the one nearline's grid registry gives it
    (latitude rows half open to the north: ``floor((90 + dlat/2 - lat) / dlat)`` counted from
    the north; longitude columns ``floor((lon + 180 + dlon/2) / dlon)`` modulo ``nlon``).
    """

    name: str
    dlat: float
    dlon: float

    @classmethod
    def named(cls, name: str) -> Geos5Grid:
        if name not in GRIDS:
            raise ReductionError(f"grid: expected one of {', '.join(GRIDS)}, got {name!r}")
        return cls(name, *GRIDS[name])

    @property
    def nlat(self) -> int:
        return round(180 / self.dlat) + 1

    @property
    def nlon(self) -> int:
        return round(360 / self.dlon)

    @property
    def size(self) -> int:
        return self.nlat * self.nlon

    def latitudes(self) -> np.ndarray:
        return -90.0 + self.dlat * np.arange(self.nlat)

    def longitudes(self) -> np.ndarray:
        return -180.0 + self.dlon * np.arange(self.nlon)

    def cells(self, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
        """Each point's cell (int64), -1 where it has no place (NaN, |lat| > 90)."""
        lon = np.asarray(lon, np.float64)
        lat = np.asarray(lat, np.float64)
        with np.errstate(invalid="ignore"):
            ok = (lat >= -90.0) & (lat <= 90.0) & np.isfinite(lon)
            from_north = np.floor((90.0 + self.dlat / 2 - lat) / self.dlat)
            col = np.floor((lon - (-180.0 - self.dlon / 2)) / self.dlon) % self.nlon
            row = self.nlat - 1 - from_north
            return np.where(ok, row * self.nlon + col, -1).astype(np.int64)


def ecs_value(text: str, name: str) -> str | None:
    """The VALUE of the ODL object ``name`` in ECS metadata text, unquoted."""
    found = re.search(
        rf"OBJECT\s*=\s*{name}\s*$(.*?)END_OBJECT\s*=\s*{name}\s*$", text, re.M | re.S
    )
    value = found and re.search(r"^\s*VALUE\s*=\s*(.*?)\s*$", found.group(1), re.M)
    return value.group(1).strip('"() ') if value else None


class Granule:
    """One MODIS Level-2 granule, open through HDF4's SD interface."""

    def __init__(self, path: Path) -> None:
        from pyhdf.error import HDF4Error
        from pyhdf.SD import SD, SDC

        self.path = path
        self.name = path.name
        try:
            self._sd = SD(str(path), SDC.READ)
        except HDF4Error as error:
            raise ReductionError(f"{path.name}: HDF4 cannot open it ({error})") from None
        core = self._sd.attributes().get("CoreMetadata.0")
        day = ecs_value(core, "RANGEBEGINNINGDATE") if isinstance(core, str) else None
        clock = ecs_value(core, "RANGEBEGINNINGTIME") if isinstance(core, str) else None
        if not day or not clock:
            self.close()
            raise ReductionError(f"{path.name}: no CoreMetadata.0 with RANGEBEGINNINGDATE/TIME")
        self.short_name = ecs_value(core, "SHORTNAME") or "?"
        self.platform = ecs_value(core, "ASSOCIATEDPLATFORMSHORTNAME") or "?"
        self.start = datetime.fromisoformat(f"{day}T{clock}").replace(tzinfo=UTC)
        self._xyz: np.ndarray | None = None
        self._first = (0, 0)

    def close(self) -> None:
        """Close the file; what was read of it goes (a closed granule keeps its names)."""
        self._sd.end()
        self._xyz = None

    def read(self, name: str) -> tuple[np.ndarray, dict[str, Any]]:
        """An SDS's stored values and its attributes."""
        from pyhdf.error import HDF4Error

        try:
            sds = self._sd.select(name)
        except HDF4Error:
            raise ReductionError(f"{self.name}: has no SDS {name!r}") from None
        try:
            return np.asarray(sds.get()), sds.attributes()
        finally:
            sds.endaccess()

    def lonlat_5km(self) -> tuple[np.ndarray, np.ndarray]:
        """The file's own geolocation (float64 degrees, NaN where invalid)."""
        return self._geolocation("Longitude"), self._geolocation("Latitude")

    def lonlat_1km(self, lines: np.ndarray, frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Longitude and latitude of 1 km pixels (``lines``, ``frames``), interpolated from the
        5 km geolocation on the unit sphere: linearly across track between geolocation
        columns (extrapolated beyond the outermost), and along track within each ten-line scan
        between its two geolocation rows (extrapolated to the scan's first and last lines),
        never across a scan boundary, where MODIS's bow-tie makes scans overlap."""
        xyz, along, across = self._geometry()
        rows, columns = xyz.shape[1:]
        last_scan = int(lines.max(initial=0)) // SCAN_LINES
        if along + GEO_STEP >= SCAN_LINES or 2 * last_scan + 1 >= rows:
            raise ReductionError(f"{self.name}: its geolocation is not two rows to a scan")
        scan = lines // SCAN_LINES
        first, second = 2 * scan, 2 * scan + 1
        t_along = (lines - SCAN_LINES * scan - along) / GEO_STEP
        left = np.clip((frames - across) // GEO_STEP, 0, columns - 2)
        t_across = (frames - across - GEO_STEP * left) / GEO_STEP
        out = []
        for v in xyz:
            near = (1 - t_across) * v[first, left] + t_across * v[first, left + 1]
            far = (1 - t_across) * v[second, left] + t_across * v[second, left + 1]
            out.append((1 - t_along) * near + t_along * far)
        x, y, z = out
        lon = np.degrees(np.arctan2(y, x))
        lat = np.degrees(np.arctan2(z, np.hypot(x, y)))
        return lon, lat

    def _sampling(self, name: str) -> int:
        """The first 1 km line or frame (0-based) the geolocation sits on; MOD11_L2 does not
        say, and uses the atmosphere products' ``3, ..., 5``."""
        from pyhdf.error import HDF4Error

        try:
            sds = self._sd.select("Latitude")
        except HDF4Error:
            raise ReductionError(f"{self.name}: has no SDS 'Latitude'") from None
        try:
            first, _, step = sds.attributes().get(name, (3, 0, GEO_STEP))
        finally:
            sds.endaccess()
        if step != GEO_STEP:
            raise ReductionError(f"{self.name}: {name} step {step}, expected {GEO_STEP}")
        return int(first) - 1

    def _geometry(self) -> tuple[np.ndarray, int, int]:
        """The geolocation as unit vectors, and its first line and frame (read once)."""
        if self._xyz is None:
            lon, lat = (np.radians(v) for v in self.lonlat_5km())
            self._xyz = np.stack(
                [np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)]
            )
            self._first = (
                self._sampling("Cell_Along_Swath_Sampling"),
                self._sampling("Cell_Across_Swath_Sampling"),
            )
        return self._xyz, *self._first

    def _geolocation(self, name: str) -> np.ndarray:
        stored, attrs = self.read(name)
        return np.where(valid(stored, attrs), scaled(stored, attrs), np.nan)


def valid(stored: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """Where ``stored`` is neither the fill value nor outside ``valid_range``."""
    keep = np.ones(stored.shape, bool)
    if "_FillValue" in attrs:
        keep &= stored != attrs["_FillValue"]
    if "valid_range" in attrs:
        low, high = attrs["valid_range"]
        keep &= (stored >= low) & (stored <= high)
    return keep


def scaled(stored: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """MODIS's ``scale_factor * (stored - add_offset)``, float64."""
    scale = float(attrs.get("scale_factor", 1.0))
    offset = float(attrs.get("add_offset", 0.0))
    return scale * (stored.astype(np.float64) - offset)


def observe_1km(
    granule: Granule, grid: Geos5Grid, keep: np.ndarray, stored: np.ndarray,
    attrs: dict[str, Any], *, block: int = 20 * SCAN_LINES,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:  # fmt: skip
    """Cells and decoded values of a 1 km field's kept pixels, in row-major order, ``block``
    lines at a time (so that the temporaries of placing them stay small)."""
    for start in range(0, keep.shape[0], block):
        lines, frames = np.nonzero(keep[start : start + block])
        lines += start
        lon, lat = granule.lonlat_1km(lines, frames)
        yield grid.cells(lon, lat), scaled(stored[lines, frames], attrs)


def qa_byte(qa: np.ndarray, index: int = 0) -> np.ndarray:
    """Byte ``index`` of a (lines, cells, bytes) quality array, as unsigned bits."""
    return (qa[..., index] if qa.ndim == 3 else qa).astype(np.uint8)


def useful_and_confident(byte: np.ndarray, *, least: int = 2) -> np.ndarray:
    """MODIS atmosphere QA: bit 0 usefulness (1 useful), bits 1-3 confidence (0 none,
    1 marginal, 2 good, 3 very good); True where useful with confidence ``least`` or more."""
    return ((byte & 1) == 1) & (((byte >> 1) & 7) >= least)


@dataclass(frozen=True)
class Variable:
    """One reduced quantity and its CF description."""

    name: str  # the output's variable prefix: NAME_mean, NAME_count, NAME_std
    long_name: str
    units: str
    standard_name: str | None
    source: str  # the SDS it comes from
    quality: str  # which pixels are kept, in words


class DayObservations:
    """One day's valid observations of each variable, held until the day is reduced."""

    def __init__(self, variables: Iterable[Variable]) -> None:
        self.chunks: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {
            v.name: [] for v in variables
        }

    def add(self, name: str, cells: np.ndarray, values: np.ndarray) -> None:
        self.chunks[name].append((cells.astype(np.int32), values.astype(np.float32)))

    def count(self, name: str) -> int:
        return sum(cells.size for cells, _ in self.chunks[name])

    def reduce(self, name: str, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Mean, count and (population) standard deviation per cell, in two passes over the
        held values, summed in the order they came (mean and std NaN where count is 0)."""
        sums = np.zeros(size)
        counts = np.zeros(size, np.int64)
        for cells, values in self.chunks[name]:
            np.add.at(sums, cells, values.astype(np.float64))
            counts += np.bincount(cells, minlength=size)
        seen = counts > 0
        mean = np.full(size, np.nan)
        mean[seen] = sums[seen] / counts[seen]
        squares = np.zeros(size)
        for cells, values in self.chunks[name]:
            np.add.at(squares, cells, (values.astype(np.float64) - mean[cells]) ** 2)
        std = np.full(size, np.nan)
        std[seen] = np.sqrt(squares[seen] / counts[seen])
        return mean, counts, std


@dataclass(frozen=True)
class Reduction:
    """What one package reduces: its products, variables, and how a granule gives its
    observations."""

    algorithm: str  # the package's id
    products: tuple[str, ...]  # short names it accepts (Terra's and Aqua's)
    prefix: str  # output files: PREFIX-GRID-YYYY-MM-DD.nc
    title: str
    variables: tuple[Variable, ...]
    observe: Callable[[Granule, Geos5Grid], Iterator[Observations]]


def write_day(
    path: Path, reduction: Reduction, grid: Geos5Grid, day: date, granules: list[Granule],
    observations: DayObservations,
) -> None:  # fmt: skip
    """One day's statistics as CF-1.8 netCDF (deflated: most cells are empty)."""
    import netCDF4

    names = [g.name for g in granules]
    products = sorted({f"{g.short_name} ({g.platform})" for g in granules})
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with netCDF4.Dataset(path, "w", format="NETCDF4") as out:
        out.setncatts({
            "Conventions": "CF-1.8",
            "title": f"{reduction.title} on the {grid.name} grid, daily",
            "source": f"MODIS Level-2 {', '.join(products)} granules: {' '.join(names)}",
            "history": f"{now} {reduction.algorithm}: {len(names)} granules of {day} reduced "
            f"to {grid.name} (mean, count and standard deviation per cell)",
            "input_granules": " ".join(names),
            "grid": grid.name,
            "comment": " ".join(f"{v.name}: {v.quality}." for v in reduction.variables),
            "time_coverage_start": f"{day}T00:00:00Z",
            "time_coverage_end": f"{day + timedelta(days=1)}T00:00:00Z",
        })  # fmt: skip
        out.createDimension("time", 1)
        out.createDimension("lat", grid.nlat)
        out.createDimension("lon", grid.nlon)
        out.createDimension("bnds", 2)
        days = (day - EPOCH).days
        _coordinate(out, "time", [days + 0.5], [[days, days + 1]], {
            "standard_name": "time", "long_name": "time", "axis": "T",
            "units": "days since 1970-01-01 00:00:00", "calendar": "standard"})  # fmt: skip
        lat = grid.latitudes()
        lat_bounds = np.clip(np.stack([lat - grid.dlat / 2, lat + grid.dlat / 2], 1), -90, 90)
        _coordinate(out, "lat", lat, lat_bounds, {
            "standard_name": "latitude", "long_name": "latitude", "units": "degrees_north",
            "axis": "Y"})  # fmt: skip
        lon = grid.longitudes()
        _coordinate(out, "lon", lon, np.stack([lon - grid.dlon / 2, lon + grid.dlon / 2], 1), {
            "standard_name": "longitude", "long_name": "longitude", "units": "degrees_east",
            "axis": "X"})  # fmt: skip
        shape = (1, grid.nlat, grid.nlon)
        for variable in reduction.variables:
            mean, count, std = observations.reduce(variable.name, grid.size)
            _statistics(out, variable, shape, mean, count, std)


def _coordinate(out: Any, name: str, values: Any, bounds: Any, attrs: dict[str, str]) -> None:
    variable = out.createVariable(name, "f8", (name,))
    variable.setncatts({**attrs, "bounds": f"{name}_bnds"})
    variable[:] = values
    out.createVariable(f"{name}_bnds", "f8", (name, "bnds"))[:] = bounds


def _statistics(
    out: Any, variable: Variable, shape: tuple[int, ...], mean: np.ndarray, count: np.ndarray,
    std: np.ndarray,
) -> None:  # fmt: skip
    dims = ("time", "lat", "lon")
    name = variable.standard_name
    standard = {"standard_name": name} if name else {}
    packed = {"zlib": True, "complevel": 4, "shuffle": True}
    mean_var = out.createVariable(f"{variable.name}_mean", "f4", dims, fill_value=FLOAT_FILL,
                                  **packed)  # fmt: skip
    mean_var.setncatts({
        **standard,
        "long_name": f"daily mean {variable.long_name}",
        "units": variable.units,
        "cell_methods": "area: time: mean",
        "ancillary_variables": f"{variable.name}_count {variable.name}_std",
        "source": variable.source,
        "comment": f"kept: {variable.quality}",
    })  # fmt: skip
    mean_var[:] = _filled(mean).reshape(shape)
    count_var = out.createVariable(f"{variable.name}_count", "i4", dims, **packed)
    count_var.setncatts({
        **({"standard_name": f"{name} number_of_observations"} if name else {}),
        "long_name": f"number of {variable.long_name} observations kept",
        "units": "1",
        "source": variable.source,
        "comment": f"kept: {variable.quality}",
    })  # fmt: skip
    count_var[:] = count.astype(np.int32).reshape(shape)
    std_var = out.createVariable(f"{variable.name}_std", "f4", dims, fill_value=FLOAT_FILL,
                                 **packed)  # fmt: skip
    std_var.setncatts({
        **standard,
        "long_name": f"daily standard deviation of {variable.long_name}",
        "units": variable.units,
        "cell_methods": "area: time: standard_deviation",
        "source": variable.source,
        "comment": "population standard deviation: the root of the mean squared deviation",
    })  # fmt: skip
    std_var[:] = _filled(std).reshape(shape)


def _filled(values: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(values), FLOAT_FILL, values).astype(np.float32)


def read_job() -> dict[str, Any]:
    return json.loads(Path(os.environ["NEARLINE_JOB"]).read_text())


def run(reduction: Reduction) -> None:
    """The runtime contract: reduce the staged granules of each day to one file of it."""
    job = read_job()
    grid = Geos5Grid.named(job["parameters"].get("grid", "geos5-0.5x0.625"))
    outputs = Path(job["outputs"])
    days: dict[date, list[tuple[datetime, str, Path]]] = {}
    for entry in job["inputs"]["granules"]:
        granule = Granule(Path(entry["path"]))
        try:
            if granule.short_name not in reduction.products:
                raise ReductionError(
                    f"{granule.name} is {granule.short_name}; {reduction.algorithm} reduces "
                    f"{' or '.join(reduction.products)}"
                )
            days.setdefault(granule.start.date(), []).append(
                (granule.start, granule.name, granule.path)
            )
        finally:
            granule.close()
    for day in sorted(days):
        observations = DayObservations(reduction.variables)
        opened = []
        for _, _, path in sorted(days[day]):  # in time order: sums are made in that order
            granule = Granule(path)
            try:
                for name, cells, values in reduction.observe(granule, grid):
                    keep = cells >= 0
                    observations.add(name, cells[keep], values[keep])
            finally:
                granule.close()
            opened.append(granule)
        target = outputs / f"{reduction.prefix}-{grid.name}-{day}.nc"
        write_day(target, reduction, grid, day, opened, observations)
        kept = ", ".join(f"{observations.count(v.name)} {v.name}" for v in reduction.variables)
        print(f"{day}: {len(opened)} granules, kept {kept}; wrote {target.name}", flush=True)


def main(reduction: Reduction) -> None:
    try:
        run(reduction)
    except ReductionError as error:
        print(f"{reduction.algorithm}: {error}", file=sys.stderr)
        raise SystemExit(1) from None

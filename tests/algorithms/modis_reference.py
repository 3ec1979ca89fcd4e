"""A plain numpy reference for the three MODIS reductions (examples/algorithms/modis-*), and
the packages' test data made with it:

    python -m tests.algorithms.modis_reference [PRODUCT...]    (re)write their inputs and
                                                               expected outputs (all, or these)

The reference shares no code with the packages: it reads with pyhdf, places pixels with
nearline's own GEOS-5 grid (``Grid.cell_index``), interpolates the 1 km geolocation over whole
arrays, and reduces each day with ``np.bincount`` over all its observations at once. The test
inputs are synthetic granules with *planted* outliers where the quality flags say no, so a
reduction that ignored the flags would show them.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

import netCDF4
import numpy as np

from nearline.grid import get_grid
from nearline.swath._modis import ModisL2Reader
from nearline.swath._modis_synth import synthesize_modis_day

from .example_data import EXAMPLES

SCANS = 2  # ten-line scans per test granule: small enough for git
# the first test granule: the n-th five-minute granule of the day, over Central Africa (09:10
# UTC, 08:40 for MOD06_L2, where its first scans hold confident cloud-top retrievals)
FIRST = {"MOD11_L2": 110, "MOD06_L2": 104, "MOD05_L2": 110, "MOD04_L2": 110}
DAY = "2012-12-12"
PACKAGES = {"MOD11_L2": "modis-lst-geos5", "MOD06_L2": "modis-cloud-geos5",
            "MOD05_L2": "modis-water-vapour-geos5", "MOD04_L2": "modis-aerosol-geos5"}  # fmt: skip
PREFIXES = {"MOD11_L2": "lst", "MOD06_L2": "cloud", "MOD05_L2": "water-vapour",
            "MOD04_L2": "aerosol"}  # fmt: skip
AEROSOL = ("AOD_550_Dark_Target_Deep_Blue_Combined", "Optical_Depth_Land_And_Ocean")
TEST_GRID = "geos5-1x1.25"
PRODUCED = datetime(2013, 1, 1, tzinfo=UTC)  # the names' production stamp, fixed
Statistics = dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]  # name: mean, count, std


def read(path: Path, name: str) -> tuple[np.ndarray, dict]:
    from pyhdf.SD import SD, SDC

    sd = SD(str(path), SDC.READ)
    try:
        sds = sd.select(name)
        return np.asarray(sds.get()), sds.attributes()
    finally:
        sd.end()


def decode(stored: np.ndarray, attrs: dict) -> np.ndarray:
    """scale_factor * (stored - add_offset), NaN at the fill value or outside valid_range."""
    low, high = attrs.get("valid_range", (-np.inf, np.inf))
    bad = (stored < low) | (stored > high)
    if "_FillValue" in attrs:
        bad |= stored == attrs["_FillValue"]
    values = attrs.get("scale_factor", 1.0) * (
        stored.astype(np.float64) - attrs.get("add_offset", 0.0)
    )
    return np.where(bad, np.nan, values)


def lonlat_5km(path: Path) -> tuple[np.ndarray, np.ndarray]:
    return decode(*read(path, "Longitude")), decode(*read(path, "Latitude"))


def lonlat_1km(path: Path, lines: int, frames: int = 1354) -> tuple[np.ndarray, np.ndarray]:
    """Every 1 km pixel's place: the 5 km geolocation (lines and frames 2, 7, 12, ...) on the
    unit sphere, linear across track over the whole row, then along track within each ten-line
    scan between its two rows."""
    lon, lat = (np.radians(v) for v in lonlat_5km(path))
    xyz = np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)])
    columns = xyz.shape[2]
    frame = np.arange(frames)
    left = np.clip((frame - 2) // 5, 0, columns - 2)
    t = (frame - 2 - 5 * left) / 5
    across = (1 - t) * xyz[:, :, left] + t * xyz[:, :, left + 1]
    line = np.arange(lines)
    scan = line // 10
    s = ((line - 10 * scan - 2) / 5)[:, None]
    x, y, z = ((1 - s) * v[2 * scan] + s * v[2 * scan + 1] for v in across)
    return np.degrees(np.arctan2(y, x)), np.degrees(np.arctan2(z, np.hypot(x, y)))


def cells(lon: np.ndarray, lat: np.ndarray, grid_name: str) -> np.ndarray:
    """Cells of nearline's grid (row 0 north) renumbered from the south, as the output's lat
    ascends; -1 outside."""
    grid = get_grid(grid_name)
    index = grid.cell_index(np.ascontiguousarray(lon), np.ascontiguousarray(lat))
    row, col = np.divmod(index, grid.width)
    return np.where(index >= 0, (grid.height - 1 - row) * grid.width + col, -1)


def byte0_good(qa: np.ndarray) -> np.ndarray:
    byte = (qa[..., 0] if qa.ndim == 3 else qa).astype(np.uint8)
    return ((byte & 1) == 1) & (((byte >> 1) & 7) >= 2)


def observe_lst(path: Path, grid: str, filtered: bool) -> dict[str, tuple]:
    lst = decode(*read(path, "LST"))
    good = (read(path, "QC")[0] & 3) == 0
    lon, lat = lonlat_1km(path, lst.shape[0])
    keep = np.isfinite(lst) & (good | (not filtered))
    return {"lst": (cells(lon[keep], lat[keep], grid), lst[keep])}


def observe_cloud(path: Path, grid: str, filtered: bool) -> dict[str, tuple]:
    lon, lat = lonlat_5km(path)
    good = byte0_good(read(path, "Quality_Assurance_5km")[0]) | (not filtered)
    found = {}
    for name, field, screened in (
        ("cloud_fraction", "Cloud_Fraction", False),
        ("cloud_top_pressure", "Cloud_Top_Pressure", True),
        ("cloud_top_temperature", "Cloud_Top_Temperature", True),
    ):
        values = decode(*read(path, field))
        keep = np.isfinite(values) & (good if screened else True)
        found[name] = (cells(lon[keep], lat[keep], grid), values[keep])
    return found


def observe_water(path: Path, grid: str, filtered: bool) -> dict[str, tuple]:
    near = decode(*read(path, "Water_Vapor_Near_Infrared"))
    keep = np.isfinite(near) & (byte0_good(read(path, "Quality_Assurance_Near_Infrared")[0])
                                | (not filtered))  # fmt: skip
    lon, lat = lonlat_1km(path, near.shape[0])
    found = {"water_vapour_nir": (cells(lon[keep], lat[keep], grid), near[keep])}
    infrared = decode(*read(path, "Water_Vapor_Infrared"))
    keep = np.isfinite(infrared) & (byte0_good(read(path, "Quality_Assurance_Infrared")[0])
                                    | (not filtered))  # fmt: skip
    lon, lat = lonlat_5km(path)
    found["water_vapour_ir"] = (cells(lon[keep], lat[keep], grid), infrared[keep])
    return found


def observe_aerosol(path: Path, grid: str, filtered: bool) -> dict[str, tuple]:
    """The 550 nm optical depth (Collection 6's combined field, else Collection 4/5's),
    every valid value on the file's own geolocation; ``filtered=False`` keeps values outside
    valid_range too (the fill value still goes)."""
    from pyhdf.SD import SD, SDC

    sd = SD(str(path), SDC.READ)
    name = next(n for n in AEROSOL if n in sd.datasets())
    sd.end()
    stored, attrs = read(path, name)
    if not filtered:
        attrs = {key: value for key, value in attrs.items() if key != "valid_range"}
    values = decode(stored, attrs)
    lon, lat = lonlat_5km(path)
    keep = np.isfinite(values)
    return {"aod_550": (cells(lon[keep], lat[keep], grid), values[keep])}


OBSERVE: dict[str, Callable[[Path, str, bool], dict[str, tuple]]] = {
    "MOD11_L2": observe_lst, "MOD06_L2": observe_cloud, "MOD05_L2": observe_water,
    "MOD04_L2": observe_aerosol}  # fmt: skip


def reference(
    product: str, paths: list[Path], grid: str, *, filtered: bool = True
) -> dict[date, Statistics]:
    """Each day's mean, count and population std per cell (flat, south first): the
    observations of the day's granules in time order, as float32 values, reduced at once."""
    size = get_grid(grid).cells
    days: dict[date, list[tuple]] = {}
    for path in paths:
        with ModisL2Reader().open(path) as granule:  # nearline's: the time from CoreMetadata
            days.setdefault(granule.start_time.date(), []).append((granule.start_time, path))
    found = {}
    for day, granules in sorted(days.items()):
        observed = [OBSERVE[product](path, grid, filtered) for _, path in sorted(granules)]
        statistics = {}
        for name in observed[0]:
            index = np.concatenate([o[name][0] for o in observed])
            values = np.concatenate([o[name][1] for o in observed])
            inside = index >= 0
            index = index[inside]
            values = values[inside].astype(np.float32).astype(np.float64)
            count = np.bincount(index, minlength=size)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.bincount(index, values, minlength=size) / count
                deviations = (values - mean[index]) ** 2
                std = np.sqrt(np.bincount(index, deviations, minlength=size) / count)
            statistics[name] = (mean, count, std)
        found[day] = statistics
    return found


@dataclass(frozen=True)
class Outlier:
    """Values planted where the flags say no: ``field`` set to ``stored`` where ``flags``
    (an SDS) gets ``flag`` in byte 0, over a block of the granule."""

    field: str
    stored: int
    flags: str | None  # None: no flag says no, the value itself is out of its valid_range
    flag: int = 0


# QC 01: "produced, other quality, check the other QC"; QA 1 | 1 << 1: useful, marginal
OUTLIERS = {
    "MOD11_L2": [Outlier("LST", 19950, "QC", 0b01)],  # 399 K
    "MOD06_L2": [
        Outlier("Cloud_Top_Pressure", 10990, "Quality_Assurance_5km", 0b011),  # 1099 hPa
        Outlier("Cloud_Top_Temperature", 4900, "Quality_Assurance_5km", 0b011),  # 199 K
    ],
    "MOD05_L2": [  # 19.99 cm
        Outlier("Water_Vapor_Near_Infrared", 19990, "Quality_Assurance_Near_Infrared", 0b011),
        Outlier("Water_Vapor_Infrared", 19990, "Quality_Assurance_Infrared", 0b000),
    ],
    # 6.0, beyond valid_range (-100..5000): the only screening the aerosol reduction does
    "MOD04_L2": [Outlier("AOD_550_Dark_Target_Deep_Blue_Combined", 6000, None)],
}


def plant_outliers(path: Path, product: str) -> None:
    """Overwrite a block of ``path`` (the second half of each row's frames) with outliers
    whose flags say they must not be used."""
    from pyhdf.SD import SD, SDC

    sd = SD(str(path), SDC.WRITE)
    try:
        for outlier in OUTLIERS[product]:
            field = sd.select(outlier.field)
            values = np.asarray(field.get())
            half = values.shape[1] // 2
            values[:, half:] = outlier.stored
            field[:] = values
            field.endaccess()
            if outlier.flags is None:
                continue
            flags = sd.select(outlier.flags)
            qa = np.asarray(flags.get())
            if qa.ndim == 3:
                qa[:, half:, 0] = outlier.flag
            else:
                qa[:, half:] = outlier.flag
            flags[:] = qa
            flags.endaccess()
    finally:
        sd.end()


def small_granules(
    product: str,
    folder: Path,
    *,
    granules: int = 2,
    first: int | None = None,
    day: str = DAY,
    scans: int = SCANS,
    outliers: bool = True,
) -> list[Path]:
    """Small synthetic granules of ``product`` with planted outliers."""
    first = FIRST[product] if first is None else first
    paths = synthesize_modis_day(
        product, day, granules, folder, first=first, scans=scans, produced=PRODUCED
    )
    if outliers:
        for path in paths:
            plant_outliers(path, product)
    return paths


def write_statistics(path: Path, statistics: Statistics, grid_name: str, day: date) -> None:
    """The variables a package's output holds, as the deploy's comparison reads them (values
    only): coordinates, bounds, and NAME_mean/_count/_std with netCDF's default float fill."""
    grid = get_grid(grid_name)
    dlon, dlat = grid.cell_size
    fill = np.float32(netCDF4.default_fillvals["f4"])
    lat = -90 + dlat * np.arange(grid.height)
    lon = -180 + dlon * np.arange(grid.width)
    epoch = (day - date(1970, 1, 1)).days
    with netCDF4.Dataset(path, "w") as out:
        for name, size in (("time", 1), ("lat", grid.height), ("lon", grid.width), ("bnds", 2)):
            out.createDimension(name, size)
        coordinates = {"time": [epoch + 0.5], "lat": lat, "lon": lon}
        bounds = {"time": [[epoch, epoch + 1]],
                  "lat": np.clip(np.stack([lat - dlat / 2, lat + dlat / 2], 1), -90, 90),
                  "lon": np.stack([lon - dlon / 2, lon + dlon / 2], 1)}  # fmt: skip
        for name, values in coordinates.items():
            out.createVariable(name, "f8", (name,))[:] = values
            out.createVariable(f"{name}_bnds", "f8", (name, "bnds"))[:] = bounds[name]
        shape = (1, grid.height, grid.width)
        for name, (mean, count, std) in statistics.items():
            for stat, values in (("mean", mean), ("std", std)):
                variable = out.createVariable(f"{name}_{stat}", "f4", ("time", "lat", "lon"),
                                              zlib=True, fill_value=fill)  # fmt: skip
                variable[:] = np.where(count > 0, values, fill).astype(np.float32).reshape(shape)
            counts = out.createVariable(f"{name}_count", "i4", ("time", "lat", "lon"), zlib=True)
            counts[:] = count.astype(np.int32).reshape(shape)


def write_all(products: list[str] | None = None) -> None:
    """Each package's (or ``products``' packages') test granules and expected output."""
    for product, package in PACKAGES.items():
        if products and product not in products:
            continue
        tests = EXAMPLES / package / "tests"
        if tests.exists():
            shutil.rmtree(tests)
        (tests / "expected").mkdir(parents=True)
        with tempfile.TemporaryDirectory() as scratch:
            for made in small_granules(product, Path(scratch)):
                shutil.copyfile(made, tests / made.name)
        inputs = sorted(tests.glob("*.hdf"))
        ((day, statistics),) = reference(product, inputs, TEST_GRID).items()
        name = f"{PREFIXES[product]}-{TEST_GRID}-{day}.nc"
        write_statistics(tests / "expected" / name, statistics, TEST_GRID, day)
        print(f"wrote {tests}: {', '.join(p.name for p in inputs)} and expected/{name}")


if __name__ == "__main__":
    if any(name not in PACKAGES for name in sys.argv[1:]):
        raise SystemExit(__doc__)
    write_all(sys.argv[1:])

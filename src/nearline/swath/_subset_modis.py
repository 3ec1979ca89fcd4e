"""Cutting a MODIS Level-2 swath granule (HDF4, HDF-EOS2) by whole scans.

MODIS sweeps ten 1 km lines a scan (the bow-tie overlaps scan against scan), and every
resolution of a Level-2 product divides the scan evenly: 10 lines of 1 km, 2 rows of 5 km,
1 of 10 km. So the cut keeps whole scans: the scans holding a geolocation row with a cell in
the box and a time in the window, and every scan between, and each SDS loses the same
scans along its along-track dimension (the dimension whose name says ``Along``, or else the
one sized a whole number of lines per scan), whatever its resolution and wherever that
dimension sits (MOD04's ``(band, along, across)``, the quality bytes' ``(along, across,
byte)``). Stored values are copied as they are, with each SDS's type, dimension names,
attributes (in their HDF types) and deflate compression.

Kept SDS: every one, or the asked ones plus ``Latitude``, ``Longitude`` and
``Scan_Start_Time`` (when the file has it). Global attributes are kept, with what describes
the cut brought up to date: ``Number_of_Instrument_Scans``; in ``StructMetadata.0`` the
along-track dimensions' ``Size`` and, with variables asked, only the kept data fields;
in ``CoreMetadata.0`` the ``RANGEBEGINNING``/``RANGEENDING`` date and time and the bounding
rectangle. The G-ring (``GRINGPOINT*``) and ``ArchiveMetadata.0`` stay the source's.

Times: ``Scan_Start_Time`` is TAI seconds since 1993-01-01 (the MODIS Level-2 file
specifications), taken to UTC with the leap seconds since then; a file without it (MOD11_L2,
nearline's synthetic granules) spreads its ``RANGEBEGINNING`` to ``RANGEENDING`` evenly over
its scans.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nearline.errors import GranuleError, SubsetError
from nearline.swath._modis_ecs import ecs_time, metadata_text, open_sd
from nearline.swath._subset_request import SubsetRequest, SubsetResult, as_datetime, row_span

GEOLOCATION = ("Latitude", "Longitude", "Scan_Start_Time")
LINES_PER_SCAN = 10  # 1 km lines
TAI93 = datetime(1993, 1, 1, tzinfo=UTC)
# UTC days from which TAI - UTC grew by one more second, after 1993-01-01 (IERS Bulletin C)
LEAP_SECONDS = tuple(
    datetime(*day, tzinfo=UTC)
    for day in (
        (1993, 7, 1),
        (1994, 7, 1),
        (1996, 1, 1),
        (1997, 7, 1),
        (1999, 1, 1),
        (2006, 1, 1),
        (2009, 1, 1),
        (2012, 7, 1),
        (2015, 7, 1),
        (2017, 1, 1),
    )
)


def tai93_to_utc(seconds: np.ndarray) -> np.ndarray:
    """TAI seconds since 1993-01-01 as datetime64[ms] UTC (NaT where not finite)."""
    seconds = np.asarray(seconds, np.float64)
    naive = np.array(TAI93.replace(tzinfo=None), "datetime64[ms]")
    out = np.full(seconds.shape, np.datetime64("NaT"), "datetime64[ms]")
    good = np.isfinite(seconds)
    moments = naive + np.round(seconds[good] * 1e3).astype(np.int64).astype("timedelta64[ms]")
    leaps = np.zeros(moments.shape, np.int64)
    for index, day in enumerate(LEAP_SECONDS):  # each leap second lies after index+1 others
        leaps = np.where(
            moments - np.timedelta64(index + 1, "s")
            >= np.datetime64(day.replace(tzinfo=None), "ms"),
            index + 1,
            leaps,
        )
    out[good] = moments - leaps.astype("timedelta64[s]")
    return out


def cut_modis(source: Path, target: Path, request: SubsetRequest) -> SubsetResult:
    """Write the whole scans of ``source`` that ``request`` keeps to ``target`` (HDF4)."""
    sd = open_sd(source)
    try:
        return _cut(sd, source, target, request)
    finally:
        sd.end()


def _cut(sd: Any, source: Path, target: Path, request: SubsetRequest) -> SubsetResult:
    datasets = sd.datasets()  # name: (dimension names, shape, type, index)
    missing = [name for name in ("Latitude", "Longitude") if name not in datasets]
    if missing:
        raise SubsetError(f"granule {source.name}: a MODIS swath without {missing[0]}")
    attributes = sd.attributes(full=1)
    lat = _read(sd, "Latitude")
    geo_rows = lat.shape[0]
    scans = _scan_count(attributes, geo_rows, datasets)
    if geo_rows % scans:
        raise SubsetError(
            f"granule {source.name}: {geo_rows} geolocation rows do not divide into its "
            f"{scans} scans, so whole scans cannot be cut"
        )
    per_scan = geo_rows // scans
    times = _row_times(sd, source, attributes, geo_rows, scans)
    lonlat = None
    if request.bbox is not None:
        lonlat = (_read(sd, "Longitude"), lat)
    first_row, stop_row = row_span(source.name, request, lonlat=lonlat, times=times)
    first, stop = first_row // per_scan, -(-stop_row // per_scan)  # whole scans
    names = _kept(datasets, request.variables, source.name)
    order = sorted(names, key=lambda name: datasets[name][3])
    from pyhdf.SD import SD, SDC

    out = SD(str(target), SDC.WRITE | SDC.CREATE | SDC.TRUNC)
    try:
        along_sizes: dict[str, int] = {}
        for name in order:
            dims, shape = datasets[name][0], datasets[name][1]
            axis = _along_axis(name, dims, shape, scans, source.name)
            lines = shape[axis] // scans
            along_sizes[_bare(dims[axis])] = (stop - first) * lines
            key = [slice(None)] * len(shape)
            key[axis] = slice(first * lines, stop * lines)
            _copy_sds(sd.select(name), out, name, tuple(key))
        kept_rows = slice(first * per_scan, stop * per_scan)
        kept_lat = lat[kept_rows]
        kept_lon = _read(sd, "Longitude")[kept_rows]
        kept_times = times[kept_rows][~np.isnat(times[kept_rows])]
        start, end = as_datetime(kept_times.min()), as_datetime(kept_times.max())
        updates = {
            "StructMetadata.0": lambda text: _struct(text, along_sizes, set(names)),
            "CoreMetadata.0": lambda text: _core(text, start, end, kept_lon, kept_lat),
        }
        for key, (value, _, kind, _) in sorted(attributes.items(), key=lambda kv: kv[1][1]):
            if key == "Number_of_Instrument_Scans":
                value = stop - first
            elif key in updates and isinstance(value, str):
                value = updates[key](value)
            out.attr(key).set(kind, value)
    finally:
        out.end()
    return SubsetResult(
        target, first * per_scan, stop * per_scan, geo_rows, start, end, tuple(order)
    )


def _read(sd: Any, name: str) -> np.ndarray:
    sds = sd.select(name)
    try:
        values = np.asarray(sds[:], np.float64)
        fill = sds.attributes().get("_FillValue")
    finally:
        sds.endaccess()
    if fill is not None:
        values[values == fill] = np.nan
    return values


def _scan_count(attributes: dict[str, Any], geo_rows: int, datasets: dict[str, Any]) -> int:
    """The granule's scans: ``Number_of_Instrument_Scans``, else its 1 km lines over ten."""
    if "Number_of_Instrument_Scans" in attributes:
        return int(np.ravel(attributes["Number_of_Instrument_Scans"][0])[0])
    longest = max(
        shape[index]
        for dims, shape, _, _ in datasets.values()
        for index, dim in enumerate(dims)
        if "along" in dim.lower()
    )
    return max(1, longest // LINES_PER_SCAN) if longest > geo_rows else geo_rows


def _row_times(
    sd: Any, source: Path, attributes: dict[str, Any], rows: int, scans: int
) -> np.ndarray:
    """Each geolocation row's time: its ``Scan_Start_Time`` (the earliest of the row), or
    the granule's range spread evenly over its scans."""
    if "Scan_Start_Time" in sd.datasets():
        seconds = _read(sd, "Scan_Start_Time")
        with np.errstate(all="ignore"):
            first = np.where(
                np.isfinite(seconds).any(axis=1),
                np.nanmin(np.where(np.isfinite(seconds), seconds, np.inf), axis=1),
                np.nan,
            )
        return tai93_to_utc(first)
    core = metadata_text({key: value[0] for key, value in attributes.items()}, "CoreMetadata")
    if core is None:
        raise GranuleError(f"granule {source}: no Scan_Start_Time and no CoreMetadata.0 time range")
    begin, finish = ecs_time(core, "BEGINNING", source), ecs_time(core, "ENDING", source)
    step = (finish - begin) / scans
    scan_of_row = np.arange(rows) * scans // rows
    return np.array(
        [
            np.datetime64((begin + step * int(scan)).replace(tzinfo=None), "ms")
            for scan in scan_of_row
        ],
        "datetime64[ms]",
    )


def _kept(datasets: dict[str, Any], asked: tuple[str, ...] | None, name: str) -> list[str]:
    if asked is None:
        return list(datasets)
    unknown = [variable for variable in asked if variable not in datasets]
    if unknown:
        raise SubsetError(
            f"granule {name} has no SDS {unknown[0]!r}; it holds {', '.join(sorted(datasets))}"
        )
    return [variable for variable in datasets if variable in asked or variable in GEOLOCATION]


def _bare(dimension: str) -> str:
    """A dimension name without the ``:swath`` suffix HDF-EOS gives the SDS's dimensions."""
    return dimension.split(":", 1)[0]


def _along_axis(
    name: str, dims: tuple[str, ...], shape: tuple[int, ...], scans: int, granule: str
) -> int:
    named = [index for index, dim in enumerate(dims) if "along" in dim.lower()]
    fitting = [index for index, size in enumerate(shape) if size % scans == 0 and size >= scans]
    for index in named + fitting:
        if shape[index] % scans == 0:
            return index
    raise SubsetError(
        f"granule {granule}: SDS {name!r} {tuple(shape)} has no along-track dimension of whole "
        f"scans ({scans}), so it cannot be cut with the others"
    )


def _copy_sds(sds: Any, out: Any, name: str, key: tuple[slice, ...]) -> None:
    from pyhdf.SD import SDC

    try:
        _, rank, _, kind, _ = sds.info()
        dims = [sds.dim(index).info()[0] for index in range(rank)]
        data = np.asarray(sds[key])
        attributes = sds.attributes(full=1)
        try:
            compression = sds.getcompress()
        except Exception:  # pyhdf raises HDF4Error when the SDS is stored plain
            compression = (SDC.COMP_NONE,)
    finally:
        sds.endaccess()
    target = out.create(name, kind, data.shape)
    try:
        for index, dim in enumerate(dims):
            target.dim(index).setname(dim)
        if compression[0] == SDC.COMP_DEFLATE and data.size:
            target.setcompress(SDC.COMP_DEFLATE, value=int(compression[1]))
        for key_name, (value, _, attr_kind, _) in sorted(
            attributes.items(), key=lambda kv: kv[1][1]
        ):
            target.attr(key_name).set(attr_kind, value)
        if data.size:
            target[:] = np.ascontiguousarray(data)
    finally:
        target.endaccess()


def _struct(text: str, sizes: dict[str, int], kept: set[str]) -> str:
    """``StructMetadata.0`` with the along-track dimensions' sizes and only the kept fields."""
    for dimension, size in sizes.items():
        text = re.sub(
            rf'(DimensionName="{re.escape(dimension)}(?::[^"]*)?"\s*Size=)\d+',
            lambda match, size=size: f"{match.group(1)}{size}",
            text,
        )
    for group, key in (("DataField", "DataFieldName"), ("GeoField", "GeoFieldName")):
        blocks = re.compile(rf"([ \t]*)OBJECT={group}_(\d+)\n.*?END_OBJECT={group}_\2\n", re.DOTALL)
        count = 0

        def keep(match: re.Match[str], key: str = key, group: str = group) -> str:
            nonlocal count
            field = re.search(rf'{key}="([^"]*)"', match.group(0))
            if field is not None and field.group(1) not in kept:
                return ""
            count += 1
            return re.sub(rf"{group}_\d+\b", f"{group}_{count}", match.group(0))

        text = blocks.sub(keep, text)
    return text


def _core(text: str, start: datetime, end: datetime, lon: np.ndarray, lat: np.ndarray) -> str:
    """``CoreMetadata.0`` with the range and the bounding rectangle of the kept scans."""
    values = {
        "RANGEBEGINNINGDATE": f'"{start:%Y-%m-%d}"',
        "RANGEBEGINNINGTIME": f'"{start:%H:%M:%S.%f}"',
        "RANGEENDINGDATE": f'"{end:%Y-%m-%d}"',
        "RANGEENDINGTIME": f'"{end:%H:%M:%S.%f}"',
    }
    if np.isfinite(lat).any():
        west, east = float(np.nanmin(lon)), float(np.nanmax(lon))
        if east - west > 180:  # across the antimeridian: west is the least eastern longitude
            west, east = float(np.nanmin(lon[lon >= 0])), float(np.nanmax(lon[lon < 0]))
        values.update(
            NORTHBOUNDINGCOORDINATE=f"{np.nanmax(lat):.6f}",
            SOUTHBOUNDINGCOORDINATE=f"{np.nanmin(lat):.6f}",
            EASTBOUNDINGCOORDINATE=f"{east:.6f}",
            WESTBOUNDINGCOORDINATE=f"{west:.6f}",
        )
    for name, value in values.items():
        text = re.sub(
            rf"(^[ \t]*OBJECT\s*=\s*{name}\s*\n(?:(?!END_OBJECT).)*?VALUE\s*=\s*)[^\n]*",
            lambda match, value=value: f"{match.group(1)}{value}",
            text,
            flags=re.DOTALL | re.MULTILINE,
        )
    return text

"""Cutting a netCDF swath by rows: nearline's own granules, the AVHRR FDR, VGAC and any CF
swath (2-D latitude and longitude on lines x pixels, a time per line).

Every variable on the lines' dimension is cut to the kept rows, stored bytes copied as they
are (no unpacking: scale_factor, add_offset and _FillValue keep their meaning), with the
source's type, fill value, compression and chunking (chunks no longer than the kept rows);
every other variable is copied whole. With ``variables``, the file keeps those plus what
they need: latitude and longitude, the lines' time, what their ``coordinates``, ``bounds``,
``ancillary_variables`` and ``grid_mapping`` name, the scalar a time's units refer to
(VGAC's ``hours since proj_time0``), VGAC's look-up table of a band (``M15_LUT``, which
nothing but its name ties to ``M15``), and the coordinate variable of each dimension kept.
Global attributes are kept; ACDD's ``time_coverage_start/end`` and ``geospatial_lat/lon_
min/max``, when the source has them, describe the cut, and ``history`` says what was cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nearline.errors import SubsetError
from nearline.swath._cf_conventions import latitude_longitude, values
from nearline.swath._cf_time import decode_times, time_units
from nearline.swath._subset_request import SubsetRequest, SubsetResult, as_datetime, row_span
from nearline.swath.netcdf_granule import PRODUCT as NEARLINE_PRODUCT

NAME_ATTRIBUTES = ("coordinates", "bounds", "ancillary_variables", "grid_mapping")


@dataclass(frozen=True)
class SwathLayout:
    """Where a netCDF swath keeps its rows: the lines' dimension, the geolocation variables
    (at every pixel, or at nearline's 51 tie points) and the time per line."""

    lines: str
    latitude: Any
    longitude: Any
    time: Any | None
    tie_points: bool


def swath_layout(dataset: Any, name: str) -> SwathLayout:
    """The layout of an open netCDF swath; SubsetError if it has no lines to cut."""
    tie_points = getattr(dataset, "product", None) == NEARLINE_PRODUCT
    if tie_points:
        latitude, longitude = dataset["latitude"], dataset["longitude"]
    else:
        found = latitude_longitude(dataset, 2)
        if found is None:
            raise SubsetError(
                f"granule {name}: no 2-D latitude and longitude on lines x pixels, so it has "
                "no scan lines to cut (a product of points or a map is not a swath)"
            )
        latitude, longitude = found
    lines = latitude.dimensions[0]
    time = next(
        (
            variable
            for variable in dataset.variables.values()
            if variable.dimensions == (lines,) and time_units(variable, dataset)
        ),
        None,
    )
    return SwathLayout(lines, latitude, longitude, time, tie_points)


def row_times(dataset: Any, layout: SwathLayout) -> np.ndarray:
    """Each line's time, datetime64[ms] (NaT where the file has none, or everywhere when it
    has no time per line: then no window can be applied)."""
    rows = int(layout.latitude.shape[0])
    if layout.time is None:
        return np.full(rows, np.datetime64("NaT"), "datetime64[ms]")
    return decode_times(layout.time, dataset, values(layout.time))


def pixel_positions(layout: SwathLayout) -> tuple[np.ndarray, np.ndarray]:
    """Every pixel's longitude and latitude: the file's own, or for nearline's granules the
    reader's interpolation from the tie points (``swath.lonlat``)."""
    lon, lat = values(layout.longitude), values(layout.latitude)
    if layout.tie_points:
        from nearline.swath._geolocation import pixel_lonlat

        return pixel_lonlat(lon.astype(np.float32), lat.astype(np.float32))
    return lon, lat


def kept_variables(
    dataset: Any, layout: SwathLayout, asked: tuple[str, ...] | None, name: str
) -> list[str]:
    """The variables to write, in the source's order: all, or ``asked`` and what they need."""
    every = list(dataset.variables)
    if asked is None:
        return every
    unknown = [variable for variable in asked if variable not in dataset.variables]
    if unknown:
        raise SubsetError(
            f"granule {name} has no variable {unknown[0]!r}; it holds {', '.join(every)}"
        )
    wanted = set(asked) | {layout.latitude.name, layout.longitude.name}
    wanted |= {f"{variable}_LUT" for variable in asked} & set(every)  # VGAC's M12..M16 tables
    if layout.time is not None:
        wanted.add(layout.time.name)
    pending = list(wanted)
    while pending:
        variable = dataset.variables[pending.pop()]
        needs = [
            word
            for attribute in NAME_ATTRIBUTES
            for word in str(getattr(variable, attribute, "")).replace(":", " ").split()
        ]
        units = str(getattr(variable, "units", ""))
        if " since " in units:
            needs.append(units.split(" since ", 1)[1].strip())
        needs += [dim for dim in variable.dimensions]  # coordinate variables
        for need in needs:
            if need in dataset.variables and need not in wanted:
                wanted.add(need)
                pending.append(need)
    return [variable for variable in every if variable in wanted]


def cut_netcdf(source: Path, target: Path, request: SubsetRequest) -> SubsetResult:
    """Write the rows of ``source`` that ``request`` keeps to ``target`` (netCDF, the
    source's data model); the module says what is kept."""
    import netCDF4

    with netCDF4.Dataset(source, "r") as src:
        if src.groups:
            raise SubsetError(
                f"granule {source.name}: netCDF groups are not cut (only a flat swath is)"
            )
        layout = swath_layout(src, source.name)
        times = row_times(src, layout)
        positions = pixel_positions(layout) if request.bbox is not None else None
        first, stop = row_span(source.name, request, lonlat=positions, times=times)
        names = kept_variables(src, layout, request.variables, source.name)
        with netCDF4.Dataset(target, "w", format=src.data_model) as dst:
            _copy(src, dst, names, layout.lines, slice(first, stop))
            _describe(
                src, dst, layout, times[first:stop], positions, (first, stop), request, source.name
            )
    known = times[first:stop][~np.isnat(times[first:stop])]
    start = as_datetime(known.min()) if known.size else datetime.min.replace(tzinfo=UTC)
    end = as_datetime(known.max()) if known.size else start
    return SubsetResult(target, first, stop, int(times.size), start, end, tuple(names))


def _copy(src: Any, dst: Any, names: list[str], lines: str, rows: slice) -> None:
    """Dimensions used by ``names``, global attributes, and each variable's stored bytes."""
    used = {dim for name in names for dim in src.variables[name].dimensions}
    for dim, dimension in src.dimensions.items():
        if dim not in used:
            continue
        size = rows.stop - rows.start if dim == lines else len(dimension)
        dst.createDimension(dim, None if dimension.isunlimited() else size)
    dst.setncatts({key: src.getncattr(key) for key in src.ncattrs()})
    for name in names:
        variable = src.variables[name]
        variable.set_auto_maskandscale(False)
        dims = variable.dimensions
        attrs = {key: variable.getncattr(key) for key in variable.ncattrs()}
        fill = attrs.pop("_FillValue", None)
        options: dict[str, Any] = {}
        filters = variable.filters() or {}
        if filters.get("zlib"):
            options.update(
                zlib=True,
                complevel=filters.get("complevel", 4),
                shuffle=bool(filters.get("shuffle")),
            )
        chunking = variable.chunking() if src.data_model == "NETCDF4" else "contiguous"
        if isinstance(chunking, list):
            options["chunksizes"] = [
                min(size, rows.stop - rows.start) if dim == lines else size
                for dim, size in zip(dims, chunking, strict=True)
            ]
        elif chunking == "contiguous" and src.data_model == "NETCDF4" and variable.ndim:
            options["contiguous"] = True
        kind = variable.datatype
        out = dst.createVariable(name, kind, dims, fill_value=fill, **options)
        out.set_auto_maskandscale(False)
        out.setncatts(attrs)
        key = tuple(rows if dim == lines else slice(None) for dim in dims)
        if variable.ndim == 0:
            out.assignValue(variable.getValue())
        elif all(size for size in out.shape):
            out[...] = variable[key]


def _describe(
    src: Any,
    dst: Any,
    layout: SwathLayout,
    times: np.ndarray,
    positions: tuple[np.ndarray, np.ndarray] | None,
    rows: tuple[int, int],
    request: SubsetRequest,
    name: str,
) -> None:
    """ACDD's time coverage and geospatial extent of the cut, and a ``history`` line."""
    attrs = set(src.ncattrs())
    known = times[~np.isnat(times)]
    if known.size:
        for key, moment in (
            ("time_coverage_start", known.min()),
            ("time_coverage_end", known.max()),
        ):
            if key in attrs:
                dst.setncattr(key, _like(str(src.getncattr(key)), as_datetime(moment)))
    if attrs & {
        "geospatial_lat_min",
        "geospatial_lat_max",
        "geospatial_lon_min",
        "geospatial_lon_max",
    }:
        lon, lat = positions if positions is not None else pixel_positions(layout)
        lon, lat = lon[rows[0] : rows[1]], lat[rows[0] : rows[1]]
        for key, value in (
            ("geospatial_lat_min", np.nanmin(lat)),
            ("geospatial_lat_max", np.nanmax(lat)),
            ("geospatial_lon_min", np.nanmin(lon)),
            ("geospatial_lon_max", np.nanmax(lon)),
        ):
            if key in attrs:
                dst.setncattr(key, float(value))
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    line = (
        f"{stamp} nearline subset of {name}: lines {rows[0]} to {rows[1] - 1} of "
        f"{int(layout.latitude.shape[0])} ({_what(request)})"
    )
    history = str(getattr(src, "history", "")).rstrip()
    dst.setncattr("history", f"{history}\n{line}" if history else line)


def _what(request: SubsetRequest) -> str:
    parts = [
        f"bbox {list(request.bbox)}" if request.bbox else "",
        f"datetime {request.window_text()}" if request.start or request.end else "",
        f"variables {', '.join(request.variables)}" if request.variables else "",
    ]
    return "; ".join(part for part in parts if part) or "everything"


def _like(example: str, moment: datetime) -> str:
    """``moment`` written as ``example`` is: ISO 8601 basic (``19810330T042358Z``) or
    extended, with or without a zone and fractions."""
    if len(example) >= 15 and example[8] == "T" and example[:8].isdigit():
        return moment.strftime("%Y%m%dT%H%M%SZ")
    text = moment.isoformat(timespec="milliseconds" if "." in example else "seconds")
    if example.endswith("Z"):
        return text.replace("+00:00", "Z")
    return text if "+" in example[10:] else text.replace("+00:00", "")

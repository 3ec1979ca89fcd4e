"""``load_collection`` on nearline's gridded collections: the files the catalogue found for a
collection (a :class:`Stack`), cut to the graph's box, time and bands with nearline.coverage's
reader (only the chunks the window needs; the grid's own box rules, right on Goode's
interrupted lobes), unpacked to physical values and held as an openEO raster cube: an
``xarray.DataArray`` with dimensions ``t``, ``bands``, ``y`` and ``x`` and its CRS."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import xarray as xr

from nearline.coverage import (
    Box,
    Layer,
    Target,
    box_target,
    native_target,
    read_subset,
    whole_grid,
)
from nearline.errors import CoverageError, CoverageTooLarge, OpenEOError
from nearline.grid import Grid, get_grid
from nearline.openeo._cubes import COMMON_NAMES


@dataclass(frozen=True)
class Stack:
    """The files of one gridded collection that a graph may load, in time order.

    Parameters
    ----------
    collection
        The collection's id.
    grid
        Its grid's name.
    layers
        Its items' files (each with its period), in time order: those of the span the
        graph asks for, or all.
    """

    collection: str
    grid: str
    layers: tuple[Layer, ...]


def load_cube(
    stack: Stack,
    *,
    spatial_extent: Any = None,
    temporal_extent: Any = None,
    bands: Sequence[str] | None = None,
    max_values: int,
) -> xr.DataArray:
    """The cube of ``stack`` within the extents, physical values as float32 (NaN: no data).

    Parameters
    ----------
    stack
        The collection's files.
    spatial_extent
        A box (``west``, ``south``, ``east``, ``north``, ``crs``: EPSG:4326 or the grid's
        own), as JSON or as openeo-pg-parser-networkx's ``BoundingBox``; None: the whole grid.
    temporal_extent
        ``[start, end)`` as strings, or the parser's ``TemporalInterval``; None: all.
    bands
        The bands, in the order wanted; None: every band.
    max_values
        Values the read may hold at most.

    Raises
    ------
    OpenEOError
        No item in the time asked (``NoDataAvailable``), a box off the grid or a band that
        does not exist (``ProcessParameterInvalid``), or a read over ``max_values``
        (``ProcessGraphComplexity``).
    """
    import rioxarray  # noqa: F401  (the .rio accessor: the cube's CRS)

    grid = get_grid(stack.grid)
    layers = _within(stack, *temporal_span(temporal_extent))
    try:
        target = _target(grid, spatial_extent)
        subset = read_subset(layers, grid=grid, target=target,
                             bands=list(bands) if bands else None, limit=max_values)  # fmt: skip
    except CoverageTooLarge as error:
        message = f"load_collection {stack.collection}: {error}; or run it as a batch job"
        raise OpenEOError(message, status=400, openeo_code="ProcessGraphComplexity") from None
    except CoverageError as error:
        message = f"load_collection {stack.collection}: {error}"
        raise OpenEOError(message, status=400, openeo_code="ProcessParameterInvalid") from None
    values = np.stack([info.physical(subset.values[name]) for name, info in subset.bands.items()],
                      axis=1).astype(np.float32)  # fmt: skip
    x, y, _ = subset.output_grid.coordinates()
    cube = xr.DataArray(
        values,
        dims=("t", "bands", "y", "x"),
        coords={
            "t": np.array([_naive(layer.start) for layer in layers], dtype="datetime64[ns]"),
            "bands": list(subset.bands),
            "y": y,
            "x": x,
        },
        attrs={"nearline:grid": grid.name, "nearline:collection": stack.collection},
    )
    return with_common_names(cube).rio.write_crs(grid.crs)


def cut_to_box(cube: xr.DataArray, extent: Any) -> xr.DataArray | None:
    """``filter_bbox`` on a cube of a known grid: the cells a load of that box would read
    (the grid's own box rules, as :func:`load_cube`'s), or None for a cube whose grid is not
    known (the generic implementation, which projects the box's corners, cuts it then).

    Parameters
    ----------
    cube
        A cube from :func:`load_cube` (it names its grid), or any other.
    extent
        The box, as :func:`load_cube`'s ``spatial_extent``.

    Raises
    ------
    OpenEOError
        A box off the grid, or not a box (``ProcessParameterInvalid``).
    """
    name = cube.attrs.get("nearline:grid")
    if name is None or not {"x", "y"} <= set(cube.dims):
        return None
    grid = get_grid(name)
    try:
        xmin, ymin, xmax, ymax = _target(grid, extent).extent
    except CoverageError as error:
        raise OpenEOError(f"filter_bbox: {error}", status=400,
                          openeo_code="ProcessParameterInvalid") from None  # fmt: skip
    x, y = cube["x"].values, cube["y"].values
    return cube.isel(x=np.flatnonzero((x > xmin) & (x < xmax)),
                     y=np.flatnonzero((y > ymin) & (y < ymax)))  # fmt: skip


def with_common_names(cube: xr.DataArray) -> xr.DataArray:
    """``cube`` with each band's common name (``red``, ``nir``; else its own name) beside
    its bands, which openEO's ``ndvi`` looks for; a cube whose bands were merged gets them
    afresh."""
    if "bands" not in cube.dims:
        return cube
    names = [COMMON_NAMES.get(str(name), str(name)) for name in cube["bands"].values]
    return cube.assign_coords(common_name=("bands", names))


def _within(stack: Stack, start: datetime | None, end: datetime | None) -> list[Layer]:
    """The layers whose start lies in [start, end), openEO's half-open interval."""
    found = [
        layer for layer in stack.layers
        if (start is None or layer.start >= start) and (end is None or layer.start < end)
    ]  # fmt: skip
    if not found:
        span = (f"{stack.layers[0].start:%Y-%m-%d} to {stack.layers[-1].end:%Y-%m-%d}"
                if stack.layers else "no time at all")  # fmt: skip
        raise OpenEOError(
            f"load_collection {stack.collection}: no item lies in the temporal extent "
            f"[{start}, {end}); its items span {span}", status=400, openeo_code="NoDataAvailable",
        )  # fmt: skip
    return found


def temporal_span(extent: Any) -> tuple[datetime | None, datetime | None]:
    """A temporal extent as UTC datetimes, ``[start, end)`` (None: open).

    Parameters
    ----------
    extent
        ``[start, end]`` as strings (a date, or a date-time), or
        openeo-pg-parser-networkx's ``TemporalInterval``; None: all time.

    Raises
    ------
    OpenEOError
        A bound that is not a date nor a date-time, or an empty span.
    """
    if extent is None:
        return None, None
    bounds = getattr(extent, "root", extent)
    start, end = (_instant(bound) for bound in bounds)
    if start is not None and end is not None and end <= start:
        raise OpenEOError(f"temporal extent [{start}, {end}) is empty: its end must come after "
                          "its start", status=400, openeo_code="TemporalExtentEmpty")  # fmt: skip
    return start, end


def _instant(bound: Any) -> datetime | None:
    if bound is None:
        return None
    value = getattr(bound, "root", bound)
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            message = f"temporal extent: {value!r} is not a date nor a date-time"
            raise OpenEOError(message, status=400, openeo_code="ProcessParameterInvalid") from None
    if not isinstance(value, datetime):  # a date: its midnight
        value = datetime(value.year, value.month, value.day)
    moment = value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromtimestamp(moment.timestamp(), UTC)  # plain datetime, not pendulum's


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None)


def _target(grid: Grid, extent: Any) -> Target:
    """The raster of grid cells a spatial extent covers."""
    if extent is None:
        return whole_grid(grid)
    edges = _edges(extent)
    crs = _crs(edges.get("crs") or "EPSG:4326")
    west, south, east, north = (edges[key] for key in ("west", "south", "east", "north"))
    if crs.to_epsg() == 4326 or crs.equals("OGC:CRS84"):
        return box_target(grid, Box(west, south, east, north))
    if crs.equals(grid.crs):
        return native_target(grid, (west, east), (south, north))
    raise OpenEOError(
        f"spatial extent in {crs.name}: give the box in EPSG:4326 or in the collection's own "
        f"CRS (that of {grid.name})", status=400, openeo_code="ProcessParameterInvalid",
    )  # fmt: skip


def _edges(extent: Any) -> dict[str, Any]:
    """A box's edges and CRS, from JSON or the parser's BoundingBox."""
    edges = extent if isinstance(extent, dict) else getattr(extent, "__dict__", {})
    try:
        found = {key: float(edges[key]) for key in ("west", "south", "east", "north")}
    except (KeyError, TypeError, ValueError):
        raise OpenEOError(
            "spatial extent: give west, south, east and north as numbers (and crs, EPSG:4326 "
            "by default)", status=400, openeo_code="ProcessParameterInvalid",
        ) from None  # fmt: skip
    return {**found, "crs": edges.get("crs")}


def _crs(crs: Any) -> Any:
    import pyproj

    try:
        return pyproj.CRS.from_user_input(crs)
    except pyproj.exceptions.CRSError:
        raise OpenEOError(f"spatial extent: {str(crs)[:80]!r} is not a CRS; give an EPSG code",
                          status=400, openeo_code="ProcessParameterInvalid") from None  # fmt: skip

"""CF netCDF products for the catalogue: any swath or point product that follows CF (1.x) and
ACDD (1.3), read by the conventions rather than by its producer's layout.

**Time.** A swath's own time coordinate along its lines (a variable of time units on the
lines' dimension, or on both of latitude's) comes first; then ACDD's
``time_coverage_start/end``. The data's times win because a file may be cut from a longer
one whose attributes it kept: the AVHRR FDR's ``time_coverage_*`` give the platform's whole
record (1980-1982 for NOAA-6) and VGAC's the whole orbit, while an 11-line crop of either
holds a few seconds. A product without lines (points, a map) is catalogued by the window it
declares, ``time_coverage_*``, and only without one by its time variables (a scalar time's
``bounds``, else the range of every time value): a GOES-R GLM file's 20-second window is
what GLM users search by, consecutive files tile time without overlap, and events of a flash
that began before the window (GLM's ``event_time_offset`` reaches back 0.786 s in one real
file) belong to the product that holds the flash.

**Footprint.** A swath (2-D latitude and longitude on lines x pixels) gives the tie points
of every few lines at every 8th pixel and the first and last (``edge_reach`` 0: the outline
runs along the outermost pixels themselves) to :func:`~nearline.swath.swath_footprint`.
Any other product gives the extent it declares (:func:`declared_box`: GLM's field-of-view
bounds, else ACDD's ``geospatial_*``), not the hull of its points: a lightning product
observed its whole field of view, and a place where it saw no flash was still observed (a
search there should find it); a product with no event at all still has a footprint; and the
declared box is read without reading the points.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from nearline.errors import GranuleError
from nearline.swath._base import FieldGranule, tie_rows
from nearline.swath._cf_conventions import (
    LayoutReader,
    attributes,
    declared_box,
    instrument_name,
    latitude_longitude,
    marker,
    platform_name,
    product_name,
    values,
)
from nearline.swath._cf_time import as_datetime, decode_times, parse_moment, time_units

READER = "cf-netcdf"
COLUMN_STEP = 8  # pixels between sampled columns of a swath's footprint


@dataclass(frozen=True)
class Layout:
    """Where a CF file keeps what the catalogue needs."""

    latitude: Any | None  # a swath's 2-D variables, or None
    longitude: Any | None
    outline: np.ndarray | None  # otherwise the declared extent, a closed (lon, lat) ring
    start: datetime
    end: datetime


def inspect(dataset: Any, kind: str) -> Layout | str:
    """The layout of an open CF file, or what is missing, as a phrase for ``why_not``."""
    attrs = attributes(dataset)
    found = marker(attrs)
    if found is None:
        return (f"{kind} without CF or ACDD markers (no Conventions naming CF, "
                "Metadata_Conventions or time_coverage_start)")  # fmt: skip
    swath = latitude_longitude(dataset, 2)
    box = None if swath is not None else declared_box(dataset, attrs)
    if swath is None and box is None:
        return (f"{kind} with {found} but no latitude/longitude variables, field-of-view "
                "bounds or ACDD geospatial_lat/lon_min/max")  # fmt: skip
    times = time_range(dataset, attrs, None if swath is None else swath[0].dimensions)
    if isinstance(times, str):
        return f"{kind} with {found} but {times}"
    latitude, longitude = swath if swath is not None else (None, None)
    return Layout(latitude, longitude, None if box is None else box[0], *times)


def time_range(
    dataset: Any, attrs: dict[str, Any], lines: tuple[str, ...] | None
) -> tuple[datetime, datetime] | str:
    """(start, end) UTC by the precedence the module describes; ``lines``: the swath's
    (line, pixel) dimensions, None for a product without lines. A phrase if none is found."""
    if lines is not None:
        for variable in dataset.variables.values():
            if variable.dimensions in (lines[:1], lines) and time_units(variable, dataset):
                moments = decode_times(variable, dataset, values(variable))
                moments = moments[~np.isnat(moments)]
                if moments.size:
                    return as_datetime(moments.min()), as_datetime(moments.max())
    start_text = attrs.get("time_coverage_start")
    if start_text is not None:
        start = parse_moment(str(start_text))
        end = parse_moment(str(attrs.get("time_coverage_end", start_text)))
        if start is None or end is None:
            return f"time_coverage_start/end ({start_text!r}) that are not ISO 8601 times"
        return start, end
    if lines is None:
        moments = _declared_times(dataset)
        if moments.size:
            return as_datetime(moments.min()), as_datetime(moments.max())
    return "no time coordinate nor time_coverage_start"


def _declared_times(dataset: Any) -> np.ndarray:
    """Every time a product without lines holds: a scalar time's bounds (CF: in its units),
    else the time values themselves."""
    found = []
    for variable in dataset.variables.values():
        if not time_units(variable, dataset):
            continue
        bounds = getattr(variable, "bounds", None)
        if variable.ndim == 0 and bounds in dataset.variables:
            found.append(decode_times(variable, dataset, values(dataset.variables[bounds])))
        else:
            found.append(decode_times(variable, dataset, values(variable)).ravel())
    moments = np.concatenate(found) if found else np.array([], "datetime64[ms]")
    return moments[~np.isnat(moments)]


def sampled_columns(n_pixels: int, step: int = COLUMN_STEP) -> np.ndarray:
    """Every ``step``-th pixel and the last: the footprint's columns."""
    return np.unique(np.append(np.arange(0, n_pixels, step), n_pixels - 1))


def sampled_lines(variable: Any, rows: np.ndarray, step: int) -> np.ndarray:
    """Lines ``rows`` (``tie_rows``' every ``step``-th and the last) of a 2-D variable,
    unpacked, read as one strided request and the last line."""
    lines = values(variable, (slice(None, None, step), slice(None)))
    if rows.size > lines.shape[0]:
        lines = np.concatenate([lines, values(variable, (slice(-1, None), slice(None)))])
    return lines


class CFGranule(FieldGranule):
    """A CF product, open for its times and footprint (it holds no AVHRR counts)."""

    reader = READER
    media_type = "application/x-netcdf"

    def __init__(self, path: Path, dataset: Any, layout: Layout) -> None:
        self.path, self._dataset, self._layout = path, dataset, layout
        attrs = attributes(dataset)
        self.product = product_name(attrs)
        self.platform = platform_name(attrs)
        self.instrument = instrument_name(attrs)  # type: ignore[misc]  # the file's, not a class's
        self.start_time, self.end_time = layout.start, layout.end
        if layout.latitude is not None:
            self.n_lines = int(layout.latitude.shape[0])
            self.edge_reach = 0.0  # the sampled columns include the outermost pixels

    def read_outline(self) -> list[np.ndarray] | None:
        return None if self._layout.outline is None else [self._layout.outline]

    def read_tie_lonlat(self, step: int = 1) -> tuple[np.ndarray, np.ndarray]:
        if self._layout.latitude is None:
            raise GranuleError(f"granule {self.path}: a {self.product} product has no lines")
        rows = tie_rows(self.n_lines, step)
        columns = sampled_columns(int(self._layout.latitude.shape[1]))
        lon = sampled_lines(self._layout.longitude, rows, step)[:, columns]
        lat = sampled_lines(self._layout.latitude, rows, step)[:, columns]
        return lon.astype(np.float32), lat.astype(np.float32)

    def why_no_counts(self) -> str:
        return (
            f"a {self.product} product ({self.instrument}, read by the {READER} reader for the "
            "catalogue) holds no AVHRR counts to composite"
        )

    def close(self) -> None:
        if self._dataset.isopen():
            self._dataset.close()


class CFReader(LayoutReader):
    """CF/ACDD netCDF-4 and netCDF-3 products with a time and a place the conventions give.

    Tried after every other reader (it takes any product of the conventions); a file with a
    netCDF signature that netCDF cannot open is taken too, so that its GranuleError says it
    is truncated or corrupt rather than that no reader knows it.
    """

    name = READER
    unreadable = True
    find_layout = staticmethod(inspect)
    make_granule = CFGranule

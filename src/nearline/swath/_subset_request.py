"""What a swath subset asks and which rows answer it (the part every format family shares).

Harmony-style subsetting of swath granules: variables, a box and a time window, applied to
one granule and written as a file of the same format with its geolocation cut to match.

The cut is by whole rows (scan lines; for MODIS, whole scans): every row holding at least
one pixel inside the box and a time inside the window is kept, and so is every row between
the first and the last of them, so the result is one continuous swath that its format's
readers (pygac's line-number and time checks, MODIS's scans of ten lines) take as they take
the source. A granule none of whose rows touch the box and window is refused with
:class:`~nearline.errors.SubsetEmpty`; nothing is written then, and a failed write leaves no
file under the final name (``nearline.durable``).

One module per format family writes the cut: ``_subset_cf`` (nearline's netCDF granules,
the AVHRR FDR, VGAC and other CF swaths), ``_subset_modis`` (MODIS Level-2 HDF4),
``_subset_l1b`` (AVHRR GAC Level 1b, POD and KLM).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nearline.errors import SubsetEmpty, SubsetError

OPEN = ".."  # an open end of a datetime interval, as STAC and OGC API write it
SUFFIX = "subset"  # what a cut file's name carries before its extension


@dataclass(frozen=True)
class SubsetRequest:
    """What to keep of a granule. Every part is optional: no ``variables`` keeps them all,
    no ``bbox`` every place, no ``start``/``end`` every time.

    ``bbox`` is (west, south, east, north) in degrees; west greater than east crosses the
    antimeridian (STAC's rule); south above north is refused as reversed.
    """

    variables: tuple[str, ...] | None = None
    bbox: tuple[float, float, float, float] | None = None
    start: datetime | None = None
    end: datetime | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> SubsetRequest:
        """A request from its JSON form ``{"variables": [...], "bbox": [...], "datetime":
        "start/end"}``; SubsetError naming the part and what was expected."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise SubsetError(
                f"subset: expected an object with variables, bbox and datetime, got {data!r}"
            )
        unknown = sorted(set(data) - {"variables", "bbox", "datetime"})
        if unknown:
            raise SubsetError(
                f"subset: unknown key {unknown[0]!r}; a subset takes variables, bbox, datetime"
            )
        start, end = parse_interval(data.get("datetime"))
        return cls(
            variables=parse_variables(data.get("variables")),
            bbox=parse_bbox(data.get("bbox")),
            start=start,
            end=end,
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form :meth:`from_dict` reads (parts not given left out)."""
        out: dict[str, Any] = {}
        if self.variables is not None:
            out["variables"] = list(self.variables)
        if self.bbox is not None:
            out["bbox"] = list(self.bbox)
        if self.start is not None or self.end is not None:
            out["datetime"] = f"{_iso(self.start)}/{_iso(self.end)}"
        return out

    def window_text(self) -> str:
        """The window as ``start/end`` (``..`` for an open end)."""
        return f"{_iso(self.start)}/{_iso(self.end)}"


@dataclass(frozen=True)
class SubsetResult:
    """What a cut kept: the rows ``first`` to ``stop`` (exclusive) of the source's
    ``source_rows``, their times, and the variables written."""

    path: Path
    first: int
    stop: int
    source_rows: int
    start: datetime
    end: datetime
    variables: tuple[str, ...] = field(default=())


def parse_variables(value: Any) -> tuple[str, ...] | None:
    """A non-empty list of distinct variable names, or None for every variable."""
    if value is None:
        return None
    if (
        not isinstance(value, Sequence)
        or isinstance(value, str)
        or not value
        or not all(isinstance(name, str) and name for name in value)
    ):
        raise SubsetError(
            f"subset variables: expected a non-empty list of variable names, got {value!r}"
        )
    return tuple(dict.fromkeys(value))


def parse_bbox(value: Any) -> tuple[float, float, float, float] | None:
    """(west, south, east, north) in degrees; SubsetError if it is not four numbers within
    the globe or if south lies north of north."""
    if value is None:
        return None
    if (
        not isinstance(value, Sequence)
        or isinstance(value, str)
        or len(value) != 4
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        raise SubsetError(
            f"subset bbox: expected [west, south, east, north] in degrees, got {value!r}"
        )
    west, south, east, north = (float(v) for v in value)
    if not all(math.isfinite(v) for v in (west, south, east, north)):
        raise SubsetError(f"subset bbox: {list(value)} holds a value that is not finite")
    if not (
        -180 <= west <= 180 and -180 <= east <= 180 and -90 <= south <= 90 and -90 <= north <= 90
    ):
        raise SubsetError(
            f"subset bbox {list(value)}: longitudes must lie in -180..180, latitudes in -90..90"
        )
    if south > north:
        raise SubsetError(
            f"subset bbox {list(value)} is reversed: south ({south}) lies north of north "
            f"({north}); write [west, south, east, north]"
        )
    return west, south, east, north


def parse_interval(value: Any) -> tuple[datetime | None, datetime | None]:
    """``start/end`` (ISO 8601, ``..`` or empty for an open end) or one instant, as UTC."""
    if value is None:
        return None, None
    if not isinstance(value, str) or not value.strip():
        raise SubsetError(
            f"subset datetime: expected 'start/end' in ISO 8601 ('..' for an open end), "
            f"got {value!r}"
        )
    parts = value.split("/")
    if len(parts) > 2:
        raise SubsetError(f"subset datetime {value!r}: expected one instant or 'start/end'")
    moments = [_moment(part, value) for part in parts]
    start, end = moments[0], moments[-1]
    if start is not None and end is not None and start > end:
        raise SubsetError(f"subset datetime {value!r} is reversed: its start comes after its end")
    return start, end


def _moment(text: str, whole: str) -> datetime | None:
    text = text.strip()
    if text in ("", OPEN):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise SubsetError(
            f"subset datetime {whole!r}: {text!r} is not an ISO 8601 time "
            "(such as 2012-12-12T10:00:00Z)"
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _iso(moment: datetime | None) -> str:
    if moment is None:
        return OPEN
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def in_box(lon: np.ndarray, lat: np.ndarray, bbox: tuple[float, float, float, float]) -> np.ndarray:
    """Which pixels lie in ``bbox`` (edges included; across the antimeridian when west is
    greater than east). NaN positions lie nowhere."""
    west, south, east, north = bbox
    lon = np.where(lon > 180, lon - 360, lon)  # a product writing 0..360
    inside = (lat >= south) & (lat <= north)
    if west <= east:
        return inside & (lon >= west) & (lon <= east)
    return inside & ((lon >= west) | (lon <= east))


def row_span(
    name: str,
    request: SubsetRequest,
    *,
    lonlat: tuple[np.ndarray, np.ndarray] | None,
    times: np.ndarray,
) -> tuple[int, int]:
    """(first, stop) of the rows to keep: from the first row with a pixel in the box and a
    time in the window to the last. ``lonlat``: every row's positions, (rows, pixels),
    None when no box is asked; ``times``: each row's time, datetime64 (NaT where unknown).

    Raises
    ------
    SubsetEmpty
        No row lies in the window, none in the box, or none in both (saying which).
    """
    rows = times.shape[0]
    when = np.ones(rows, bool)
    if request.start is not None or request.end is not None:
        known = ~np.isnat(times)
        when = known.copy()
        if request.start is not None:
            when &= times >= _datetime64(request.start)
        if request.end is not None:
            when &= times <= _datetime64(request.end)
        if not when.any():
            span = (
                (
                    f"{_iso(_as_datetime(times[known].min()))} to "
                    f"{_iso(_as_datetime(times[known].max()))}"
                )
                if known.any()
                else "no time"
            )
            raise SubsetEmpty(
                f"granule {name}: no scan line lies in the window {request.window_text()}; "
                f"its lines run from {span}"
            )
    where = np.ones(rows, bool)
    if request.bbox is not None and lonlat is not None:
        lon, lat = lonlat
        where = in_box(lon, lat, request.bbox).reshape(rows, -1).any(axis=1)
        if not where.any():
            raise SubsetEmpty(
                f"granule {name}: no pixel lies in the bbox {list(request.bbox)}; "
                "search the catalogue with the same bbox to find granules that cross it"
            )
    kept = np.flatnonzero(when & where)
    if kept.size == 0:
        raise SubsetEmpty(
            f"granule {name}: its lines in the window {request.window_text()} hold no pixel "
            f"in the bbox {list(request.bbox or [])}"
        )
    return int(kept[0]), int(kept[-1]) + 1


def _datetime64(moment: datetime) -> np.datetime64:
    return np.datetime64(moment.astimezone(UTC).replace(tzinfo=None), "ms")


def _as_datetime(moment: np.datetime64) -> datetime:
    return moment.astype("datetime64[us]").astype(datetime).replace(tzinfo=UTC)


def as_datetime(moment: np.datetime64) -> datetime:
    """A datetime64 as an aware UTC datetime."""
    return _as_datetime(moment)

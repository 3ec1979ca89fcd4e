"""Time in CF netCDF files: ``UNIT since REFERENCE`` coordinates and ISO 8601 attributes.

CF (section 4.4) writes a time coordinate as numbers in ``units = "seconds since
1970-01-01 00:00:00"`` (udunits' forms: one-digit fields, a space or ``T`` between date and
time, an optional zone); ACDD's ``time_coverage_start/end`` are ISO 8601, extended
("2018-07-02T04:33:00.0Z") or basic ("19810330T042358Z", as the AVHRR FDR writes them).
Two forms real files use beyond those are read too: a reference that names a scalar time
variable of the same file (VGAC: ``time`` in "hours since proj_time0", ``proj_time0`` in
"days since 01/01/2010T00:00:00"), and that day/month/year date, read as satpy's VGAC
reader reads it. Only the standard (proleptic) Gregorian calendar is decoded: the other CF
calendars (360_day, noleap, ...) are a model's, not an observation's. Times are UTC.

Why not cftime (netCDF4's ``num2date``): it refuses both of those forms ("Unable to parse
date string 'proj_time0'"; the day/month/year reference fails inside its parser), and the
catalogue wants datetime64[ms] rounded once, not its objects.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

_SECONDS = {
    **dict.fromkeys(("d", "day", "days"), 86400.0),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3600.0),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), 60.0),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1.0),
    **dict.fromkeys(("ms", "msec", "msecs", "millisecond", "milliseconds"), 1e-3),
    **dict.fromkeys(("us", "usec", "usecs", "microsecond", "microseconds"), 1e-6),
}
_GREGORIAN = {"standard", "gregorian", "proleptic_gregorian"}
_SINCE = re.compile(r"^\s*([A-Za-z]+)\s+since\s+(\S.*?)\s*$")
_YMD = re.compile(
    r"^(\d{1,4})-(\d{1,2})-(\d{1,2})"
    r"(?:[T ]+(\d{1,2}):(\d{1,2})(?::(\d{1,2})(\.\d*)?)?)?"
    r"\s*(Z|UTC|GMT|[+-]\d{1,2}(?::?\d{2})?)?$"
)
_DMY = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})(?:[T ]+(.*))?$")


def parse_moment(text: str) -> datetime | None:
    """A date and time written as CF's reference dates or ISO 8601 are, as an aware UTC
    datetime (no zone: UTC); None if it is neither."""
    text = text.strip()
    found = _DMY.match(text)
    if found:  # day/month/year, then the time as udunits writes it
        day, month, year, rest = found.groups()
        text = f"{year}-{month}-{day}" + (f" {rest}" if rest else "")
    found = _YMD.match(text)
    if found is None:
        try:  # ISO 8601's basic form (19810330T042358Z) and the rest fromisoformat knows
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    year, month, day, hour, minute, second, fraction, zone = found.groups()
    try:
        moment = datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0),
                          int(second or 0), round(float(fraction or 0) * 1e6), UTC)  # fmt: skip
    except ValueError:
        return None
    if zone and zone[0] in "+-":  # a local reference time: back to UTC
        digits = zone[1:].replace(":", "")
        hours, minutes = (digits[:-2], digits[-2:]) if len(digits) > 2 else (digits, "0")
        offset = timedelta(hours=int(hours), minutes=int(minutes))
        moment -= offset if zone[0] == "+" else -offset
    return moment


def time_units(variable: Any, dataset: Any) -> tuple[datetime, float] | None:
    """(reference, seconds per unit) of a CF time variable, or None if its ``units`` are not
    ``UNIT since REFERENCE`` of a fixed-length unit in the Gregorian calendar. A reference
    that names a scalar time variable of ``dataset`` is that variable's time."""
    units = getattr(variable, "units", None)
    calendar = str(getattr(variable, "calendar", "standard")).lower()
    if not isinstance(units, str) or calendar not in _GREGORIAN:
        return None
    found = _SINCE.match(units)
    if found is None or found.group(1).lower() not in _SECONDS:
        return None
    unit, reference = _SECONDS[found.group(1).lower()], found.group(2)
    moment = parse_moment(reference)
    if moment is None and reference in dataset.variables and reference != variable.name:
        origin = dataset.variables[reference]
        if origin.ndim == 0:
            epoch = time_units(origin, dataset)
            value = float(np.ma.filled(np.ma.asarray(origin[...], np.float64), np.nan))
            if epoch is not None and np.isfinite(value):
                moment = epoch[0] + timedelta(seconds=value * epoch[1])
    return None if moment is None else (moment, unit)


def decode_times(variable: Any, dataset: Any, values: np.ndarray | None = None) -> np.ndarray:
    """``values`` (default: all) of a CF time variable as datetime64[ms] UTC, NaT where the
    file has none. Raises ValueError if its units are not a time's."""
    units = time_units(variable, dataset)
    if units is None:
        raise ValueError(f"variable {variable.name!r} has no time units ({variable.units!r})")
    reference, seconds = units
    if values is None:
        values = np.ma.filled(np.ma.asarray(variable[...], np.float64), np.nan)
    epoch = (reference - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1e3
    milliseconds = epoch + np.asarray(values, np.float64) * (seconds * 1e3)  # rounded once
    out = np.full(milliseconds.shape, np.datetime64("NaT"), "datetime64[ms]")
    good = np.isfinite(milliseconds)
    out[good] = np.round(milliseconds[good]).astype(np.int64).astype("datetime64[ms]")
    return out


def as_datetime(moment: np.datetime64) -> datetime:
    """A datetime64 as an aware UTC datetime."""
    return moment.astype("datetime64[us]").astype(datetime).replace(tzinfo=UTC)

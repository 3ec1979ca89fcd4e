"""The EUMETSAT AVHRR GAC Fundamental Data Record, Level 1C (CF-1.8, ACDD-1.3 netCDF-4,
written by pygac-fdr through satpy), read for the catalogue and for compositing.

The FDR holds values pygac already calibrated (PATMOS-x coefficients), packed as int16 with
CF's ``scale_factor``/``add_offset``/``_FillValue``: ``reflectance_channel_1``, ``_2`` and,
on AVHRR/3, ``_3a`` (percent, not divided by the cosine of the solar zenith: satpy's
``modifiers`` are empty; corrected to the mean Earth-Sun distance: pygac multiplies them by
the ``sun_earth_distance_correction_factor`` the file records);
``brightness_temperature_channel_3`` (AVHRR/1-2) or ``_3b`` (AVHRR/3), ``_4``, ``_5`` (K;
no ``_5`` on AVHRR/1: TIROS-N, NOAA-6, 8, 10); latitude, longitude and the angles at every
one of the 409 pixels of a line; ``acq_time`` per line.

A block's ``counts`` carry the stored integers (int16 bit patterns as uint16, the wire's
type), slot 3 holding 3b or, on the lines where the file has 3a, 3a; the telemetry carries
their :class:`~nearline.swath.StoredScaling`, so the compositor decodes instead of
calibrating. Tie points are the file's own values at the 51 GAC tie columns.

Time: the per-line ``acq_time`` (see :mod:`~nearline.swath._cf`: an FDR's
``time_coverage_*`` span the platform's whole record, and ``start_time``/``end_time`` the
orbit the file may have been cropped from).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from nearline.errors import GranuleError
from nearline.swath._base import Granule, tie_rows
from nearline.swath._block import (
    BRIGHTNESS_TEMPERATURE,
    CH3_TRANSITION,
    CH3A,
    CH3B,
    N_PIXELS,
    REFLECTANCE,
    TIE_COLUMNS,
    ChannelPacking,
    StoredScaling,
    SwathBlock,
    Telemetry,
)
from nearline.swath._cf_conventions import (
    LayoutReader,
    attributes,
    latitude_longitude,
    marker,
    platform_name,
    product_name,
    values,
)
from nearline.swath._cf_time import as_datetime, decode_times, time_units

READER = "avhrr-l1c"
# slots 1, 2, 3 (3b), 4, 5, by pygac-fdr's names (AVHRR/1-2 call 3b plain "3")
SLOTS = (
    ("reflectance_channel_1",),
    ("reflectance_channel_2",),
    ("brightness_temperature_channel_3b", "brightness_temperature_channel_3"),
    ("brightness_temperature_channel_4",),
    ("brightness_temperature_channel_5",),
)
CH3A_NAME = "reflectance_channel_3a"
REQUIRED = ("reflectance_channel_1", "brightness_temperature_channel_4")
ANGLES = {  # SwathBlock field: the FDR's variable
    "tie_sat_zenith": "sensor_zenith_angle",
    "tie_sun_zenith": "solar_zenith_angle",
    "tie_rel_azimuth": "sun_sensor_azimuth_difference_angle",  # |sun - sensor azimuth|
}


def _layout(dataset: Any, kind: str) -> tuple[Any, Any, Any] | str:
    """(latitude, longitude, line time) variables of an FDR file, or what is missing."""
    found = marker(attributes(dataset))
    swath = latitude_longitude(dataset, 2)
    if found is None or swath is None:
        return f"{kind} without CF latitude/longitude on lines of pixels"
    lines = swath[0].dimensions
    wanted = [*REQUIRED, *ANGLES.values()]
    missing = [n for n in wanted if getattr(dataset.variables.get(n), "dimensions", 0) != lines]
    if swath[0].shape[1] != N_PIXELS or missing:
        return (f"{kind} with {found} but not the AVHRR GAC FDR's {N_PIXELS}-pixel lines of "
                f"{', '.join(missing or REQUIRED)}")  # fmt: skip
    for variable in dataset.variables.values():
        if variable.dimensions == lines[:1] and time_units(variable, dataset):
            return swath[0], swath[1], variable
    return f"{kind} with {found} but no time coordinate along its lines"


def _packing(variable: Any) -> ChannelPacking:
    """A channel variable's CF packing, in percent or kelvin."""
    units = str(getattr(variable, "units", "")).strip()
    quantity = REFLECTANCE if variable.name.startswith("reflectance") else BRIGHTNESS_TEMPERATURE
    to_unit = 100.0 if quantity == REFLECTANCE and units not in ("%", "percent") else 1.0
    fill = getattr(variable, "_FillValue", None)
    return ChannelPacking(
        quantity,
        float(getattr(variable, "scale_factor", 1.0)) * to_unit,
        float(getattr(variable, "add_offset", 0.0)) * to_unit,
        None if fill is None else int(fill),
    )


class FDRGranule(Granule):
    """An open AVHRR GAC FDR Level 1C file."""

    reader = READER
    media_type = "application/x-netcdf"

    def __init__(self, path: Path, dataset: Any, layout: tuple[Any, Any, Any]) -> None:
        self.path, self._dataset = path, dataset
        self._latitude, self._longitude, time = layout
        attrs = attributes(dataset)
        self.product, self.platform = product_name(attrs), platform_name(attrs)
        self.n_lines = int(self._latitude.shape[0])
        times = decode_times(time, dataset, values(time))
        good = ~np.isnat(times)
        if not good.any():
            raise GranuleError(f"granule {path}: no line of {time.name!r} has a time")
        if not good.all():  # lines 0.5 s apart: a missing time is its neighbours'
            index = np.arange(times.size)
            known = times[good].astype(np.int64)
            times = np.interp(index, index[good], known).round().astype("datetime64[ms]")
        self._times = times
        self.start_time, self.end_time = as_datetime(times.min()), as_datetime(times.max())
        self._slots = [next((dataset.variables[n] for n in names if n in dataset.variables), None)
                       for names in SLOTS]  # fmt: skip
        self._ch3a = dataset.variables.get(CH3A_NAME)
        stored = [v for v in (*self._slots, self._ch3a) if v is not None]
        if any(v.dtype not in (np.int16, np.uint16) for v in stored):
            raise GranuleError(
                f"granule {path}: channels stored as {sorted({str(v.dtype) for v in stored})}; "
                "the AVHRR GAC FDR stores 16-bit integers"
            )
        for variable in stored:  # the stored integers themselves, unscaled and unmasked
            variable.set_auto_maskandscale(False)
        self._scaling = StoredScaling(
            channels=tuple(None if v is None else _packing(v) for v in self._slots),
            ch3a=None if self._ch3a is None else _packing(self._ch3a),
            signed=stored[0].dtype == np.int16 and getattr(stored[0], "_Unsigned", "") != "true",
        )
        self._switch: np.ndarray | None = None
        quality = dataset.variables.get("global_quality_flag")
        if quality is not None and int(values(quality)) != 0:
            meanings = str(getattr(quality, "flag_meanings", "")).split()
            flag = int(values(quality))
            said = meanings[flag] if flag < len(meanings) else str(flag)
            self.warnings = (f"global_quality_flag is {said}: the FDR advises not to use it",)

    def _lines(self, variable: Any, lines: slice, columns: Any = slice(None)) -> np.ndarray:
        return values(variable, (lines, columns)).astype(np.float32)

    def _stored(self, variable: Any, lines: slice) -> np.ndarray:
        try:
            return np.asarray(variable[lines, :]).view(np.uint16)
        except (OSError, RuntimeError, IndexError, ValueError) as error:
            raise GranuleError(
                f"granule {self.path}: variable {variable.name!r} cannot be read ({error}); "
                "the file is truncated or corrupt"
            ) from None

    def ch3_select(self) -> np.ndarray | None:
        """What each line's slot 3 carries: 3a where the file has any 3a value on it, else
        3b where it has a 3b value, else neither; None without a 3a variable (AVHRR/1-2)."""
        if self._ch3a is None:
            return None
        if self._switch is None:
            lines = slice(None)
            has_3a = self._valid(self._ch3a, lines, self._scaling.ch3a)
            b = self._slots[2]
            has_3b = self._valid(b, lines, self._scaling.channels[2]) if b is not None else 0
            self._switch = np.where(has_3a, CH3A, np.where(has_3b, CH3B, CH3_TRANSITION))
            self._switch = self._switch.astype(np.uint8)
        return self._switch

    def _valid(self, variable: Any, lines: slice, packing: ChannelPacking | None) -> np.ndarray:
        stored = self._stored(variable, lines).view(variable.dtype)
        fill = None if packing is None else packing.fill
        return (stored != fill).any(axis=1) if fill is not None else np.ones(len(stored), bool)

    def read_tie_latitudes(self) -> np.ndarray:
        return self._lines(self._latitude, slice(None), TIE_COLUMNS)

    def read_tie_sun_zenith(self) -> np.ndarray:
        sun = self._dataset.variables[ANGLES["tie_sun_zenith"]]
        return self._lines(sun, slice(None), TIE_COLUMNS)

    def read_tie_lonlat(self, step: int = 1) -> tuple[np.ndarray, np.ndarray]:
        rows = tie_rows(self.n_lines, step)
        lon = self._lines(self._longitude, slice(None), TIE_COLUMNS)
        return lon[rows], self.read_tie_latitudes()[rows]

    def read_telemetry(self) -> Telemetry:
        n = self.n_lines
        return Telemetry(self._times, np.zeros(n), np.zeros((n, 3)), np.zeros((n, 3)),
                         self.ch3_select(), self._scaling)  # fmt: skip

    def read(self, start: int, stop: int) -> SwathBlock:
        self.check_lines(start, stop)
        lines, n = slice(start, stop), stop - start
        counts = np.zeros((5, n, N_PIXELS), np.uint16)
        for slot, variable in enumerate(self._slots):
            if variable is not None:
                counts[slot] = self._stored(variable, lines)
        switch = self.ch3_select()
        if switch is not None and (switch[lines] == CH3A).any():
            on_3a = switch[lines] == CH3A
            counts[2, on_3a] = self._stored(self._ch3a, lines)[on_3a]
        angles = {field: self._lines(self._dataset.variables[name], lines, TIE_COLUMNS)
                  for field, name in ANGLES.items()}  # fmt: skip
        return SwathBlock(
            granule=self.path.name,
            platform=self.platform,
            first_line=start,
            times=self._times[lines],
            counts=counts,
            tie_lat=self._lines(self._latitude, lines, TIE_COLUMNS),
            tie_lon=self._lines(self._longitude, lines, TIE_COLUMNS),
            prt_counts=np.zeros(n),
            ict_counts=np.zeros((n, 3)),
            space_counts=np.zeros((n, 3)),
            **angles,
        )

    def close(self) -> None:
        if self._dataset.isopen():
            self._dataset.close()


class FDRReader(LayoutReader):
    """AVHRR GAC FDR Level 1C, recognised by CF latitude/longitude on 409-pixel lines with a
    time coordinate, the FDR's channel 1 and 4 variables and its angles."""

    name = READER
    find_layout = staticmethod(_layout)
    make_granule = FDRGranule

"""Real NOAA AVHRR GAC Level 1b granules (POD: TIROS-N, NOAA-6..14; KLM: NOAA-15..19,
Metop) via pygac.

pygac decodes the file: raw counts, tie-point geolocation from the file (corrected by pygac
for a POD clock's drift where it knows the drift and an element set is at hand), scan-line
times and the calibration telemetry. :mod:`~nearline.swath._l1b` says where the scan lines
are and how many the file holds against its header's promise: a file cut short is read as
far as it goes and says so in ``Granule.warnings``; one cut inside its header, holding no
whole scan line, or whose lines are not scan lines at all is refused. The geometry pygac
would compute from element sets is derived here without them: satellite zenith from the
scan angle on a spherical Earth (850 km orbit), solar zenith and azimuth from pyorbital's
astronomy at the tie points, relative azimuth against the across-track direction of the
line.
"""

from __future__ import annotations

import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nearline.errors import GranuleError
from nearline.swath._base import Granule, Reader, tie_rows
from nearline.swath._block import CH3A, N_PIXELS, TIE_COLUMNS, SwathBlock, Telemetry
from nearline.swath._gac_klm import klm_name, write_klm
from nearline.swath._l1b import (
    POD_FIRST_LINE,
    clock_drift,
    completeness,
    cut_in_header,
    data_set_name,
    decoded_size,
    header_problem,
    identify,
    layout,
)
from nearline.swath._orbit import gac_scan_angles

__all__ = ["GACGranule", "GACReader", "klm_name", "satellite_zenith", "write_klm"]

READER = "avhrr-gac"
ORBIT_HEIGHT_KM = 850.0
EARTH_RADIUS_KM = 6371.0
# pygac's own warnings of a file shorter or longer than its header says: nearline counts
# the lines itself (_l1b.layout) and says so in Granule.warnings instead
PYGAC_LINE_COUNT = ("Unexpected number of scanlines", "Unexpected record length for POD")
# pyorbital's notice that a caller left its conventions at their legacy defaults: pygac,
# which propagates the element set to the lines a clock correction shifts in from beyond a
# POD file's ends, does not choose them, and nearline cannot choose for it
PYORBITAL_DEFAULTS = "pyorbital is using the legacy"
TIME_SLACK = np.timedelta64(1, "D")  # scan lines this far from the header's start are corrupt


def _ch3_switch(reader: Any) -> np.ndarray | None:
    """What each line's channel-3 slot holds (bits 0-1 of the KLM scan line's status word,
    through pygac's ``get_ch3_switch``); None for POD files, which have 3b alone."""
    try:
        return np.asarray(reader.get_ch3_switch(), np.uint8)
    except AttributeError:
        return None


def satellite_zenith(scan_angle_degrees: np.ndarray) -> np.ndarray:
    """Satellite zenith at the ground for a scan angle, on a sphere."""
    ratio = (EARTH_RADIUS_KM + ORBIT_HEIGHT_KM) / EARTH_RADIUS_KM
    return np.degrees(np.arcsin(np.clip(ratio * np.sin(np.radians(scan_angle_degrees)), -1, 1)))


class GACGranule(Granule):
    """A GAC L1b file decoded by pygac, held in memory (one orbit is 40-45 MB).

    ``warnings``: what the catalogue should know of a file read but not whole (cut short,
    lines left out, geolocation not corrected for clock drift).
    """

    reader = READER
    media_type = "application/octet-stream"  # NOAA Level 1b: a binary record format

    def __init__(self, path: Path, reader: Any, notes: list[str] | None = None) -> None:
        self.path = path
        self._reader = reader
        try:
            # geolocation first: pygac's clock-drift correction shifts the line times too
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", PYORBITAL_DEFAULTS, DeprecationWarning)
                lons, lats = reader.get_lonlat()  # (lines, 51): interpolate_coords=False
            times = reader.get_times()
            counts = reader.get_counts()  # (lines, 409, 5 or 6)
            prt, ict, space = reader.get_telemetry()
        except Exception as error:  # pygac raises many kinds on bad input
            raise GranuleError(f"granule {path}: pygac cannot decode it ({error})") from None
        self.warnings = tuple(notes or ())
        self.platform = str(reader.spacecraft_name)
        self._switch = _ch3_switch(reader)
        if counts.shape[2] == 6:  # pygac split the channel-3 slot into 3a and 3b: rejoin it
            joined = counts[:, :, [0, 1, 3, 4, 5]]  # a copy, 3b in the third place
            on_3a = self._switch == CH3A
            joined[on_3a, :, 2] = counts[on_3a, :, 2]
            counts = joined
        self._counts = np.ascontiguousarray(np.moveaxis(counts, 2, 0), np.uint16)
        self.n_lines = self._counts.shape[1]
        if self.n_lines == 0:
            raise GranuleError(f"granule {path}: holds no scan line with a valid line number")
        if lons.shape != (self.n_lines, TIE_COLUMNS.size):
            raise GranuleError(f"granule {path}: {lons.shape} tie points; expected (lines, 51)")
        self._lon = np.ascontiguousarray(lons, np.float32)
        self._lat = np.ascontiguousarray(lats, np.float32)
        self._times = np.asarray(times).astype("datetime64[ms]")
        self._check(reader)
        self._prt = np.asarray(prt, np.float64)
        self._ict = np.asarray(ict, np.float64)  # (lines, 3): channels 3b, 4, 5
        self._space = np.asarray(space, np.float64)
        self.start_time = self._times[0].astype(datetime).replace(tzinfo=UTC)
        self.end_time = self._times[-1].astype(datetime).replace(tzinfo=UTC)

    def _check(self, reader: Any) -> None:
        """Refuse records that are not scan lines: no line located on the Earth, or line
        times a day or more from the header's start (pygac mends times only near it)."""
        located = np.isfinite(self._lat).all(axis=1) & np.isfinite(self._lon).all(axis=1)
        if not located.any():
            raise GranuleError(
                f"granule {self.path}: no scan line has valid geolocation (of "
                f"{self.n_lines:,} read): the records are corrupt"
            )
        try:
            header = np.datetime64(reader.get_header_timestamp(), "ms")
        except ValueError:  # a corrupt header time: nothing to hold the lines to
            return
        first, last = self._times.min(), self._times.max()
        if first < header - TIME_SLACK or last > header + TIME_SLACK:
            raise GranuleError(
                f"granule {self.path}: its scan lines' times ({first} to {last}) disagree "
                f"with its header's start ({header}): the records are corrupt"
            )

    def read_tie_latitudes(self) -> np.ndarray:
        return self._lat

    def read_telemetry(self) -> Telemetry:
        return Telemetry(self._times, self._prt, self._ict, self._space, self._switch)

    def read_tie_lonlat(self, step: int = 1) -> tuple[np.ndarray, np.ndarray]:
        rows = tie_rows(self.n_lines, step)
        return self._lon[rows], self._lat[rows]

    def read(self, start: int, stop: int) -> SwathBlock:
        from pyorbital import astronomy

        self.check_lines(start, stop)
        lines = slice(start, stop)
        lon, lat = self._lon[lines], self._lat[lines]
        utc = np.broadcast_to(self._times[lines][:, None], lon.shape)
        sun_elevation, sun_azimuth = astronomy.get_alt_az(utc, lon, lat)
        toward_satellite = _across_track_azimuth(lon, lat)
        # the satellite lies toward higher columns left of nadir and lower ones right of it
        toward_satellite[:, TIE_COLUMNS > N_PIXELS // 2] += 180.0
        relative = np.abs((np.degrees(sun_azimuth) - toward_satellite + 180.0) % 360.0 - 180.0)
        scan = np.broadcast_to(satellite_zenith(np.abs(gac_scan_angles(TIE_COLUMNS))), lon.shape)
        return SwathBlock(
            granule=self.path.name,
            platform=self.platform,
            first_line=start,
            times=self._times[lines],
            counts=self._counts[:, lines],
            tie_lat=lat,
            tie_lon=lon,
            tie_sat_zenith=np.ascontiguousarray(scan, np.float32),
            tie_sun_zenith=(90.0 - np.degrees(sun_elevation)).astype(np.float32),
            tie_rel_azimuth=relative.astype(np.float32),
            prt_counts=self._prt[lines],
            ict_counts=self._ict[lines],
            space_counts=self._space[lines],
        )


def _across_track_azimuth(lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """Initial bearing (degrees) from each tie point toward the next along its scan line."""
    phi1, lam1 = np.radians(lat), np.radians(lon)
    phi2 = np.concatenate([phi1[:, 1:], 2 * phi1[:, -1:] - phi1[:, -2:-1]], axis=1)
    lam2 = np.concatenate([lam1[:, 1:], 2 * lam1[:, -1:] - lam1[:, -2:-1]], axis=1)
    y = np.sin(lam2 - lam1) * np.cos(phi2)
    x = np.cos(phi1) * np.sin(phi2) - np.sin(phi1) * np.cos(phi2) * np.cos(lam2 - lam1)
    return np.degrees(np.arctan2(y, x)) % 360.0


class GACReader(Reader):
    """NOAA AVHRR GAC Level 1b, POD and KLM, recognised by pygac's own header checks (and a
    GAC data set name at the start of a file too short for them: a copy cut in its header).

    A POD granule of a platform whose clock drifted (NOAA-7, -9, -11, -12, -14) is
    clock-corrected with ``TLE_<satname>.txt`` beside it or in ``$NEARLINE_TLE_DIR``, or
    read uncorrected with a warning without one.
    """

    name = READER

    @classmethod
    def can_open(cls, path: Path) -> bool:
        return identify(Path(path)) is not None or cut_in_header(Path(path))

    @classmethod
    def why_not(cls, path: Path) -> str:
        found = data_set_name(Path(path))
        if found is None:
            return (
                "no NOAA Level 1b POD or KLM header: no data set name such as "
                "NSS.GHRR.NP.D12347.S0416.E0424 in its first bytes"
            )
        name, mode, spacecraft = found
        if mode == "GHRR":
            return (
                f"a GAC data set name {name}, but pygac's header checks refuse its header "
                f"(a spacecraft code {spacecraft} it does not know, or a damaged header)"
            )
        return f"a NOAA Level 1b data set {name} of {mode} data, not GAC (GHRR)"

    def open(self, path: Path) -> Granule:
        path = Path(path)
        found = identify(path)
        if found is None:
            if cut_in_header(path):
                raise GranuleError(
                    f"granule {path}: cut inside its NOAA Level 1b header ({path.stat().st_size:,}"
                    f" bytes; scan lines begin at byte 4,608 or {POD_FIRST_LINE:,}): a "
                    "truncated copy; fetch it again"
                )
            raise GranuleError(f"granule {path}: not an AVHRR GAC level 1b file")
        reader_class, archive, head = found
        problem = header_problem(reader_class, head)
        if problem is not None:
            raise GranuleError(f"granule {path}: {problem}: a corrupt or foreign header")
        # the file's own 51 tie points per line (corrupt lines NaN): nearline interpolates
        # them itself, pixel for pixel as lonlat() does
        reader = reader_class(interpolate_coords=False)
        try:
            shape = layout(reader, archive, head, decoded_size(path))
        except OSError as error:
            raise GranuleError(f"granule {path}: cannot be read ({error})") from None
        if shape.whole == 0:
            raise GranuleError(
                f"granule {path}: holds no whole scan line of the {shape.promised:,} its "
                f"{shape.kind} header promises (a line is {shape.record:,} bytes from byte "
                f"{shape.first_line:,}): a truncated copy; fetch it again"
            )
        try:
            with warnings.catch_warnings():
                for message in PYGAC_LINE_COUNT:  # counted in _l1b.layout instead
                    warnings.filterwarnings("ignore", message, RuntimeWarning)
                reader.read(str(path))
            notes = completeness(shape, len(reader.scans)) + clock_drift(reader, path)
        except Exception as error:
            raise GranuleError(f"granule {path}: pygac cannot read it ({error})") from None
        return GACGranule(path, reader, notes)

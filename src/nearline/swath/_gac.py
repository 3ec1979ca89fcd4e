"""Real NOAA AVHRR GAC Level 1b granules (POD: NOAA-6..14; KLM: NOAA-15..19, Metop) via pygac.

pygac decodes the file: raw counts, tie-point geolocation from the file, scan-line times and
the calibration telemetry. The geometry pygac would compute from element sets (which it
needs downloaded) is derived here without them: satellite zenith from the scan angle on a
spherical Earth (850 km orbit), solar zenith and azimuth from pyorbital's astronomy at the
tie points, relative azimuth against the across-track direction of the line.
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
from nearline.swath._orbit import gac_scan_angles

READER = "avhrr-gac"
ORBIT_HEIGHT_KM = 850.0
EARTH_RADIUS_KM = 6371.0


def _pygac_readers() -> list[Any]:
    from pygac.gac_klm import GACKLMReader
    from pygac.gac_pod import GACPODReader

    return [GACKLMReader, GACPODReader]


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
    """A GAC L1b file decoded by pygac, held in memory (one orbit is 40-45 MB)."""

    reader = READER
    media_type = "application/octet-stream"  # NOAA Level 1b: a binary record format

    def __init__(self, path: Path, reader: Any) -> None:
        self.path = path
        self._reader = reader
        try:
            counts = reader.get_counts()  # (lines, 409, 5 or 6)
            lons, lats = reader.get_lonlat()  # (lines, 51): made with interpolate_coords=False
            times = reader.get_times()
            prt, ict, space = reader.get_telemetry()
        except Exception as error:  # pygac raises many kinds on bad input
            raise GranuleError(f"granule {path}: pygac cannot decode it ({error})") from None
        promised = int(reader.head["count_of_data_records"])
        if counts.shape[0] < promised:
            raise GranuleError(
                f"granule {path}: holds {counts.shape[0]} scan lines of the {promised} its "
                "header promises; it is truncated"
            )
        self.platform = str(reader.spacecraft_name)
        self._switch = _ch3_switch(reader)
        if counts.shape[2] == 6:  # pygac split the channel-3 slot into 3a and 3b: rejoin it
            joined = counts[:, :, [0, 1, 3, 4, 5]]  # a copy, 3b in the third place
            on_3a = self._switch == CH3A
            joined[on_3a, :, 2] = counts[on_3a, :, 2]
            counts = joined
        self._counts = np.ascontiguousarray(np.moveaxis(counts, 2, 0), np.uint16)
        if lons.shape != (counts.shape[0], TIE_COLUMNS.size):
            raise GranuleError(f"granule {path}: {lons.shape} tie points; expected (lines, 51)")
        self._lon = np.ascontiguousarray(lons, np.float32)
        self._lat = np.ascontiguousarray(lats, np.float32)
        self._times = np.asarray(times).astype("datetime64[ms]")
        self._prt = np.asarray(prt, np.float64)
        self._ict = np.asarray(ict, np.float64)[:, -3:]
        self._space = np.asarray(space, np.float64)[:, -3:]
        self.n_lines = self._counts.shape[1]
        if self.n_lines == 0:
            raise GranuleError(f"granule {path}: holds no scan lines")
        self.start_time = self._times[0].astype(datetime).replace(tzinfo=UTC)
        self.end_time = self._times[-1].astype(datetime).replace(tzinfo=UTC)

    def read_tie_latitudes(self) -> np.ndarray:
        return self._lat

    def read_telemetry(self) -> Telemetry:
        return Telemetry(self._times, self._prt, self._ict, self._space, self._switch)

    def read_tie_lonlat(self, step: int = 1) -> tuple[np.ndarray, np.ndarray]:
        rows = tie_rows(self.n_lines, step)
        return self._lon[rows], self._lat[rows]

    def read(self, start: int, stop: int) -> SwathBlock:
        from pyorbital import astronomy

        if not 0 <= start <= stop <= self.n_lines:
            raise GranuleError(
                f"granule {self.path}: lines {start}..{stop} asked of {self.n_lines}"
            )
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
    """NOAA AVHRR GAC Level 1b, POD and KLM, recognised by pygac's own header checks."""

    name = READER

    @classmethod
    def can_open(cls, path: Path) -> bool:
        for reader in _pygac_readers():
            try:
                if reader.can_read(str(path)):
                    return True
            except Exception:  # a header pygac cannot parse is not this format
                continue
        return False

    @classmethod
    def why_not(cls, path: Path) -> str:
        return "no NOAA Level 1b POD or KLM header that pygac's checks accept"

    def open(self, path: Path) -> Granule:
        for reader_class in _pygac_readers():
            try:
                if not reader_class.can_read(str(path)):
                    continue
                # the file's own 51 tie points per line (clock drift corrected, corrupt lines
                # NaN): nearline interpolates them itself, pixel for pixel as lonlat() does
                reader = reader_class(interpolate_coords=False)
                with warnings.catch_warnings():  # pygac warns of a short file; we check below
                    warnings.simplefilter("ignore", RuntimeWarning)
                    reader.read(str(path))
            except Exception as error:
                raise GranuleError(f"granule {path}: pygac cannot read it ({error})") from None
            return GACGranule(Path(path), reader)
        raise GranuleError(f"granule {path}: not an AVHRR GAC level 1b file")


KLM_RECORD = 4608  # bytes: the header record, then one record per scan line
KLM_SPACECRAFT = {"noaa15": 4, "noaa16": 2, "noaa17": 6, "noaa18": 7, "noaa19": 8, "metopa": 12}
KLM_CODES = {
    "noaa15": "NK", "noaa16": "NL", "noaa17": "NM", "noaa18": "NN", "noaa19": "NP", "metopa": "M2",
}  # fmt: skip


def klm_name(platform: str, start: datetime, end: datetime) -> str:
    """The NOAA CLASS data set name, e.g. NSS.GHRR.NP.D12347.S0416.E0424.B0000001.GC."""
    code = KLM_CODES[platform]
    return f"NSS.GHRR.{code}.D{start:%y%j}.S{start:%H%M}.E{end:%H%M}.B0000001.GC"


def write_klm(path: Path, block: SwathBlock, *, ch3_select: np.ndarray | None = None) -> None:
    """Write ``block`` (a whole granule) as a NOAA KLM AVHRR GAC Level 1b file (version 5).

    Only what pygac reads is filled in: the header's data set name, spacecraft, data type,
    record count and start/end times; per scan line its number, time, channel-3 select bits
    (``ch3_select``, default 3b on every line) in the scan line bit field, the
    51 tie-point latitudes/longitudes (1e-4 degrees), PRT, blackbody (back scan) and space
    counts, and the five channels' 10-bit counts packed three to a 32-bit word. Angles,
    calibration coefficients and housekeeping stay zero. Meant for tests and demonstrations.
    """
    from pygac.gac_klm import scanline
    from pygac.klm_reader import header

    if block.platform not in KLM_SPACECRAFT:
        raise GranuleError(
            f"granule {path}: KLM L1b is written for {', '.join(KLM_SPACECRAFT)}, "
            f"not {block.platform!r}"
        )
    n = block.n_lines
    times = block.times.astype("datetime64[ms]")
    start = times[0].astype(datetime)
    end = times[-1].astype(datetime)
    head = np.zeros(1, header)
    head["data_set_creation_site_id"] = b"NSS"
    head["data_set_name"] = klm_name(block.platform, start, end).encode()
    head["noaa_level_1b_format_version_number"] = 5
    head["noaa_spacecraft_identification_code"] = KLM_SPACECRAFT[block.platform]
    head["data_type_code"] = 2  # GAC
    head["count_of_data_records"] = n
    for prefix, moment in (("start", start), ("end", end)):
        head[f"{prefix}_of_data_set_year"] = moment.year
        head[f"{prefix}_of_data_set_day_of_year"] = moment.timetuple().tm_yday
        head[f"{prefix}_of_data_set_utc_time_of_day"] = _milliseconds_of_day(moment)

    lines = np.zeros(n, scanline)
    day = times.astype("datetime64[D]")
    year = day.astype("datetime64[Y]")
    lines["scan_line_number"] = np.arange(1, n + 1)
    if ch3_select is not None:
        lines["scan_line_bit_field"] = np.asarray(ch3_select, np.uint16) & 3
    lines["scan_line_year"] = year.astype(int) + 1970
    lines["scan_line_day_of_year"] = (day - year).astype(int) + 1
    lines["scan_line_utc_time_of_day"] = (times - day).astype(np.int64)
    lines["earth_location"]["lats"] = np.rint(block.tie_lat * 1e4)
    lines["earth_location"]["lons"] = np.rint(block.tie_lon * 1e4)
    lines["telemetry"]["PRT"] = np.rint(block.prt_counts)[:, None]
    lines["back_scan"] = np.tile(np.rint(block.ict_counts), 10)  # 3b, 4, 5, 3b, 4, 5, ...
    space = np.zeros((n, 5))
    space[:, 2:] = np.rint(block.space_counts)
    lines["space_data"] = np.tile(space, 10)
    # pixel-major, channel-minor, three 10-bit counts to a word (2045 counts, one pad)
    flat = np.zeros((n, 682 * 3), np.uint32)
    flat[:, : N_PIXELS * 5] = np.moveaxis(block.counts, 0, 2).reshape(n, N_PIXELS * 5)
    words = flat.reshape(n, 682, 3)
    lines["sensor_data"] = (words[:, :, 0] << 20) | (words[:, :, 1] << 10) | words[:, :, 2]

    with open(path, "wb") as handle:
        handle.write(head.tobytes().ljust(KLM_RECORD, b"\0"))
        handle.write(lines.tobytes())


def _milliseconds_of_day(moment: datetime) -> int:
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return round((moment - midnight).total_seconds() * 1000)

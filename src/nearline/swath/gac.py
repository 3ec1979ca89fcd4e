"""Real NOAA AVHRR GAC Level 1b granules (POD: NOAA-6..14; KLM: NOAA-15..19, Metop) via pygac.

pygac decodes the file: raw counts, tie-point geolocation from the file, scan-line times and
the calibration telemetry. The geometry pygac would compute from element sets (which it
needs downloaded) is derived here without them: satellite zenith from the scan angle on a
spherical Earth (850 km orbit), solar zenith and azimuth from pyorbital's astronomy at the
tie points, relative azimuth against the across-track direction of the line.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nearline.errors import GranuleError
from nearline.swath.base import TIE_COLUMNS, Granule, Reader, SwathBlock, Telemetry
from nearline.swath.orbit import gac_scan_angles

ORBIT_HEIGHT_KM = 850.0
EARTH_RADIUS_KM = 6371.0


def _pygac_readers() -> list[Any]:
    from pygac.gac_klm import GACKLMReader
    from pygac.gac_pod import GACPODReader

    return [GACKLMReader, GACPODReader]


def satellite_zenith(scan_angle_degrees: np.ndarray) -> np.ndarray:
    """Satellite zenith at the ground for a scan angle, on a sphere."""
    ratio = (EARTH_RADIUS_KM + ORBIT_HEIGHT_KM) / EARTH_RADIUS_KM
    return np.degrees(np.arcsin(np.clip(ratio * np.sin(np.radians(scan_angle_degrees)), -1, 1)))


class GACGranule(Granule):
    """A GAC L1b file decoded by pygac, held in memory (one orbit is 40-45 MB)."""

    def __init__(self, path: Path, reader: Any) -> None:
        self.path = path
        self._reader = reader
        try:
            counts = reader.get_counts()  # (lines, 409, 5 or 6)
            lons, lats = reader.get_lonlat()
            times = reader.get_times()
            prt, ict, space = reader.get_telemetry()
        except Exception as error:  # pygac raises many kinds on bad input
            raise GranuleError(f"granule {path}: pygac cannot decode it ({error})") from None
        self.platform = str(reader.spacecraft_name)
        channels = [0, 1, 3, 4, 5] if counts.shape[2] == 6 else [0, 1, 2, 3, 4]
        self._counts = np.ascontiguousarray(np.moveaxis(counts[:, :, channels], 2, 0), np.uint16)
        self._lon = np.ascontiguousarray(lons[:, TIE_COLUMNS], np.float32)
        self._lat = np.ascontiguousarray(lats[:, TIE_COLUMNS], np.float32)
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
        return Telemetry(self._times, self._prt, self._ict, self._space)

    def read(self, start: int, stop: int) -> SwathBlock:
        from pyorbital import astronomy

        lines = slice(start, stop)
        lon, lat = self._lon[lines], self._lat[lines]
        utc = np.broadcast_to(self._times[lines][:, None], lon.shape)
        sun_elevation, sun_azimuth = astronomy.get_alt_az(utc, lon, lat)
        across = _across_track_azimuth(lon, lat)
        relative = np.abs((np.degrees(sun_azimuth) - across + 180.0) % 360.0 - 180.0)
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

    name = "avhrr-gac"

    @classmethod
    def can_open(cls, path: Path) -> bool:
        for reader in _pygac_readers():
            try:
                if reader.can_read(str(path)):
                    return True
            except Exception:  # a header pygac cannot parse is not this format
                continue
        return False

    def open(self, path: Path) -> Granule:
        for reader_class in _pygac_readers():
            try:
                if not reader_class.can_read(str(path)):
                    continue
                reader = reader_class.fromfile(str(path))
            except Exception as error:
                raise GranuleError(f"granule {path}: pygac cannot read it ({error})") from None
            return GACGranule(Path(path), reader)
        raise GranuleError(f"granule {path}: not an AVHRR GAC level 1b file")

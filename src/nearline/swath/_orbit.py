"""Where an AVHRR looks: scan geometry from a two-line element set, through pyorbital.

The instrument sweeps +-55.37 degrees across track; a full-resolution (LAC) line has 2048
fields of view 25 microseconds apart, 6 lines a second. GAC keeps every third line (2 a
second) and averages four of every five fields of view, so GAC pixel ``i`` is centred on
LAC field of view ``5 i + 2.5`` (scan angle ``(i / 204 - 1) * 55.37 * 1020 / 1023.5``
degrees, pyorbital's ``avhrr_gac_from_times``). Positions are on the WGS84 ellipsoid.

pyorbital's geometry conventions are chosen explicitly as "legacy" (its default, which it
now warns about): those are the conventions of its published reference values (scan line 2,
column 500 of the NOAA-19 test pass at lon -34.69996894, lat 56.69799502), which nearline's
tests reproduce. Its "geocentric" nadir moves points by about 200 m.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np

# NOAA-19, the element set pyorbital's own geolocation tests use (epoch 2012-12-10).
NOAA19_TLE = (
    "1 33591U 09005A   12345.45213434  .00000391  00000-0  24004-3 0  6113",
    "2 33591 098.8821 283.2036 0013384 242.4835 117.4960 14.11432063197875",
)
# MetOp-A, the element set pyorbital's own orbit-number test uses (epoch 2011-09-11): a
# morning orbit (descending node near 09:30 local time), where NOAA-19 crosses near 14:00.
METOPA_TLE = (
    "1 29499U 06044A   11254.96536486  .00000092  00000-0  62081-4 0  5221",
    "2 29499  98.6804 312.6735 0001758 111.9178 248.2152 14.21501774254058",
)
ELEMENT_SETS = {"noaa19": NOAA19_TLE, "metopa": METOPA_TLE}
MAX_SCAN_ANGLE = 55.37
LAC_LINE_SECONDS = 1 / 6
LAC_PIXEL_SECONDS = 25e-6
GAC_LINE_SECONDS = 0.5
GAC_PIXEL_SECONDS = 5 * LAC_PIXEL_SECONDS


def element_set(platform: str) -> tuple[str, str]:
    """The two-line element set the synthetic granules of ``platform`` fly: its own where
    :data:`ELEMENT_SETS` has one, else NOAA-19's."""
    return ELEMENT_SETS.get(platform, NOAA19_TLE)


def mean_motion(tle: tuple[str, str]) -> float:
    """Revolutions a day (columns 53-63 of line 2)."""
    return float(tle[1][52:63])


def gac_scan_angles(columns: np.ndarray) -> np.ndarray:
    """Across-track scan angle (degrees, positive to the left) of GAC pixel columns."""
    gac_angle = MAX_SCAN_ANGLE * (1023.5 - 3.5) / 1023.5
    return (1 - np.asarray(columns, dtype=float) / 204) * gac_angle


def lac_scan_angles(columns: np.ndarray) -> np.ndarray:
    """Across-track scan angle (degrees) of full-resolution fields of view."""
    return (1 - np.asarray(columns, dtype=float) / 1023.5) * MAX_SCAN_ANGLE


def scan_lonlat(
    tle: tuple[str, str],
    start: datetime,
    line_offsets: np.ndarray,
    scan_angles: np.ndarray,
    pixel_offsets: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Longitude and latitude (degrees) seen at each (line, column).

    ``line_offsets`` (n,) seconds of each line after ``start``; ``scan_angles`` (m,) degrees;
    ``pixel_offsets`` (m,) seconds of each column after its line's start.
    """
    from pyorbital.geoloc import ScanGeometry, compute_pixels, get_lonlatalt

    n, m = len(line_offsets), len(scan_angles)
    across = np.broadcast_to(np.radians(scan_angles)[None, :], (n, m))
    fovs = np.stack([across, np.zeros((n, m))])
    offsets = np.asarray(line_offsets, dtype=float)[:, None] + np.asarray(pixel_offsets)[None, :]
    geometry = ScanGeometry(fovs, offsets)
    times = geometry.times(np.datetime64(start.replace(tzinfo=None), "ns"))
    position = compute_pixels(
        tle, geometry, times, nadir_convention="legacy", rotation_order="legacy"
    )
    lon, lat, _ = get_lonlatalt(position, times)
    return np.asarray(lon).reshape(n, m), np.asarray(lat).reshape(n, m)


def view_angles(
    tle: tuple[str, str], times: np.ndarray, lon: np.ndarray, lat: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Satellite zenith, solar zenith and relative azimuth (degrees) at (line, column) points.

    ``times`` (n,) datetime64 of each line; ``lon``/``lat`` (n, m).
    """
    from pyorbital import astronomy
    from pyorbital.orbital import Orbital, get_observer_look

    orbital = Orbital("NOAA 19", line1=tle[0], line2=tle[1])
    utc = times.astype("datetime64[us]")
    sat_lon, sat_lat, sat_alt = orbital.get_lonlatalt(utc)
    grid_times = np.broadcast_to(utc[:, None], lon.shape)
    sat_az, sat_el = get_observer_look(
        np.broadcast_to(sat_lon[:, None], lon.shape),
        np.broadcast_to(sat_lat[:, None], lon.shape),
        np.broadcast_to(sat_alt[:, None], lon.shape),
        grid_times,
        lon,
        lat,
        np.zeros_like(lon),
    )
    sun_alt, sun_az = astronomy.get_alt_az(grid_times, lon, lat)
    sat_zenith = 90.0 - np.asarray(sat_el)
    sun_zenith = 90.0 - np.degrees(sun_alt)
    relative = np.abs((np.degrees(sun_az) - np.asarray(sat_az) + 180.0) % 360.0 - 180.0)
    return sat_zenith, sun_zenith, relative


def sun_distance_squared(day_of_year: int) -> float:
    """The square of the Earth-Sun distance in AU on ``day_of_year`` (0.967 early January,
    1.033 early July): sunlight at the top of the atmosphere is 1/d^2 times its mean, so a
    reflectance is the measured one times d^2. pygac's formula (PATMOS-x's choice), perihelion
    on day 2."""
    return 1.0 - 0.0334 * float(np.cos(2.0 * np.pi * (day_of_year - 2) / 365.25))


def glint_angle(
    sun_zenith: np.ndarray, sat_zenith: np.ndarray, rel_azimuth: np.ndarray
) -> np.ndarray:
    """Angle (degrees) between the view and the mirror reflection of the sun off a flat sea.

    ``rel_azimuth`` as :func:`view_angles` gives it, ``|sun azimuth - satellite azimuth|``
    seen from the ground: 180 degrees puts the satellite opposite the sun, where the mirror
    reflection goes.
    """
    s, v, r = (np.radians(np.asarray(a, np.float64)) for a in (sun_zenith, sat_zenith, rel_azimuth))
    cosine = np.cos(s) * np.cos(v) - np.sin(s) * np.sin(v) * np.cos(r)
    return np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))

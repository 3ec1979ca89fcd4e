"""From a block of raw scan lines to observations: the per-pixel chain in two compiled passes.

:func:`~nearline.composite._calibration.calibrate` (counts to scaled radiance and brightness
temperature, with drift), then one pass per pixel: surface height at the geolocated point ->
terrain (parallax) correction of the position -> land/sea at the corrected point ->
reflectance normalised by the solar zenith cosine and the Earth-Sun distance and, for
channel 1, ozone-corrected -> NDVI -> quality bits; then the cloud tests
(:mod:`~nearline.composite._cloudmask`) over the block, which compare a pixel with its
neighbours.

Quality bits (``qc``): 1 bad calibration (a thermal channel the instrument has, or by day a
visible channel, has no valid value; AVHRR/1's missing channel 5 does not count), 2 night
(solar zenith >= 85 degrees: no reflectance, no NDVI), 4 scan edge (|scan angle| > 42
degrees, where GAC pixels grow past about 2.5 times their nadir size), 8 low sun (solar
zenith > 75 degrees).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numba
import numpy as np

from nearline.composite._ancillary import Ancillary, height_at, land_at
from nearline.composite._calibration import LineCalibration, calibrate, channel3a
from nearline.composite._cloudmask import DAY_SUN_ZENITH, cloud_tests, near_infrared_tests
from nearline.composite._terrain import NADIR_COLUMN, shift_toward_nadir
from nearline.swath import (
    CH3A,
    N_PIXELS,
    SwathBlock,
    gac_scan_angles,
    interpolate_tiepoints,
    lonlat,
    sun_distance_squared,
)

# quality bits
BAD_CALIBRATION, NIGHT, SCAN_EDGE, LOW_SUN = 1, 2, 4, 8
SCAN_EDGE_DEGREES = 42.0
LOW_SUN_ZENITH = 75.0
SCAN_ANGLES = gac_scan_angles(np.arange(N_PIXELS)).astype(np.float32)


@dataclass
class Observations:
    """Per-pixel results for a block's lines (all, or the daylit span), each (n, 409);
    float32 unless noted."""

    lon: np.ndarray
    lat: np.ndarray
    ndvi: np.ndarray
    cloud: np.ndarray  # uint8 test bits (cloudmask)
    qc: np.ndarray  # uint8 quality bits
    scan_angle: np.ndarray
    sun_zenith: np.ndarray
    rel_azimuth: np.ndarray
    refl1: np.ndarray  # percent
    refl2: np.ndarray
    refl3a: np.ndarray  # percent, on channel-3a lines by day; NaN elsewhere
    bt3: np.ndarray  # K, NaN on channel-3a lines
    bt4: np.ndarray
    bt5: np.ndarray
    day: np.ndarray  # int16 day of year
    time_ms: np.ndarray  # int64 per line: milliseconds since 1970, a unique key with column
    first_line: int = 0  # granule line of the first row


@numba.njit(cache=True, nogil=True)
def _chain(
    radiance, lon, lat, sat_zenith, sun_zenith, land_bits, height_codes, scan_angles,
    ozone_depth, sun_distance2, has_ch5, ndvi, land, qc, refl1, refl2, cos_sun, cos_view,
):  # fmt: skip
    n, m = lon.shape
    deg = math.pi / 180.0
    for i in range(n):
        nadir_lon = lon[i, NADIR_COLUMN]
        nadir_lat = lat[i, NADIR_COLUMN]
        for j in range(m):
            sz = sun_zenith[i, j]
            flags_q = 0
            view = math.cos(sat_zenith[i, j] * deg)
            cos_view[i, j] = view
            if sz < DAY_SUN_ZENITH:
                mu0 = math.cos(sz * deg)
                cos_sun[i, j] = mu0
                slant = 1.0 / mu0 + 1.0 / max(view, 0.01)
                lit = mu0 / sun_distance2  # sunlight on the pixel, relative to the mean
                r1 = radiance[0, i, j] / lit * math.exp(ozone_depth * slant)
                r2 = radiance[1, i, j] / lit
                if sz > LOW_SUN_ZENITH:
                    flags_q |= LOW_SUN
            else:
                cos_sun[i, j] = np.nan
                r1 = np.nan
                r2 = np.nan
                flags_q |= NIGHT
            refl1[i, j] = r1
            refl2[i, j] = r2
            total = r1 + r2
            ndvi[i, j] = (r2 - r1) / total if total > 0 else np.nan
            bt4, bt5 = radiance[3, i, j], radiance[4, i, j]
            no_thermal = math.isnan(bt4) or (has_ch5 and math.isnan(bt5))
            if no_thermal or (sz < DAY_SUN_ZENITH and math.isnan(r1 + r2)):
                flags_q |= BAD_CALIBRATION
            if abs(scan_angles[j]) > SCAN_EDGE_DEGREES:
                flags_q |= SCAN_EDGE
            height = height_at(height_codes, lon[i, j], lat[i, j])
            x, y = shift_toward_nadir(
                lon[i, j], lat[i, j], nadir_lon, nadir_lat, height, sat_zenith[i, j]
            )
            lon[i, j], lat[i, j] = x, y
            land[i, j] = land_at(land_bits, x, y)
            qc[i, j] = flags_q


def sunlit_reflectance(
    radiance: np.ndarray, sun_zenith: np.ndarray, sun_distance2: float
) -> np.ndarray:
    """Reflectance (percent) of a solar channel's scaled radiance: divided by the cosine of
    the solar zenith angle and corrected to the mean Earth-Sun distance, as channels 1 and 2
    are; NaN by night (solar zenith >= 85 degrees)."""
    cosine = np.cos(np.radians(sun_zenith, dtype=np.float32))
    with np.errstate(invalid="ignore", divide="ignore"):
        lit = radiance * np.float32(sun_distance2) / cosine
    return np.where(sun_zenith < DAY_SUN_ZENITH, lit, np.float32(np.nan)).astype(np.float32)


@numba.njit(cache=True, nogil=True)
def daylit_span(sun_zenith: np.ndarray) -> tuple[int, int]:
    """Lines ``[first, stop)`` from one before the first line with a sunlit pixel (solar
    zenith below 85 degrees) to one after the last: the cloud tests' windows and the
    footprints of sunlit pixels reach one line across. At least one line."""
    n, m = sun_zenith.shape
    first, last = n, -1
    for i in range(n):
        for j in range(m):
            if sun_zenith[i, j] < DAY_SUN_ZENITH:
                first, last = min(first, i), i
                break
    if last < 0:
        return 0, min(n, 1)
    return max(first - 1, 0), min(last + 2, n)


def _lap(timings: dict[str, float] | None, stage: str, since: float) -> float:
    """Add this thread's processor time since ``since`` to ``timings[stage]``; return now."""
    now = time.thread_time()
    if timings is not None:
        timings[stage] = timings.get(stage, 0.0) + now - since
    return now


def observe(
    block: SwathBlock,
    cal: LineCalibration,
    ancillary: Ancillary,
    *,
    night: bool = True,
    timings: dict[str, float] | None = None,
) -> Observations:
    """Every pixel of ``block`` as an observation (``cal`` covers exactly its lines).

    ``night=False`` leaves out what no composite uses: the lines before and after the
    block's daylit span (:func:`daylit_span`; they are not observed at all) and the cloud
    tests of night pixels (0). Every pixel observed by day is the same either way.
    ``timings``: processor seconds per stage (geolocation, calibration, reflectance and
    terrain, cloud mask) are added to it.
    """
    began = time.thread_time()
    sun_zenith = interpolate_tiepoints(block.tie_sun_zenith)
    if not night:
        first, stop = daylit_span(sun_zenith)
        if (first, stop) != (0, block.n_lines):
            block, cal = block.slice(first, stop), cal.slice(first, stop)
            sun_zenith = sun_zenith[first:stop]
    n = block.n_lines
    lon, lat = lonlat(block)
    sat_zenith = interpolate_tiepoints(block.tie_sat_zenith)
    rel_azimuth = interpolate_tiepoints(block.tie_rel_azimuth)
    began = _lap(timings, "geolocation", began)
    radiance = calibrate(block.counts, cal)
    radiance3a = channel3a(block.counts, cal, radiance)
    began = _lap(timings, "calibration", began)
    times = block.times.astype("datetime64[ms]")
    day_of_year = (times.astype("datetime64[D]") - times.astype("datetime64[Y]")).astype(int) + 1
    shape = (n, N_PIXELS)
    ndvi, refl1, refl2 = (np.empty(shape, np.float32) for _ in range(3))
    land, qc = np.empty(shape, np.bool_), np.empty(shape, np.uint8)
    cosines = (np.empty(shape, np.float64), np.empty(shape, np.float64))
    # a Level 1C producer (pygac) may have corrected to the mean Earth-Sun distance already
    distance2 = 1.0 if cal.distance_corrected else sun_distance_squared(int(day_of_year[0]))
    _chain(
        radiance, lon, lat, sat_zenith, sun_zenith, ancillary.land_bits, ancillary.height_codes,
        SCAN_ANGLES, ancillary.ozone_depth, distance2, cal.has_channel5, ndvi, land, qc, refl1,
        refl2, *cosines,
    )  # fmt: skip
    # channel 3a by day only where a line carries it (MetOp, NOAA-15 to 17; never NOAA-19)
    carries_3a = cal.ch3_select is not None and bool((cal.ch3_select == CH3A).any())
    # without 3a, radiance3a is NaN on every line
    refl3a = sunlit_reflectance(radiance3a, sun_zenith, distance2) if carries_3a else radiance3a
    began = _lap(timings, "reflectance and terrain", began)
    channels = (refl1, refl2, radiance[2], radiance[3], radiance[4])
    cloud = cloud_tests(
        channels, sun_zenith, land, sat_zenith=sat_zenith, rel_azimuth=rel_azimuth,
        first_line=block.first_line, night=night, cosines=cosines,
    )  # fmt: skip
    if carries_3a:  # the 1.6 um tests change nothing on lines that carry 3b
        near_infrared_tests(
            cloud, refl1, refl3a, radiance[3], sun_zenith, land, sat_zenith, rel_azimuth
        )
    _lap(timings, "cloud mask", began)
    return Observations(
        lon=lon,
        lat=lat,
        ndvi=ndvi,
        cloud=cloud,
        qc=qc,
        scan_angle=np.broadcast_to(SCAN_ANGLES, shape),
        sun_zenith=sun_zenith,
        rel_azimuth=rel_azimuth,
        refl1=refl1,
        refl2=refl2,
        refl3a=refl3a,
        bt3=radiance[2],
        bt4=radiance[3],
        bt5=radiance[4],
        day=np.broadcast_to(day_of_year.astype(np.int16)[:, None], shape),
        time_ms=times.view(np.int64),
        first_line=block.first_line,
    )

"""Synthetic AVHRR GAC days: real orbital geometry, a plausible scene, raw counts.

Each orbit granule has the shape of a real one: 2 scan lines a second, 409 pixels, tie-point
geolocation and angles from pyorbital and a fixed element set (MetOp-A's own; NOAA-19's for
the other platforms), calibration telemetry, and 10-bit counts made by running pygac's own
calibration for the platform backwards (a table of all 1024 counts, inverted), so that
calibrating them gives back the scene.

Satellites that flew channel 3a by day (:data:`DAYTIME_3A`: NOAA-17 and MetOp-A) send 3a on
every line whose nadir is sunlit (solar zenith below 90 degrees) and 3b on the others; the
granule records the switch per line (``ch3_select``), and on 3a lines the channel-3
blackbody and space views read 3a's dark count, as the instrument's do.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np

from nearline.durable import publish, temporary_path
from nearline.errors import ConfigError
from nearline.swath import _orbit as orbit
from nearline.swath._block import CH3A, CH3B, N_PIXELS, TIE_COLUMNS, SwathBlock
from nearline.swath._clouds import Weather
from nearline.swath._fields import sample
from nearline.swath._gac import klm_name, write_klm
from nearline.swath._geolocation import interpolate_tiepoints, lonlat
from nearline.swath._landcover import LandCover
from nearline.swath._maps import is_land, land_bits
from nearline.swath._scene import OZONE_DEPTH, scene, sun_glint
from nearline.swath._truth import Truth, truth_path, write_truth
from nearline.swath.netcdf_granule import write_granule

CHUNK_LINES = 2048
CLOUD_STEP = 2  # the cloud fields are evaluated on every second line and pixel
FORMATS = ("netcdf", "l1b")
PRT_COUNT = 260.0  # about 290 K with NOAA-19's PRT coefficients
ICT_COUNTS = (780.0, 480.0, 500.0)  # blackbody counts of channels 3b, 4, 5
SPACE_COUNTS = (990.0, 992.0, 991.0)
PLATFORM_CODES = {
    "noaa19": "NP", "noaa18": "NN", "noaa17": "NM", "noaa16": "NL", "noaa15": "NK", "metopa": "M2",
}  # fmt: skip
# AVHRR/3s that sent channel 3a by day (NOAA-16 did for periods too: not modelled).
DAYTIME_3A = frozenset({"noaa17", "metopa"})
SWITCH_SUN_ZENITH = 90.0  # 3a while the nadir pixel is sunlit


def calibrator(platform: str):
    """pygac's calibration coefficients for ``platform`` (its PROVISIONAL warning is muted)."""
    from pygac.calibration.noaa import Calibrator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return Calibrator(platform)


def telemetry(
    n_lines: int,
    rng: np.random.Generator,
    switch: np.ndarray | None = None,
    dark_3a: float = 40.0,
) -> dict[str, np.ndarray]:
    """PRT, blackbody and space counts per line, as the KLM format carries them. On the
    lines ``switch`` gives to channel 3a the channel-3 views are 3a's: its dark count, for
    neither a 290 K blackbody nor space shines at 1.6 um."""
    prt = PRT_COUNT + rng.normal(0, 0.3, n_lines)
    prt[np.arange(n_lines) % 5 == 0] = 0.0  # every fifth line marks a complete PRT set
    ict = np.array(ICT_COUNTS) + rng.normal(0, 0.3, (n_lines, 3))
    space = np.array(SPACE_COUNTS) + rng.normal(0, 0.3, (n_lines, 3))
    if switch is not None:
        on_3a = switch == CH3A
        ict[on_3a, 0] = dark_3a + rng.normal(0, 0.3, int(on_3a.sum()))
        space[on_3a, 0] = dark_3a + rng.normal(0, 0.3, int(on_3a.sum()))
    return {"prt_counts": prt, "ict_counts": ict, "space_counts": space}


def channel_3_switch(platform: str, tie_sun_zenith: np.ndarray) -> np.ndarray | None:
    """Per line, what ``platform`` sends in channel 3's slot (``Telemetry.ch3_select``
    codes): 3a while the nadir pixel is sunlit for the :data:`DAYTIME_3A` satellites, None
    (3b on every line) for the others."""
    if platform not in DAYTIME_3A:
        return None
    nadir = tie_sun_zenith[:, TIE_COLUMNS.size // 2]  # tie point 25 is pixel 204, nadir
    return np.where(nadir < SWITCH_SUN_ZENITH, CH3A, CH3B).astype(np.uint8)


def count_tables(platform: str, moment: datetime) -> list[tuple[np.ndarray, np.ndarray]]:
    """For channels 1, 2, 3b, 4, 5 and 3a, (physical value, count) pairs sorted by value,
    from pygac."""
    from pygac.calibration.noaa import calibrate_solar, calibrate_thermal

    with warnings.catch_warnings():  # counts beyond the physical range give NaN, on purpose
        warnings.simplefilter("ignore", RuntimeWarning)
        return _count_tables(calibrate_solar, calibrate_thermal, platform, moment)


def _count_tables(calibrate_solar, calibrate_thermal, platform, moment):
    cal = calibrator(platform)
    counts = np.arange(1024, dtype=np.float64)
    jday = moment.timetuple().tm_yday
    tables = []
    for channel in (0, 1):
        values = calibrate_solar(counts.copy(), channel, moment.year, jday, cal)
        tables.append(values)
    channel_3a = calibrate_solar(counts.copy(), 2, moment.year, jday, cal)
    lines = 60
    ramp = np.tile(counts, (lines, 1))
    prt = np.where(np.arange(lines) % 5 == 0, 0.0, PRT_COUNT)
    for index, channel in enumerate((3, 4, 5)):
        bt = calibrate_thermal(
            ramp.copy(),
            prt.copy(),
            np.full(lines, ICT_COUNTS[index]),
            np.full(lines, SPACE_COUNTS[index]),
            np.arange(lines),
            channel,
            cal,
        )
        tables.append(np.asarray(bt)[lines // 2])
    tables.append(channel_3a)  # last: channels 1, 2, 3b, 4, 5, 3a
    result = []
    for values in tables:
        valid = np.isfinite(values) & (values > 0)
        order = np.argsort(values[valid])
        result.append((values[valid][order], counts[valid][order]))
    return result


def to_counts(values: np.ndarray, table: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """The count whose calibrated value is nearest each value (the table inverted)."""
    physical, counts = table
    return np.rint(np.interp(values, physical, counts)).astype(np.uint16)


def granule_name(platform: str, start: datetime, end: datetime) -> str:
    """A NOAA CLASS-style name: NSS.GHRR.<sat>.D<yyddd>.S<hhmm>.E<hhmm>.nc."""
    code = PLATFORM_CODES.get(platform, platform.upper())
    return f"NSS.GHRR.{code}.D{start:%y%j}.S{start:%H%M}.E{end:%H%M}.nc"


def synthesize_orbit(
    start: datetime,
    n_lines: int,
    out_dir: Path,
    *,
    platform: str,
    seed: int,
    land=None,
    weather: Weather | None = None,
    land_cover: LandCover | None = None,
    file_format: str = "netcdf",
    truth: bool = False,
    snow: bool = False,
) -> Path:
    """Write one orbit granule starting at ``start`` (UTC).

    ``seed`` draws the world: the day's weather and the land cover (passed as ``weather``
    and ``land_cover`` when they are made once for a day of orbits), and the telemetry's
    noise (with the start time, so every orbit's differs). ``file_format`` is "netcdf"
    (nearline's own granules) or "l1b" (NOAA KLM GAC Level 1b
    that pygac decodes; telemetry counts rounded to integers as the format stores them).
    ``truth``: also write the cloud fraction, surface NDVI and land drawn at each pixel
    (:mod:`~nearline.swath._truth`). Sunlight reaching the scene scales with the inverse square
    of the Earth-Sun distance, so the visible counts do too. ``snow``: snow on the land
    (:func:`~nearline.swath._scene.snow_cover`).
    """
    rng = np.random.default_rng((seed, int(start.timestamp())))
    land = land_bits() if land is None else land
    weather = weather or Weather.make(seed, start.date())
    land_cover = land_cover or LandCover.make(land, seed)
    tle = orbit.element_set(platform)
    offsets = np.arange(n_lines) * orbit.GAC_LINE_SECONDS
    tie_lon, tie_lat = orbit.scan_lonlat(
        tle,
        start,
        offsets,
        orbit.gac_scan_angles(TIE_COLUMNS),
        TIE_COLUMNS * orbit.GAC_PIXEL_SECONDS,
    )
    times = np.datetime64(start.replace(tzinfo=None), "ms") + (offsets * 1000).astype(
        "timedelta64[ms]"
    )
    sat_zenith, sun_zenith, relative = orbit.view_angles(tle, times, tie_lon, tie_lat)
    tables = count_tables(platform, start)
    switch = channel_3_switch(platform, sun_zenith)
    counts = np.empty((5, n_lines, N_PIXELS), np.uint16)
    shape = (n_lines, N_PIXELS)
    cloud_fraction, surface_ndvi = np.empty(shape, np.float32), np.empty(shape, np.float32)
    optical_depth, snow_fraction = np.empty(shape, np.float32), np.empty(shape, np.float32)
    land_drawn = np.empty(shape, bool)
    doy = start.timetuple().tm_yday
    ndvi_map = land_cover.ndvi_map(doy)
    sunlight = 1.0 / orbit.sun_distance_squared(doy)
    day_start = datetime(start.year, start.month, start.day)
    base_hours = (start.replace(tzinfo=None) - day_start).total_seconds() / 3600
    block = SwathBlock(
        granule="",
        platform=platform,
        first_line=0,
        times=times,
        counts=counts,
        tie_lat=tie_lat.astype(np.float32),
        tie_lon=tie_lon.astype(np.float32),
        tie_sat_zenith=sat_zenith.astype(np.float32),
        tie_sun_zenith=sun_zenith.astype(np.float32),
        tie_rel_azimuth=relative.astype(np.float32),
        **telemetry(n_lines, rng, switch, calibrator(platform).dark_count[2]),
    )
    for first in range(0, n_lines, CHUNK_LINES):
        part = block.slice(first, min(first + CHUNK_LINES, n_lines))
        lon, lat = lonlat(part)
        sun = interpolate_tiepoints(part.tie_sun_zenith)
        hours = base_hours + (first + np.arange(part.n_lines))[:, None] / 7200.0
        clouds = weather.clouds(lon, lat, hours, step=CLOUD_STEP)
        land_here = is_land(land, lon, lat)
        sat = interpolate_tiepoints(part.tie_sat_zenith)
        glint = sun_glint(sun, sat, interpolate_tiepoints(part.tie_rel_azimuth))
        drawn = scene(lon, lat, land_here, sun, doy, ndvi=sample(ndvi_map, lon, lat),
                      clouds=clouds, glint=glint, snow=snow)  # fmt: skip
        lit = np.cos(np.radians(np.minimum(sun, 90.0)))
        slant = 1 / np.maximum(lit, 0.05) + 1 / np.cos(np.radians(sat))
        ozone = np.exp(-OZONE_DEPTH * slant)  # channel 1 loses light to ozone
        light = lit * sunlight * 100.0
        visible = (drawn.red * light * ozone, drawn.nir * light)
        physical = (*visible, drawn.bt3, drawn.bt4, drawn.bt5)
        for channel, values in enumerate(physical):
            part.counts[channel] = to_counts(values, tables[channel])
        rows = slice(first, first + part.n_lines)
        if switch is not None:  # no ozone band at 1.6 um
            on_3a = (switch[rows] == CH3A)[:, None]
            counts_3a = to_counts(drawn.ch3a * light, tables[5])
            part.counts[2] = np.where(on_3a, counts_3a, part.counts[2])
        cloud_fraction[rows], surface_ndvi[rows] = drawn.cloud_fraction, drawn.surface_ndvi
        optical_depth[rows], snow_fraction[rows] = drawn.optical_depth, drawn.snow_fraction
        land_drawn[rows] = land_here
    end = start + timedelta(seconds=float(offsets[-1]))
    if file_format == "l1b":
        path = out_dir / klm_name(platform, start, end)
        temporary = temporary_path(path)
        write_klm(temporary, block, ch3_select=switch)
    else:
        path = out_dir / granule_name(platform, start, end)
        temporary = temporary_path(path)
        attrs = {"tle_line1": tle[0], "tle_line2": tle[1]}
        write_granule(temporary, block, {**attrs, "synthetic": 1}, ch3_select=switch)
    publish(temporary, path)
    if truth:
        target = truth_path(path)
        target.parent.mkdir(exist_ok=True)
        temporary = temporary_path(target)
        write_truth(
            temporary,
            Truth(cloud_fraction, surface_ndvi, land_drawn, snow_fraction, optical_depth),
        )
        publish(temporary, target)
    return path


def synthesize_day(
    day: str | date,
    orbits: int,
    out_dir: str | Path,
    *,
    satellite: str = "noaa19",
    lines_per_orbit: int = 13000,
    seed: int = 0,
    file_format: str = "netcdf",
    progress: Callable[[int, int], None] | None = None,
    truth: bool = False,
    snow: bool = False,
) -> list[Path]:
    """Write ``orbits`` consecutive orbit granules of ``day`` into ``out_dir``.

    Orbits start one orbital period (about 102 minutes for NOAA-19, 101 for MetOp-A) apart
    from 00:00 UTC; 13,000 lines (108 minutes) is slightly more than an orbit, as real GAC
    files are. Every orbit sees the same world (``seed``): one weather for the day, so the
    clouds one orbit sees have drifted on when the next sees them, and one land cover.
    ``truth``: also write each granule's truth into ``out_dir/truth/``
    (:mod:`~nearline.swath._truth`). ``snow``: snow on the land (not by default).
    """
    if isinstance(day, str):
        try:
            day = date.fromisoformat(day)
        except ValueError:
            raise ConfigError(f"--date: expected YYYY-MM-DD, got {day!r}") from None
    if file_format not in FORMATS:
        raise ConfigError(f"--format: expected one of {', '.join(FORMATS)}, got {file_format!r}")
    if satellite not in PLATFORM_CODES:
        raise ConfigError(
            f"--satellite: expected one of {', '.join(PLATFORM_CODES)}, got {satellite!r}"
        )
    if orbits < 1 or lines_per_orbit < 60:
        raise ConfigError("need at least 1 orbit of at least 60 lines")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    period = timedelta(days=1 / orbit.mean_motion(orbit.element_set(satellite)))
    land = land_bits()
    weather, land_cover = Weather.make(seed, day), LandCover.make(land, seed)
    paths = []
    midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)
    for index in range(orbits):
        start = midnight + index * period
        paths.append(
            synthesize_orbit(
                start,
                lines_per_orbit,
                out,
                platform=satellite,
                seed=seed,
                land=land,
                weather=weather,
                land_cover=land_cover,
                file_format=file_format,
                truth=truth,
                snow=snow,
            )
        )
        if progress is not None:
            progress(index + 1, orbits)
    return paths

"""Synthetic MODIS Level-2 granules: Terra's real orbit, plausible fields and quality flags.

Each granule is five minutes of Terra (203 scans of ten 1 km lines, 1.4771 s a scan, 1354
frames across +-55 degrees), geolocated by pyorbital from a fixed Terra element set, written
in the product's HDF4 layout and named as LAADS names it
(``MOD06_L2.A2012347.0415.061.2026329021500.hdf``). Fields are smooth functions of place and
time computed at the 5 km geolocation and interpolated to 1 km where the product is 1 km;
the clouds are the AVHRR synthesis's (:class:`~nearline.swath._clouds.Weather`: the same
seed and day give the same clouds, seen by Terra in the morning). No bow-tie is modelled:
lines follow one another evenly in time.

Quality flags, as these granules set them (the readers hand them out as stored):

- MOD11_L2 ``QC``: bits 0-1 mandatory QA (0 good, 1 produced but check other QC, 2 not
  produced: cloud, 3 not produced: other, here the ocean), bits 4-5 emissivity and 6-7 LST
  error class (2: 0.01-0.015 and 1-1.5 K; 1: 0.015-0.02 and 1.5-2 K next to clouds).
- MOD06_L2 ``Quality_Assurance_5km`` byte 0 and MOD05_L2's QA byte 0: bit 0 usefulness
  (1 useful), bits 1-3 confidence (3 good, 1 marginal, 0 none).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np

from nearline.durable import publish, temporary_path
from nearline.errors import ConfigError
from nearline.swath import _orbit as orbit
from nearline.swath._clouds import Weather
from nearline.swath._fields import SphereNoise
from nearline.swath._maps import is_land, land_bits
from nearline.swath._modis import interpolate
from nearline.swath._modis_hdf import Inventory, write_granule
from nearline.swath._modis_products import FRAMES, GEO_FIRST, GEO_STEP, PRODUCTS, Product

# Terra (NORAD 25994), an element set of 2016-02-17 in its nominal 705 km orbit.
TERRA_TLE = (
    "1 25994U 99068A   16048.43680378  .00000258  00000-0  67198-4 0  9999",
    "2 25994  98.1982 124.4247 0001352 105.3907 254.7441 14.57126067859938",
)
SCAN_SECONDS = 1.4771  # one mirror side: ten 1 km lines
FRAME_SECONDS = 333.333e-6  # one 1 km frame
MAX_SCAN_ANGLE = 55.0  # degrees, either side of nadir
SCANS = 203  # a five-minute granule
GRANULE_MINUTES = 5
COLLECTION = "061"
NIGHT_SUN_ZENITH = 85.0  # MODIS' day/night split
NIR_SUN_ZENITH = 72.0  # the near-infrared water vapour retrieval is daytime only


def granule_name(short_name: str, start: datetime, produced: datetime) -> str:
    """LAADS' name: ``MOD06_L2.AYYYYDDD.HHMM.061.YYYYDDDHHMMSS.hdf``."""
    return f"{short_name}.A{start:%Y%j.%H%M}.{COLLECTION}.{produced:%Y%j%H%M%S}.hdf"


def scan_angles(frames: np.ndarray) -> np.ndarray:
    """Across-track scan angle (degrees, positive to the left) of 1 km frames."""
    return (1 - (np.asarray(frames, float) + 0.5) / (FRAMES / 2)) * MAX_SCAN_ANGLE


def geolocation(
    start: datetime, scans: int, columns: int, first: int = GEO_FIRST, step: int = GEO_STEP
) -> tuple[np.ndarray, ...]:
    """Longitude, latitude (geolocation rows x ``columns``, every ``step``-th 1 km line and
    frame from ``first``) and each row's seconds after ``start``."""
    lines = first + step * np.arange(scans * 10 // step)  # 1 km lines of the rows
    frames = first + step * np.arange(columns)
    seconds = lines * SCAN_SECONDS / 10
    lon, lat = orbit.scan_lonlat(
        TERRA_TLE, start, seconds, scan_angles(frames), frames * FRAME_SECONDS
    )
    return lon, lat, seconds


def to_1km(values: np.ndarray, lines: int) -> np.ndarray:
    """A 5 km field interpolated to every 1 km line and frame."""
    rows = GEO_FIRST + GEO_STEP * np.arange(values.shape[0])
    columns = GEO_FIRST + GEO_STEP * np.arange(values.shape[1])
    return interpolate(values, rows, columns, lines, FRAMES).astype(np.float32)


class _Scene:
    """The truth at the 5 km geolocation of one granule."""

    def __init__(self, lon, lat, hours, times, seed, land, day):
        self.land = is_land(land, lon, lat)
        self.lat_ = lat
        self.sensor_zenith, self.sun_zenith, _ = orbit.view_angles(TERRA_TLE, times, lon, lat)
        clouds = Weather.make(seed, day).clouds(lon, lat, hours)  # hours after day's 00:00
        self.cloud_fraction = clouds.fraction
        self.margin = clouds.margin  # > 0 inside a cloud's edge, < 0 outside (clear below -0.125)
        self.texture = 0.6 * SphereNoise.make((seed, 7919), largest_km=2500.0, octaves=4)(
            lon, lat, hours
        )
        coslat = np.cos(np.radians(lat))
        local = (hours + lon / 15.0) % 24.0
        self.surface = 245.0 + 55.0 * coslat**2 + 3.0 * self.texture  # K
        self.lst = self.surface + 9.0 * coslat * np.cos(2 * np.pi * (local - 13.5) / 24.0)
        self.water = np.clip(0.3 + 4.5 * coslat**3 * (1 + 0.25 * self.texture), 0.05, 8.0)


CLEAR_BELOW = 0.01  # cloud fraction (interpolated to 1 km) of a clear pixel
NEAR_CLOUD = -0.6  # margin beyond which a clear pixel is no longer next to a cloud


def _mod11(scene: _Scene, lines: int) -> dict[str, np.ndarray]:
    lst = to_1km(scene.lst, lines)
    land = to_1km(scene.land.astype(np.float32), lines) > 0.5
    clear = land & (to_1km(scene.cloud_fraction, lines) < CLEAR_BELOW)
    near_cloud = clear & (to_1km(scene.margin, lines) > NEAR_CLOUD)
    qc = np.where(land, 2, 3).astype(np.uint8)  # not produced: cloud / other (ocean)
    qc[clear] = (2 << 4) | (2 << 6)
    qc[near_cloud] = 1 | (1 << 4) | (1 << 6)
    stored = np.where(clear, np.rint(lst / 0.02), 0).astype(np.uint16)
    return {"LST": stored, "QC": qc}


def _mod06(scene: _Scene, product: Product, lines: int) -> dict[str, np.ndarray]:
    fraction = np.rint(scene.cloud_fraction * 100)
    cloudy = fraction > 0
    pressure = np.rint(np.clip(575.0 - 375.0 * scene.texture, 100.0, 1000.0) / 5.0) * 5.0  # hPa
    # the temperature at that pressure in a standard atmosphere over the surface, 200 K above
    temperature = np.maximum(scene.surface * (pressure / 1013.25) ** 0.190263, 200.0)
    ctp = product.field("Cloud_Top_Pressure")
    ctt = product.field("Cloud_Top_Temperature")
    qa = np.zeros((*fraction.shape, 10), np.int8)
    confidence = np.where(fraction >= 50, 3, 1)
    qa[..., 0] = np.where(cloudy, 1 | (confidence << 1), 0)
    return {
        "Cloud_Fraction": fraction.astype(np.int8),
        "Cloud_Top_Pressure": np.where(
            cloudy, np.rint(pressure / ctp.scale_factor), ctp.fill
        ).astype(np.int16),
        "Cloud_Top_Temperature": np.where(
            cloudy, np.rint(temperature / ctt.scale_factor + ctt.add_offset), ctt.fill
        ).astype(np.int16),
        "Quality_Assurance_5km": qa,
    }


def _mod05(scene: _Scene, product: Product, lines: int) -> dict[str, np.ndarray]:
    scale = product.field("Water_Vapor_Infrared").scale_factor
    fill = product.field("Water_Vapor_Infrared").fill
    clear = scene.cloud_fraction < CLEAR_BELOW
    infrared = np.where(clear, np.rint(scene.water / scale), fill).astype(np.int16)
    qa_ir = np.zeros((*clear.shape, 5), np.int8)
    qa_ir[..., 0] = np.where(clear, 1 | (3 << 1), 0)
    water = to_1km(scene.water, lines)
    day = to_1km(scene.sun_zenith, lines) < NIR_SUN_ZENITH
    good = (
        day
        & (to_1km(scene.land.astype(np.float32), lines) > 0.5)
        & (to_1km(scene.cloud_fraction, lines) < CLEAR_BELOW)
    )
    near = np.where(day, np.rint(water / scale), fill).astype(np.int16)
    qa_nir = np.where(day, 1 | (np.where(good, 3, 1) << 1), 0).astype(np.int8)[..., None]
    return {
        "Water_Vapor_Near_Infrared": near,
        "Water_Vapor_Infrared": infrared,
        "Quality_Assurance_Near_Infrared": qa_nir,
        "Quality_Assurance_Infrared": qa_ir,
    }


def _mod04(scene: _Scene, product: Product, lines: int) -> dict[str, np.ndarray]:
    """Aerosol optical depth over clear sky by day (smooth, 0.05-0.6, largest in the
    tropics), the same in both fields, with quality 3 (very good) over the sea and 1
    (marginal) over land; fill elsewhere."""
    aod = product.field("AOD_550_Dark_Target_Deep_Blue_Combined")
    retrieved = (scene.cloud_fraction < CLEAR_BELOW) & (scene.sun_zenith < NIR_SUN_ZENITH)
    depth = np.clip(0.05 + 0.35 * np.cos(np.radians(scene.lat_)) ** 2 * (1 + scene.texture),
                    0.05, 0.6)  # fmt: skip
    stored = np.where(retrieved, np.rint(depth / aod.scale_factor), aod.fill).astype(np.int16)
    flag = np.where(retrieved, np.where(scene.land, 1, 3), -9999).astype(np.int16)
    return {
        "AOD_550_Dark_Target_Deep_Blue_Combined": stored,
        "Optical_Depth_Land_And_Ocean": stored.copy(),
        "Land_Ocean_Quality_Flag": flag,
    }


def synthesize_granule(
    short_name: str,
    start: datetime,
    out_dir: Path,
    *,
    scans: int = SCANS,
    seed: int = 0,
    produced: datetime | None = None,
    land: np.ndarray | None = None,
) -> Path:
    """Write one granule of ``short_name`` starting at ``start`` (UTC); its path."""
    product = PRODUCTS[short_name]
    start = start.astimezone(UTC) if start.tzinfo else start.replace(tzinfo=UTC)
    produced = produced or datetime.now(UTC)
    lon, lat, seconds = geolocation(
        start, scans, product.geo_columns, product.geo_first, product.geo_step
    )
    midnight = start.replace(hour=0, minute=0, second=0, microsecond=0)
    hours = np.broadcast_to(
        ((start - midnight).total_seconds() + seconds)[:, None] / 3600.0, lon.shape
    )
    times = np.datetime64(start.replace(tzinfo=None), "ms") + np.rint(seconds * 1000).astype(
        "timedelta64[ms]"
    )
    scene = _Scene(lon, lat, hours, times, seed, land_bits() if land is None else land,
                   midnight.date())  # fmt: skip
    lines = scans * 10
    if short_name == "MOD11_L2":
        stored = _mod11(scene, lines)
    else:
        make = {"MOD06_L2": _mod06, "MOD05_L2": _mod05, "MOD04_L2": _mod04}[short_name]
        stored = make(scene, product, lines)
        for name, angle in (("Sensor_Zenith", scene.sensor_zenith),
                            ("Solar_Zenith", scene.sun_zenith)):  # fmt: skip
            scale = product.field(name).scale_factor
            stored[name] = np.rint(np.clip(angle, 0, 180) / scale).astype(np.int16)
    night = scene.sun_zenith >= NIGHT_SUN_ZENITH
    path = out_dir / granule_name(short_name, start, produced)
    inventory = Inventory(
        short_name=short_name,
        platform="Terra",
        local_granule_id=path.name,
        start=start,
        end=start + timedelta(seconds=scans * SCAN_SECONDS),
        produced=produced,
        day_night="Night" if night.all() else "Day" if not night.any() else "Both",
    )
    temporary = temporary_path(path)
    write_granule(temporary, product, inventory, lon.astype(np.float32),
                  lat.astype(np.float32), stored)  # fmt: skip
    publish(temporary, path)
    return path


def synthesize_modis_day(
    product: str,
    day: str | date,
    granules: int,
    out_dir: str | Path,
    *,
    first: int = 0,
    scans: int = SCANS,
    seed: int = 0,
    produced: datetime | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Path]:
    """Write ``granules`` consecutive five-minute granules of ``product`` on ``day``, the
    first being the ``first``-th of the day (0 starts at 00:00 UTC); their paths."""
    if product not in PRODUCTS:
        raise ConfigError(f"--product: expected one of {', '.join(PRODUCTS)}, got {product!r}")
    if isinstance(day, str):
        try:
            day = date.fromisoformat(day)
        except ValueError:
            raise ConfigError(f"--date: expected YYYY-MM-DD, got {day!r}") from None
    per_day = 24 * 60 // GRANULE_MINUTES
    if granules < 1 or first < 0 or first + granules > per_day:
        raise ConfigError(
            f"--granules: expected 1..{per_day - first} five-minute granules from granule "
            f"{first} of the day, got {granules}"
        )
    if scans < 2:
        raise ConfigError(f"scans: expected at least 2 ten-line scans, got {scans}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    produced = produced or datetime.now(UTC).replace(microsecond=0)
    land = land_bits()
    midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)
    paths = []
    for index in range(granules):
        start = midnight + timedelta(minutes=GRANULE_MINUTES * (first + index))
        paths.append(synthesize_granule(product, start, out, scans=scans, seed=seed,
                                        produced=produced, land=land))  # fmt: skip
        if progress is not None:
            progress(index + 1, granules)
    return paths

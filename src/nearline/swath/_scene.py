"""A plausible Earth for synthetic granules: land and sea, vegetation by latitude and season,
surface temperatures, and moving clouds, as an AVHRR would see them.

Values are physical (reflectance factors, brightness temperatures); :mod:`synth` turns them
into raw counts with pygac's calibration run backwards. The scene is smooth and
deterministic (a seed picks the cloud field), so tests can rely on it:

- land NDVI: 0.75 in the wet tropics, 0.1-0.2 in the subtropical desert belts, mid-latitude
  vegetation following the season (peak in local summer), 0.05-0.15 in polar winter;
- sea: reflectance 4 % (red) and 2.5 % (near infrared), so NDVI is about -0.23, plus sun
  glint where the geometry is given (:func:`sun_glint`: grey, up to about 20 %);
- clouds cover about a third of the globe: bright (55 %) and cold (215-255 K) with a
  thin-cirrus fringe where channels 4 and 5 differ by several kelvin;
- channel 3a (1.6 um), the reflectance AVHRR/3 sends instead of 3b by day on some
  satellites: clear land 0.40 - 0.25 NDVI (dense vegetation 0.2, bare soil and desert
  0.35-0.4), sea 0.02 plus the glint; clouds by phase, from the top temperature: water
  (above 263 K) 0.8 times the visible reflectance, ice (below 233 K) 0.35 times it, since
  ice absorbs at 1.6 um (so 0.16-0.25 for this scene's cold tops);
- snow, if asked for (:func:`snow_cover`): land poleward of a snow line that follows the
  season, and the Greenland and Antarctic ice sheets, with a 3-degree margin of partial
  cover; snow is bright in channels 1 and 2 (0.80, 0.74), dark at 1.6 um (0.08) and at
  3.7 um, and at most 272 K.

Every pixel is either overcast or clear: thick cloud and the cirrus fringe cover the whole
pixel (cloud fraction 1), nothing covers part of one. :attr:`Scene.cloud_fraction` and
:attr:`Scene.surface_ndvi` are the truth a cloud mask and a composite are scored against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Ozone above the scene: 300 Dobson units (the climatological global mean) absorbing
# channel 1 in the Chappuis band, 0.09 per atm-cm (the chain corrects with the same numbers).
OZONE_DEPTH = 0.300 * 0.09
WIND_SPEED = 7.0  # m/s, a global mean over the oceans, for the sea's roughness
WATER_REFLECTANCE_NORMAL = ((1.34 - 1.0) / (1.34 + 1.0)) ** 2  # Fresnel, normal incidence


@dataclass
class Scene:
    """Per-pixel truth for a block of lines; all (n, 409) float32."""

    red: np.ndarray  # channel 1 reflectance factor (0-1)
    nir: np.ndarray  # channel 2 reflectance factor (0-1)
    bt3: np.ndarray  # K
    bt4: np.ndarray
    bt5: np.ndarray
    cloudy: np.ndarray  # bool: thick cloud
    cloud_fraction: np.ndarray  # 0-1: the part of the pixel under any cloud (thick or cirrus)
    surface_ndvi: np.ndarray  # NDVI of the surface alone, before clouds and atmosphere
    ch3a: np.ndarray  # channel 3a (1.6 um) reflectance factor
    snow_fraction: np.ndarray  # 0-1: the part of the surface under snow


# Reflectance factors of snow (fine-grained, clean): bright in the visible and near
# infrared, dark at 1.6 um where ice absorbs (Warren 1982, Rev. Geophys. 20:67; the contrast
# behind the normalised difference snow index, Hall et al. 1995).
SNOW_RED, SNOW_NIR, SNOW_CH3A, SNOW_37 = 0.80, 0.74, 0.08, 0.02
SNOW_WARMEST = 272.0  # K
ICE_SHEETS_GREENLAND = (60.0, 84.0, -75.0, -10.0)  # lat, lat, lon, lon


def snow_cover(lon: np.ndarray, lat: np.ndarray, land: np.ndarray, day_of_year: int) -> np.ndarray:
    """Fraction of the land under snow: poleward of a snow line at 45 degrees in local
    winter and 70 in local summer (plus or minus 3 with longitude), reaching full cover 3
    degrees beyond it; the Antarctic and Greenland ice sheets always."""
    season = np.cos(2 * np.pi * (day_of_year - 196) / 365.25)  # +1 in northern summer
    local = np.where(lat >= 0, season, -season)
    line = 57.5 + 12.5 * local + 3.0 * np.sin(np.radians(lon) * 3.0)
    cover = np.clip((np.abs(lat) - line) / 3.0, 0.0, 1.0)
    south, north, west, east = ICE_SHEETS_GREENLAND
    sheets = (lat < -60.0) | ((lat > south) & (lat < north) & (lon > west) & (lon < east))
    return np.where(land, np.where(sheets, 1.0, cover), 0.0).astype(np.float32)


def _unit_vectors(lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, ...]:
    lam, phi = np.radians(lon), np.radians(lat)
    return np.cos(phi) * np.cos(lam), np.cos(phi) * np.sin(lam), np.sin(phi)


def cloud_field(lon: np.ndarray, lat: np.ndarray, hours: np.ndarray, seed: int) -> np.ndarray:
    """A smooth field in about [-1, 1] on the sphere that drifts with time (hours)."""
    rng = np.random.default_rng(seed)
    x, y, z = _unit_vectors(lon, lat)
    field = np.zeros(np.shape(lon), np.float32)
    for scale in (3.0, 5.0, 9.0, 17.0):
        for _ in range(3):
            direction = rng.normal(size=3)
            direction /= np.linalg.norm(direction)
            phase, speed = rng.uniform(0, 2 * np.pi), rng.uniform(-0.05, 0.05)
            field += np.sin(
                scale * (direction[0] * x + direction[1] * y + direction[2] * z)
                + phase
                + speed * hours
            ).astype(np.float32) / np.sqrt(scale)
    return field / 1.2


def sun_glint(
    sun_zenith: np.ndarray, sat_zenith: np.ndarray, rel_azimuth: np.ndarray
) -> np.ndarray:
    """Reflectance factor of the sun's glint off a wind-roughened sea (Cox and Munk 1954).

    Facets tilted by beta reflect the sun into the view; their slopes are Gaussian with
    variance 0.003 + 0.00512 W (isotropic, W = :data:`WIND_SPEED`); Fresnel reflectance by
    Schlick's approximation. Spectrally flat, so it adds the same to channels 1 and 2.
    ``rel_azimuth`` as :func:`~nearline.swath._orbit.view_angles` (180 = mirror direction).
    """
    s, v, r = (np.radians(np.asarray(a, np.float64)) for a in (sun_zenith, sat_zenith, rel_azimuth))
    mu_s, mu_v = np.maximum(np.cos(s), 1e-3), np.maximum(np.cos(v), 1e-3)
    # the facet normal halves the angle 2 omega between the ways to the sun and the satellite
    cos_2omega = np.clip(mu_s * mu_v + np.sin(s) * np.sin(v) * np.cos(r), -1.0, 1.0)
    cos_omega = np.sqrt((1.0 + cos_2omega) / 2.0)
    cos_beta = np.clip((mu_s + mu_v) / (2.0 * np.maximum(cos_omega, 1e-3)), 1e-3, 1.0)
    tan2_beta = 1.0 / cos_beta**2 - 1.0
    variance = 0.003 + 0.00512 * WIND_SPEED
    slopes = np.exp(-tan2_beta / variance) / (np.pi * variance)
    fresnel = WATER_REFLECTANCE_NORMAL + (1 - WATER_REFLECTANCE_NORMAL) * (1 - cos_omega) ** 5
    glint = np.pi * fresnel * slopes / (4.0 * mu_s * mu_v * cos_beta**4)
    return np.where(np.cos(s) > 0, glint, 0.0).astype(np.float32)


def vegetation(lon: np.ndarray, lat: np.ndarray, day_of_year: int) -> np.ndarray:
    """NDVI of clear land."""
    season = np.cos(2 * np.pi * (day_of_year - 196) / 365.25)  # +1 in northern summer
    local = np.where(lat >= 0, season, -season)
    tropics = 0.62 * np.exp(-((lat / 13.0) ** 2))
    desert = 0.55 * np.exp(-(((np.abs(lat) - 23.0) / 6.5) ** 2))
    temperate = (0.28 + 0.22 * local) * np.exp(-(((np.abs(lat) - 48.0) / 11.0) ** 2))
    texture = 0.08 * np.sin(np.radians(lon) * 7.0) * np.cos(np.radians(lat) * 5.0 + 1.0)
    return np.clip(0.13 + tropics + temperate - desert * 0.25 + texture, 0.04, 0.86)


def scene(
    lon: np.ndarray,
    lat: np.ndarray,
    land: np.ndarray,
    sun_zenith: np.ndarray,
    hours: np.ndarray,
    day_of_year: int,
    seed: int,
    clouds: np.ndarray | None = None,
    glint: np.ndarray | None = None,
    snow: bool = False,
) -> Scene:
    """The truth at every pixel of a block (``hours`` since the day's start, per pixel).

    ``glint``: :func:`sun_glint` at each pixel, added to the sea's reflectance (none if not
    given). ``snow``: cover land with :func:`snow_cover` (none if not).

    ``clouds``, if given, is :func:`cloud_field` already at each pixel: the field is smooth
    (features of hundreds of km), so the synthesiser evaluates it at the tie points only and
    interpolates, which is 20 times cheaper than twelve sines at every pixel.
    """
    ndvi = vegetation(lon, lat, day_of_year)
    red_land = 0.11 - 0.085 * ndvi
    nir_land = red_land * (1 + ndvi) / (1 - ndvi)
    red = np.where(land, red_land, 0.04).astype(np.float32)
    nir = np.where(land, nir_land, 0.025).astype(np.float32)
    ch3a = np.where(land, np.clip(0.40 - 0.25 * ndvi, 0.15, 0.45), 0.02).astype(np.float32)
    red37 = red  # the surface's reflectance at 3.7 um, as far as channel 3b's signal goes
    day = sun_zenith < 85
    abslat = np.abs(lat)
    sst = np.maximum(302.0 - 0.42 * abslat, 271.5)
    land_t = 303.0 - 0.55 * abslat + np.where(day, 7.0, -6.0)
    snow_fraction = np.zeros(np.shape(lat), np.float32)
    if snow:
        snow_fraction = snow_cover(lon, lat, land, day_of_year)
        bare = 1.0 - snow_fraction
        red = (bare * red + snow_fraction * SNOW_RED).astype(np.float32)
        nir = (bare * nir + snow_fraction * SNOW_NIR).astype(np.float32)
        ch3a = (bare * ch3a + snow_fraction * SNOW_CH3A).astype(np.float32)
        red37 = bare * red37 + snow_fraction * SNOW_37
        land_t = bare * land_t + snow_fraction * np.minimum(land_t - 5.0, SNOW_WARMEST)
    surface_ndvi = (nir - red) / (nir + red)
    if glint is not None:
        red = np.where(land, red, red + glint)
        nir = np.where(land, nir, nir + glint)
        ch3a = np.where(land, ch3a, ch3a + glint)
    bt4 = np.where(land, land_t, sst).astype(np.float32)
    bt5 = bt4 - (0.4 + 2.2 * np.exp(-((lat / 25.0) ** 2)))
    bt3 = np.where(day, bt4 + 4.0 + 30.0 * np.where(land, red37, red), bt4 - 1.2)

    field = cloud_field(lon, lat, hours, seed) if clouds is None else clouds
    cloudy = field > 0.28
    fringe = (field > 0.18) & ~cloudy  # thin cirrus around the thick clouds
    top = 250.0 - 35.0 * np.clip(field, 0, 1)
    cloud_reflectance = 0.45 + 0.25 * np.clip(field, 0, 1)
    ice = np.clip((263.0 - top) / 30.0, 0.0, 1.0)  # the part of the cloud top frozen
    red = np.where(cloudy, cloud_reflectance, red)
    nir = np.where(cloudy, cloud_reflectance * 0.98, nir)
    ch3a = np.where(cloudy, cloud_reflectance * (0.8 - 0.45 * ice), ch3a)
    bt4 = np.where(cloudy, top, bt4)
    bt5 = np.where(cloudy, top - 0.6, np.where(fringe, bt5 - 4.5, bt5))
    bt3 = np.where(cloudy, np.where(day, top + 28.0, top - 2.5), bt3)
    return Scene(
        red.astype(np.float32),
        nir.astype(np.float32),
        bt3.astype(np.float32),
        bt4.astype(np.float32),
        bt5.astype(np.float32),
        cloudy,
        (cloudy | fringe).astype(np.float32),
        surface_ndvi.astype(np.float32),
        ch3a.astype(np.float32),
        snow_fraction,
    )

"""A plausible Earth for synthetic granules, as an AVHRR would see it: the surface (land
from :mod:`._landcover`, sea with its glint, snow), ozone, and the clouds of :mod:`._clouds`.

Values are physical (reflectance factors, brightness temperatures); :mod:`synth` turns them
into raw counts with pygac's calibration run backwards. The scene is deterministic (a seed
picks the day's weather and land cover), so tests can rely on it:

- land: NDVI from the land cover (0.03-0.86: bare ice and desert to rain forest, by season);
  red reflectance 0.11 - 0.085 NDVI and the near infrared that gives the NDVI;
- sea: reflectance 4 % (red) and 2.5 % (near infrared), so NDVI is about -0.23, plus sun
  glint where the geometry is given (:func:`sun_glint`: grey, up to about 20 %);
- clouds cover a part of each pixel (:attr:`Scene.cloud_fraction`) with a cloud of some
  optical depth: the pixel's radiances are the clear surface's and the cloudy part's mixed
  by that fraction. A cloud reflects ``tau / (tau + 13.3)`` of the light (two-stream, no
  absorption, asymmetry 0.85: 0.75 at the cores' optical depth 40, 0.07 for cirrus of 1)
  and lets the rest through to the surface and back; it emits as a grey body of emissivity
  ``1 - exp(-tau / 2)`` at 11 um and ``1 - exp(-0.575 tau)`` at 12 um (ice and water absorb
  more there), so thin cirrus shows the split-window difference of several kelvin;
- channel 3a (1.6 um), the reflectance AVHRR/3 sends instead of 3b by day on some
  satellites: clear land 0.40 - 0.25 NDVI (dense vegetation 0.2, bare soil and desert
  0.35-0.4), sea 0.02 plus the glint; clouds by phase, from the top temperature: water
  (above 263 K) 0.8 times their visible reflectance, ice (below 233 K) 0.35 times it, since
  ice absorbs at 1.6 um;
- snow, if asked for (:func:`snow_cover`): land poleward of a snow line that follows the
  season, and the Greenland and Antarctic ice sheets, with a 3-degree margin of partial
  cover; snow is bright in channels 1 and 2 (0.80, 0.74), dark at 1.6 um (0.08) and at
  3.7 um, and at most 272 K.

:attr:`Scene.cloud_fraction`, :attr:`Scene.optical_depth` and :attr:`Scene.surface_ndvi`
are the truth a cloud mask and a composite are scored against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nearline.swath._clouds import CloudCover
from nearline.swath._landcover import ice_sheets

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
    cloud_fraction: np.ndarray  # 0-1: the part of the pixel under cloud
    optical_depth: np.ndarray  # visible optical depth of that cloud (0: none)
    surface_ndvi: np.ndarray  # NDVI of the surface alone, before clouds and atmosphere
    ch3a: np.ndarray  # channel 3a (1.6 um) reflectance factor
    snow_fraction: np.ndarray  # 0-1: the part of the surface under snow


# Reflectance factors of snow (fine-grained, clean): bright in the visible and near
# infrared, dark at 1.6 um where ice absorbs (Warren 1982, Rev. Geophys. 20:67; the contrast
# behind the normalised difference snow index, Hall et al. 1995).
SNOW_RED, SNOW_NIR, SNOW_CH3A, SNOW_37 = 0.80, 0.74, 0.08, 0.02
SNOW_WARMEST = 272.0  # K
CLOUD_SCATTERING = 13.3  # 2 / (1 - g), g = 0.85: a cloud of optical depth tau reflects
# tau / (tau + CLOUD_SCATTERING) of the light


def snow_cover(lon: np.ndarray, lat: np.ndarray, land: np.ndarray, day_of_year: int) -> np.ndarray:
    """Fraction of the land under snow: poleward of a snow line at 45 degrees in local
    winter and 70 in local summer (plus or minus 3 with longitude), reaching full cover 3
    degrees beyond it; the Antarctic and Greenland ice sheets always."""
    season = np.cos(2 * np.pi * (day_of_year - 196) / 365.25)  # +1 in northern summer
    local = np.where(lat >= 0, season, -season)
    line = 57.5 + 12.5 * local + 3.0 * np.sin(np.radians(lon) * 3.0)
    cover = np.clip((np.abs(lat) - line) / 3.0, 0.0, 1.0)
    return np.where(land, np.where(ice_sheets(lon, lat), 1.0, cover), 0.0).astype(np.float32)


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


def scene(
    lon: np.ndarray,
    lat: np.ndarray,
    land: np.ndarray,
    sun_zenith: np.ndarray,
    day_of_year: int,
    *,
    ndvi: np.ndarray,
    clouds: CloudCover,
    glint: np.ndarray | None = None,
    snow: bool = False,
) -> Scene:
    """The truth at every pixel of a block: ``ndvi`` of the land there
    (:meth:`~._landcover.LandCover.ndvi`) and the ``clouds`` over it
    (:meth:`~._clouds.Weather.clouds`). ``glint``: :func:`sun_glint` at each pixel, added to
    the sea's reflectance (none if not given). ``snow``: cover land with :func:`snow_cover`
    (none if not)."""
    red_land = 0.11 - 0.085 * ndvi
    nir_land = red_land * (1 + ndvi) / (1 - ndvi)
    red = np.where(land, red_land, 0.04).astype(np.float32)
    nir = np.where(land, nir_land, 0.025).astype(np.float32)
    ch3a = np.where(land, np.clip(0.40 - 0.25 * ndvi, 0.15, 0.45), 0.02).astype(np.float32)
    red37 = red  # the surface's reflectance at 3.7 um, as far as channel 3b's signal goes
    day = sun_zenith < 85
    abslat = np.abs(lat)
    sst = np.maximum(302.0 - 0.42 * abslat, 271.5)
    # land warms by day, 13 K above the night, over the last 10 degrees of the sun's rise
    sunlit = np.clip((90.0 - sun_zenith) / 10.0, 0.0, 1.0)
    land_t = 303.0 - 0.55 * abslat - 6.0 + 13.0 * sunlit
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
    return Scene(
        **_clouded(clouds, day, red, nir, bt3, bt4, bt5, ch3a),
        cloud_fraction=clouds.fraction,
        optical_depth=clouds.optical_depth,
        surface_ndvi=surface_ndvi.astype(np.float32),
        snow_fraction=snow_fraction,
    )


def _clouded(clouds: CloudCover, day, red, nir, bt3, bt4, bt5, ch3a) -> dict[str, np.ndarray]:
    """The clear channels with the clouds over them: the cloudy part of each pixel sees the
    surface through the cloud, and the pixel mixes its clear and cloudy parts."""
    tau, top, part = clouds.optical_depth, clouds.top, clouds.fraction
    reflect = tau / (tau + CLOUD_SCATTERING)
    through = 1.0 - reflect
    ice = np.clip((263.0 - top) / 30.0, 0.0, 1.0)  # the part of the cloud top frozen
    emit4 = 1.0 - np.exp(-0.5 * tau)
    emit5 = 1.0 - np.exp(-0.575 * tau)
    cloud_bt3 = np.where(day, top + 28.0, top - 2.5)  # sunlight reflected at 3.7 um by day

    def seen(clear, cloudy):
        return ((1.0 - part) * clear + part * cloudy).astype(np.float32)

    def lit(surface, cloud):  # reflected by the cloud, and through it off the surface
        return cloud + through**2 * surface / (1.0 - reflect * surface)

    return {
        "red": seen(red, lit(red, reflect)),
        "nir": seen(nir, lit(nir, 0.98 * reflect)),
        "bt3": seen(bt3, emit4 * cloud_bt3 + (1 - emit4) * bt3),
        "bt4": seen(bt4, emit4 * top + (1 - emit4) * bt4),
        "bt5": seen(bt5, emit5 * (top - 0.6) + (1 - emit5) * bt5),
        "ch3a": seen(ch3a, lit(ch3a, reflect * (0.8 - 0.45 * ice))),
    }

"""CLAVR-style cloud tests with scene-dependent thresholds, one bit each in a uint8 flag.

A pixel is cloudy if any test fires. Reflectances are percent, normalised by the cosine of
the solar zenith angle and corrected to the mean Earth-Sun distance; temperatures in kelvin.
Day means solar zenith below 85 degrees; reflectance tests run by day only.

The thresholds depend on the scene, as CLAVR-x's do (Heidinger et al.; CLAVR-1, Stowe et
al. 1999, for the tests themselves):

- **surface**: land or sea (the GLOBE mask), and by day the *glint zone* over sea: glint
  angle below 40 degrees (CLAVR-x's), unless the pixel is colder than freezing or 3 K colder
  than its clear neighbours, which sun glint cannot make it;
- **geometry**: the sea's reflectance threshold rises with the air mass
  ``1/cos(sun zenith) + 1/cos(view zenith)`` (more Rayleigh path), the split-window one with
  the view's secant (more water vapour on the path);
- **the day's own clear neighbours**: the surface temperature expected at a pixel is the
  warmest channel-4 temperature of the same surface (land or sea, sunlit or not) among the
  pixels of its tile of :data:`TILE_LINES` lines x :data:`TILE_COLUMNS` columns and the
  tiles left and right of it (about 130 x 400 km at nadir): clouds are colder than the
  surface, so the warm end of a neighbourhood is its clear part. Coastal pixels (the other
  surface within their 3x3) neither set nor get this expectation: they may hold both.

===  ==============  =========================================================================
bit  test            fires when
===  ==============  =========================================================================
0    REFLECTANCE     RGCT, day: ch1 > 35 % over land; over sea 18 % + 4 % per unit of air
                     mass beyond 3; 40 % in the glint zone
1    RATIO           day, sea outside the glint zone: 0.9 < ch2/ch1 < 1.1 (clouds are grey)
2    UNIFORMITY      TUT: ch4 max - min over the same-surface pixels of the 2x2 window
                     > 0.5 K over sea, > 2.5 K over land (cloud edges are ragged)
3    CH3_CH4         day: ch3b - ch4 > 15 K over land, 10 K over sea, 25 K in the glint zone
                     (clouds reflect sunlight at 3.7 um); night: ch3b - ch4 < -2 K (low
                     cloud emits less at 3.7 um than at 11 um)
4    CH4_CH5         T45 thin cirrus: ch4 - ch5 > (1 + 2.5 clip((ch4 - 260) / 40, 0, 1))
                     (1 + 0.3 (sec(view zenith) - 1)) K
5    THERMAL_GROSS   ch4 < 270 K over sea (no open sea is colder), < 235 K over land
6    CONTRAST        TGCT against the expected surface: ch4 more than 4 K (sea) or 8 K
                     (land) below the warmest same-surface neighbour
7    NEAR_IR         day, channel-3a lines: ch3a > 10 % over sea outside the glint zone,
                     > 50 % over land (:func:`near_infrared_tests`)
===  ==============  =========================================================================

On the lines where the satellite sends channel 3a (1.6 um) instead of 3b, ch3b is NaN, so
CH3_CH4 cannot fire there, by day or night; by day :func:`near_infrared_tests` adds the
1.6 um test and tells snow from cloud (snow is not called cloud by REFLECTANCE).

Windows are cut on granule line and column numbers (the 2x2 windows on even ones, the tiles
on multiples of :data:`TILE_LINES` and :data:`TILE_COLUMNS`), so a pixel's flag does not
depend on how the granule was cut into blocks as long as blocks start on multiples of
:data:`TILE_LINES` (the composite's line runs do); a block starting elsewhere sees part
of its first tile.

Sources: CLAVR-1 (Stowe, Davis and McClain 1999, J. Atmos. Oceanic Technol. 16, 656-681) for
the tests and the 2x2 window, ratio range and uniformity limits; CLAVR-x (Heidinger's
PATMOS-x cloud mask) for the 40-degree glint zone and its cold-pixel exception, and for
thresholds that follow the expected clear-sky values; Saunders and Kriebel (1988) for the
split-window threshold rising with temperature and view angle. The numbers are nearline's
own choices within those papers' ranges, not their tables.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numba
import numpy as np

REFLECTANCE, RATIO, UNIFORMITY, CH3_CH4, CH4_CH5, THERMAL_GROSS, CONTRAST = (
    1 << b for b in range(7)
)
NEAR_IR = 1 << 7  # channel 3a: see near_infrared_tests
TESTS = {
    "reflectance": REFLECTANCE,
    "ratio": RATIO,
    "uniformity": UNIFORMITY,
    "ch3_ch4": CH3_CH4,
    "ch4_ch5": CH4_CH5,
    "thermal_gross": THERMAL_GROSS,
    "contrast": CONTRAST,
    "near_ir": NEAR_IR,
}
DAY_SUN_ZENITH = 85.0
GLINT_ZONE = 40.0  # degrees of glint angle (CLAVR-x)
FREEZING = 273.15  # K: sun glint never comes off water colder than this
TILE_LINES = 32  # the clear-neighbour tiles; line runs start on multiples of this
TILE_COLUMNS = 32


DEG = math.pi / 180.0
COS_GLINT_ZONE = math.cos(GLINT_ZONE * DEG)
# |cosine - cos(40 deg)| beyond which the glint zone is decided without the arc cosine: its
# error is 1e-16, and 1e-9 of cosine is 1e-7 degrees of glint angle
GLINT_GUARD = 1e-9


@numba.njit(cache=True, nogil=True, inline="always")
def in_glint_zone(cos_sun, cos_view, sun_zenith, sat_zenith, rel_azimuth):
    """Whether the glint angle, between the view and the sun's mirror direction, is below
    :data:`GLINT_ZONE` (``rel_azimuth`` 180 = the satellite opposite the sun, as
    :func:`nearline.swath._orbit.view_angles` gives it). ``cos_sun``, ``cos_view``: the
    cosines of the two zenith angles, which the caller has already."""
    cosine = cos_sun * cos_view - math.sin(sun_zenith * DEG) * math.sin(
        sat_zenith * DEG
    ) * math.cos(rel_azimuth * DEG)
    cosine = min(max(cosine, -1.0), 1.0)
    if cosine > COS_GLINT_ZONE + GLINT_GUARD:
        return True
    if cosine < COS_GLINT_ZONE - GLINT_GUARD:
        return False
    return math.acos(cosine) / DEG < GLINT_ZONE


@numba.njit(cache=True, nogil=True)
def pixel_tests(
    refl1: float, refl2: float, bt3: float, bt4: float, bt5: float, spread4: float,
    expected: float, sun_zenith: float, sat_zenith: float, rel_azimuth: float, land: bool,
    cos_sun: float, cos_view: float,
) -> int:  # fmt: skip
    """The test bits of one pixel (NaN inputs never fire a test).

    ``spread4``: ch4 max - min of the same-surface pixels of its 2x2 window; ``expected``:
    the warmest ch4 of its clear neighbours (NaN: none); ``cos_sun``, ``cos_view``: the
    cosines of the zenith angles (``math.cos(angle * DEG)``; the chain has them already).
    """
    flags = 0
    day = sun_zenith < DAY_SUN_ZENITH
    secant_view = 1.0 / max(cos_view, 0.1)
    if day:
        # the cheap conditions first: the glint angle costs three sines and cosines
        glint = (
            not land
            and not bt4 < FREEZING
            and not bt4 < expected - 3.0
            and in_glint_zone(cos_sun, cos_view, sun_zenith, sat_zenith, rel_azimuth)
        )
        if land:
            bright, contrast37 = 35.0, 15.0
        elif glint:
            bright, contrast37 = 40.0, 25.0
        else:
            air_mass = 1.0 / max(cos_sun, 0.1) + secant_view
            bright, contrast37 = 18.0 + 4.0 * max(air_mass - 3.0, 0.0), 10.0
        if refl1 > bright:
            flags |= REFLECTANCE
        if not land and not glint and refl1 > 0 and 0.9 < refl2 / refl1 < 1.1:
            flags |= RATIO
        if bt3 - bt4 > contrast37:
            flags |= CH3_CH4
    elif bt3 - bt4 < -2.0:
        flags |= CH3_CH4
    if spread4 > (2.5 if land else 0.5):
        flags |= UNIFORMITY
    warmth = min(max((bt4 - 260.0) / 40.0, 0.0), 1.0)
    if bt4 - bt5 > (1.0 + 2.5 * warmth) * (1.0 + 0.3 * (secant_view - 1.0)):
        flags |= CH4_CH5
    if bt4 < (235.0 if land else 270.0):
        flags |= THERMAL_GROSS
    if bt4 < expected - (8.0 if land else 4.0):
        flags |= CONTRAST
    return flags


@numba.njit(cache=True, nogil=True)
def ch4_spreads(bt4, land, first_line):
    """Per 2x2 window and surface (0 sea, 1 land): max - min of channel 4 over the window's
    pixels of that surface (NaNs skipped; a coast is not a cloud edge), 0 if none.

    ``bt4`` is the block's (n, 409) array and ``first_line`` its granule line number:
    windows start on even granule lines and even columns; pixel (i, j)'s is
    ``[(first_line + i) // 2 - first_line // 2, j // 2]``.
    """
    n, m = bt4.shape
    base = first_line // 2
    rows = (first_line + n - 1) // 2 - base + 1
    lo = np.full((rows, (m + 1) // 2, 2), np.inf)
    hi = np.full((rows, (m + 1) // 2, 2), -np.inf)
    for i in range(n):
        row = (first_line + i) // 2 - base
        for j in range(m):
            value = bt4[i, j]
            if not math.isnan(value):
                surface = 1 if land[i, j] else 0
                lo[row, j // 2, surface] = min(lo[row, j // 2, surface], value)
                hi[row, j // 2, surface] = max(hi[row, j // 2, surface], value)
    spread = np.zeros_like(lo)
    for row in range(rows):
        for column in range(lo.shape[1]):
            for surface in range(2):
                if hi[row, column, surface] >= lo[row, column, surface]:
                    spread[row, column, surface] = (
                        hi[row, column, surface] - lo[row, column, surface]
                    )
    return spread


@numba.njit(cache=True, nogil=True)
def coasts(land):
    """(n, m) bool: whether a pixel of the 3x3 around each pixel is of the other surface (a
    coastal pixel may hold both, and the terrain correction may have moved it across the
    coast). Both surfaces in the 3x3, found with row-wise then column-wise runs of three."""
    n, m = land.shape
    some_land = np.zeros((n, m), np.bool_)  # land within a column of the pixel, same row
    some_sea = np.zeros((n, m), np.bool_)
    for i in range(n):
        for j in range(m):
            for b in range(max(j - 1, 0), min(j + 2, m)):
                if land[i, b]:
                    some_land[i, j] = True
                else:
                    some_sea[i, j] = True
    out = np.empty((n, m), np.bool_)
    for i in range(n):
        for j in range(m):
            seen_land, seen_sea = False, False
            for a in range(max(i - 1, 0), min(i + 2, n)):
                seen_land |= some_land[a, j]
                seen_sea |= some_sea[a, j]
            out[i, j] = seen_land and seen_sea
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def surface_kind(land, sun_zenith):
    """0-3: sea or land, by night or by day (the sun heats land by day, so the clear
    neighbours of a sunlit pixel are sunlit ones)."""
    return (2 if land else 0) + (1 if sun_zenith < DAY_SUN_ZENITH else 0)


@numba.njit(cache=True, nogil=True)
def _expected_surfaces(bt4, land, coast, sun_zenith, first_line, night):
    """Per (tile row, tile column, surface kind): the warmest ch4 of that kind over the tile
    and the tiles left and right of it, -inf if none (the kinds of night only if
    ``night``)."""
    n, m = bt4.shape
    offset = first_line % TILE_LINES
    rows = (offset + n + TILE_LINES - 1) // TILE_LINES
    columns = (m + TILE_COLUMNS - 1) // TILE_COLUMNS
    warmest = np.full((rows, columns, 4), -np.inf)
    for i in range(n):
        row = (offset + i) // TILE_LINES
        for j in range(m):
            value = bt4[i, j]
            if math.isnan(value) or coast[i, j]:
                continue
            kind = surface_kind(land[i, j], sun_zenith[i, j])
            if night or kind & 1:
                column = j // TILE_COLUMNS
                warmest[row, column, kind] = max(warmest[row, column, kind], value)
    around = np.empty_like(warmest)
    for row in range(rows):
        for column in range(columns):
            for kind in range(4):
                best = -np.inf
                for c in range(max(column - 1, 0), min(column + 2, columns)):
                    best = max(best, warmest[row, c, kind])
                around[row, column, kind] = best
    return around


@numba.njit(cache=True, nogil=True)
def _cosines(sun_zenith, sat_zenith, cos_sun, cos_view):
    for i in range(sun_zenith.shape[0]):
        for j in range(sun_zenith.shape[1]):
            cos_sun[i, j] = math.cos(sun_zenith[i, j] * DEG)
            cos_view[i, j] = math.cos(sat_zenith[i, j] * DEG)


@numba.njit(cache=True, nogil=True)
def _cloud_tests(refl1, refl2, bt3, bt4, bt5, sun_zenith, sat_zenith, rel_azimuth, land,
                 cos_sun, cos_view, first_line, night, out):  # fmt: skip
    n, m = bt4.shape
    coast = coasts(land)
    around = _expected_surfaces(bt4, land, coast, sun_zenith, first_line, night)
    spreads = ch4_spreads(bt4, land, first_line)
    offset = first_line % TILE_LINES
    for i in range(n):
        row = (offset + i) // TILE_LINES
        window = (first_line + i) // 2 - first_line // 2
        for j in range(m):
            if not night and not sun_zenith[i, j] < DAY_SUN_ZENITH:
                out[i, j] = 0
                continue
            spread = spreads[window, j // 2, 1 if land[i, j] else 0]
            expected = np.nan
            if not coast[i, j]:
                warmest = around[row, j // TILE_COLUMNS, surface_kind(land[i, j], sun_zenith[i, j])]
                if warmest > -np.inf:
                    expected = warmest
            out[i, j] = pixel_tests(
                refl1[i, j], refl2[i, j], bt3[i, j], bt4[i, j], bt5[i, j], spread, expected,
                sun_zenith[i, j], sat_zenith[i, j], rel_azimuth[i, j], land[i, j],
                cos_sun[i, j], cos_view[i, j],
            )  # fmt: skip


def cloud_tests(
    calibrated: np.ndarray | Sequence[np.ndarray],
    sun_zenith: np.ndarray,
    land: np.ndarray,
    *,
    sat_zenith: np.ndarray | None = None,
    rel_azimuth: np.ndarray | None = None,
    first_line: int = 0,
    night: bool = True,
    cosines: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Test bits (n, 409) uint8 of a block.

    ``calibrated`` (5, n, 409), or five (n, 409) arrays: reflectances (percent, normalised
    by the solar zenith cosine and the Earth-Sun distance) of channels 1 and 2, brightness
    temperatures (K) of 3b, 4 and 5; ``sun_zenith``, ``sat_zenith`` (default: nadir) and
    ``rel_azimuth`` (default: 0, away from the glint) degrees; ``land`` bool.
    ``first_line``: the block's first granule line (for the windows and tiles).
    ``night=False`` tests sunlit pixels only and leaves the others 0 (a composite uses no
    night pixel); the sunlit pixels' bits are the same either way. ``cosines``: the
    cosines of the sun and satellite zenith angles, (n, 409) float64 each, if the caller
    has them (:func:`nearline.composite._observe.observe` does).
    """
    shape = np.shape(calibrated[3])
    out = np.empty(shape, np.uint8)
    refl1, refl2, bt3, bt4, bt5 = (np.asarray(c, np.float32) for c in calibrated)
    sun, sat, azimuth = (
        np.ascontiguousarray(
            np.broadcast_to(np.asarray(0.0 if a is None else a, np.float32), shape)
        )
        for a in (sun_zenith, sat_zenith, rel_azimuth)
    )
    if cosines is None:
        cosines = (np.empty(shape, np.float64), np.empty(shape, np.float64))
        _cosines(sun, sat, *cosines)
    _cloud_tests(
        refl1, refl2, bt3, bt4, bt5, sun, sat, azimuth,
        np.broadcast_to(np.asarray(land, np.bool_), shape), *cosines, first_line, night, out,
    )  # fmt: skip
    return out


# Channel 3a (1.6 um), by day. Water reflects about 2 % there and clouds 15-60 % (ice clouds
# the least: ice absorbs), so over sea a gross test works; over land bare soil and desert
# reach 35-50 %, so only clouds brighter than any land fire. Snow is bright in channel 1 and
# dark at 1.6 um: CLAVR-x's snow test (``ADD_NDSI_160_SNOW``, ``REMOVE_DARK_SNOW`` in its
# snow_routines_mod.f90) calls land snow where NDSI = (ch1 - ch3a) / (ch1 + ch3a) > 0.6,
# ch1 >= 10 % and the surface is at most 277 K (here ch4: nearline has no NWP surface
# temperature).
NEAR_IR_SEA = 10.0  # percent
NEAR_IR_LAND = 50.0
SNOW_NDSI = 0.6
SNOW_MIN_REFLECTANCE = 10.0  # percent of channel 1
SNOW_WARMEST = 277.0  # K


@numba.njit(cache=True, nogil=True, inline="always")
def is_snow(refl1: float, refl3a: float, bt4: float) -> bool:
    """Whether a sunlit land pixel looks like snow: bright in channel 1, dark at 1.6 um,
    cold (NaN inputs: no)."""
    if not (refl1 >= SNOW_MIN_REFLECTANCE and bt4 <= SNOW_WARMEST and refl3a >= 0.0):
        return False
    return (refl1 - refl3a) / (refl1 + refl3a) > SNOW_NDSI


@numba.njit(cache=True, nogil=True)
def _near_infrared(flags, refl1, refl3a, bt4, sun_zenith, land, glint_zone):
    n, m = flags.shape
    for i in range(n):
        for j in range(m):
            near_ir = refl3a[i, j]
            if not sun_zenith[i, j] < DAY_SUN_ZENITH or math.isnan(near_ir):
                continue
            if land[i, j]:
                if is_snow(refl1[i, j], near_ir, bt4[i, j]):
                    flags[i, j] &= ~REFLECTANCE
                elif near_ir > NEAR_IR_LAND:
                    flags[i, j] |= NEAR_IR
            elif not glint_zone[i, j] and near_ir > NEAR_IR_SEA:
                flags[i, j] |= NEAR_IR


def near_infrared_tests(
    flags: np.ndarray,
    refl1: np.ndarray,
    refl3a: np.ndarray,
    bt4: np.ndarray,
    sun_zenith: np.ndarray,
    land: np.ndarray,
    sat_zenith: np.ndarray | None = None,
    rel_azimuth: np.ndarray | None = None,
) -> None:
    """Add the 1.6 um tests to ``flags`` (from :func:`cloud_tests`, changed in place) where
    channel 3a was measured by day (``refl3a`` percent, NaN elsewhere, normalised as
    channel 1): :data:`NEAR_IR` fires above :data:`NEAR_IR_SEA` over sea outside the glint
    zone and above :data:`NEAR_IR_LAND` over land, and land that :func:`is_snow` loses its
    REFLECTANCE bit. Nothing changes on lines that carry 3b.
    """
    from nearline.swath import glint_angle

    shape = flags.shape
    refl3a = np.broadcast_to(np.asarray(refl3a, np.float32), shape)
    lit = (np.asarray(sun_zenith) < DAY_SUN_ZENITH) & ~np.isnan(refl3a)
    if not lit.any():
        return
    land = np.broadcast_to(np.asarray(land, np.bool_), shape)
    angles = [np.broadcast_to(np.asarray(0.0 if a is None else a, np.float32), shape)
              for a in (sun_zenith, sat_zenith, rel_azimuth)]  # fmt: skip
    glint_zone = ~land & lit & (glint_angle(*angles) < GLINT_ZONE)
    _near_infrared(
        flags, np.broadcast_to(np.asarray(refl1, np.float32), shape), refl3a,
        np.broadcast_to(np.asarray(bt4, np.float32), shape), angles[0], land, glint_zone,
    )  # fmt: skip

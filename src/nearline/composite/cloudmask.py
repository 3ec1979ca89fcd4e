"""CLAVR-style cloud tests (after CLAVR-1, Stowe et al. 1999), one bit each in a uint8 flag.

A pixel is cloudy if any test fires. Reflectances are percent, normalised by the cosine of
the solar zenith angle; temperatures in kelvin. Day means solar zenith below 85 degrees;
reflectance tests run by day only.

=====================  ==================================================================
bit  test              fires when
=====================  ==================================================================
0    REFLECTANCE       channel 1 reflectance > 22 % over sea, > 35 % over land (bright)
1    RATIO             over sea, 0.9 < ch2/ch1 < 1.1 (clouds are grey; clear sea is blue)
2    UNIFORMITY        ch4 max - min over the 2x2 pixels of the pixel's line pair and column
                       pair > 0.5 K over sea, > 2.5 K over land (cloud edges are ragged)
3    CH3_CH4           day: ch3b - ch4 > 15 K (clouds reflect sunlight at 3.7 um);
                       night: ch3b - ch4 < -2 K (low cloud emits less at 3.7 um)
4    CH4_CH5           ch4 - ch5 > 1 + 2.5 * clip((ch4 - 260) / 40, 0, 1) K (thin cirrus;
                       the threshold grows with temperature as water vapour does)
5    THERMAL_GROSS     ch4 < 268 K over sea, < 235 K over land (cold cloud tops)
=====================  ==================================================================

The 2x2 windows start on even line and column numbers of the granule, so a pixel's flag does
not depend on how the granule was cut into blocks as long as blocks start on even lines (a
block starting on an odd line uses a 1x2 window for its first line).

Sources: the tests and their physics are CLAVR-1's (Stowe, Davis and McClain 1999, J.
Atmos. Oceanic Technol. 16, 656-681; bit names as NOAA CoastWatch's CLAVR mask); the
uniformity window (2x2 GAC pixels) and the ratio range 0.9-1.1 over sea are CLAVR-1's.
The other thresholds are nearline's fixed choices within the ranges CLAVR-1 uses, not its
scene- and geometry-dependent tables; the ch4 - ch5 threshold rising with ch4 follows
Saunders and Kriebel (1988) in shape.
"""

from __future__ import annotations

import math

import numba
import numpy as np

REFLECTANCE, RATIO, UNIFORMITY, CH3_CH4, CH4_CH5, THERMAL_GROSS = (1 << b for b in range(6))
TESTS = {
    "reflectance": REFLECTANCE,
    "ratio": RATIO,
    "uniformity": UNIFORMITY,
    "ch3_ch4": CH3_CH4,
    "ch4_ch5": CH4_CH5,
    "thermal_gross": THERMAL_GROSS,
}
DAY_SUN_ZENITH = 85.0


@numba.njit(cache=True, nogil=True)
def pixel_tests(
    refl1: float, refl2: float, bt3: float, bt4: float, bt5: float, spread4: float,
    sun_zenith: float, land: bool,
) -> int:  # fmt: skip
    """The test bits of one pixel (NaN inputs never fire a test)."""
    flags = 0
    day = sun_zenith < DAY_SUN_ZENITH
    if day:
        if refl1 > (35.0 if land else 22.0):
            flags |= REFLECTANCE
        if not land and refl1 > 0 and 0.9 < refl2 / refl1 < 1.1:
            flags |= RATIO
        if bt3 - bt4 > 15.0:
            flags |= CH3_CH4
    elif bt3 - bt4 < -2.0:
        flags |= CH3_CH4
    if spread4 > (2.5 if land else 0.5):
        flags |= UNIFORMITY
    warmth = min(max((bt4 - 260.0) / 40.0, 0.0), 1.0)
    if bt4 - bt5 > 1.0 + 2.5 * warmth:
        flags |= CH4_CH5
    if bt4 < (235.0 if land else 268.0):
        flags |= THERMAL_GROSS
    return flags


@numba.njit(cache=True, nogil=True, inline="always")
def ch4_spread(bt4, i, j, first_line):
    """Max - min of channel 4 over the 2x2 window holding pixel (i, j) (NaNs skipped).

    ``bt4`` is the block's (n, 409) array and ``first_line`` its granule line number: windows
    start on even granule lines and even columns.
    """
    n, m = bt4.shape
    top = i - (first_line + i) % 2
    left = j - j % 2
    lo, hi = np.inf, -np.inf
    for a in range(max(top, 0), min(top + 2, n)):
        for b in range(left, min(left + 2, m)):
            value = bt4[a, b]
            if not math.isnan(value):
                lo = min(lo, value)
                hi = max(hi, value)
    return hi - lo if hi >= lo else 0.0


@numba.njit(cache=True, nogil=True)
def _cloud_tests(refl1, refl2, bt3, bt4, bt5, sun_zenith, land, first_line, out):
    n, m = bt4.shape
    for i in range(n):
        for j in range(m):
            spread = ch4_spread(bt4, i, j, first_line)
            out[i, j] = pixel_tests(
                refl1[i, j], refl2[i, j], bt3[i, j], bt4[i, j], bt5[i, j], spread,
                sun_zenith[i, j], land[i, j],
            )  # fmt: skip


def cloud_tests(
    calibrated: np.ndarray, sun_zenith: np.ndarray, land: np.ndarray, *, first_line: int = 0
) -> np.ndarray:
    """Test bits (n, 409) uint8 of a block.

    ``calibrated`` (5, n, 409): reflectances (percent, normalised by the solar zenith cosine)
    of channels 1 and 2, brightness temperatures (K) of 3b, 4 and 5; ``sun_zenith`` degrees;
    ``land`` bool. ``first_line``: the block's first granule line (for the 2x2 windows).
    """
    out = np.empty(calibrated.shape[1:], np.uint8)
    refl1, refl2, bt3, bt4, bt5 = (np.asarray(c, np.float32) for c in calibrated)
    _cloud_tests(
        refl1, refl2, bt3, bt4, bt5, np.asarray(sun_zenith, np.float32),
        np.asarray(land, np.bool_), first_line, out,
    )  # fmt: skip
    return out

"""Calibration with drift: raw counts to reflectance and brightness temperature.

For raw counts (Level 1b), the equations and coefficients are pygac's
(``pygac.calibration.noaa``; PATMOS-x coefficients per platform, read by
:mod:`~nearline.composite._coefficients`), split in two so the per-pixel part runs in one
compiled pass:

- **Visible (channels 1, 2 and 3a)** — Heidinger et al. (2010): the calibration slope
  drifts with time since launch, ``S(t) = S0 (100 + S1 t + S2 t^2) / 100``; AVHRR/3's dual
  gain makes the count-to-radiance line bend at the gain switch count. Result: scaled
  radiance in percent (pygac's unit), NaN below the dark count. Channel 3a (1.6 um) shares
  its slot with 3b: :func:`channel3a` gives it on the lines that carry it.
- **Thermal (3b, 4, 5)** — NOAA KLM User's Guide 7.1.2.4: the blackbody temperature from the
  four PRTs, the blackbody and space counts, each smoothed over 51 lines (Trishchenko 2002)
  give a per-line linear radiance; the Walton et al. (1998) quadratic corrects the
  non-linearity of channels 4 and 5; the Planck function with the channel's centroid
  wavenumber and band correction gives the brightness temperature (K), NaN outside
  170-350 K.

:func:`line_calibration` does the per-line part once per granule (the smoothing needs the
whole granule); :func:`calibrate` applies it to a block's counts. A granule of values its
producer calibrated (Level 1C: :attr:`~nearline.swath.Telemetry.scaling`) needs none of
it: its calibration carries the stored scaling, and :func:`calibrate` decodes
(:mod:`~nearline.composite._stored`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime

import numba
import numpy as np

from nearline.composite._coefficients import Coefficients, load_coefficients, year_fraction
from nearline.composite._stored import decode, decode_3a
from nearline.swath import CH3A, CH3B, StoredScaling, Telemetry

C1 = 1.1910427e-5  # mW/m^2/sr/cm^-4
C2 = 1.4387752  # cm K
SMOOTHING_LINES = 51
PRT_THRESHOLD = 50
ICT_THRESHOLD = 100
SPACE_THRESHOLD = 100


@dataclass(frozen=True)
class LineCalibration:
    """Everything per line that turns counts into physical values.

    Visible, channels 1, 2 and 3a: ``slope_low``/``slope_high`` (3,), ``dark`` (3,),
    ``gain_switch`` (3,; NaN for a single-gain channel). Thermal, per line (n, 3):
    ``space_counts``, ``bb_counts``, ``bb_radiance``; per channel (3,): ``space_radiance``,
    ``nonlinear`` (3, 3: b0 b1 b2), ``wavenumber``, ``band_a``, ``band_b``. ``ch3_select``
    (n,): what each line's channel-3 slot carries
    (:attr:`~nearline.swath.Telemetry.ch3_select`); None: 3b on every line. ``scaling``:
    for a Level 1C granule, how its calibrated values are stored (the counts tables are
    then NaN, unused); None for raw counts.
    """

    slope_low: np.ndarray
    slope_high: np.ndarray
    dark: np.ndarray
    gain_switch: np.ndarray
    space_counts: np.ndarray
    bb_counts: np.ndarray
    bb_radiance: np.ndarray
    space_radiance: np.ndarray
    nonlinear: np.ndarray
    wavenumber: np.ndarray
    band_a: np.ndarray
    band_b: np.ndarray
    ch3_select: np.ndarray | None = None
    scaling: StoredScaling | None = None

    @property
    def has_channel5(self) -> bool:
        """Whether the instrument has channel 5 (AVHRR/1 has not: its values are NaN)."""
        return self.scaling is None or self.scaling.channels[4] is not None

    @property
    def distance_corrected(self) -> bool:
        """Whether the reflectances are already at the mean Earth-Sun distance."""
        return self.scaling is not None and self.scaling.distance_corrected

    def slice(self, start: int, stop: int) -> LineCalibration:
        """The calibration of lines ``[start, stop)``."""
        return replace(
            self,
            space_counts=self.space_counts[start:stop],
            bb_counts=self.bb_counts[start:stop],
            bb_radiance=self.bb_radiance[start:stop],
            ch3_select=None if self.ch3_select is None else self.ch3_select[start:stop],
        )


def visible_slopes(cal: Coefficients, moment: datetime) -> tuple[np.ndarray, np.ndarray]:
    """Low- and high-gain slopes of channels 1, 2, 3a at ``moment`` (Heidinger et al. 2010)."""
    jday = moment.timetuple().tm_yday
    t = (moment.year + jday / 365.0) - year_fraction(cal.date_of_launch)
    single_gain = bool(np.isnan(cal.gain_switch).all())
    glow = np.ones(3) if single_gain else np.array([0.5, 0.5, 0.25])
    ghigh = np.ones(3) if single_gain else np.array([1.5, 1.5, 1.75])
    low = np.round(glow * cal.s0, 3) * (100.0 + cal.s1 * t + cal.s2 * t * t) / 100.0
    high = np.round(ghigh * cal.s0, 3) * (100.0 + cal.s1 * t + cal.s2 * t * t) / 100.0
    return low, high


def _fill_gaps(values: np.ndarray, gaps: np.ndarray) -> np.ndarray:
    """Replace ``values[gaps]`` by interpolation between the good lines."""
    if gaps.any() and (~gaps).any():
        values = values.copy()
        values[gaps] = np.interp(np.flatnonzero(gaps), np.flatnonzero(~gaps), values[~gaps])
    return values


def _smooth(values: np.ndarray) -> np.ndarray:
    """pygac's moving average: 51 lines (3 for short granules), ends held flat."""
    window = SMOOTHING_LINES if values.size > SMOOTHING_LINES else 3
    smooth = np.convolve(values, np.ones(window) / window, "same")
    half = (window - 1) // 2
    smooth[:half] = smooth[half]
    smooth[-half:] = smooth[-(window + 1) // 2]
    return smooth


def blackbody_temperature(prt: np.ndarray, cal: Coefficients) -> np.ndarray:
    """Smoothed internal blackbody temperature per line from the PRT readings (KLM 7.1.2.4-1)."""
    prt = np.asarray(prt, dtype=np.float64).copy()
    lines = np.arange(prt.size)
    for offset in range(5):
        if np.median(prt[lines % 5 == offset]) < PRT_THRESHOLD:
            break
    else:
        raise ValueError("no PRT reset line found in the telemetry")
    iprt = (lines + 5 - offset) % 5
    for which in range(1, 5):
        gaps = (iprt == which) & (prt < PRT_THRESHOLD)
        if gaps.any():
            good = np.flatnonzero((iprt == which) & (prt > PRT_THRESHOLD))
            prt[gaps] = np.interp(np.flatnonzero(gaps), good, prt[good])
    tprt = np.polynomial.polynomial.polyval(prt, cal.d[:, iprt], tensor=False)
    tprt = _fill_gaps(tprt, iprt == 0)
    return _smooth(tprt)


def line_calibration(
    telemetry: Telemetry, platform: str, *, coefficients: Coefficients | None = None
) -> LineCalibration:
    """Calibration tables for every line of a granule (``coefficients``: the platform's, if
    the caller has read them already); for a Level 1C granule, its stored scaling."""
    if telemetry.scaling is not None:  # calibrated by its producer: nothing to derive
        unused, per_line = np.full(3, np.nan), np.full((telemetry.times.shape[0], 3), np.nan)
        return LineCalibration(
            unused, unused, unused, unused, per_line, per_line, per_line, unused,
            np.full((3, 3), np.nan), unused, unused, unused, telemetry.ch3_select,
            telemetry.scaling,
        )  # fmt: skip
    cal = load_coefficients(platform) if coefficients is None else coefficients
    first = telemetry.times[0].astype("datetime64[ms]").astype(datetime)
    low, high = visible_slopes(cal, first)
    tbb = blackbody_temperature(telemetry.prt_counts, cal)
    space, bb, radiance = [], [], []
    for chan in range(3):
        ict = np.asarray(telemetry.ict_counts[:, chan], dtype=np.float64)
        cold = np.asarray(telemetry.space_counts[:, chan], dtype=np.float64)
        if chan == 0:  # pygac fills channel 3b's dropouts
            if not (ict >= ICT_THRESHOLD).any():  # 3a was on all granule: no 3b at all
                ict = np.full_like(ict, np.nan)
            ict = _fill_gaps(ict, ict < ICT_THRESHOLD)
            cold = _fill_gaps(cold, cold < SPACE_THRESHOLD)
        space.append(_smooth(cold))
        bb.append(_smooth(ict))
        nu = cal.centroid_wavenumber[chan]
        effective = cal.to_eff_blackbody_intercept[chan] + cal.to_eff_blackbody_slope[chan] * tbb
        radiance.append(C1 * nu**3 / (np.exp(C2 * nu / effective) - 1.0))
    return LineCalibration(
        slope_low=np.asarray(low, np.float64),
        slope_high=np.asarray(high, np.float64),
        dark=np.asarray(cal.dark_count[:3], np.float64),
        gain_switch=np.asarray(cal.gain_switch[:3], np.float64),
        space_counts=np.stack(space, axis=1),
        bb_counts=np.stack(bb, axis=1),
        bb_radiance=np.stack(radiance, axis=1),
        space_radiance=np.asarray(cal.space_radiance, np.float64),
        nonlinear=np.asarray(cal.b[:, 0:3], np.float64),
        wavenumber=np.asarray(cal.centroid_wavenumber, np.float64),
        band_a=np.asarray(cal.to_eff_blackbody_intercept, np.float64),
        band_b=np.asarray(cal.to_eff_blackbody_slope, np.float64),
        ch3_select=telemetry.ch3_select,
    )


@numba.njit(cache=True, nogil=True)
def _visible_table(slope_low, slope_high, dark, gain_switch, table):
    """Scaled radiance (%) of every 10-bit count of the visible channels in ``table``'s rows
    (NaN below the dark count)."""
    for c in range(table.shape[0]):
        dual = not math.isnan(gain_switch[c])  # pygac's test, channel by channel
        for count in range(table.shape[1]):
            if dual and count > gain_switch[c]:
                value = (gain_switch[c] - dark[c]) * slope_low[c] + (
                    count - gain_switch[c]
                ) * slope_high[c]
            else:
                value = (count - dark[c]) * slope_low[c]
            table[c, count] = value if value >= 0 else np.nan


@numba.njit(cache=True, nogil=True, inline="always")
def _temperature(count, cs, offset, gain, b0, b1, b2, c1nu3, c2nu, a, b, is_3b):
    """Brightness temperature (K) of one thermal count on a line (NaN outside 170-350 K)."""
    linear = offset + gain * count
    radiance = linear + b0 + b1 * linear + b2 * linear * linear
    if is_3b and count - cs >= 0:
        bt = 0.0
    elif radiance <= 0:
        bt = np.nan
    else:
        bt = (c2nu / math.log(1.0 + c1nu3 / radiance) - a) / b
    return bt if 170.0 <= bt <= 350.0 else np.nan


@numba.njit(cache=True, nogil=True)
def _calibrate(
    counts, table, space_counts, bb_counts, bb_radiance, space_radiance, nonlinear, wavenumber,
    band_a, band_b, out,
):  # fmt: skip
    n_lines, n_pixels = counts.shape[1], counts.shape[2]
    # A line's temperature is a function of the count alone, and a line of 409 pixels holds
    # far fewer distinct 10-bit counts: each is converted once per line and channel.
    memo = np.empty(1024, np.float32)
    owner = np.full(1024, -1, np.int64)  # the (line, channel) a memo entry was made for
    for i in range(n_lines):
        for c in range(2):
            for j in range(n_pixels):
                out[c, i, j] = table[c, min(counts[c, i, j], 1023)]
        for t in range(3):
            # N_lin = N_S + (N_BB - N_S)(C_S - C_E)/(C_S - C_BB) = offset + gain * C_E
            cs = space_counts[i, t]
            ns = space_radiance[t]
            gain = -(bb_radiance[i, t] - ns) / (cs - bb_counts[i, t])
            offset = ns - gain * cs
            b0, b1, b2 = nonlinear[t, 0], nonlinear[t, 1], nonlinear[t, 2]
            c1nu3 = C1 * wavenumber[t] ** 3
            c2nu = C2 * wavenumber[t]
            a, b = band_a[t], band_b[t]
            key = 3 * i + t
            for j in range(n_pixels):
                count = counts[2 + t, i, j]
                if count < 1024 and owner[count] == key:
                    out[2 + t, i, j] = memo[count]
                    continue
                bt = _temperature(
                    float(count), cs, offset, gain, b0, b1, b2, c1nu3, c2nu, a, b, t == 0
                )
                out[2 + t, i, j] = bt
                if count < 1024:
                    memo[count] = bt
                    owner[count] = key


def calibrate(
    counts: np.ndarray, cal: LineCalibration, out: np.ndarray | None = None
) -> np.ndarray:
    """(5, n, 409) float32: channel 1 and 2 scaled radiance (%), 3b, 4, 5 temperature (K)."""
    if cal.scaling is not None:
        return decode(counts, cal.scaling, out)
    result = np.empty(counts.shape, np.float32) if out is None else out
    table = np.empty((2, 1024), np.float64)  # 8 KiB, per call: cheaper than a cache
    _visible_table(cal.slope_low, cal.slope_high, cal.dark, cal.gain_switch, table)
    _calibrate(
        counts, table, cal.space_counts, cal.bb_counts, cal.bb_radiance, cal.space_radiance,
        cal.nonlinear, cal.wavenumber, cal.band_a, cal.band_b, result,
    )  # fmt: skip
    return result


@numba.njit(cache=True, nogil=True)
def _channel3a(counts, table, ch3_select, thermal, out):
    for i in range(counts.shape[1]):
        carried = ch3_select[i]
        for j in range(counts.shape[2]):
            out[i, j] = table[0, min(counts[2, i, j], 1023)] if carried == CH3A else np.nan
            if carried != CH3B:
                thermal[i, j] = np.nan


def channel3a(counts: np.ndarray, cal: LineCalibration, calibrated: np.ndarray) -> np.ndarray:
    """Channel 3a's scaled radiance (%), (n, 409) float32, on the lines that carry it (NaN
    on the others); on every line that does not carry 3b, ``calibrated[2]`` (the 3b
    temperature :func:`calibrate` made of the slot's counts) becomes NaN.

    3a is calibrated as channels 1 and 2 are (dual gain, drift), with its own coefficients;
    a Level 1C granule's is decoded.
    """
    if cal.scaling is not None:
        return decode_3a(counts, cal.scaling, cal.ch3_select, calibrated[2])
    out = np.empty(counts.shape[1:], np.float32)
    if cal.ch3_select is None:  # 3b on every line
        out.fill(np.nan)
        return out
    table = np.empty((1, 1024), np.float64)
    _visible_table(cal.slope_low[2:], cal.slope_high[2:], cal.dark[2:], cal.gain_switch[2:], table)
    _channel3a(counts, table, np.asarray(cal.ch3_select, np.uint8), calibrated[2], out)
    return out

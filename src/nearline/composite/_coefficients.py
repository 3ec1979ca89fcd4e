"""pygac's calibration coefficients (PATMOS-x) per platform, read from the file pygac ships.

``pygac.calibration.noaa.Calibrator`` gives the same arrays, but importing it imports all of
pygac's readers first (pyorbital, dask, xarray, pandas): 1.5 s, which was most of a
composite's planning. The coefficients are data, so they are read here straight from
``pygac/data/calibration.json`` into the arrays ``Calibrator`` makes; the tests hold the two
equal for every platform in the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from nearline.errors import CompositeError
from nearline.swath import package_folder

VISIBLE = ("channel_1", "channel_2", "channel_3a")
THERMAL = ("channel_3b", "channel_4", "channel_5")


@dataclass(frozen=True, eq=False)
class Coefficients:
    """One platform's coefficients, named and shaped as pygac's ``Calibrator`` fields.

    Visible (channels 1, 2, 3a), each (3,): ``dark_count``, ``gain_switch``, ``s0``, ``s1``,
    ``s2``. Thermal (3b, 4, 5), each (3,): ``centroid_wavenumber``, ``space_radiance``,
    ``to_eff_blackbody_intercept``, ``to_eff_blackbody_slope``; ``b`` (3, 3) the
    non-linearity b0 b1 b2 per channel. ``d`` (5, 5): PRT polynomial coefficient ``d`` of
    thermometer ``t`` at ``[d, t]`` (thermometer 0, the reset line, all zero).
    ``date_of_launch`` naive UTC.
    """

    spacecraft: str
    dark_count: np.ndarray
    gain_switch: np.ndarray
    s0: np.ndarray
    s1: np.ndarray
    s2: np.ndarray
    b: np.ndarray
    centroid_wavenumber: np.ndarray
    space_radiance: np.ndarray
    to_eff_blackbody_intercept: np.ndarray
    to_eff_blackbody_slope: np.ndarray
    d: np.ndarray
    date_of_launch: datetime


def load_coefficients(platform: str) -> Coefficients:
    """The coefficients of ``platform`` (pygac's spacecraft name: "noaa19", "metopb", ...)."""
    path = package_folder("pygac") / "data" / "calibration.json"
    table = json.loads(path.read_bytes())
    if platform not in table or platform == "description":
        known = ", ".join(sorted(name for name in table if name != "description"))
        raise CompositeError(
            f"no calibration coefficients for {platform!r} in {path}; known: {known}"
        )
    entry = table[platform]

    def per_channel(channels: tuple[str, ...], key: str) -> np.ndarray:
        return np.array([entry[channel][key] for channel in channels], dtype=float)

    thermometers = [[entry.get(f"thermometer_{t}", {}).get(f"d{d}", 0.0) for t in range(5)]
                    for d in range(5)]  # fmt: skip
    launch = datetime.fromisoformat(entry["date_of_launch"].replace("Z", "+00:00"))
    visible = ("dark_count", "gain_switch", "s0", "s1", "s2")
    thermal = (
        "centroid_wavenumber", "space_radiance", "to_eff_blackbody_intercept",
        "to_eff_blackbody_slope",
    )  # fmt: skip
    return Coefficients(
        spacecraft=platform,
        **{key: per_channel(VISIBLE, key) for key in visible},
        **{key: per_channel(THERMAL, key) for key in thermal},
        b=np.array([[entry[channel][f"b{k}"] for k in range(3)] for channel in THERMAL], float),
        d=np.array(thermometers, dtype=float),
        date_of_launch=launch.astimezone(UTC).replace(tzinfo=None),
    )


def year_fraction(moment: datetime) -> float:
    """``moment`` as a decimal year, rounded to 5 decimals (PATMOS-x's, as pygac's
    ``Calibrator.date2float``): 2000-07-02 is 2000.5."""
    start = datetime(moment.year, 1, 1)
    days = (datetime(moment.year + 1, 1, 1) - start).days
    return round(moment.year + (moment - start).total_seconds() / (days * 24 * 3600), 5)

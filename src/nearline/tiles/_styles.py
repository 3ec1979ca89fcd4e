"""How a band's values become colours: a range and a colour ramp per band, one table of 256
colours that both the tiles and their legend are drawn from, so the two cannot disagree.

Values below the range take the first colour, above it the last; NaN (a cell no observation
filled, the file's fill value, a gap between the projection's lobes) is transparent.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from nearline.errors import InvalidRequest

COLOURS = 256
NDVI_INDEX = "ndvi-index"  # (NIR - red) / (NIR + red) from the composite's reflectances


class UnknownStyle(InvalidRequest):
    """A band or index the map tiles do not draw: a 400 naming the ones they do."""


@dataclass(frozen=True)
class Style:
    """One band's colouring.

    Parameters
    ----------
    band
        The band's variable name in the composite, or ``ndvi-index``.
    title
        What the legend calls it.
    units
        Its physical units, as the legend shows them.
    low, high
        The values the ramp's first and last colours stand for.
    ramp
        A matplotlib colour map's name.
    """

    band: str
    title: str
    units: str
    low: float
    high: float
    ramp: str

    @cached_property
    def table(self) -> np.ndarray:
        """(256, 4) uint8 RGBA, the ramp sampled at the centre of each of its 256 steps."""
        import matplotlib  # its first import takes most of a second: once a process

        ramp = matplotlib.colormaps[self.ramp]
        return np.round(ramp((np.arange(COLOURS) + 0.5) / COLOURS) * 255).astype(np.uint8)

    def steps(self, values: np.ndarray) -> np.ndarray:
        """Which of the 256 colours each value takes (int16; -1 for NaN)."""
        scaled = (np.asarray(values, dtype=np.float64) - self.low) / (self.high - self.low)
        with np.errstate(invalid="ignore"):
            step = np.clip(np.floor(scaled * COLOURS), 0, COLOURS - 1)
        return np.where(np.isnan(scaled), -1, step).astype(np.int16)

    def paint(self, values: np.ndarray) -> np.ndarray:
        """RGBA uint8 of ``values`` (any 2-D shape): NaN fully transparent."""
        steps = self.steps(values)
        rgba = self.table[np.maximum(steps, 0)]
        rgba[steps < 0] = 0
        return rgba

    def legend(self) -> dict[str, Any]:
        """The legend as JSON: each of the 256 colours with the values it stands for."""
        width = (self.high - self.low) / COLOURS
        return {
            "band": self.band,
            "title": self.title,
            "units": self.units,
            "range": [self.low, self.high],
            "colormap": self.ramp,
            "nodata": "transparent",
            "entries": [
                {
                    "from": self.low + width * k,
                    "to": self.low + width * (k + 1),
                    "color": "#{:02x}{:02x}{:02x}".format(*rgb[:3]),
                }
                for k, rgb in enumerate(self.table.tolist())
            ],
        }


STYLES: dict[str, Style] = {
    style.band: style
    for style in (
        Style(NDVI_INDEX, "NDVI from the red and near-infrared bands", "1", -0.2, 0.9, "RdYlGn"),
        Style("ndvi", "NDVI of the winning observation", "1", -0.2, 0.9, "RdYlGn"),
        Style("refl1", "Channel 1 (0.63 um) reflectance", "percent", 0.0, 60.0, "gray"),
        Style("refl2", "Channel 2 (0.86 um) reflectance", "percent", 0.0, 60.0, "gray"),
        Style("bt3", "Channel 3b (3.7 um) brightness temperature", "K", 220.0, 330.0, "inferno"),
        Style("bt4", "Channel 4 (11 um) brightness temperature", "K", 200.0, 320.0, "inferno"),
        Style("bt5", "Channel 5 (12 um) brightness temperature", "K", 200.0, 320.0, "inferno"),
        Style("scan_angle", "Sensor scan angle", "degree", -55.0, 55.0, "coolwarm"),
        Style("sun_zenith", "Solar zenith angle", "degree", 0.0, 90.0, "viridis"),
        Style("rel_azimuth", "Relative azimuth angle", "degree", 0.0, 180.0, "viridis"),
        Style("day", "Day of year of the observation", "day", 1.0, 366.0, "viridis"),
    )
}
DEFAULT_STYLE = NDVI_INDEX


def style_of(band: str | None, available: list[str]) -> Style:
    """The style of ``band`` (None: the first drawable, the NDVI index where there is one),
    if the tiles draw it from a composite holding ``available`` bands; :class:`UnknownStyle`
    naming the ones they draw else.

    Parameters
    ----------
    band
        A band's name or ``ndvi-index``.
    available
        The composite's drawable bands (:func:`drawable`).
    """
    name = band if band is not None else (available[0] if available else DEFAULT_STYLE)
    if name not in available:
        raise UnknownStyle(
            f"band {name!r} is not drawn as tiles; use one of {', '.join(available)}"
        )
    return STYLES[name]


def drawable(bands: list[str], *, has_index: bool) -> list[str]:
    """Of a composite's ``bands``, those with a style (bit fields such as ``cloud`` and ``qc``
    have none: a colour ramp over flags means nothing), the NDVI index first when the
    composite has the red and near-infrared bands it needs."""
    return [NDVI_INDEX] * has_index + [band for band in bands if band in STYLES]

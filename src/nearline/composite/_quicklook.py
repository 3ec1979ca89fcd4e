"""A quicklook PNG of a composite: what people look at first, readable without a GIS.

Land seen clear is coloured by NDVI, from pale (snow, bare ground, below 0) through brown
and yellow to dark green (dense vegetation, 0.8 and more). Each other kind of cell has a
colour of its own: water seen by some orbit (GLOBE's land mask, as the cloud mask uses),
land kept only cloudy because no orbit saw it clear, cells no orbit saw, and the
interruptions of the Goode projection. A ``max-bt4`` composite (night passes too) is
coloured by its channel-4 temperature instead, every cell seen alike, clouds cold (white
and pale blue) and clear ground and sea warm. A strip under the map says what it is
(product, period, grid, how many granules) and carries the colour bar and the legend. Large
grids are thinned to at most ``max_width`` columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nearline.durable import publish, temporary_path

_ANCHORS = (  # NDVI, RGB
    (-0.2, (236, 232, 224)),
    (0.0, (214, 200, 172)),
    (0.1, (186, 150, 98)),
    (0.25, (218, 192, 108)),
    (0.4, (156, 190, 72)),
    (0.6, (60, 150, 50)),
    (0.85, (0, 80, 20)),
)
NDVI_RANGE = (_ANCHORS[0][0], _ANCHORS[-1][0])
_BT4_ANCHORS = (  # K, RGB: cold cloud tops white, through blue, to warm ground in red
    (200.0, (250, 250, 252)),
    (230.0, (176, 204, 236)),
    (255.0, (72, 118, 196)),
    (275.0, (64, 164, 96)),
    (290.0, (236, 204, 64)),
    (305.0, (196, 48, 32)),
)
WATER = (32, 66, 128)
CLOUDY = (190, 150, 215)  # land kept cloudy: no orbit saw it clear
NO_DATA = (150, 150, 150)
NO_DATA_LAND = (196, 196, 196)  # in a temperature quicklook, so that the map shows where it is
OUTSIDE = (255, 255, 255)  # off the Earth: the gaps between IGH's lobes
_LEGEND = (
    (WATER, "water"),
    (CLOUDY, "cloudy (never seen clear)"),
    (NO_DATA, "no data"),
    (OUTSIDE, "outside the projection"),
)
_STRIP = 104  # pixels of the legend strip under the map


@dataclass(frozen=True)
class Ramp:
    """The band a quicklook colours its cells by, its colour stops and colour bar."""

    band: str
    anchors: tuple[tuple[float, tuple[int, int, int]], ...]
    ticks: tuple[float, ...]
    label: str
    legend: tuple[tuple[tuple[int, int, int], str], ...]
    tick_format: str  # of the colour bar's numbers


NDVI_RAMP = Ramp("ndvi", _ANCHORS, (-0.2, 0.0, 0.2, 0.4, 0.6, 0.8), "NDVI", _LEGEND, ".1f")
_UNSEEN = (NO_DATA, "no data (sea)"), (NO_DATA_LAND, "no data (land)"), _LEGEND[3]
BT4_RAMP = Ramp("bt4", _BT4_ANCHORS, (200, 220, 240, 260, 280, 300), "ch4 K", _UNSEEN, ".0f")

_MIN_WIDTH = 1000  # the strip's layout needs this much; narrower maps are centred
_BAR = (28, 50, 480, 18)  # colour bar: left, top (in the strip), width, height


def ndvi_colours(ndvi: np.ndarray, ramp: Ramp = NDVI_RAMP) -> np.ndarray:
    """RGB uint8 (..., 3) for values on ``ramp``'s colour bar (NDVI's by default); NaN
    gives the no-data grey."""
    stops = np.array([a[0] for a in ramp.anchors])
    colours = np.array([a[1] for a in ramp.anchors], dtype=float)
    clipped = np.clip(np.nan_to_num(ndvi, nan=stops[0]), stops[0], stops[-1])
    rgb = np.stack([np.interp(clipped, stops, colours[:, i]) for i in range(3)], axis=-1)
    rgb[np.isnan(ndvi)] = NO_DATA
    return rgb.round().astype(np.uint8)


def map_colours(
    ndvi: np.ndarray, cloudy: np.ndarray, land: np.ndarray, on_earth: np.ndarray
) -> np.ndarray:
    """RGB uint8 (rows, columns, 3) of the map: NDVI on land seen clear, and the colours of
    water, cloudy land, no data and the outside (all arrays (rows, columns))."""
    rgb = ndvi_colours(ndvi)
    seen = ~np.isnan(ndvi)
    rgb[seen & ~land] = WATER
    rgb[seen & land & cloudy] = CLOUDY
    rgb[~on_earth] = OUTSIDE
    return rgb


def write_quicklook(composite: Path, png: Path, *, max_width: int = 2502) -> Path:
    """Write the NDVI quicklook of the composite file ``composite`` to ``png``."""
    import netCDF4
    from PIL import Image

    from nearline.composite._ancillary import Ancillary
    from nearline.grid import get_grid

    with netCDF4.Dataset(composite) as dataset:
        attrs = {key: dataset.getncattr(key) for key in dataset.ncattrs()}
        ramp = BT4_RAMP if attrs.get("reducer") == "max-bt4" else NDVI_RAMP
        variable = dataset.variables[ramp.band]
        step = max(1, -(-variable.shape[1] // max_width))
        shown = np.ma.filled(variable[::step, ::step].astype(np.float32), np.nan)
        cloudy = np.zeros(shown.shape, bool)
        if "cloud" in dataset.variables:
            cloud = np.ma.filled(dataset.variables["cloud"][::step, ::step], 0)
            cloudy = np.asarray(cloud) != 0
    grid = get_grid(str(attrs["grid"]))
    lon, lat = grid.centre_lonlat(step=step)
    on_earth = ~np.isnan(lat)
    land = np.zeros(shown.shape, bool)
    land[on_earth] = Ancillary.load().is_land(lon[on_earth], lat[on_earth])
    if ramp is NDVI_RAMP:
        rgb = map_colours(shown, cloudy, land, on_earth)
    else:  # every cell seen by its temperature (clouds show as cold), unseen land paler
        rgb = ndvi_colours(shown, ramp)
        rgb[np.isnan(shown) & land] = NO_DATA_LAND
        rgb[~on_earth] = OUTSIDE
    framed = _with_legend(Image.fromarray(rgb), _title(attrs), ramp)
    png.parent.mkdir(parents=True, exist_ok=True)
    temporary = temporary_path(png)
    framed.save(temporary, format="PNG")
    publish(temporary, png)
    return png


def _title(attrs: dict[str, Any]) -> str:
    """What the picture is: product, period, grid, and what it was made from."""
    reducer = str(attrs.get("reducer", "max-ndvi"))
    product = {
        "max-ndvi": "NDVI, maximum-value composite",
        "max-bt4": "channel-4 temperature, warmest-observation composite",
    }.get(reducer, f"NDVI ({reducer})")
    start = str(attrs.get("time_coverage_start", "?"))
    end = str(attrs.get("time_coverage_end", start))
    period = start if start == end else f"{start} to {end}"
    if attrs.get("input_files"):  # a temporal composite of daily files
        made_of = f"{len(str(attrs['input_files']).split())} daily composites"
    else:
        made_of = f"{len(str(attrs.get('input_granules', '')).split())} granules"
    return f"{product}  |  {period}  |  grid {attrs.get('grid', '?')}  |  {made_of}"


def _font(size: int) -> Any:
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def _with_legend(image: Any, title: str, ramp: Ramp) -> Any:
    """The map above a strip with the title, the ramp's colour bar and the legend."""
    from PIL import Image, ImageDraw

    width = max(image.width, _MIN_WIDTH)
    canvas = Image.new("RGB", (width, image.height + _STRIP), OUTSIDE)
    canvas.paste(image, ((width - image.width) // 2, 0))
    draw = ImageDraw.Draw(canvas)
    top = image.height
    draw.text((16, top + 10), title, fill=(0, 0, 0), font=_font(22))
    left, bar_top, bar_width, bar_height = _BAR
    low, high = ramp.anchors[0][0], ramp.anchors[-1][0]
    values = low + (high - low) * np.arange(bar_width) / (bar_width - 1)
    bar = np.repeat(ndvi_colours(values, ramp)[None, :, :], bar_height, axis=0)
    canvas.paste(Image.fromarray(bar), (left, top + bar_top))
    draw.rectangle(
        (left - 1, top + bar_top - 1, left + bar_width, top + bar_top + bar_height),
        outline=(0, 0, 0),
    )
    small = _font(15)
    for tick in ramp.ticks:
        x = left + round((tick - low) / (high - low) * (bar_width - 1))
        y = top + bar_top + bar_height
        draw.line((x, y, x, y + 5), fill=(0, 0, 0))
        text = format(tick, ramp.tick_format)
        draw.text((x, y + 7), text, fill=(0, 0, 0), font=small, anchor="mt")
    draw.text((left + bar_width + 10, top + bar_top), ramp.label, fill=(0, 0, 0), font=small)
    for number, (colour, label) in enumerate(ramp.legend):
        x = left + bar_width + 70 + (number // 2) * 220
        y = top + bar_top - 8 + (number % 2) * 28
        draw.rectangle((x, y, x + 18, y + 18), fill=colour, outline=(0, 0, 0))
        draw.text((x + 26, y + 1), label, fill=(0, 0, 0), font=small)
    return canvas

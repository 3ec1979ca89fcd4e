"""An NDVI quicklook PNG of a composite: what people look at first, readable without a GIS.

Land seen clear is coloured by NDVI, from pale (snow, bare ground, below 0) through brown
and yellow to dark green (dense vegetation, 0.8 and more). Each other kind of cell has a
colour of its own: water seen by some orbit (GLOBE's land mask, as the cloud mask uses),
land kept only cloudy because no orbit saw it clear, cells no orbit saw, and the
interruptions of the Goode projection. A strip under the map says what it is (product,
period, grid, how many granules) and carries the colour bar and the legend. Large grids are
thinned to at most ``max_width`` columns.
"""

from __future__ import annotations

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
WATER = (32, 66, 128)
CLOUDY = (190, 150, 215)  # land kept cloudy: no orbit saw it clear
NO_DATA = (150, 150, 150)
OUTSIDE = (255, 255, 255)  # off the Earth: the gaps between IGH's lobes
_LEGEND = (
    (WATER, "water"),
    (CLOUDY, "cloudy (never seen clear)"),
    (NO_DATA, "no data"),
    (OUTSIDE, "outside the projection"),
)
_STRIP = 104  # pixels of the legend strip under the map
_MIN_WIDTH = 1000  # the strip's layout needs this much; narrower maps are centred
_BAR = (28, 50, 480, 18)  # colour bar: left, top (in the strip), width, height


def ndvi_colours(ndvi: np.ndarray) -> np.ndarray:
    """RGB uint8 (..., 3) for NDVI values on the colour bar; NaN gives the no-data grey."""
    stops = np.array([a[0] for a in _ANCHORS])
    colours = np.array([a[1] for a in _ANCHORS], dtype=float)
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
        ndvi_variable = dataset.variables["ndvi"]
        step = max(1, -(-ndvi_variable.shape[1] // max_width))
        ndvi = np.ma.filled(ndvi_variable[::step, ::step].astype(np.float32), np.nan)
        cloudy = np.zeros(ndvi.shape, bool)
        if "cloud" in dataset.variables:
            cloud = np.ma.filled(dataset.variables["cloud"][::step, ::step], 0)
            cloudy = np.asarray(cloud) != 0
        attrs = {key: dataset.getncattr(key) for key in dataset.ncattrs()}
    grid = get_grid(str(attrs["grid"]))
    lon, lat = grid.centre_lonlat(step=step)
    on_earth = ~np.isnan(lat)
    land = np.zeros(ndvi.shape, bool)
    land[on_earth] = Ancillary.load().is_land(lon[on_earth], lat[on_earth])
    image = Image.fromarray(map_colours(ndvi, cloudy, land, on_earth))
    framed = _with_legend(image, _title(attrs))
    png.parent.mkdir(parents=True, exist_ok=True)
    temporary = temporary_path(png)
    framed.save(temporary, format="PNG")
    publish(temporary, png)
    return png


def _title(attrs: dict[str, Any]) -> str:
    """What the picture is: product, period, grid, and what it was made from."""
    reducer = str(attrs.get("reducer", "max-ndvi"))
    product = "NDVI, maximum-value composite" if reducer == "max-ndvi" else f"NDVI ({reducer})"
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


def _with_legend(image: Any, title: str) -> Any:
    """The map above a strip with the title, the NDVI colour bar and the legend."""
    from PIL import Image, ImageDraw

    width = max(image.width, _MIN_WIDTH)
    canvas = Image.new("RGB", (width, image.height + _STRIP), OUTSIDE)
    canvas.paste(image, ((width - image.width) // 2, 0))
    draw = ImageDraw.Draw(canvas)
    top = image.height
    draw.text((16, top + 10), title, fill=(0, 0, 0), font=_font(22))
    left, bar_top, bar_width, bar_height = _BAR
    low, high = NDVI_RANGE
    values = low + (high - low) * np.arange(bar_width) / (bar_width - 1)
    bar = np.repeat(ndvi_colours(values)[None, :, :], bar_height, axis=0)
    canvas.paste(Image.fromarray(bar), (left, top + bar_top))
    draw.rectangle(
        (left - 1, top + bar_top - 1, left + bar_width, top + bar_top + bar_height),
        outline=(0, 0, 0),
    )
    small = _font(15)
    for tick in (-0.2, 0.0, 0.2, 0.4, 0.6, 0.8):
        x = left + round((tick - low) / (high - low) * (bar_width - 1))
        y = top + bar_top + bar_height
        draw.line((x, y, x, y + 5), fill=(0, 0, 0))
        draw.text((x, y + 7), f"{tick:.1f}", fill=(0, 0, 0), font=small, anchor="mt")
    draw.text((left + bar_width + 10, top + bar_top), "NDVI", fill=(0, 0, 0), font=small)
    for number, (colour, label) in enumerate(_LEGEND):
        x = left + bar_width + 70 + (number // 2) * 220
        y = top + bar_top - 8 + (number % 2) * 28
        draw.rectangle((x, y, x + 18, y + 18), fill=colour, outline=(0, 0, 0))
        draw.text((x + 26, y + 1), label, fill=(0, 0, 0), font=small)
    return canvas

"""An NDVI quicklook PNG of a composite: a look at the result without a GIS.

NDVI runs from brown (bare, below 0.1) through yellow to dark green (dense vegetation, 0.8);
water and clouds (NDVI below 0) are blue, cells no orbit saw (and the interruptions of the
Goode projection) are light grey. Large grids are thinned to at most ``max_width`` columns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nearline.durable import publish, temporary_path

_ANCHORS = (  # NDVI, RGB
    (-0.2, (20, 60, 140)),
    (0.0, (70, 110, 170)),
    (0.05, (160, 130, 90)),
    (0.2, (215, 190, 110)),
    (0.4, (150, 190, 70)),
    (0.6, (60, 150, 50)),
    (0.9, (0, 80, 20)),
)
NO_DATA = (225, 225, 225)


def ndvi_colours(ndvi: np.ndarray) -> np.ndarray:
    """RGB uint8 (..., 3) for NDVI values; NaN gives the no-data grey."""
    stops = np.array([a[0] for a in _ANCHORS])
    colours = np.array([a[1] for a in _ANCHORS], dtype=float)
    clipped = np.clip(np.nan_to_num(ndvi, nan=stops[0]), stops[0], stops[-1])
    rgb = np.stack([np.interp(clipped, stops, colours[:, i]) for i in range(3)], axis=-1)
    rgb[np.isnan(ndvi)] = NO_DATA
    return rgb.round().astype(np.uint8)


def write_quicklook(composite: Path, png: Path, *, max_width: int = 2502) -> Path:
    """Write the NDVI quicklook of the composite file ``composite`` to ``png``."""
    import netCDF4
    from PIL import Image

    with netCDF4.Dataset(composite) as dataset:
        ndvi = dataset.variables["ndvi"]
        step = max(1, -(-ndvi.shape[1] // max_width))
        values = np.ma.filled(ndvi[::step, ::step].astype(np.float32), np.nan)
    png.parent.mkdir(parents=True, exist_ok=True)
    temporary = temporary_path(png)
    Image.fromarray(ndvi_colours(values)).save(temporary, format="PNG")
    publish(temporary, png)
    return png

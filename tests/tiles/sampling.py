"""What a map tile of a composite should show, worked out with numpy and pyproj alone from the
file as xarray reads it: each pixel centre projected onto the Goode grid with PROJ's igh, the
cell's value at an overview level the mean of its block's non-NaN values, and its colour the
legend's entry for that value."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import morecantile
import numpy as np
import pyproj
import xarray as xr
from PIL import Image

from nearline.grid import IGH_CRS, get_grid

SIZE = 256


def pixel_centres(matrix_set: str, zoom: int, row: int, col: int) -> tuple[np.ndarray, ...]:
    """Longitude and latitude of every pixel centre of a tile, (256, 256) each."""
    tms = morecantile.tms.get(matrix_set)
    left, bottom, right, top = tms.xy_bounds(morecantile.Tile(col, row, zoom))
    steps = (np.arange(SIZE) + 0.5) / SIZE
    x, y = np.meshgrid(left + (right - left) * steps, top - (top - bottom) * steps)
    crs = pyproj.CRS.from_user_input(tms.crs.root)
    return pyproj.Transformer.from_crs(crs, "OGC:CRS84", always_xy=True).transform(x, y)


def band_values(path: Path, band: str) -> np.ndarray:
    """A band (or the NDVI index of refl1 and refl2) in physical values, float64."""
    with xr.open_dataset(path) as dataset:
        if band != "ndvi-index":
            return dataset[band].values.astype(np.float64)
        red = dataset["refl1"].values.astype(np.float64)
        nir = dataset["refl2"].values.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (nir - red) / (nir + red)


def block_mean(values: np.ndarray, level: int) -> np.ndarray:
    """Means of the non-NaN values of 2^level blocks."""
    factor = 2**level
    rows, cols = (-(-n // factor) * factor for n in values.shape)
    padded = np.full((rows, cols), np.nan)
    padded[: values.shape[0], : values.shape[1]] = values
    blocks = padded.reshape(rows // factor, factor, cols // factor, factor)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # blocks with nothing in them
        return np.nanmean(blocks, axis=(1, 3))


def expected_values(
    path: Path, band: str, matrix_set: str, zoom: int, row: int, col: int, level: int
) -> np.ndarray:
    """The value each pixel of the tile samples, NaN where none."""
    lon, lat = pixel_centres(matrix_set, zoom, row, col)
    x, y = pyproj.Transformer.from_crs("OGC:CRS84", IGH_CRS, always_xy=True).transform(lon, lat)
    grid = get_grid("igh-8km")
    cell = grid.cell_size[0] * 2**level
    means = block_mean(band_values(path, band), level)
    cols = np.floor((x - grid.extent[0]) / cell)
    rows = np.floor((grid.extent[3] - y) / cell)
    inside = np.isfinite(x) & (rows >= 0) & (rows < grid.height / 2**level)
    inside &= (cols >= 0) & (cols < means.shape[1])
    values = np.full(lon.shape, np.nan)
    values[inside] = means[rows[inside].astype(int), cols[inside].astype(int)]
    return values


def legend_colours(legend: dict, values: np.ndarray) -> np.ndarray:
    """RGBA each value takes by the legend: its entry's colour, the end ones beyond the range;
    transparent for NaN."""
    edges = np.array([entry["from"] for entry in legend["entries"]][1:])
    colours = np.array(
        [[int(e["color"][i : i + 2], 16) for i in (1, 3, 5)] + [255] for e in legend["entries"]],
        dtype=np.uint8,
    )
    rgba = colours[np.searchsorted(edges, np.nan_to_num(values), side="right")]
    rgba[np.isnan(values)] = 0
    return rgba


def pixels(png: bytes) -> np.ndarray:
    """A PNG's RGBA pixels (transparent ones all zeros, as the tiles write them)."""
    image = Image.open(io.BytesIO(png))
    assert image.size == (SIZE, SIZE)
    assert image.mode == "RGBA"
    return np.asarray(image)


def expected_level(matrix_set: str, zoom: int, row: int, col: int, levels: int = 5) -> int:
    """The overview level a tile should read: the coarsest whose cell (8 km x 2^level) is no
    larger than the tile's pixel, east-west on the ground at its middle row."""
    lon, lat = pixel_centres(matrix_set, zoom, row, col)
    middle = np.radians(lat[SIZE // 2, 0])
    pixel = np.radians(lon[0, 1] - lon[0, 0]) * 6370997.0 * np.cos(middle)
    return int(min(levels, max(0, np.floor(np.log2(pixel / 8000.0)))))

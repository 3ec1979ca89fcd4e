"""The web page's world map: an equirectangular land and sea image made from the
``global_land_mask`` data (1 km cells), so the page needs no map tiles from the network.

The mask is 21,600 x 43,200 cells (933 MB unpacked). It is read as a stream, 30 rows at a
time, each block of 30 x 30 cells becoming one pixel shaded by its share of land, so making
the map holds a few megabytes, never the whole mask. It is made once, on first request, and
kept in the data folder.
"""

from __future__ import annotations

import importlib.util
import threading
import zipfile
from pathlib import Path

import numpy as np

from nearline.durable import publish, temporary_path

MASK_FILE = "globe_combined_mask_compressed.npz"
CELLS_PER_PIXEL = 30  # 1/120 degree cells: 1,440 x 720 pixels, a quarter degree each
LEVELS = 16  # shades from all sea to all land
SEA = np.array([184, 208, 228])
LAND = np.array([233, 228, 211])


def mask_path() -> Path:
    """The land mask's file, found without importing ``global_land_mask`` (its import
    unpacks the whole mask into memory)."""
    spec = importlib.util.find_spec("global_land_mask")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the global_land_mask package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / MASK_FILE


def land_share(mask: Path, *, step: int = CELLS_PER_PIXEL) -> np.ndarray:
    """The share of land (0 to 1) in each ``step`` x ``step`` block of the mask, north row
    first, from 180 W eastwards."""
    with zipfile.ZipFile(mask) as archive, archive.open("mask.npy") as stream:
        version = np.lib.format.read_magic(stream)
        if version != (1, 0):
            raise ValueError(f"{mask}: unexpected .npy version {version}")
        (rows, cols), fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        if fortran or dtype != np.bool_ or rows % step or cols % step:
            raise ValueError(f"{mask}: unexpected mask layout {rows}x{cols} {dtype}")
        share = np.empty((rows // step, cols // step), np.float32)
        for row in range(rows // step):
            block = np.frombuffer(stream.read(cols * step), np.uint8).reshape(step, cols)
            sea = block.sum(axis=0, dtype=np.uint16).reshape(cols // step, step).sum(axis=1)
            share[row] = 1.0 - sea / (step * step)  # the mask is True over the ocean
    return share


def render(share: np.ndarray, png: Path) -> None:
    """Write ``share`` as a paletted PNG: sea blue to land sand in LEVELS shades."""
    from PIL import Image

    levels = np.rint(share * (LEVELS - 1)).astype(np.uint8)
    palette = [SEA + (LAND - SEA) * level / (LEVELS - 1) for level in range(LEVELS)]
    image = Image.fromarray(levels, mode="P")
    image.putpalette([round(value) for colour in palette for value in colour])
    temporary = temporary_path(png)
    image.save(temporary, format="PNG", optimize=True)
    publish(temporary, png)


class WorldMap:
    """The map image kept at ``path``, made on first use (one maker at a time)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def png(self) -> Path:
        """The PNG's path, made now if it is not there yet (a few seconds, once)."""
        with self._lock:
            if not self.path.is_file():
                self.path.parent.mkdir(parents=True, exist_ok=True)
                render(land_share(mask_path()), self.path)
        return self.path

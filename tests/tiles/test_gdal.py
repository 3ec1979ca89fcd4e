"""GDAL's OGC API driver (Debian's gdal-bin: what QGIS reads OGC API with) reads a gridded
collection's map tiles from a live server, and its pixels are numpy's sampling of the
composite in the legend's colours."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from ..live_service import LiveService
from .gridded import PUBLIC
from .sampling import expected_level, expected_values, legend_colours
from .test_tiles import AGREE, seen_tile

SIZE = 256
# GDAL 3.6 projects the collection's extent into the set's CRS to bound the raster, and a box
# reaching 89.9 degrees has no Web Mercator y: the set's own extent is given instead
WEB_MERCATOR = 20037508.342789244
BOUNDS = {
    "WebMercatorQuad": (-WEB_MERCATOR, -WEB_MERCATOR, WEB_MERCATOR, WEB_MERCATOR),
    "WorldCRS84Quad": (-180.0, -90.0, 180.0, 90.0),
}


def gdal(live: LiveService, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A GDAL command as bob, his token in GDAL_HTTP_HEADERS, its tile cache in ``folder``
    (GDAL keeps one in the working folder by default)."""
    env = {
        **os.environ,
        "GDAL_HTTP_HEADERS": f"Authorization: Bearer {live.tokens['bob']}",
        "GDAL_DEFAULT_WMS_CACHE_PATH": str(folder / "gdal-cache"),
    }
    result = subprocess.run(args, capture_output=True, text=True, env=env, cwd=folder, timeout=300)
    assert result.returncode == 0, result.stderr
    return result


def test_gdalinfo_finds_the_map_tiles(live: LiveService, tmp_path: Path) -> None:
    # API=TILES: the collection offers a coverage too, which GDAL's AUTO would open first
    url = f"OGCAPI:{live.url}/collections/{PUBLIC}"
    info = gdal(live, tmp_path, "gdalinfo", "-oo", "API=TILES", url).stdout
    assert "Driver: OGCAPI/OGCAPI" in info
    assert "TITLE=Pathfinder composites, 8 km" in info
    assert "Size is 32768," in info  # WorldCRS84Quad's matrix 6 (GDAL's choice), 256 x 2^7 wide
    assert re.search(r"Band 4 Block=\d+x\d+ Type=Byte, ColorInterp=Alpha", info)


@pytest.mark.parametrize(("matrix_set", "zoom"), [("WebMercatorQuad", 3), ("WorldCRS84Quad", 4)])
def test_gdal_reads_a_tile_as_numpy_samples_it(
    live: LiveService, composite: Path, tmp_path: Path, matrix_set: str, zoom: int
) -> None:
    row, col = seen_tile(composite, matrix_set, zoom)
    out = tmp_path / "tile.png"
    bounds = dict(zip(("MINX", "MINY", "MAXX", "MAXY"), BOUNDS[matrix_set], strict=True))
    gdal(
        live,
        tmp_path,
        "gdal_translate",
        *("-oo", "API=TILES", "-oo", f"TILEMATRIXSET={matrix_set}", "-oo", f"TILEMATRIX={zoom}"),
        *(item for name, value in bounds.items() for item in ("-oo", f"{name}={value!r}")),
        *("-srcwin", str(col * SIZE), str(row * SIZE), str(SIZE), str(SIZE)),
        *("-of", "PNG", f"OGCAPI:{live.url}/collections/{PUBLIC}", str(out)),
    )
    read = np.asarray(Image.open(out).convert("RGBA"))
    with live.client("bob") as client:
        legend = client.get(f"/collections/{PUBLIC}/map/legend").json()  # the NDVI index's
    level = expected_level(matrix_set, zoom, row, col)
    expected = expected_values(composite, "ndvi-index", matrix_set, zoom, row, col, level)
    assert np.isfinite(expected).sum() > 500
    wanted = legend_colours(legend, expected)
    assert np.mean(np.all(read == wanted, axis=-1)) >= AGREE

"""Map tiles of a composite: PNG tiles of zooms 0 to 6 in WebMercatorQuad from nearline's OGC
API - Tiles, first drawn (no tile kept, the overviews made beforehand, once) and then kept,
against titiler (titiler.core, in an environment of its own) serving the same band as a
Cloud-Optimized GeoTIFF (the composite's Goode grid, deflate, 5 overview levels averaged by
rio-cogeo): the same tiles, band bt4 in the same colours (200 to 320 K, inferno), one client
asking one tile at a time on a kept connection.

The tiles: every one of zooms 0 to 3 and 100 drawn at random (seed 0) of each of zooms 4 to 6.

Beside them, the physical limit, in this process: for each tile, the window of the overview
level it needs (``nearline.tiles.footprint``: what nearline reads) read straight from the
Zarr store (zarr; level 0: the composite with h5py), and the tile's RGBA encoded as PNG with
the same encoder (``nearline.tiles.encode``, Pillow); where each pixel falls and its colours
are left out.

    .venv/bin/python benchmarks/tiles.py [--orbits 14] [--out bench-output/tiles] [--update-docs]
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
import xarray as xr

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "benchmarks"))

from _common import command_line, machine_summary, markdown_table, now_stamp  # noqa: E402
from _gridded_bench import report, served, uptime  # noqa: E402
from _peer_env import peer_python, run_peer  # noqa: E402
from nearline.grid import get_grid  # noqa: E402
from nearline.testing.gridded import make_composite  # noqa: E402
from nearline.testing.ogc_suites import free_port  # noqa: E402
from nearline.tiles import MapTiles, encode, footprint  # noqa: E402

REQUIREMENTS = PROJECT / "benchmarks" / "tiles-peer-requirements.txt"
COLLECTION = "composite-8km"
BAND, LOW, HIGH, RAMP = "bt4", 200, 320, "inferno"
MATRIX_SET = "WebMercatorQuad"
MAKE_COG = """
import sys
import numpy as np, rasterio
from rasterio.transform import from_origin
from rio_cogeo.cogeo import cog_translate
from rio_cogeo.profiles import cog_profiles
values, plain, cog = np.load(sys.argv[1]), sys.argv[2], sys.argv[3]
profile = dict(driver="GTiff", width=values.shape[1], height=values.shape[0], count=1,
    dtype="float32", crs="+proj=igh +R=6370997 +units=m +no_defs", nodata=np.nan,
    transform=from_origin(-20016000.0, 8672000.0, 8000.0, 8000.0))
with rasterio.open(plain, "w", **profile) as out:
    out.write(values, 1)
cog_translate(plain, cog, cog_profiles.get("deflate"), overview_resampling="average",
    overview_level=5, quiet=True)
"""
TITILER_APP = """
from fastapi import FastAPI
from titiler.core.factory import TilerFactory
app = FastAPI()
app.include_router(TilerFactory().router)
"""


def tile_list() -> list[tuple[int, int, int]]:
    """(zoom, row, col): all of zooms 0-3, 100 at random of each of 4-6."""
    pick = random.Random(0)
    tiles = [(z, y, x) for z in range(4) for y in range(2**z) for x in range(2**z)]
    for z in (4, 5, 6):
        tiles += [(z, pick.randrange(2**z), pick.randrange(2**z)) for _ in range(100)]
    return tiles


def timed(url: Callable[[int, int, int], str], tiles: list[tuple[int, int, int]]) -> list[float]:
    """Seconds of each tile, asked one at a time on one kept connection."""
    took = []
    with httpx.Client(timeout=300) as client:
        for zoom, row, col in tiles:
            began = time.perf_counter()
            response = client.get(url(zoom, row, col))
            took.append(time.perf_counter() - began)
            if response.status_code != 200 or not response.content.startswith(b"\x89PNG"):
                raise RuntimeError(f"{url(zoom, row, col)}: {response.status_code}")
    return took


def table_row(name: str, took: list[float]) -> list[str]:
    ordered = sorted(took)
    p95 = ordered[int(0.95 * len(ordered)) - 1]
    return [name, str(len(took)), f"{statistics.median(took) * 1e3:.1f}", f"{p95 * 1e3:.1f}"]


def nearline_rows(out: Path, composite: Path, tiles: list) -> list[list[str]]:
    with served(out / "data", [composite], COLLECTION, "Pathfinder composite") as url:
        base = f"{url}/collections/{COLLECTION}/map/tiles/{MATRIX_SET}"
        httpx.get(f"{base}/0/0/0", timeout=300).raise_for_status()  # the overviews, once

        def tile(zoom: int, row: int, col: int) -> str:
            return f"{base}/{zoom}/{row}/{col}?band={BAND}"

        return [
            table_row("nearline, drawn (no tile kept)", timed(tile, tiles)),
            table_row("nearline, kept", timed(tile, tiles)),
        ]


def floor_row(out: Path, composite: Path, tiles: list) -> list[str]:
    """The physical limit of each tile: its window's bytes read, its PNG encoded."""
    import h5py

    kept = MapTiles(out / "data" / "tiles")  # the overviews the server made
    overviews = kept.overviews(composite)
    style = kept.style(composite, BAND)
    took = []
    for zoom, row, col in tiles:
        where = footprint(overviews, MATRIX_SET, zoom, row, col)
        rgba = style.paint(kept.draw(composite, MATRIX_SET, zoom, row, col, BAND).values)
        began = time.perf_counter()
        if where.level == 0:
            with h5py.File(composite, "r") as hdf5:
                hdf5[BAND][where.rows, where.cols]
        elif where.rows.stop > where.rows.start:
            overviews.read(BAND, where.level, where.rows, where.cols)
        encode(rgba)
        took.append(time.perf_counter() - began)
    return table_row("physical limit: the window read (zarr, h5py), the PNG encoded", took)


def titiler_rows(out: Path, composite: Path, tiles: list) -> list[list[str]]:
    python = peer_python(out / "titiler-env", REQUIREMENTS)
    with xr.open_dataset(composite) as dataset:
        np.save(out / f"{BAND}.npy", dataset[BAND].values.astype(np.float32))
    cog = out / f"{BAND}-cog.tif"
    run_peer(python, MAKE_COG, str(out / f"{BAND}.npy"), str(out / "plain.tif"), str(cog))
    (out / "titiler_app.py").write_text(TITILER_APP)
    port = free_port()
    command = [str(python), "-m", "uvicorn", "titiler_app:app", "--port", str(port)]
    with open(out / "titiler.log", "wb") as log:
        server = subprocess.Popen(command, cwd=out, stdout=log, stderr=log)
    try:
        url = f"http://127.0.0.1:{port}"
        while not answers(f"{url}/openapi.json"):
            if server.poll() is not None:
                raise RuntimeError(f"titiler did not start; its log: {out / 'titiler.log'}")
            time.sleep(0.2)
        query = f"url={cog}&rescale={LOW},{HIGH}&colormap_name={RAMP}"

        def tile(zoom: int, row: int, col: int) -> str:
            return f"{url}/tiles/WebMercatorQuad/{zoom}/{col}/{row}.png?{query}"

        httpx.get(tile(0, 0, 0), timeout=300).raise_for_status()
        return [table_row("titiler.core 2.4.0, the COG", timed(tile, tiles))]
    finally:
        server.terminate()
        server.wait(timeout=30)


def answers(url: str) -> bool:
    """Whether titiler answers at ``url`` yet."""
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--orbits", type=int, default=14)
    parser.add_argument("--out", type=Path, default=PROJECT / "bench-output" / "tiles")
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args(argv)
    out = args.out.absolute()
    out.mkdir(parents=True, exist_ok=True)
    composite = out / "composite" / "pathfinder-igh-8km-day-2012-12-12.nc"
    if not composite.is_file():
        composite = make_composite(out / "composite", orbits=args.orbits)
    tiles = tile_list()
    rows = nearline_rows(out, composite, tiles)
    rows += [floor_row(out, composite, tiles), *titiler_rows(out, composite, tiles)]
    with xr.open_dataset(composite) as dataset:
        earth = get_grid(dataset.attrs["grid"]).domain_mask()
        seen = float(np.isfinite(dataset[BAND].values[earth]).mean())
    table = markdown_table(["what", "tiles", "median (ms)", "p95 (ms)"], rows)
    text = (
        f"PNG tiles of zooms 0 to 6 (WebMercatorQuad, band {BAND}) of a synthetic day of "
        f"{args.orbits} NOAA-19 orbits composited to igh-8km (2,000 lines each; {BAND} in "
        f"{seen:.0%} of the Earth's cells), from nearline and from titiler "
        f"serving the same band as a COG (`{command_line()}` on {now_stamp()}; load: "
        f"`{uptime()}` at the end; machine: {machine_summary(out)}; one client, one tile at a "
        "time; nearline's overviews made before the first tile is timed; the physical limit, in "
        "this process: each tile's window of the overview level it needs read straight from "
        "the store, and its PNG encoded with nearline's encoder). The goal: drawn "
        "tiles at least as fast as titiler's, kept ones under 5 ms.\n\n" + table
    )
    report(text, "tiles", "## Map tiles: nearline against titiler", update_docs=args.update_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())

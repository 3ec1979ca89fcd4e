"""A coverage subset (issue 40): a 10 x 10 degree box of one band of a composite as GeoTIFF,
from nearline's OGC API - Coverages (``GET /collections/{id}/coverage?subset=Lon(..),Lat(..)
&properties=bt4&f=GeoTIFF`` on a live ``nearline serve``, one client on a kept connection),
against ``gdal_translate -projwin ... -b 1`` (Debian's gdal-bin) cutting the same cells out of
the same file, and the physical limit: the window's bytes read with h5py in this process, and
those values written as a GeoTIFF with rasterio. The outputs' values are compared with numpy
once, on the source file's.

The composite: a synthetic day of NOAA-19 orbits on igh-8km (12 bands, as tiles.py's); the
box: 140-150 E, 30-20 S (Australia), wholly seen by the day's bt4.

    .venv/bin/python benchmarks/coverage_subset.py [--composite FILE] [--orbits 14] [--repeats 40]
        [--out bench-output/coverage] [--update-docs]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import xarray as xr

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "benchmarks"))

from _common import command_line, machine_summary, markdown_table, now_stamp  # noqa: E402
from _gridded_bench import latency_cells, report, time_route, timed, uptime  # noqa: E402
from nearline.coverage import Box, Target, box_target, named_crs  # noqa: E402
from nearline.grid import get_grid  # noqa: E402
from nearline.testing.gridded import make_composite  # noqa: E402

COLLECTION = "composite-8km"
BAND = "bt4"
BOX = Box(140, -30, 150, -20)
OUTPUTS = ("nearline", "gdal", "gdal-cog", "gdal-in-process", "floor")
GOAL = 1.5  # nearline's median at most this many times gdal_translate's


def window(grid_name: str, target: Target) -> tuple[slice, slice]:
    """The grid rows and columns the target's cells are (one pixel a cell)."""
    grid = get_grid(grid_name)
    rows, cols = target.rows(grid), target.cols(grid)
    return slice(int(rows[0]), int(rows[-1]) + 1), slice(int(cols[0]), int(cols[-1]) + 1)


def gdal_command(composite: Path, target: Target, out: Path, *options: str) -> list[str]:
    """``gdal_translate -projwin`` of the target's extent (the grid's metres), band 1 of the
    band's netCDF subdataset, to ``out``."""
    xmin, ymin, xmax, ymax = (repr(edge) for edge in target.extent)
    source = f"NETCDF:{composite}:{BAND}"
    return ["gdal_translate", "-q", "-projwin", xmin, ymax, xmax, ymin, "-b", "1", *options,
            source, str(out)]  # fmt: skip


def run_quietly(command: list[str]) -> None:
    """Run a command; its output is dropped (GDAL warns of the Goode grid's interruptions)."""
    subprocess.run(command, check=True, capture_output=True)


def read_window(composite: Path, rows: slice, cols: slice) -> np.ndarray:
    """The band's stored values in the window: h5py, the file opened afresh, as a request's."""
    import h5py

    with h5py.File(composite, "r") as hdf5:
        return hdf5[BAND][rows, cols]


def write_floor_geotiff(
    composite: Path, rows: slice, cols: slice, target: Target, grid_name: str, out: Path
) -> None:
    """The window read with h5py, unpacked to float32 and written as a plain GeoTIFF with
    rasterio, the CRS named as nearline names it (GDAL finds its parts at once): the least a
    GeoTIFF of these values costs in Python."""
    import h5py
    import rasterio
    from rasterio.transform import from_origin

    with h5py.File(composite, "r") as hdf5:
        band = hdf5[BAND]
        stored = band[rows, cols]
        scale, offset = float(band.attrs["scale_factor"][0]), float(band.attrs["add_offset"][0])
        fill = band.attrs["_FillValue"][0]
    values = (stored * scale + offset).astype(np.float32)
    values[stored == fill] = np.nan
    grid = get_grid(grid_name)
    xmin, _, _, ymax = target.extent
    profile = dict(driver="GTiff", width=target.width, height=target.height, count=1,
                   dtype="float32", crs=named_crs(grid.crs), nodata=np.nan,
                   transform=from_origin(xmin, ymax, *grid.cell_size))  # fmt: skip
    with rasterio.open(out, "w", **profile) as raster:
        raster.write(values, 1)


def gdal_in_process(composite: Path, rows: slice, cols: slice, out: Path) -> None:
    """GDAL's own work without a process's start: the band's netCDF subdataset opened with
    rasterio (GDAL's netCDF driver), the window read and written as a GeoTIFF as it is
    stored (int16, its scale and offset), as gdal_translate writes it."""
    import rasterio
    from rasterio.windows import Window, transform

    with rasterio.open(f"NETCDF:{composite}:{BAND}") as source:
        cut = Window(cols.start, rows.start, cols.stop - cols.start, rows.stop - rows.start)
        values = source.read(1, window=cut)
        profile = dict(driver="GTiff", width=cut.width, height=cut.height, count=1,
                       dtype=source.dtypes[0], crs=source.crs, nodata=source.nodata,
                       transform=transform(cut, source.transform))  # fmt: skip
        with rasterio.open(out, "w", **profile) as raster:
            raster.write(values, 1)
            raster.scales, raster.offsets = source.scales[:1], source.offsets[:1]


def physical(path: Path) -> np.ndarray:
    """A GeoTIFF's band 1 in physical values (GDAL's packing undone), NaN where none is."""
    import rasterio

    with rasterio.open(path) as tiff:
        stored = tiff.read(1)
        values = (stored.astype(np.float64) * tiff.scales[0] + tiff.offsets[0]).astype(np.float32)
        if tiff.nodata is not None and not np.isnan(tiff.nodata):
            values[stored == tiff.nodata] = np.nan
        return values


def check_values(composite: Path, rows: slice, cols: slice, outputs: dict[str, Path]) -> None:
    """Every output holds the source file's values of the window (xarray's, unpacked)."""
    with xr.open_dataset(composite) as dataset:
        expected = dataset[BAND].values[rows, cols].astype(np.float32)
    for name, path in outputs.items():
        got = physical(path)
        if not np.array_equal(got, expected, equal_nan=True):
            raise AssertionError(f"{name}'s GeoTIFF differs from the file's values")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--composite", type=Path, help="a composite to use (default: made)")
    parser.add_argument("--orbits", type=int, default=14)
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--out", type=Path, default=PROJECT / "bench-output" / "coverage")
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args(argv)
    out = args.out.absolute()
    out.mkdir(parents=True, exist_ok=True)
    composite = args.composite or out / "composite" / "pathfinder-igh-8km-day-2012-12-12.nc"
    if not composite.is_file():
        composite = make_composite(out / "composite", orbits=args.orbits)
    composite = composite.absolute()
    with xr.open_dataset(composite) as dataset:
        grid_name = dataset.attrs["grid"]
    target = box_target(get_grid(grid_name), BOX)
    rows, cols = window(grid_name, target)
    box = f"Lon({BOX.west}:{BOX.east}),Lat({BOX.south}:{BOX.north})"
    query = {"subset": box, "properties": BAND, "f": "GeoTIFF"}
    outputs = {
        name: out / f"{name}.tif"
        for name in ("nearline", "gdal", "gdal-cog", "gdal-in-process", "floor")
    }

    route = f"/collections/{COLLECTION}/coverage"
    nearline, answer = time_route(out / "data", [composite], COLLECTION, route, query,
                                  repeats=args.repeats, warmup=args.warmup)  # fmt: skip
    outputs["nearline"].write_bytes(answer.content)
    bytes_read = int(answer.headers["Nearline-Bytes-Read"])

    plain = gdal_command(composite, target, outputs["gdal"])
    cog = gdal_command(composite, target, outputs["gdal-cog"], "-of", "COG", "-co",
                       "COMPRESS=DEFLATE")  # fmt: skip
    gdal = timed(lambda: run_quietly(plain), args.repeats, args.warmup)
    gdal_cog = timed(lambda: run_quietly(cog), args.repeats, args.warmup)
    in_process = timed(
        lambda: gdal_in_process(composite, rows, cols, outputs["gdal-in-process"]),
        args.repeats,
        args.warmup,
    )
    bare = timed(lambda: read_window(composite, rows, cols), args.repeats, args.warmup)
    floor = timed(
        lambda: write_floor_geotiff(composite, rows, cols, target, grid_name, outputs["floor"]),
        args.repeats,
        args.warmup,
    )
    check_values(composite, rows, cols, outputs)

    reference = float(np.median(gdal))
    timings = {
        "nearline, GET .../coverage (COG, float32, deflate)": nearline,
        "gdal_translate -projwin -b 1 (GeoTIFF, int16 as stored)": gdal,
        "gdal_translate ... -of COG -co COMPRESS=DEFLATE": gdal_cog,
        "GDAL in this process (rasterio: window read, GeoTIFF written)": in_process,
        "physical limit: h5py reads the window": bare,
        "physical limit: h5py + rasterio writes a GeoTIFF": floor,
    }
    rows_of_table = [[name, *latency_cells(took, reference)] for name, took in timings.items()]
    ratio = float(np.median(nearline)) / reference
    own = float(np.median(nearline)) / float(np.median(in_process))
    verdict = "met" if ratio <= GOAL else "missed"
    table = markdown_table(
        ["what", "repeats", "median (ms)", "p95 (ms)", "median / gdal_translate's"],
        rows_of_table,
    )
    text = (
        f"A {BOX.east - BOX.west:g}° × {BOX.north - BOX.south:g}° box ({box}, "
        f"{target.width} × {target.height} cells of igh-8km) of band {BAND} of a synthetic day's "
        f"composite as GeoTIFF (`{command_line()}` on {now_stamp()}; machine: "
        f"{machine_summary(out)}; load: `{uptime()}` at the end; each run timed "
        f"{args.repeats} times after {args.warmup} untimed, one after another, under "
        "`flock /tmp/nearline-bench.lock`). nearline: one client on a kept connection to a live "
        f"`nearline serve` (it read {bytes_read:,} bytes of the file); gdal_translate: the "
        "command, its start included, as a user runs it on the file; the physical limit: in "
        "this process, the file opened and the window read with h5py, then unpacked and "
        "written with rasterio (a plain GeoTIFF). Every output's values equal the file's "
        f"(numpy). The goal, nearline within {GOAL}× of gdal_translate: **{verdict}** "
        f"({ratio:.2f}×); against GDAL's work alone, in this process, {own:.2f}×.\n\n{table}"
    )
    header = "## Coverage subset: nearline against gdal_translate"
    report(text, "coverage-subset", header, update_docs=args.update_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())

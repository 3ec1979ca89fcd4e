"""A point's time series over 30 days of composites (issue 40): nearline's OGC API - EDR
position query (``GET /collections/{id}/position?coords=POINT(lon lat)&datetime=a/b`` on a
live ``nearline serve``, one client on a kept connection, CoverageJSON), against the physical
limit, that pixel read with h5py from each of the 30 files in this process, and against
xarray's ``open_mfdataset`` over the 30 files, as a user of the files would ask it. The series'
values are compared with numpy once.

The composites: 30 daily files of ``nearline.testing.gridded.write_gridded`` on igh-8km
(one band, ndvi, int16 in 128 x 1024 chunks, every cell a value of its own), catalogued as
one gridded collection; made once in ``--out`` and kept.

    .venv/bin/python benchmarks/edr_series.py [--repeats 40] [--out bench-output/edr-series]
        [--update-docs]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from datetime import date, timedelta
from pathlib import Path

import numpy as np

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "benchmarks"))

from _common import command_line, machine_summary, markdown_table, now_stamp  # noqa: E402
from _gridded_bench import latency_cells, percentiles, report, time_route, timed, uptime  # noqa: E402
from nearline.grid import get_grid  # noqa: E402
from nearline.testing.gridded import write_gridded  # noqa: E402

COLLECTION = "ndvi-daily"
BAND = "ndvi"
GRID = "igh-8km"
FIRST, DAYS = date(2012, 12, 1), 30
POINT = (15.25, 5.75)  # longitude, latitude: central Africa
GOAL = 0.100  # seconds


def daily_files(folder: Path) -> list[Path]:
    """The 30 daily files, written once (a few seconds each) and kept."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for number in range(DAYS):
        day = (FIRST + timedelta(days=number)).isoformat()
        path = folder / f"ndvi-{day}.nc"
        if not path.is_file():
            print(f"writing {path.name} ...", flush=True)
            partial = path.with_name(f".{path.name}.partial")
            write_gridded(partial, day=day, number=number, grid=GRID)
            partial.rename(path)
        files.append(path)
    return files


def pixel(files: list[Path], row: int, col: int) -> np.ndarray:
    """The physical limit: the cell's stored value read with h5py from each file, opened
    afresh (the band's packing undone once, as nearline does)."""
    import h5py

    stored = np.empty(len(files), np.int16)
    for number, path in enumerate(files):
        with h5py.File(path, "r") as hdf5:
            stored[number] = hdf5[BAND][row, col]
            scale = float(hdf5[BAND].attrs["scale_factor"][0])
    return stored.astype(np.float64) * scale


def xarray_series(files: list[Path], row: int, col: int) -> np.ndarray:
    """The cell's series as a user of xarray asks it: the files opened as one dataset."""
    import xarray as xr

    with xr.open_mfdataset(files, combine="nested", concat_dim="time", engine="h5netcdf") as ds:
        return ds[BAND][:, row, col].values


def series_of(answer: dict) -> np.ndarray:
    """A CoverageJSON point series' values of the band (NaN for null)."""
    values = answer["ranges"][BAND]["values"]
    return np.array([np.nan if v is None else v for v in values], np.float64)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--xarray-repeats", type=int, default=10)
    parser.add_argument("--out", type=Path, default=PROJECT / "bench-output" / "edr-series")
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args(argv)
    out = args.out.absolute()
    files = daily_files(out / "days")
    grid = get_grid(GRID)
    cell = int(grid.cell_index(np.array([POINT[0]]), np.array([POINT[1]])).ravel()[0])
    row, col = divmod(cell, grid.width)
    last = FIRST + timedelta(days=DAYS - 1)
    query = {
        "coords": f"POINT({POINT[0]} {POINT[1]})",
        "datetime": f"{FIRST.isoformat()}/{last.isoformat()}",
        "parameter-name": BAND,
    }
    route = f"/collections/{COLLECTION}/position"
    nearline, answer = time_route(out / "data", files, COLLECTION, route, query,
                                  repeats=args.repeats, warmup=args.warmup)  # fmt: skip
    floor = timed(lambda: pixel(files, row, col), args.repeats, args.warmup)
    mfdataset = timed(lambda: xarray_series(files, row, col), args.xarray_repeats, 1)

    expected = pixel(files, row, col)
    got = series_of(answer.json())
    if got.size != DAYS or not np.array_equal(got, expected):
        raise AssertionError(f"nearline's series {got} is not the files' {expected}")
    if not np.allclose(xarray_series(files, row, col), expected, rtol=0, atol=1e-9):
        raise AssertionError("xarray's series is not the files' (h5py's)")

    reference = statistics.median(floor)
    timings = {
        "nearline, GET .../position (CoverageJSON)": nearline,
        "physical limit: h5py reads the cell of each file": floor,
        "xarray.open_mfdataset over the 30 files, the cell's values": mfdataset,
    }
    rows_of_table = [[name, *latency_cells(took, reference)] for name, took in timings.items()]
    table = markdown_table(
        ["what", "repeats", "median (ms)", "p95 (ms)", "median / physical limit's"],
        rows_of_table,
    )
    p50, p95 = statistics.median(nearline), percentiles(nearline)[1]
    verdict = "met" if p50 < GOAL else "missed"
    text = (
        f"The series of one point ({query['coords']}, cell {row}, {col} of {GRID}) through "
        f"{DAYS} daily composites ({query['datetime']}; {DAYS} files of one int16 band in "
        f"128 × 1024 chunks), asked of nearline's EDR position query (`{command_line()}` on "
        f"{now_stamp()}; machine: {machine_summary(out)}; load: `{uptime()}` at the end; "
        f"each timed {args.repeats} times after {args.warmup} untimed, xarray "
        f"{args.xarray_repeats} times, under `flock /tmp/nearline-bench.lock`). nearline: one "
        "client on a kept connection to a live `nearline serve` (it read "
        f"{int(answer.headers['Nearline-Bytes-Read']):,} bytes of the files); the physical "
        "limit: in this process, each file opened with h5py and the cell read; xarray: "
        "`open_mfdataset` (h5netcdf) of the 30 files, the cell's 30 values. nearline's values "
        f"equal the files' (numpy). The goal, under {GOAL * 1e3:.0f} ms: **{verdict}** "
        f"(median {p50 * 1e3:.1f} ms, p95 {p95 * 1e3:.1f} ms).\n\n{table}"
    )
    header = "## EDR: a point's series over 30 daily composites"
    report(text, "edr-series", header, update_docs=args.update_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())

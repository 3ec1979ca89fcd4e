"""Benchmark: one synthetic day of AVHRR GAC orbits to a global composite, against pyresample.

In one run:

1. end to end: ``nearline.composite.run`` on a 14-orbit day to igh-8km (files already
   written and in the page cache, as after a read-ahead), repeated; wall time, where it went
   (planning, reading, compute, waiting, output), pixels per second and the peak resident
   memory of the process tree, for a few worker/reader counts;
2. the registration and compositing stage alone on the same swath points: nearline's
   projection + max-NDVI update, against pyresample's BucketResampler (max and average) and
   kd_tree nearest, and pyproj's forward projection alone;
3. the day against the stage: each end-to-end repeat of the default configuration (one
   worker per core, one reader) is followed by a measurement of the stage alone on one core,
   and the ratio end-to-end pixels/s / (cores x stage points/s) is taken per pair, so a
   machine shared with other work slows both sides of it alike; the median repeat's time is
   broken down by stage (planning, reading, geolocation, calibration, reflectance and
   terrain, cloud mask, registration and compositing, compressing, writing);
4. the limits: reading the granule files (cat to /dev/null) and a numpy copy of the same bytes;
5. igh-1km out of core: peak resident memory of the process tree with ``--memory 2GiB``.

    .venv/bin/python benchmarks/composite.py [--orbits 14] [--repeats 3] [--update-docs]
    .venv/bin/python benchmarks/composite.py --day-orbits 3 --configs 2+1 --skip-1km  # quick
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    command_line,
    machine_summary,
    markdown_table,
    now_stamp,
    replace_section,
)

PROJECT = Path(__file__).resolve().parents[1]
DOCS = PROJECT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- composite:begin -->", "<!-- composite:end -->"
DOCS_HEADER = "# Benchmarks\n"
DATE = "2012-12-12"
CORES = len(os.sched_getaffinity(0))
STAGE_REPEATS = 3  # stage runs (median) after each end-to-end repeat


def progress(message: str) -> None:
    print(f"[composite bench] {message}", file=sys.stderr, flush=True)


class TreeMemory:
    """Peak memory of a process and all its descendants, sampled while it runs.

    ``peak`` is the largest sum of the processes' proportional set sizes (PSS: a page
    shared by n processes counts 1/n in each, so forked copies and shared-memory slots are
    not counted twice); ``largest`` the largest resident set of any one process.
    """

    def __init__(self, pid: int, interval: float = 0.5) -> None:
        self.peak = 0
        self.largest = 0
        self._pid = pid
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        import psutil

        try:
            root = psutil.Process(self._pid)
        except psutil.Error:
            return
        while not self._stop.is_set():
            total = 0
            try:
                processes = [root, *root.children(recursive=True)]
            except psutil.Error:
                break
            for process in processes:
                try:
                    info = process.memory_full_info()
                except psutil.Error:
                    continue
                total += info.pss
                self.largest = max(self.largest, info.rss)
            self.peak = max(self.peak, total)
            self._stop.wait(self._interval)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def synthesize(folder: Path, orbits: int, lines: int) -> tuple[list[Path], float | None]:
    """The day's granules, made once and kept (a marker file says with which parameters),
    and how long making them took (None when they were already there)."""
    from nearline.swath import synthesize_day

    marker = folder / "day.json"
    wanted = {"date": DATE, "orbits": orbits, "lines": lines}
    if marker.exists() and json.loads(marker.read_text()) == wanted:
        return sorted(p for p in folder.iterdir() if p.suffix == ".nc"), None
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    progress(f"synthesizing {orbits} orbits of {lines} lines into {folder}")
    began = time.perf_counter()
    paths = synthesize_day(DATE, orbits, folder, lines_per_orbit=lines)
    seconds = time.perf_counter() - began
    progress(f"  took {seconds:.1f} s")
    marker.write_text(json.dumps(wanted))
    return sorted(paths), seconds


def read_limit(paths: list[Path]) -> dict[str, float]:
    """Reading every granule byte (page cache warm) and copying as many bytes in memory."""
    total = sum(p.stat().st_size for p in paths)
    buffer = bytearray(8 << 20)
    began = time.perf_counter()
    for path in paths:
        with open(path, "rb", buffering=0) as handle:
            while handle.readinto(buffer):
                pass
    read_seconds = time.perf_counter() - began
    source = np.ones(total // 8, dtype=np.int64)
    target = np.empty_like(source)
    np.copyto(target, source)
    began = time.perf_counter()
    np.copyto(target, source)
    copy_seconds = time.perf_counter() - began
    return {"bytes": total, "read_seconds": read_seconds, "copy_seconds": copy_seconds}


def child(spec: str) -> int:
    """Run one composite in this (fresh) process and print its result as JSON."""
    from nearline.composite import run

    args = json.loads(spec)
    result = run(args.pop("paths"), **args)
    summary = {
        "wall": result.wall_seconds,
        "pixels": result.pixels,
        "timings": result.timings,
        "bands": result.bands,
        "passes": result.passes,
    }
    print("RESULT " + json.dumps(summary), flush=True)
    return 0


def end_to_end(
    paths: list[Path], out: Path, *, grid: str, workers: int, readers: int, memory: str,
    repeats: int, stage_after: Callable[[], float] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Each repeat in a fresh process, so the memory measured is the run's alone.

    ``stage_after``: measures the stage rate (points/s on one core) after each repeat; each
    repeat's ratio to it is kept.
    """
    spec = {
        "paths": [str(p) for p in paths], "out": str(out), "grid": grid, "workers": workers,
        "readers": readers, "memory": memory,
    }  # fmt: skip
    samples = []
    for _ in range(repeats):
        load = os.getloadavg()[0]
        process = subprocess.Popen(
            [sys.executable, __file__, "--child", json.dumps(spec)],
            stdout=subprocess.PIPE,
            text=True,
        )
        with TreeMemory(process.pid) as tree:
            output, _ = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"composite run failed with exit code {process.returncode}")
        line = next(text for text in output.splitlines() if text.startswith("RESULT "))
        result = json.loads(line.split(" ", 1)[1])
        result.update(tree_peak=tree.peak, process_peak=tree.largest, load=load)
        samples.append(result)
        progress(f"  {grid} W={workers} R={readers}: {result['wall']:.2f} s, "
                 f"{result['pixels'] / result['wall'] / 1e6:.2f} M pixels/s, "
                 f"tree peak {tree.peak / 2**30:.2f} GiB (PSS)")  # fmt: skip
        if stage_after is not None:
            result["stage_rate"] = stage_after()
            result["ratio"] = result["pixels"] / result["wall"] / (CORES * result["stage_rate"])
            progress(f"    then the stage alone: {result['stage_rate'] / 1e6:.2f} M points/s; "
                     f"ratio {100 * result['ratio']:.1f}%")  # fmt: skip
    middle = sorted(samples, key=lambda s: s["wall"])[len(samples) // 2]
    ratios = {}
    if stage_after is not None:
        ratios = {
            "ratio": statistics.median(s["ratio"] for s in samples),
            "ratios": [s["ratio"] for s in samples],
            "stage_rate": statistics.median(s["stage_rate"] for s in samples),
        }
    return {
        **middle,
        **ratios,
        "wall": statistics.median(s["wall"] for s in samples),
        "walls": [s["wall"] for s in samples],
        "loads": [s["load"] for s in samples],
        "tree_peak": max(s["tree_peak"] for s in samples),
        "process_peak": max(s["process_peak"] for s in samples),
        "out_bytes": out.stat().st_size,
    }


def io_seconds(row: dict[str, Any]) -> float:
    """Wall time the run spends on I/O with no compute beside it.

    Reading the granules' tie points and telemetry for the plan, the time band owners sat
    waiting for lines (reads the servers did not hide behind compute), and copying the
    compressed bands into the output file. Compressing the bands is compute, done by the
    band owners, and is shown in its own column.
    """
    t = row["timings"]
    return t["plan_read"] + t["worker_wait_mean"] + t["output_write"] + t["output_close"]


def stage_points(paths: list[Path], n_points: int) -> dict[str, np.ndarray]:
    """Observations of every pixel of the day's first lines, by day and by night (the band
    owners leave most night lines out), until ``n_points`` pixels: lon, lat, NDVI, ..."""
    from nearline.composite._context import prepare
    from nearline.composite._observe import observe
    from nearline.composite._settings import CompositeSettings

    context = prepare(paths, CompositeSettings.parse(workers=1))
    chunks: list[Any] = []
    count = 0
    for info in context.plan.granules:
        with context.open_granule(info.index) as granule:
            for first in range(0, granule.n_lines, 1024):
                block = granule.read(first, min(first + 1024, granule.n_lines))
                calibration = context.calibrations[info.index].slice(first, first + block.n_lines)
                chunks.append(observe(block, calibration, context.ancillary, night=True))
                count += chunks[-1].lon.size
                if count >= n_points:
                    return {"observations": chunks, "context": context, "count": count}
    return {"observations": chunks, "context": context, "count": count}


def nearline_stage(points: dict[str, Any]) -> Callable[[], None]:
    """nearline's registration (footprints) + compositing of ``points`` once, as the band
    owners do it."""
    from nearline.grid import FootprintRegistrar

    context = points["context"]
    grid, reducer = context.plan.grid, context.reducer
    state = reducer.new_state(grid.width * grid.height)
    registrar = FootprintRegistrar(grid)

    def run_once() -> None:
        reducer.reset(state)
        for o in points["observations"]:
            cells, pixels = registrar.register(o.lon, o.lat)
            reducer.update(state, cells, o, pixels=pixels)

    return run_once


def stage_rate(points: dict[str, Any], repeats: int) -> float:
    """Points per second of nearline's stage on one core: the median of ``repeats`` runs."""
    run_once = nearline_stage(points)
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        run_once()
        times.append(time.perf_counter() - began)
    return points["count"] / statistics.median(times)


def stage(points: dict[str, Any], repeats: int) -> dict[str, float]:
    """Points per second of registration + compositing, nearline against its peers."""
    import dask.array as da
    import pyproj
    from pyresample import geometry, kd_tree
    from pyresample.bucket import BucketResampler

    context = points["context"]
    observations = points["observations"]
    grid = context.plan.grid
    lon = np.concatenate([o.lon.ravel() for o in observations])
    lat = np.concatenate([o.lat.ravel() for o in observations])
    ndvi = np.concatenate([o.ndvi.ravel() for o in observations])
    n = lon.size
    reducer = context.reducer
    state = reducer.new_state(grid.width * grid.height)

    def centres_stage() -> None:
        reducer.reset(state)
        for o in observations:
            cells = grid.cell_index(o.lon, o.lat)
            reducer.update(state, cells.ravel(), o)

    area = geometry.AreaDefinition(
        grid.name, grid.name, grid.name, grid.crs, grid.width, grid.height, grid.extent
    )
    transformer = pyproj.Transformer.from_crs("EPSG:4326", grid.crs, always_xy=True)

    def bucket(kind: str) -> None:
        lons = da.from_array(lon, chunks=4_000_000)
        lats = da.from_array(lat, chunks=4_000_000)
        resampler = BucketResampler(area, lons, lats)
        data = da.from_array(ndvi, chunks=4_000_000)
        if kind == "max":
            resampler.get_max(data).compute()
        else:
            resampler.get_average(data).compute()

    def nearest() -> None:
        swath = geometry.SwathDefinition(lons=lon, lats=lat)
        kd_tree.resample_nearest(swath, ndvi, area, radius_of_influence=12000, fill_value=None)

    def forward() -> None:
        transformer.transform(lon, lat)

    def ewa() -> None:  # elliptical weighted averaging, as polar2grid's ll2cr + fornav
        from pyresample.ewa import fornav, ll2cr

        lons = np.concatenate([o.lon for o in observations])
        lats = np.concatenate([o.lat for o in observations])
        values = np.concatenate([o.ndvi for o in observations])
        swath = geometry.SwathDefinition(lons=lons.astype(np.float64), lats=lats.astype(np.float64))
        _, columns, rows = ll2cr(swath, area)
        fornav(columns, rows, area, values, rows_per_scan=0)

    methods = {
        "nearline register footprints + max-NDVI composite": nearline_stage(points),
        "nearline register centres + max-NDVI (before issue 22)": centres_stage,
        "pyresample BucketResampler max": lambda: bucket("max"),
        "pyresample BucketResampler average": lambda: bucket("average"),
        "pyresample kd_tree nearest": nearest,
        "pyresample EWA (ll2cr + fornav)": ewa,
        "pyproj forward projection alone": forward,
    }
    rates = {}
    for name, method in methods.items():
        own = name.startswith("nearline")
        if own:
            method()  # warm up (numba, caches); the peers run once, they take minutes
        times = []
        for _ in range(repeats if own else 1):
            began = time.perf_counter()
            method()
            times.append(time.perf_counter() - began)
        rates[name] = n / statistics.median(times)
        progress(f"  {name}: {rates[name] / 1e6:.2f} M points/s")
    rates["points"] = n
    return rates


CHAIN_STAGES = {
    "geolocation": "geolocation (tie points to every pixel: lon, lat, angles)",
    "calibration": "calibration (counts to radiance and temperature)",
    "reflectance_and_terrain": "reflectance, NDVI, quality, terrain correction, land/sea",
    "cloud_mask": "cloud tests",
}


def breakdown(row: dict[str, Any]) -> list[tuple[str, str, float]]:
    """(stage, processes, processor seconds summed over them) of one end-to-end run, in
    chain order; the last row is what is left of wall x cores (processes starting and
    idling, and other work on the machine)."""
    t, workers = row["timings"], row["workers"]
    chain = [(label, "owners", t.get(f"chain_{key}", 0.0)) for key, label in CHAIN_STAGES.items()]
    compress = t["worker_scratch_mean"] * workers
    stages = [
        ("planning (sampling, calibration tables, numba warm-up)", "driver", t["plan"]),
        ("reading granules into shared memory", "servers", t["server_read_total"]),
        *chain,
        (
            "registration + compositing (and taking deliveries)",
            "owners",
            t["worker_cpu_total"] - sum(c[2] for c in chain) - compress,
        ),
        ("compressing the bands", "owners", compress),
        ("writing the output file", "driver", t["output_write"] + t["output_close"]),
    ]
    rest = row["wall"] * CORES - sum(seconds for _, _, seconds in stages)
    return [*stages, ("the rest of wall x cores", "", rest)]


def day_against_stage(row: dict[str, Any]) -> list[str]:
    """The headline: end-to-end rate against cores x the stage rate, and where time went."""
    rate, t = row["pixels"] / row["wall"], row["timings"]
    loads = ", ".join(f"{load:.1f}" for load in row["loads"])
    ratios = ", ".join(f"{100 * r:.1f}%" for r in row["ratios"])
    lines = [
        "### The day against the registration + compositing stage",
        "",
        f"Default configuration ({row['workers']} workers + {row['readers']} reader on "
        f"{CORES} cores): end to end {rate / 1e6:.2f} M pixels/s (median wall "
        f"{row['wall']:.2f} s for {row['pixels'] / 1e6:.1f} M pixels of {row['granules']} "
        f"orbits); the stage alone, measured right after each repeat on one core, "
        f"{row['stage_rate'] / 1e6:.2f} M points/s (median). End to end = **"
        f"{100 * row['ratio']:.1f}%** of {CORES} x the stage rate (median of the repeats' "
        f"ratios: {ratios}; target >= 35%). The machine is shared with other work (load "
        f"average over the last minute when the repeats began: {loads}), so read the medians "
        "and the ratio, not single times.",
        "",
        "Where the median repeat's time went: processor seconds of each stage, summed over "
        "the processes doing it (the owners' chain stages and total are processor time, the "
        "others wall time of work that does not wait); share of wall x cores; ns per swath "
        f"pixel. The owners waited {t['worker_wait_mean'] * row['workers']:.2f} s in all "
        "for lines.",
        "",
    ]
    table = []
    for stage, where, seconds in breakdown(row):
        table.append([
            stage, where, f"{seconds:.2f}", f"{100 * seconds / (row['wall'] * CORES):.1f}%",
            f"{seconds / row['pixels'] * 1e9:.0f}",
        ])  # fmt: skip
    headers = ["stage", "where", "seconds", "share", "ns/pixel"]
    return [*lines, markdown_table(headers, table), ""]


def report(
    args: argparse.Namespace,
    limit: dict,
    rows: list[dict],
    stage_rates: dict,
    one_km: dict | None,
    synth_seconds: float | None,
    coverage: Any = None,
) -> str:
    day = rows[0]["granules"] if rows else args.orbits
    subset = f" (end to end: the first {day} of them)" if day < args.orbits else ""
    lines = [
        "## composite: a day of AVHRR orbits to a global composite",
        "",
        f"`{command_line()}` — {now_stamp()}",
        "",
        f"Machine: {machine_summary(Path(args.out))}.",
        "",
        f"Input: {args.orbits} synthetic NOAA-19 GAC orbits of {args.lines} lines x 409 "
        f"pixels ({limit['bytes'] / 1e9:.2f} GB of granule files, in the page cache), to "
        f"{args.grid}{subset}; median of {args.repeats} runs each. I/O = sampling reads + "
        "band owners waiting for lines + writing the output; compressing the output is the "
        "band owners' compute.",
        "",
    ]
    headers = [
        "workers + readers", "wall (s)", "I/O (s)", "I/O share", "plan (s)",
        "owner compute (s)", "owner compress (s)", "owner wait (s)", "M pixels/s",
        "tree peak PSS (GiB)",
    ]  # fmt: skip
    table = []
    for row in rows:
        io = io_seconds(row)
        t = row["timings"]
        table.append([
            f"{row['workers']} + {row['readers']}",
            f"{row['wall']:.2f}",
            f"{io:.2f}",
            f"{100 * io / row['wall']:.1f}%",
            f"{t['plan']:.2f}",
            f"{t['worker_compute_mean']:.2f}",
            f"{t['worker_scratch_mean']:.2f}",
            f"{t['worker_wait_mean']:.2f}",
            f"{row['pixels'] / row['wall'] / 1e6:.2f}",
            f"{row['tree_peak'] / 2**30:.2f}",
        ])  # fmt: skip
    read_rate = limit["bytes"] / limit["read_seconds"] / 1e9
    copy_rate = limit["bytes"] / limit["copy_seconds"] / 1e9
    lines += [markdown_table(headers, table), ""]
    if coverage is not None:
        lines += [
            f"Coverage of that composite: {coverage.filled:,} cells filled, "
            f"{coverage.pinholes:,} pinholes ({100 * coverage.pinhole_fraction:.3f}%: empty cells "
            "with at least 6 of their 8 neighbours filled).",
            "",
        ]
    lines += next((day_against_stage(row) for row in rows if "ratio" in row), [])
    lines += [
        f"Limits in the same run: reading every granule byte {read_rate:.2f} GB/s "
        f"({limit['read_seconds']:.2f} s for the day); a numpy copy of as many bytes "
        f"{copy_rate:.2f} GB/s ({limit['copy_seconds']:.2f} s).",
        "",
        f"Registration + compositing alone on the same {stage_rates['points'] / 1e6:.1f} M "
        f"swath points to {args.grid}, one core (nearline: median of {args.repeats} after a "
        "warm-up; the peers: one run each):",
        "",
    ]
    stage_rows = [
        [name, f"{rate / 1e6:.2f}"] for name, rate in stage_rates.items() if name != "points"
    ]
    lines += [markdown_table(["method", "M points/s"], stage_rows), ""]
    ours = stage_rates["nearline register footprints + max-NDVI composite"]
    peer = stage_rates["pyresample BucketResampler max"]
    lines.append(f"nearline's stage runs at {ours / peer:.1f}x pyresample's BucketResampler max.")
    if one_km is not None:
        lines += [
            "",
            f"igh-1km out of core (`--memory {args.memory_1km}`, 2 workers + 1 reader): wall "
            f"{one_km['wall']:.1f} s, {one_km['bands']} bands in {one_km['passes']} passes, "
            f"peak memory of the whole process tree {one_km['tree_peak'] / 2**30:.2f} GiB "
            f"(sum of PSS; largest single process RSS {one_km['process_peak'] / 2**30:.2f} "
            "GiB), output "
            f"{one_km['out_bytes'] / 1e6:.0f} MB.",
        ]
    if synth_seconds is not None:
        lines += ["", f"Synthesizing the day took {synth_seconds:.1f} s."]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--orbits", type=int, default=14, help="orbits of the synthetic day made and kept")
    add(
        "--day-orbits",
        type=int,
        default=0,
        help="composite only the first N of them end to end (quick iteration; default all)",
    )
    add("--lines", type=int, default=13000)
    add("--repeats", type=int, default=3)
    add("--grid", default="igh-8km")
    add("--stage-points", type=int, default=20_000_000)
    add("--configs", default="2+1,1+1,2+2", help="workers+readers pairs, comma separated")
    add("--skip-1km", action="store_true")
    add("--memory-1km", default="2GiB")
    add("--out", default=str(PROJECT / "bench-output" / "composite"))
    add("--update-docs", action="store_true", help=f"rewrite docs/{DOCS.name}")
    add(
        "--only",
        choices=["all", "stage"],
        default="all",
        help="stage: only the registration + compositing stage against its peers",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return child(argv[1])
    args = build_parser().parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    paths, synth_seconds = synthesize(out / "day", args.orbits, args.lines)
    if args.only == "stage":
        if args.update_docs:
            raise SystemExit("--update-docs needs the whole benchmark (--only all)")
        progress("registration + compositing stage against pyresample")
        rates = stage(stage_points(paths, args.stage_points), args.repeats)
        ours = rates["nearline register footprints + max-NDVI composite"]
        rows = [[name, f"{rate / 1e6:.2f}"] for name, rate in rates.items() if name != "points"]
        print(markdown_table(["method", "M points/s"], rows))
        peer = rates["pyresample BucketResampler max"]
        print(f"\n{rates['points'] / 1e6:.1f} M points; nearline's stage: {ours / peer:.1f}x peer")
        return 0
    limit = read_limit(paths)
    progress("warm-up run (numba caches, page cache)")
    from nearline.composite import run

    run(paths[:1], out=out / "warmup.nc", grid=args.grid, workers=1)
    progress("observations for the registration + compositing stage alone")
    points = stage_points(paths, args.stage_points)
    day = paths[: args.day_orbits or len(paths)]
    pairs = [tuple(int(v) for v in pair.split("+")) for pair in args.configs.split(",")]
    headline = (CORES, 1) if (CORES, 1) in pairs else pairs[0]
    rows = []
    for workers, readers in pairs:
        progress(f"end to end, {workers} workers + {readers} readers")
        row = end_to_end(
            day,
            out / "day.nc",
            grid=args.grid,
            workers=workers,
            readers=readers,
            memory="2GiB",
            repeats=args.repeats,
            stage_after=(
                (lambda: stage_rate(points, STAGE_REPEATS)) if (workers, readers) == headline
                else None
            ),
        )  # fmt: skip
        row.update(workers=workers, readers=readers, granules=len(day))
        rows.append(row)
    from nearline.composite._quality import composite_coverage

    coverage = composite_coverage(out / "day.nc")
    progress("registration + compositing stage against pyresample")
    stage_rates = stage(points, args.repeats)
    one_km = None
    if not args.skip_1km:
        progress(f"igh-1km out of core, --memory {args.memory_1km}")
        one_km = end_to_end(
            day,
            out / "day-1km.nc",
            grid="igh-1km",
            workers=2,
            readers=1,
            memory=args.memory_1km,
            repeats=1,
        )
        (out / "day-1km.nc").unlink()
    text = report(args, limit, rows, stage_rates, one_km, synth_seconds, coverage)
    print(text)
    if args.update_docs:
        replace_section(DOCS, BEGIN, END, text, DOCS_HEADER)
        progress(f"wrote {DOCS}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    sys.exit(main())

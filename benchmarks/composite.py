"""Benchmark: one synthetic day of AVHRR GAC orbits to a global composite, against pyresample.

In one run:

1. end to end: ``nearline.composite.run`` on a 14-orbit day to igh-8km (files already
   written and in the page cache, as after a read-ahead), repeated; wall time, where it went
   (planning, reading, compute, waiting, output), pixels per second and the peak resident
   memory of the process tree, for a few worker/reader counts;
2. the registration and compositing stage alone on the same swath points: nearline's
   projection + max-NDVI update, against pyresample's BucketResampler (max and average) and
   kd_tree nearest, and pyproj's forward projection alone;
3. the limits: reading the granule files (cat to /dev/null) and a numpy copy of the same bytes;
4. igh-1km out of core: peak resident memory of the process tree with ``--memory 2GiB``.

    .venv/bin/python benchmarks/composite.py [--orbits 14] [--repeats 3] [--update-docs]
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
    repeats: int,
) -> dict[str, Any]:  # fmt: skip
    """Each repeat in a fresh process, so the memory measured is the run's alone."""
    spec = {
        "paths": [str(p) for p in paths], "out": str(out), "grid": grid, "workers": workers,
        "readers": readers, "memory": memory,
    }  # fmt: skip
    samples = []
    for _ in range(repeats):
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
        result.update(tree_peak=tree.peak, process_peak=tree.largest)
        samples.append(result)
        progress(f"  {grid} W={workers} R={readers}: {result['wall']:.2f} s, "
                 f"tree peak {tree.peak / 2**30:.2f} GiB (PSS)")  # fmt: skip
    middle = sorted(samples, key=lambda s: s["wall"])[len(samples) // 2]
    return {
        **middle,
        "wall": statistics.median(s["wall"] for s in samples),
        "walls": [s["wall"] for s in samples],
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
    """Observations of the day's first lines, until ``n_points`` pixels: lon, lat, NDVI, ..."""
    from nearline.composite.context import prepare
    from nearline.composite.settings import CompositeSettings

    context = prepare(paths, CompositeSettings.parse(workers=1))
    chunks: list[Any] = []
    count = 0
    for info in context.plan.granules:
        with context.open_granule(info.index) as granule:
            for first in range(0, granule.n_lines, 1024):
                block = granule.read(first, min(first + 1024, granule.n_lines))
                chunks.append(context.observe(info.index, block))
                count += block.n_lines * 409
                if count >= n_points:
                    return {"observations": chunks, "context": context}
    return {"observations": chunks, "context": context}


def stage(points: dict[str, Any], repeats: int) -> dict[str, float]:
    """Points per second of registration + compositing, nearline against its peers."""
    import dask.array as da
    import pyproj
    from pyresample import geometry, kd_tree
    from pyresample.bucket import BucketResampler

    from nearline.grid import FootprintRegistrar

    context = points["context"]
    observations = points["observations"]
    grid = context.plan.grid
    reducer = context.reducer
    lon = np.concatenate([o.lon.ravel() for o in observations])
    lat = np.concatenate([o.lat.ravel() for o in observations])
    ndvi = np.concatenate([o.ndvi.ravel() for o in observations])
    n = lon.size
    state = reducer.new_state(grid.width * grid.height)

    registrar = FootprintRegistrar(grid)

    def nearline_stage() -> None:
        reducer.reset(state)
        for o in observations:
            cells, pixels = registrar.register(o.lon, o.lat)
            reducer.update(state, cells, o, pixels=pixels)

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
        "nearline register footprints + max-NDVI composite": nearline_stage,
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


def report(
    args: argparse.Namespace,
    limit: dict,
    rows: list[dict],
    stage_rates: dict,
    one_km: dict | None,
    synth_seconds: float | None,
    coverage: Any = None,
) -> str:
    lines = [
        "## composite: a day of AVHRR orbits to a global composite",
        "",
        f"`{command_line()}` — {now_stamp()}",
        "",
        f"Machine: {machine_summary(Path(args.out))}.",
        "",
        f"Input: {args.orbits} synthetic NOAA-19 GAC orbits of {args.lines} lines x 409 "
        f"pixels ({limit['bytes'] / 1e9:.2f} GB of granule files, in the page cache), to "
        f"{args.grid}; median of {args.repeats} runs each. I/O = sampling reads + band owners "
        "waiting for lines + writing the output; compressing the output is the band owners' "
        "compute.",
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
    add("--orbits", type=int, default=14)
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
    rows = []
    for pair in args.configs.split(","):
        workers, readers = (int(v) for v in pair.split("+"))
        progress(f"end to end, {workers} workers + {readers} readers")
        row = end_to_end(
            paths,
            out / "day.nc",
            grid=args.grid,
            workers=workers,
            readers=readers,
            memory="2GiB",
            repeats=args.repeats,
        )
        row.update(workers=workers, readers=readers)
        rows.append(row)
    from nearline.composite.quality import composite_coverage

    coverage = composite_coverage(out / "day.nc")
    progress("registration + compositing stage against pyresample")
    stage_rates = stage(stage_points(paths, args.stage_points), args.repeats)
    one_km = None
    if not args.skip_1km:
        progress(f"igh-1km out of core, --memory {args.memory_1km}")
        one_km = end_to_end(
            paths,
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

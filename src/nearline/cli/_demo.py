"""``nearline demo``: the main jobs on embedded defaults, with nothing to install or set up.

Three parts, all on this machine: burst (a model on MPI ranks hands its output to an I/O
rank, against writing it directly), composite (a small synthetic day of AVHRR orbits
composited to the 8 km Goode Homolosine world, with an NDVI quicklook PNG) and service (a
real ``nearline serve`` on 127.0.0.1: the day ingested into its catalogue, the built-in
composite ordered through OGC API - Processes, its results and usage read back).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from nearline.errors import NearlineError


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def add_demo_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``demo [--only burst|composite|service]`` to ``subparsers``."""
    demo = subparsers.add_parser("demo")
    demo.add_argument("--out", default="demo-output", help="output folder (default: %(default)s)")
    demo.add_argument(
        "--only",
        choices=["burst", "composite", "service"],
        default=None,
        help="run one part only",
    )
    demo.add_argument(
        "--compute-ranks", type=_positive, default=4, help="burst: MPI compute ranks (default: 4)"
    )
    demo.add_argument(
        "--orbits",
        type=_positive,
        default=15,
        help="composite: orbits; 15 are those that start on the day, the first and last "
        "meeting (NOAA-19 circles 14.1 times a day) (default: %(default)s)",
    )
    demo.add_argument(
        "--lines",
        type=_positive,
        default=4000,
        help="composite: scan lines per orbit, 13000 for whole orbits (default: %(default)s)",
    )
    demo.set_defaults(func=run_demo)
    return demo


def run_demo(args: argparse.Namespace) -> int:
    from rich.console import Console

    console = Console()
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise NearlineError(f"--out {out} is a file; name a folder for the demo's output")
    if args.only in (None, "burst"):
        _burst_demo(args, out, console)
    if args.only in (None, "composite"):
        _composite_demo(args, out / "composite", console)
    if args.only in (None, "service"):
        from nearline.cli._demo_service import service_demo

        service_demo(out / "service", granules=out / "composite" / "granules", args=args)
    return 0


def _burst_demo(args: argparse.Namespace, out: Path, console: Any) -> None:
    from rich.table import Table

    from nearline.mpirun import run_module

    for part in ("burst", "direct"):
        shutil.rmtree(out / part, ignore_errors=True)
    ranks = args.compute_ranks + 1
    with console.status(f"running the burst demo model on {ranks} MPI ranks..."):
        result = run_module(ranks, "nearline.burst.demo", str(out))
    lines = [line for line in result.stdout.splitlines() if line.startswith("NEARLINE-DEMO ")]
    if result.returncode != 0 or not lines:
        reasons = [line for line in result.stderr.splitlines() if "Error" in line]
        reason = reasons[-1].strip() if reasons else f"exit status {result.returncode}"
        raise NearlineError(f"the demo model failed: {reason}")
    summary = json.loads(lines[0].split(" ", 1)[1])
    table = Table(title="burst demo: how long the compute ranks paused for output")
    for column in ("step", "MB written", "through burst (s)", "written directly (s)", "speed-up"):
        table.add_column(column, justify="right")
    megabytes = summary["bytes_per_step"] / 1e6
    for step, (b, d) in enumerate(
        zip(summary["burst_pause"], summary["direct_pause"], strict=True)
    ):
        table.add_row(str(step), f"{megabytes:.0f}", f"{b:.3f}", f"{d:.3f}", f"{d / b:.1f}x")
    burst_total, direct_total = sum(summary["burst_pause"]), sum(summary["direct_pause"])
    table.add_row(
        "all",
        f"{megabytes * len(summary['burst_pause']):.0f}",
        f"{burst_total:.3f}",
        f"{direct_total:.3f}",
        f"{direct_total / burst_total:.1f}x",
        style="bold",
    )
    console.print(table)
    grid = "x".join(map(str, summary["grid"]))
    console.print(
        f"{summary['ranks']} compute ranks + 1 I/O rank, {summary['variables']} float32 fields "
        f"of {grid} per step. Burst output (netCDF, readable with xarray): {out / 'burst'}"
    )


def _composite_demo(args: argparse.Namespace, out: Path, console: Any) -> None:
    from rich.progress import Progress

    from nearline.cli._composite import phase_bars
    from nearline.composite import run
    from nearline.swath import synthesize_day

    shutil.rmtree(out, ignore_errors=True)
    granules = out / "granules"
    with Progress(console=console) as bars:
        task = bars.add_task(f"synthesizing {args.orbits} orbits", total=args.orbits)
        paths = synthesize_day(
            "2012-12-12",
            args.orbits,
            granules,
            lines_per_orbit=args.lines,
            progress=lambda done, total: bars.update(task, completed=done, total=total),
        )
        result = run(
            paths,
            out=out / "composite-igh-8km.nc",
            grid="igh-8km",
            png=out / "ndvi.png",
            progress=phase_bars(bars),
        )
    assert result is not None
    t = result.timings
    console.print(
        f"composite demo: {len(paths)} orbits, {result.pixels / 1e6:.1f} M pixels to igh-8km "
        f"in {result.wall_seconds:.1f} s ({result.pixels_per_second / 1e6:.2f} M pixels/s; "
        f"compute {t['worker_compute_mean']:.1f} s, waiting for input "
        f"{t['worker_wait_mean']:.1f} s, output {t['output_write'] + t['output_close']:.1f} s)"
    )
    console.print(f"12-band composite (opens with xarray): {result.out}")
    console.print(f"NDVI quicklook: {result.png}")

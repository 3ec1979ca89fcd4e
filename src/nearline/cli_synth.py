"""``nearline synth avhrr``: synthetic AVHRR GAC orbits with real geometry, for offline use."""

from __future__ import annotations

import argparse
from typing import Any


def add_synth_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``synth avhrr --date D --orbits N --out DIR`` to ``subparsers``."""
    synth = subparsers.add_parser("synth", help="make synthetic input data")
    kinds = synth.add_subparsers(dest="kind", required=True)
    avhrr = kinds.add_parser(
        "avhrr",
        help="a day of AVHRR GAC orbit granules",
        description="Write N orbit granules of one day: NOAA-19 geometry from pyorbital and a "
        "fixed element set, a plausible scene (land and sea, vegetation by season, clouds), "
        "and 10-bit counts from pygac's calibration run backwards.",
    )
    avhrr.add_argument("--date", required=True, help="the day, YYYY-MM-DD")
    avhrr.add_argument("--orbits", type=int, default=14, help="orbits (default: %(default)s)")
    avhrr.add_argument("--out", required=True, help="folder for the granules")
    avhrr.add_argument("--satellite", default="noaa19", help="platform (default: %(default)s)")
    avhrr.add_argument(
        "--lines", type=int, default=13000, help="scan lines per orbit (default: %(default)s)"
    )
    avhrr.add_argument("--seed", type=int, default=0, help="cloud field seed (default: 0)")
    avhrr.add_argument(
        "--format",
        dest="file_format",
        choices=["netcdf", "l1b"],
        default="netcdf",
        help="nearline's netCDF-4 granules, or NOAA KLM GAC Level 1b as NOAA CLASS serves "
        "them (default: %(default)s)",
    )
    avhrr.set_defaults(func=run_synth)
    return synth


def run_synth(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from nearline.swath import synthesize_day

    console = Console()
    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bars:
        task = bars.add_task("orbits", total=args.orbits)
        paths = synthesize_day(
            args.date,
            args.orbits,
            args.out,
            satellite=args.satellite,
            lines_per_orbit=args.lines,
            seed=args.seed,
            file_format=args.file_format,
            progress=lambda done, total: bars.update(task, completed=done, total=total),
        )
    size = sum(path.stat().st_size for path in paths)
    console.print(f"wrote {len(paths)} granules ({size / 1e6:.0f} MB) to {args.out}")
    return 0

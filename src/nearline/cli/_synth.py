"""``nearline synth avhrr|modis``: synthetic AVHRR GAC orbits and MODIS Level-2 granules with
real geometry, for offline use."""

from __future__ import annotations

import argparse
from typing import Any


def add_synth_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``synth avhrr --date D --orbits N --out DIR`` and ``synth modis --product P
    --date D --granules N --out DIR`` to ``subparsers``."""
    synth = subparsers.add_parser("synth")
    kinds = synth.add_subparsers(dest="kind", required=True)
    avhrr = kinds.add_parser(
        "avhrr",
        help="a day of AVHRR GAC orbit granules",
        description="Write N orbit granules of one day: geometry from pyorbital and a fixed "
        "element set (NOAA-19's; MetOp-A's for metopa), a plausible scene (land and sea, "
        "a land cover's vegetation by season, one day's drifting clouds), and 10-bit counts "
        "from pygac's calibration run backwards. noaa17 and metopa send channel 3a (1.6 um) "
        "instead of 3b by day.",
    )
    avhrr.add_argument("--date", required=True, help="the day, YYYY-MM-DD")
    avhrr.add_argument("--orbits", type=int, default=14, help="orbits (default: %(default)s)")
    avhrr.add_argument("--out", required=True, help="folder for the granules")
    avhrr.add_argument(
        "--satellite",
        default="noaa19",
        help="noaa15..noaa19 or metopa (default: %(default)s)",
    )
    avhrr.add_argument(
        "--lines", type=int, default=13000, help="scan lines per orbit (default: %(default)s)"
    )
    avhrr.add_argument(
        "--seed", type=int, default=0, help="draws the weather and land cover (default: 0)"
    )
    avhrr.add_argument(
        "--truth",
        action="store_true",
        help="also write each pixel's true cloud fraction and optical depth, surface NDVI, "
        "land and snow into "
        "OUT/truth/ (for `nearline composite --score`)",
    )
    avhrr.add_argument(
        "--snow",
        action="store_true",
        help="cover land poleward of a seasonal snow line, and the ice sheets, with snow",
    )
    avhrr.add_argument(
        "--format",
        dest="file_format",
        choices=["netcdf", "l1b"],
        default="netcdf",
        help="nearline's netCDF-4 granules, or NOAA KLM GAC Level 1b as NOAA CLASS serves "
        "them (default: %(default)s)",
    )
    avhrr.set_defaults(func=run_synth)
    _add_modis_parser(kinds)
    return synth


def _add_modis_parser(kinds: Any) -> None:
    from nearline.swath import MODIS_PRODUCTS

    modis = kinds.add_parser(
        "modis",
        help="a day of MODIS Level-2 granules (HDF4)",
        description="Write N five-minute Terra MODIS Level-2 granules of one day in the "
        "product's HDF4 layout and LAADS' naming: Terra's geometry from pyorbital and a fixed "
        "element set, plausible fields and quality flags.",
    )
    modis.add_argument("--product", required=True, choices=list(MODIS_PRODUCTS), help="the product")
    modis.add_argument("--date", required=True, help="the day, YYYY-MM-DD")
    modis.add_argument(
        "--granules", type=int, default=288, help="granules (default: %(default)s, a day)"
    )
    modis.add_argument("--out", required=True, help="folder for the granules")
    modis.add_argument(
        "--first", type=int, default=0, help="granule of the day to start at (0 is 00:00 UTC)"
    )
    modis.add_argument(
        "--scans", type=int, default=203, help="10-line scans per granule (default: %(default)s)"
    )
    modis.add_argument("--seed", type=int, default=0, help="cloud field seed (default: 0)")
    modis.set_defaults(func=run_synth_modis)


def _with_progress(label: str, total: int, make: Any) -> list[Any]:
    """Run ``make(progress)`` under a progress bar; say what it wrote."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    console = Console()
    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bars:
        task = bars.add_task(label, total=total)
        paths = make(lambda done, total: bars.update(task, completed=done, total=total))
    size = sum(path.stat().st_size for path in paths)
    folder = paths[0].parent if paths else ""
    console.print(f"wrote {len(paths)} granules ({size / 1e6:.0f} MB) to {folder}")
    return paths


def run_synth_modis(args: argparse.Namespace) -> int:
    from nearline.swath import synthesize_modis_day

    _with_progress(
        "granules",
        args.granules,
        lambda progress: synthesize_modis_day(
            args.product,
            args.date,
            args.granules,
            args.out,
            first=args.first,
            scans=args.scans,
            seed=args.seed,
            progress=progress,
        ),
    )
    return 0


def run_synth(args: argparse.Namespace) -> int:
    from nearline.swath import synthesize_day

    _with_progress(
        "orbits",
        args.orbits,
        lambda progress: synthesize_day(
            args.date,
            args.orbits,
            args.out,
            satellite=args.satellite,
            lines_per_orbit=args.lines,
            seed=args.seed,
            file_format=args.file_format,
            progress=progress,
            truth=args.truth,
            snow=args.snow,
        ),
    )
    return 0

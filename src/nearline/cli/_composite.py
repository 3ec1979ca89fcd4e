"""``nearline composite``: a thin sub-command over :func:`nearline.composite.run`.

Under mpiexec every rank runs this command; rank 0 shows the progress and the summary.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from nearline.units import format_size

PHASES = {  # progress phases of composite.run, as the bars name them
    "plan": "sampling granules",
    "composite": "scan lines served",
    "write": "bands written",
    "climate": "row blocks",
}


def phase_bars(bars: Any) -> Callable[[str, int, int], None]:
    """A ``progress(phase, done, total)`` callback drawing one rich bar per phase."""
    tasks: dict[str, Any] = {}

    def progress(phase: str, done: int, total: int) -> None:
        if phase not in tasks:
            tasks[phase] = bars.add_task(PHASES.get(phase, phase), total=total)
        bars.update(tasks[phase], completed=done, total=total)

    return progress


def add_composite_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``composite INPUTS... --out FILE`` to ``subparsers``."""
    parser = subparsers.add_parser(
        "composite",
        description="Calibrate, cloud-mask, terrain-correct and register every pixel of the "
        "input granules and keep, per grid cell, the clear observation with the highest NDVI "
        "(or another reducer). Daily composite files as inputs make 10-day or monthly "
        "composites. Under mpiexec the ranks share the work.",
    )
    parser.add_argument("inputs", nargs="+", help="granule files, or folders holding them")
    parser.add_argument("--out", required=True, help="the netCDF file to write")
    parser.add_argument("--grid", default="igh-8km", help="target grid (default: %(default)s)")
    parser.add_argument(
        "--period",
        default="day",
        choices=["day", "10day", "month"],
        help="time one composite covers (default: %(default)s)",
    )
    parser.add_argument(
        "--reducer",
        default="max-ndvi",
        help="max-ndvi, max-bt4 (the warmest channel-4 observation, by day or night), mean, "
        "min, max or count (default: %(default)s)",
    )
    parser.add_argument("--workers", type=int, default=None, help="band owners (default: cores)")
    parser.add_argument(
        "--readers", type=int, default=1, help="input data servers (default: %(default)s)"
    )
    parser.add_argument(
        "--memory", default="2GiB", help="bound on the bands' memory (default: %(default)s)"
    )
    parser.add_argument(
        "--on-error",
        default="fail",
        choices=["skip", "fail"],
        help="what a corrupt or truncated granule does (default: %(default)s)",
    )
    parser.add_argument(
        "--png", default=None, help="also write a quicklook PNG here (NDVI; max-bt4: channel 4)"
    )
    parser.add_argument(
        "--score",
        metavar="TRUTH",
        default=None,
        help="then score the cloud mask and the NDVI against the truth folder written by "
        "`nearline synth avhrr --truth` (OUT/truth): hit and false-alarm rates per surface",
    )
    parser.set_defaults(func=run_composite)
    return parser


def run_composite(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from nearline.composite import get_reducer, run, world

    comm = world()
    show = comm is None or comm.Get_rank() == 0
    console = Console()
    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, disable=not show, transient=False) as bars:
        result = run(
            args.inputs,
            out=args.out,
            grid=args.grid,
            period=args.period,
            reducer=args.reducer,
            workers=args.workers,
            readers=args.readers,
            memory=args.memory,
            on_error=args.on_error,
            png=args.png,
            progress=phase_bars(bars),
        )
    if result is None or not show:
        return 0
    for path, reason in result.skipped:
        console.print(f"[yellow]skipped {path}: {reason}[/yellow]")
    console.print(
        f"{len(result.granules)} granules, {result.pixels / 1e6:.1f} M pixels in "
        f"{result.wall_seconds:.1f} s ({result.pixels_per_second / 1e6:.2f} M pixels/s), "
        f"{result.bands} bands in {result.passes} pass(es), peak RSS "
        f"{format_size(result.peak_rss_bytes)}"
    )
    console.print(f"wrote {result.out}" + (f" and {result.png}" if result.png else ""))
    if result.pixels and not result.pixels_used:
        console.print(
            "[yellow]no pixel was composited: no observation had a valid channel 4[/yellow]"
            if get_reducer(args.reducer).uses_night
            else f"[yellow]no pixel was composited: the {args.reducer} composite takes sunlit "
            "pixels (solar zenith below 85 degrees) and these granules have none; "
            "--reducer max-bt4 composites by night too[/yellow]"
        )
    if args.score is not None:
        print_skill(console, result.granules, result.out, args.score)
    return 0


def print_skill(console: Any, granules: list, composite: Any, truth: str) -> None:
    """Score the day's mask and composite against ``truth`` and print the table."""
    from rich.table import Table

    from nearline.composite import SKILL_HEADERS, score_day, skill_table

    skill = score_day(granules, composite=composite, truth_folder=truth)
    table = Table(*SKILL_HEADERS, title="cloud mask against the truth")
    for row in skill_table(skill.mask):
        table.add_row(*row)
    console.print(table)
    ndvi = skill.ndvi
    console.print(
        f"NDVI RMSE over clear land: {ndvi.rmse:.4f} (bias {ndvi.bias:+.4f}) in "
        f"{ndvi.cells - ndvi.cloudy_cells:,} cells the composite calls clear; "
        f"{ndvi.cloudy_cells:,} clear-land cells left cloudy (RMSE with them {ndvi.rmse_all:.4f})"
    )

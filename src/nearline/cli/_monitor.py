"""``nearline monitor``: sample the whole machine into a run folder while a load runs, mark the
runs' starts and ends, and draw the load study's figures from it."""

from __future__ import annotations

import argparse
import signal
import threading
import time
from typing import Any


def add_monitor_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``monitor {record,mark,plot}`` to ``subparsers``."""
    monitor = subparsers.add_parser("monitor")
    actions = monitor.add_subparsers(dest="action", required=True)
    record = actions.add_parser(
        "record", help="sample the machine into RUN/system.ndjson until Ctrl-C or --seconds"
    )
    record.add_argument("run", help="the run folder (made if missing; samples are appended)")
    record.add_argument(
        "--interval", type=float, default=1.0, help="seconds between samples (default: 1)"
    )
    record.add_argument("--seconds", type=float, default=None, help="stop after this long")
    record.add_argument(
        "--device",
        action="append",
        default=None,
        help="watch only this block device (repeatable; default: all but loop, RAM and zram)",
    )
    record.set_defaults(func=run_record)

    mark = actions.add_parser("mark", help="mark a run's start or end in RUN, now")
    mark.add_argument("run", help="the run folder being recorded")
    mark.add_argument("event", help="what happened: start, end, or any word")
    mark.add_argument("name", help="the run it happened to, e.g. 'MOD06_L2 #3'")
    mark.set_defaults(func=run_mark)

    plot = actions.add_parser("plot", help="draw RUN's CPU, disk, memory and scatter PNGs")
    plot.add_argument("run", help="a run folder written by `nearline monitor record`")
    plot.add_argument("--out", required=True, help="the folder to write the PNGs into")
    plot.add_argument(
        "--device", action="append", default=None, help="plot only this device (repeatable)"
    )
    plot.set_defaults(func=run_plot)
    return monitor


def _describe(sample: Any) -> str:
    disk = sum(rate.read_mb + rate.write_mb for rate in sample.disks.values())
    swap = f"{sample.swap_percent:.0f}%" if sample.swap_total else "none"
    return (
        f"CPU {sample.cpu:3.0f}% memory {sample.memory_percent:3.0f}% swap {swap} "
        f"disks {disk:.1f} MB/s"
    )


def run_record(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from nearline.errors import ConfigError
    from nearline.monitor import SystemSampler

    for option, value in (("--interval", args.interval), ("--seconds", args.seconds)):
        if value is not None and not value > 0:
            raise ConfigError(f"{option}: must be more than 0 seconds, got {value:g}")
    wanted = None if args.seconds is None else max(1, round(args.seconds / args.interval))
    console = Console()
    columns = [TextColumn("sampling"), TimeElapsedColumn(), TextColumn("{task.fields[now]}")]
    if wanted is not None:
        columns[1:1] = [BarColumn(bar_width=20), MofNCompleteColumn()]
    bars = Progress(*columns, console=console, transient=False)
    task = bars.add_task("sampling", total=wanted, now="")
    done = threading.Event()
    taken = 0

    def show(sample: Any) -> None:
        nonlocal taken
        taken += 1
        bars.update(task, completed=taken, now=_describe(sample))
        if wanted is not None and taken >= wanted:
            done.set()

    started = time.monotonic()
    # Ctrl-C is how an open-ended recording ends: it ends the wait below rather than raising
    # KeyboardInterrupt wherever the main thread is (inside the progress bar's lock, the
    # sampler's thread would wait on it for ever, and so would closing it)
    interrupted = signal.signal(signal.SIGINT, lambda *_: done.set())
    sampler = SystemSampler(args.run, interval=args.interval, devices=args.device, on_sample=show)
    try:
        with bars:
            while not done.wait(0.2):
                pass
    finally:
        signal.signal(signal.SIGINT, interrupted)
        sampler.close(tail=wanted is None)  # --seconds: exactly the samples it asked for
    console.print(f"{taken} samples in {time.monotonic() - started:.1f} s kept in {args.run}")
    return 0


def run_mark(args: argparse.Namespace) -> int:
    from nearline.monitor import add_mark

    add_mark(args.run, args.event, args.name, time=time.time())
    return 0


def run_plot(args: argparse.Namespace) -> int:
    from nearline.monitor import plot_run

    for path in plot_run(args.run, args.out, devices=args.device):
        print(path)
    return 0

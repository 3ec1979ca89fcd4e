"""``nearline migrate`` and ``nearline restore``: thin sub-commands over the layout room.

Errors are raised as nearline errors; ``nearline.cli.main`` prints them as one line.
"""

from __future__ import annotations

import argparse
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from nearline.cli._options import add_s3_options, s3_options
from nearline.errors import RestoreError
from nearline.layout import BundleKind, Manifest, MigrationEvent, Phase
from nearline.units import format_size


def add_migrate_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``migrate SOURCE ARCHIVE [--watch | --once]`` to ``subparsers``."""
    parser = subparsers.add_parser(
        "migrate",
        description="Bundle every closed (marked complete) file set below SOURCE, copy it to "
        "ARCHIVE, verify the copy by reading it back, and only then remove it from SOURCE. "
        "Safe to kill and start again: a journal in SOURCE resumes where it stopped.",
    )
    parser.add_argument("source", help="the root a writer writes its steps into")
    parser.add_argument("archive", help="a folder, s3://bucket/prefix, or an fsspec URL")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--watch", action="store_true", help="keep polling for newly closed sets until stopped"
    )
    mode.add_argument("--once", action="store_true", help="migrate what is closed now (default)")
    parser.add_argument(
        "--bundle",
        choices=[kind.value for kind in BundleKind],
        default="tar",
        help="one tar per set, or 'none' to copy files as they are (default: %(default)s)",
    )
    parser.add_argument(
        "--keep-source", action="store_true", help="archive and verify, but keep the source"
    )
    parser.add_argument(
        "--interval",
        type=_seconds,
        default=2.0,
        help="seconds between polls with --watch (default: %(default)s)",
    )
    parser.add_argument(
        "--max-sets", type=_count, default=None, help="stop after archiving this many sets"
    )
    parser.add_argument(
        "--chunk-size", default="8MiB", help="copy buffer size (default: %(default)s)"
    )
    add_s3_options(parser)
    parser.set_defaults(func=run_migrate_to_archive)
    return parser


def add_restore_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``restore ARCHIVE DEST [--step S] [--file F]`` to ``subparsers``."""
    parser = subparsers.add_parser(
        "restore",
        description="Copy archived sets back below DEST (DEST/<step>/<file>/...), checking "
        "every file's SHA-256 against its bundle's manifest before it takes its name.",
    )
    parser.add_argument("archive", help="the folder or URL (s3://bucket/prefix) migrate wrote to")
    parser.add_argument("dest", help="the root to restore into")
    parser.add_argument("--step", type=_step, default=None, help="only this step")
    parser.add_argument("--file", default=None, help="only this file group")
    parser.add_argument(
        "--chunk-size", default="8MiB", help="copy buffer size (default: %(default)s)"
    )
    add_s3_options(parser)
    parser.set_defaults(func=run_restore)
    return parser


def run_migrate_to_archive(args: argparse.Namespace) -> int:
    from nearline.layout import Migrator

    with _ProgressBars() as bars:
        migrator = Migrator(
            args.source,
            args.archive,
            bundle=args.bundle,
            delete_source=not args.keep_source,
            chunk_size=args.chunk_size,
            progress=bars.update,
            storage_options=s3_options(args),
        )
        with migrator, _stopping_on_signals(migrator.stop, lambda: migrator.stopping):
            if args.watch:
                archived = migrator.watch(interval=args.interval, stop_after=args.max_sets)
            else:
                archived = migrator.run_once(limit=args.max_sets)
        bars.console.print(
            _summary("archived", archived, migrator.tier.describe()), highlight=False
        )
        if migrator.stopping:
            bars.console.print("stopped on request; run migrate again to continue")
    return 0


def run_restore(args: argparse.Namespace) -> int:
    from nearline.layout import restore

    with _ProgressBars() as bars:
        try:
            restored = restore(
                args.archive,
                args.dest,
                step=args.step,
                file=args.file,
                chunk_size=args.chunk_size,
                progress=bars.update,
                storage_options=s3_options(args),
            )
        except RestoreError as error:  # the good sets came back: say so, then name the bad
            bars.console.print(_summary("restored", error.restored, args.dest), highlight=False)
            raise
        bars.console.print(_summary("restored", restored, args.dest), highlight=False)
    return 0


def _summary(verb: str, manifests: list[Manifest], where: str) -> str:
    files = sum(len(m.entries) for m in manifests)
    size = format_size(sum(m.nbytes for m in manifests))
    return f"{verb} {len(manifests)} sets ({files} files, {size}): {where}"


@contextmanager
def _stopping_on_signals(stop: Callable[[], None], stopping: Callable[[], bool]) -> Iterator[None]:
    """SIGINT/SIGTERM ask for a clean stop; a second one interrupts at once (the journal
    makes that safe too)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        if stopping():
            raise KeyboardInterrupt
        stop()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class _ProgressBars:
    """One rich progress bar per set while it moves; a line per set once it is done."""

    def __init__(self) -> None:
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TransferSpeedColumn,
        )

        columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn())
        self.progress = Progress(*columns, TransferSpeedColumn(), transient=True)
        self.console = self.progress.console
        self.tasks: dict[tuple[int, str], Any] = {}

    def update(self, event: MigrationEvent) -> None:
        key = (event.step, event.file)
        label = f"step {event.step} {event.file}: {event.phase.value}"
        if event.phase is Phase.DONE:
            task = self.tasks.pop(key, None)
            if task is not None:
                self.progress.remove_task(task)
            self.console.print(
                f"archived step {event.step} {event.file} ({format_size(event.total)})"
            )
            return
        if key not in self.tasks:
            self.tasks[key] = self.progress.add_task(label, total=event.total)
        self.progress.update(
            self.tasks[key], description=label, completed=event.done, total=event.total
        )

    def __enter__(self) -> _ProgressBars:
        if self.console.is_terminal:  # bars on a terminal; plain lines in a log file
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress.live.is_started:
            self.progress.stop()


def _seconds(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _step(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value

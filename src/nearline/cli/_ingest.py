"""``nearline ingest PATH... --collection C``: granule files into the service's catalogue."""

from __future__ import annotations

import argparse
from typing import Any

from nearline.cli._options import add_data_option, add_s3_options, data_folder, s3_options


def add_ingest_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``ingest PATH... --collection C`` to ``subparsers``."""
    parser = subparsers.add_parser(
        "ingest",
        description="Catalogue granule files as items of a collection (created if missing): "
        "each file's reader is found by sniffing its bytes, and gives its time range and "
        "footprint. Folders stand for every file below them; an s3:// URL for every object "
        "under it (each read by one GET, hashed and described in memory; one over 64 MiB "
        "by ranged reads where the format allows, else through a copy in scratch). A running "
        "`nearline serve` on the same --data sees the items at once.",
    )
    parser.add_argument(
        "paths",
        nargs="*",
        help="granule files, or folders holding them; or one s3://bucket/prefix whose objects "
        "are catalogued where they lie",
    )
    parser.add_argument(
        "--archive",
        default=None,
        help="instead of files: a layout archive tier (folder or URL) whose migrated "
        "granules are catalogued where they lie, in their bundles",
    )
    parser.add_argument("--collection", required=True, help="the collection's id, e.g. avhrr-gac")
    add_data_option(parser)
    parser.add_argument(
        "--on-error",
        choices=["fail", "skip"],
        default="fail",
        help="a file no reader knows: fail and add nothing, or skip it (default: %(default)s)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes (default: cores); for s3:// objects, threads (default: 2 a core)",
    )
    add_s3_options(parser)
    parser.set_defaults(func=run_ingest)
    return parser


def run_ingest(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from nearline.archive import (
        ingest,
        ingest_archive,
        ingest_bucket,
        is_object_url,
        open_catalogue,
    )
    from nearline.db import database_url
    from nearline.errors import IngestError
    from nearline.units import format_size

    if bool(args.paths) == bool(args.archive):
        raise IngestError("give granule files (or folders), or --archive TIER, not both")
    urls = [path for path in args.paths if is_object_url(path)]
    if urls and (len(urls) > 1 or len(args.paths) > 1):
        raise IngestError("give one s3://bucket/prefix at a time, without local files")
    data = data_folder(args)
    data.mkdir(parents=True, exist_ok=True)
    console = Console(stderr=True)
    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with open_catalogue(database_url(args.db), data / "catalogue.db") as catalogue:
        with Progress(*columns, console=console, transient=True) as bars:
            task = bars.add_task("granules read", total=None)
            settings: dict[str, Any] = {
                "collection": args.collection,
                "on_error": args.on_error,
                "workers": args.workers,
                "progress": lambda done, total: bars.update(task, completed=done, total=total),
            }
            if urls:
                report = ingest_bucket(
                    catalogue, urls[0], storage_options=s3_options(args), **settings
                )
            else:
                source = {"tier": args.archive} if args.archive else {"inputs": args.paths}
                report = (ingest_archive if args.archive else ingest)(
                    catalogue,
                    **source,
                    **settings,
                    start_method="fork",  # the bar's thread holds nothing the workers need
                )
        total = catalogue.count(args.collection)
    for path, why in report.skipped:
        why = why.removeprefix(f"granule {path}: ")  # the line names the file once
        # one line per file, whatever the width, and a path's brackets are not markup
        console.print(f"skipped {path}: {why}", soft_wrap=True, markup=False, highlight=False)
    for item in report.items:
        for warning in item.properties.get("nearline:warnings", []):
            console.print(
                f"note {item.id}: {warning}", soft_wrap=True, markup=False, highlight=False
            )
    if report.passed_over:
        kinds: dict[str, list[str]] = {}
        for path, kind in report.passed_over:
            kinds.setdefault(kind, []).append(path.name)
        for kind, names in kinds.items():
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            console.print(
                f"passed over {shown}: {kind}", soft_wrap=True, markup=False, highlight=False
            )
    print(
        f"ingested {len(report.items)} granules ({format_size(report.bytes)}) into "
        f"{args.collection} ({total} items in all)"
    )
    return 0

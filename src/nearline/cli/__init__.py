"""The ``nearline`` command: one thin sub-command per capability.

Errors nearline raises print as one line (``nearline: error: ...``) and exit with status 2;
``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nearline.cli._burst import add_burst_config_parser
from nearline.cli._composite import add_composite_parser
from nearline.cli._db import add_db_parser
from nearline.cli._demo import add_demo_parser
from nearline.cli._doctor import add_doctor_parser
from nearline.cli._ingest import add_ingest_parser
from nearline.cli._jobs import add_jobs_parser
from nearline.cli._login import add_login_parsers
from nearline.cli._migrate import add_migrate_parser, add_restore_parser
from nearline.cli._monitor import add_monitor_parser
from nearline.cli._serve import add_serve_parser
from nearline.cli._synth import add_synth_parser
from nearline.cli._users import add_users_parser
from nearline.errors import NearlineError


def _bench(args: argparse.Namespace) -> int:
    import importlib

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    try:
        benchmark = importlib.import_module(args.name)  # benchmarks/<name>.py in a checkout
    except ImportError:
        raise NearlineError(
            "benchmarks/ is not next to this nearline install; run `make bench` in a checkout"
        ) from None
    return benchmark.main(args.rest)


def _ls(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from nearline.layout import files, groups, steps
    from nearline.units import format_size

    console = Console()
    if args.step is None:
        table = Table("step", "file groups", "complete", title=f"steps in {args.root}")
        for step, folder in steps(args.root):
            if args.file is not None and not any(folder.glob(f"{args.file}*")):
                continue
            summaries = groups(args.root, step=step)
            done = sum(s.complete for s in summaries)
            table.add_row(
                str(step), " ".join(s.file for s in summaries), f"{done}/{len(summaries)}"
            )
    elif args.file is None:
        table = Table("file group", "files", "size", "complete", title=f"step {args.step}")
        for s in groups(args.root, step=args.step):
            table.add_row(s.file, str(s.files), format_size(s.bytes), "yes" if s.complete else "no")
    else:
        table = Table("file", "rank", "size", title=f"{args.file} at step {args.step}")
        for entry in files(args.root, step=args.step, file=args.file):
            rank = "assembled" if entry.rank is None else str(entry.rank)
            table.add_row(str(entry.path), rank, format_size(entry.bytes))
    if not table.rows:
        raise NearlineError(f"no nearline output steps in {args.root}")
    console.print(table)
    return 0


def _sinks(args: argparse.Namespace) -> int:
    from nearline.burst import available_sinks

    print("\n".join(available_sinks()))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nearline", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True)

    add_demo_parser(commands)

    bench = commands.add_parser("bench", help="run a benchmark (from a source checkout)")
    bench.add_argument("name", choices=["burst", "layout", "composite", "service", "load"])
    bench.add_argument("rest", nargs=argparse.REMAINDER, help="the benchmark's own options")
    bench.set_defaults(func=_bench)

    ls = commands.add_parser("ls", help="browse an output tree by step and file group")
    ls.add_argument("root", help="the output root (burst's root=)")
    ls.add_argument("--step", type=int, help="show this step's file groups")
    ls.add_argument("--file", help="with --step: this group's files; alone: steps that have it")
    ls.set_defaults(func=_ls)

    add_burst_config_parser(commands)
    add_migrate_parser(commands)
    add_restore_parser(commands)
    add_synth_parser(commands)
    add_composite_parser(commands)
    from nearline.cli._algorithms import add_algorithms_parser

    add_algorithms_parser(commands)
    from nearline.cli._subscriptions import add_subscriptions_parser

    add_subscriptions_parser(commands)
    add_serve_parser(commands)
    add_jobs_parser(commands)
    add_users_parser(commands)
    add_login_parsers(commands)
    add_ingest_parser(commands)
    add_db_parser(commands)
    add_monitor_parser(commands)
    add_doctor_parser(commands)

    sinks = commands.add_parser("sinks", help="list the output formats burst can write")
    sinks.set_defaults(func=_sinks)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except NearlineError as error:
        if args.debug:
            raise
        print(f"nearline: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nearline: interrupted", file=sys.stderr)
        return 130

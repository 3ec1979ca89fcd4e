"""``nearline ls ROOT [--step S] [--file F]``: browse an output tree by step and file group."""

from __future__ import annotations

import argparse
from typing import Any

from nearline.errors import NearlineError


def add_ls_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``ls ROOT [--step S] [--file F]`` to ``commands``.

    Parameters
    ----------
    commands
        The ``nearline`` command's sub-parsers.
    """
    ls = commands.add_parser("ls")
    ls.add_argument("root", help="the output root (burst's root=)")
    ls.add_argument("--step", type=int, help="show this step's file groups")
    ls.add_argument("--file", help="with --step: this group's files; alone: steps that have it")
    ls.set_defaults(func=run_ls)
    return ls


def run_ls(args: argparse.Namespace) -> int:
    """Print the steps, a step's file groups, or a group's files as a table.

    Parameters
    ----------
    args
        The parsed command line: ``root``, ``step`` and ``file``.
    """
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

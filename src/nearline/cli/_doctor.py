"""``nearline doctor``: one line per capability nearline needs from this machine, proved end to
end: ``works``, or ``missing`` with the reason and the command that installs it. Exits 1 when
a required one is missing (``make test`` runs it first, and stops there)."""

from __future__ import annotations

import argparse
from typing import Any


def add_doctor_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``doctor`` to ``subparsers``."""
    from nearline.doctor import CAPABILITIES

    doctor = subparsers.add_parser(
        "doctor",
        description="Check each capability nearline needs from this machine end to end, all at "
        "once, and print one line each: works, or missing with the reason and the command that "
        "installs it. Exit status 1 when a required one is missing. See docs/doctor.md.",
    )
    doctor.add_argument(
        "names",
        nargs="*",
        metavar="CAPABILITY",
        help=f"check only these (default: all): {', '.join(c.name for c in CAPABILITIES)}",
    )
    doctor.set_defaults(func=run_doctor)
    return doctor


def run_doctor(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.text import Text

    from nearline.doctor import capabilities, examine

    chosen = capabilities(args.names)
    console = Console(soft_wrap=True, highlight=False)  # colour on a terminal only
    width = max(len(capability.name) for capability in chosen)
    failed = False
    for finding in examine(chosen):
        failed |= not finding.works and finding.capability.required
        line = Text(f"{finding.capability.name:<{width}}  ")
        line.append(f"{finding.status:<7}", style="green" if finding.works else "bold red")
        line.append(f"  {finding.describe()}")
        console.print(line)
    return 1 if failed else 0

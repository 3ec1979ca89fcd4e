"""The ``nearline`` command: one thin sub-command per capability.

Errors nearline raises print as one line (``nearline: error: ...``) and exit with status 2;
``--debug`` shows the traceback.

A command's module is imported only when that command runs: :data:`COMMANDS` names each
command's module and holds its one-line help, so ``nearline --help`` lists every command
without importing one, and ``nearline jobs ...`` imports and builds the ``jobs`` parser alone.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterable
from typing import Any

from nearline.errors import ConfigError, NearlineError

# command -> (its module in this package, its one-line help), in the order --help lists
# them. The module's add_<command>_parser (a dash spelled _) adds the command's parser to
# the sub-parsers it is given, without a help= of its own: the help is written here only.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("_demo", "run the main jobs on embedded defaults"),
    "bench": ("_bench", "run a benchmark (from a source checkout)"),
    "ls": ("_ls", "browse an output tree by step and file group"),
    "burst-config": (
        "_burst",
        "print the compilers, flags and launcher a C or Fortran burst model needs",
    ),
    "migrate": ("_migrate", "bundle closed file sets and move them, verified, to the archive tier"),
    "restore": ("_migrate", "bring archived sets back, verified, into their original layout"),
    "synth": ("_synth", "make synthetic input data"),
    "composite": (
        "_composite",
        "composite AVHRR orbits (or daily composites) into one global image",
    ),
    "algorithms": ("_algorithms", "deploy, list and undeploy algorithm packages (OGC processes)"),
    "subscriptions": (
        "_subscriptions",
        "subscribe a process to newly ingested granules; list and remove subscriptions",
    ),
    "serve": ("_serve", "run the near-archive service (STAC API, OGC API - Processes)"),
    "jobs": ("_jobs", "jobs and the stations' queues"),
    "users": ("_users", "add users, set their quotas, issue and revoke their API tokens"),
    "login": ("_login", "sign in to a nearline service through its OpenID Connect provider"),
    "token": ("_login", "print a valid access token of `nearline login`"),
    "tokens": ("_login", "your personal tokens: create, list, revoke"),
    "ingest": ("_ingest", "catalogue granule files (time, footprint, size, SHA-256)"),
    "db": ("_db", "set up the service's database (PostgreSQL with --db, else SQLite files)"),
    "monitor": ("_monitor", "sample CPU, memory, swap and disks into a run folder; plot them"),
    "doctor": (
        "_doctor",
        "check that what nearline needs from this machine works, and say how to install it",
    ),
    "sinks": ("_burst", "list the output formats burst can write"),
}


class _Commands:
    """The sub-parsers a command's module adds its parser to: argparse's own, with each
    command's one-line help taken from :data:`COMMANDS`."""

    def __init__(self, subparsers: Any) -> None:
        self._subparsers = subparsers

    def add_parser(self, name: str, **settings: Any) -> argparse.ArgumentParser:
        return self._subparsers.add_parser(name, help=COMMANDS[name][1], **settings)


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The ``nearline`` command's parser.

    Parameters
    ----------
    commands
        The commands whose own parsers are built, importing their modules; every other
        command is only listed, with its one-line help. None (the default): every command.
    """
    wanted = COMMANDS.keys() if commands is None else set(commands)
    unknown = sorted(set(wanted) - COMMANDS.keys())
    if unknown:
        raise ConfigError(f"no nearline command {', '.join(unknown)}; name one of "
                          f"{', '.join(COMMANDS)}")  # fmt: skip
    parser = argparse.ArgumentParser(prog="nearline", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    table = _Commands(parser.add_subparsers(dest="command", required=True))
    for name, (module, _) in COMMANDS.items():
        if name in wanted:
            command = importlib.import_module(f"{__name__}.{module}")
            getattr(command, f"add_{name.replace('-', '_')}_parser")(table)
        else:
            table.add_parser(name)  # listed; never chosen by the arguments it was built for
    return parser


def command_named(argv: list[str]) -> str | None:
    """The command ``argv`` runs: its first word that is not an option (``nearline``'s own
    options, --debug and --help, take no value), or None when it names none of COMMANDS.

    Parameters
    ----------
    argv
        The arguments after ``nearline``.
    """
    word = next((word for word in argv if not word.startswith("-")), None)
    return word if word in COMMANDS else None


def main(argv: list[str] | None = None) -> int:
    """Run the ``nearline`` command, building only the parser of the command it names.

    Parameters
    ----------
    argv
        The arguments after ``nearline`` (default: the process's own).
    """
    argv = sys.argv[1:] if argv is None else argv
    named = command_named(argv)
    args = build_parser([] if named is None else [named]).parse_args(argv)
    args.argv = argv  # what `nearline serve --workers` starts its other processes with
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

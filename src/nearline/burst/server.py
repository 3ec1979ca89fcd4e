"""I/O servers beside a native model, in one MPI job (MPMD):

    mpiexec -n 32 ./model : -n 4 python -m nearline.burst.server --root OUT [--memory 2GiB]

The model (C, Fortran or Python) calls ``nlb_init`` / ``burst.run``; the servers are the
job's last ranks. Everything a server needs comes from its command line, checked before MPI
starts, so a typo ends the job at once instead of hanging the model in its first collective.
"""

from __future__ import annotations

import argparse
import os
import sys

from nearline.burst._settings import BurstSettings, Overflow
from nearline.burst.sinks import available_sinks, get_sink
from nearline.errors import NearlineError
from nearline.layout import Layout


def parser() -> argparse.ArgumentParser:
    ask = argparse.ArgumentParser(
        prog="python -m nearline.burst.server",
        description="burst I/O servers for a model started in the same MPI job, "
        "after the model: mpiexec -n M ./model : -n N python -m nearline.burst.server ...",
    )
    ask.add_argument("--root", required=True, help="the output folder")
    ask.add_argument("--memory", default="1GiB", help="queue memory per I/O server")
    ask.add_argument("--sink", default="netcdf", help=f"one of {', '.join(available_sinks())}")
    ask.add_argument(
        "--overflow", default="block", choices=[o.value for o in Overflow],
        help="what a write does when the queue is full",
    )  # fmt: skip
    ask.add_argument("--spill-dir", help="where 'spill' puts blocks (default ROOT/.spill)")
    ask.add_argument("--fanout", type=int, help="entries per output folder (see docs/layout.md)")
    ask.add_argument("--steps", type=int, help="steps the model will write, if known")
    ask.add_argument(
        "--write-behind", action="store_true", help="write queued blocks before flush when idle"
    )
    ask.add_argument(
        "--on-full", default="fail", choices=["fail", "wait"],
        help="a full output disk: fail the file, or keep the data and wait for room",
    )  # fmt: skip
    ask.add_argument(
        "--full-timeout",
        type=float,
        default=600.0,
        help="seconds to wait for room (--on-full wait)",
    )
    return ask


def use_the_launchers_mpi() -> None:
    """Started by Debian's Open MPI 4 (a Fortran model's job: its launcher sets ORTE's
    variables), load Debian's libmpi rather than the wheel's, through mpi4py's
    MPI4PY_LIBMPI: one job must run on one MPI."""
    if "OMPI_MCA_orte_hnp_uri" in os.environ and "MPI4PY_LIBMPI" not in os.environ:
        from nearline.burst.native import SYSTEM_LIBMPI

        if SYSTEM_LIBMPI.exists():
            os.environ["MPI4PY_LIBMPI"] = str(SYSTEM_LIBMPI)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        settings = BurstSettings.parse(
            root=args.root,
            memory=args.memory,
            overflow=args.overflow,
            spill_dir=args.spill_dir,
            write_behind=args.write_behind,
            on_full=args.on_full,
            full_timeout=args.full_timeout,
        )
        sink = get_sink(args.sink)
        if args.fanout is not None or args.steps is not None:
            Layout.for_run(ranks=1, fanout=args.fanout, steps=args.steps)  # checked before MPI
    except NearlineError as error:
        sys.stderr.write(f"nearline burst server: {error}\n")
        return 2
    os.environ.setdefault("OMPI_MCA_osc", "^ucx")  # before MPI starts: quiet where UCX lacks RMA
    use_the_launchers_mpi()
    from nearline.burst._mpi import serve_beside

    serve_beside(settings, sink, fanout=args.fanout, steps=args.steps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

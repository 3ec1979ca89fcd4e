"""Run a Veros setup under mpiexec with its output written by burst's I/O ranks:

    mpiexec -n 5 python -m nearline.burst.veros --io-ranks 1 acc.py -n 2 2 [veros run options]

Everything after the setup file is ``veros run``'s own command line, passed to Veros's CLI
unchanged. The last ``--io-ranks`` ranks serve; the others run Veros, which gets their
communicator through its ``mpi_comm`` runtime setting. On rank 0 a last line reports how long
the compute ranks paused per output record and where the time went (``nearline.burst.veros:
{"pauses": ..., "clock": ..., "timers": ...}``, JSON).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from typing import Any

from nearline.errors import ConfigError, NearlineError


def parser() -> argparse.ArgumentParser:
    ask = argparse.ArgumentParser(
        prog="python -m nearline.burst.veros",
        description="run a Veros setup under mpiexec, its files written by burst's I/O ranks",
    )
    ask.add_argument("--io-ranks", type=int, default=1, help="ranks that write (the last ones)")
    ask.add_argument(
        "--memory", default="256MiB", help="queue memory per I/O rank (a record of each file)"
    )
    ask.add_argument(
        "--burst-root",
        default=".burst",
        help="where burst keeps its completion markers (the files go where Veros puts them)",
    )
    ask.add_argument("setup", help="the Veros setup file (listing nearline.burst.veros)")
    ask.add_argument("veros_args", nargs=argparse.REMAINDER, help="veros run's options")
    return ask


def _model(setup: str, veros_args: list[str]) -> Any:
    """The compute ranks' work: Veros's own CLI, on burst's communicator."""

    def main(io: Any, comm: Any) -> dict[str, Any]:
        import veros

        veros.runtime_settings.mpi_comm = comm  # Veros's documented runtime setting
        from veros.cli.veros_run import cli

        from nearline.burst.veros._output import ATTACHED, Attachment

        attached = Attachment(io, comm)
        ATTACHED.append(attached)
        began = time.time()
        cli.main(args=[setup, *veros_args], prog_name="veros run", standalone_mode=False)
        ran = time.time()
        io.wait()
        return {
            "pauses": dict(attached.pauses),  # seconds per step of each file, in order
            # when Veros began and returned and the I/O ranks had written all (the epoch's
            # seconds, to set beside the launcher's clock), and Veros's own timers
            "clock": {"began": began, "ran": ran, "drained": time.time()},
            "timers": timers(attached.state),
        }

    return main


def timers(state: Any) -> dict[str, float]:
    """Veros's own timers (its timing summary; the first step is not counted)."""
    if state is None:
        return {}
    names = ("setup", "main", "diagnostics", "plugins")
    return {name: state.timers[name].total_time for name in names}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not os.path.isfile(args.setup):
        sys.stderr.write(f"nearline.burst.veros: no setup file {args.setup}\n")
        return 2
    os.environ.setdefault("OMPI_MCA_osc", "^ucx")  # before MPI starts: quiet where UCX lacks RMA
    logging.basicConfig(format="nearline.burst.veros: %(message)s", level=logging.WARNING)
    from nearline import burst
    from nearline.burst.veros._replay import VerosSink
    from nearline.burst.veros._report import report_line

    try:
        report = burst.run(
            _model(args.setup, args.veros_args),
            io_ranks=args.io_ranks,
            memory=args.memory,
            sink=VerosSink(),
            root=args.burst_root,
        )
    except (ConfigError, NearlineError) as error:
        sys.stderr.write(f"nearline.burst.veros: {error}\n")
        return 2
    from mpi4py import MPI

    if MPI.COMM_WORLD.rank == 0 and report is not None:
        print(report_line(report), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Running the servers and band owners as MPI ranks (started under mpiexec).

Ranks ``0 .. readers-1`` are input data servers, the rest own bands. Rank 0 also plans (and
broadcasts the plan) and writes the output file: after it has served a pass it collects that
pass's finished bands from local disk, as the local driver does. Lines travel as MPI messages
received in place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from nearline.composite._context import RunContext
from nearline.composite._worker import work
from nearline.errors import ConfigError
from nearline.swath.mpi_transport import MPIInbox, MPIOutbox

TAG_BAND_DONE = 7402
TAG_LINES_DONE = 7403


def world() -> Any | None:
    """COMM_WORLD when this process is one of several MPI ranks, else None."""
    import os

    if not any(key in os.environ for key in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")):
        return None
    from mpi4py import MPI

    return MPI.COMM_WORLD if MPI.COMM_WORLD.Get_size() > 1 else None


def roles(comm: Any, readers: int) -> tuple[int, int]:
    """(servers, workers) for this world; at least one of each."""
    size = comm.Get_size()
    if readers >= size:
        raise ConfigError(
            f"--readers {readers} leaves no worker among {size} MPI ranks; "
            f"start more ranks or use --readers {size - 1}"
        )
    return readers, size - readers


def run_mpi(
    comm: Any, context: RunContext, scratch: Path, write_band: Callable[[int], None]
) -> dict | None:
    """Serve or composite on this rank; on rank 0 return every rank's stats by role."""
    plan, settings = context.plan, context.settings
    servers = settings.readers
    rank = comm.Get_rank()
    names = context.granule_names()
    worker_ranks = list(range(servers, comm.Get_size()))
    if rank < servers:

        def collect_bands() -> None:  # rank 0 writes each pass's bands as they come
            for _ in range(plan.workers):
                write_band(comm.recv(tag=TAG_BAND_DONE))

        stats: Any = context.serve(
            rank,
            MPIOutbox(comm, worker_ranks, max_lines=settings.max_lines),
            barrier=comm.Barrier,
            on_block=context.advance if rank == 0 else None,
            after_pass=collect_bands if rank == 0 else None,
        )
        role = "server"
    else:
        stats = work(
            rank - servers,
            plan,
            MPIInbox(comm, servers, names, max_lines=settings.max_lines),
            reducer=context.reducer,
            observe=context.observe,
            stage_seconds=context.stage_seconds,
            scratch=scratch,
            barrier=comm.Barrier,
            band_done=lambda index: comm.send(index, dest=0, tag=TAG_BAND_DONE),
        )
        role = "worker"
    gathered = comm.gather((role, asdict(stats)), root=0)
    if rank != 0:
        return None
    by_role: dict[str, list[dict]] = {"server": [], "worker": []}
    for name, values in gathered:
        by_role[name].append(values)
    return by_role

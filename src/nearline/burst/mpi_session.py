"""The MPI side of burst set up once per run: communicators, the shared window, who is where.

Burst talks on its own duplicate of COMM_WORLD, so the model's tags and communicators are
untouched. Each I/O rank's queue memory is a segment of one MPI shared-memory window per node.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass

import numpy as np

from nearline.errors import ConfigError

POLL_MIN, POLL_MAX = 20e-6, 1e-3
LIVENESS_SECONDS = 0.25


@dataclass(frozen=True)
class Peer:
    """Where a rank lives, so that shared memory and liveness checks know who is local."""

    host: str
    pid: int
    node: int  # lowest COMM_WORLD rank on the same shared-memory node
    node_rank: int


def _shared_memory_wanted() -> bool:
    """NEARLINE_BURST_TRANSPORT=message sends every block as a message, as between nodes."""
    value = os.environ.get("NEARLINE_BURST_TRANSPORT", "auto")
    if value not in ("auto", "message"):
        raise ConfigError(f"NEARLINE_BURST_TRANSPORT must be 'auto' or 'message', got {value!r}")
    return value == "auto"


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


class Backoff:
    """Sleep a little longer each idle turn, so idle ranks leave the cores to the model."""

    def __init__(self) -> None:
        self.delay = POLL_MIN

    def idle(self) -> None:
        time.sleep(self.delay)
        self.delay = min(self.delay * 2, POLL_MAX)

    def busy(self) -> None:
        self.delay = POLL_MIN


def compute_ranks(io_ranks: int, world_size: int) -> int:
    """How many compute ranks ``io_ranks`` I/O ranks leave; refuse a count that leaves none."""
    if isinstance(io_ranks, bool) or not isinstance(io_ranks, int) or io_ranks < 1:
        raise ConfigError(f"io_ranks must be an int >= 1, got {io_ranks!r}")
    if io_ranks >= world_size:
        raise ConfigError(
            f"io_ranks={io_ranks} leaves no compute rank among {world_size} ranks; "
            f"start more ranks (mpiexec -n {io_ranks + 1} or more) or lower io_ranks"
        )
    return world_size - io_ranks


class Session:
    """The communicators, the shared window and who is where; built collectively."""

    def __init__(self, MPI, io_ranks: int, memory: int) -> None:
        world = MPI.COMM_WORLD
        self.MPI = MPI
        self.compute_size = compute_ranks(io_ranks, world.size)
        self.io_ranks = io_ranks
        self.is_io = world.rank >= self.compute_size
        self.compute = world.Split(1 if self.is_io else 0, world.rank)
        self.wire = world.Dup()
        node = world.Split_type(MPI.COMM_TYPE_SHARED)
        leader = node.allreduce(world.rank, op=MPI.MIN)
        me = Peer(socket.gethostname(), os.getpid(), leader, node.rank)
        self.peers: list[Peer] = self.wire.allgather(me)
        self.me = me
        self.window = MPI.Win.Allocate_shared(memory if self.is_io else 0, 1, comm=node)
        compute_here = node.allreduce(0 if self.is_io else 1)
        self.cores_per_compute_rank = max(1, (os.cpu_count() or 1) // max(1, compute_here))
        self.node = node
        self.shared = _shared_memory_wanted()

    def server_rank(self, server: int) -> int:
        return self.compute_size + server

    def segment(self, world_rank: int) -> np.ndarray:
        buffer, _ = self.window.Shared_query(self.peers[world_rank].node_rank)
        return np.frombuffer(buffer, dtype=np.uint8)

    def local(self, world_rank: int) -> bool:
        """True when ``world_rank``'s queue memory can be reached through shared memory."""
        return self.shared and self.peers[world_rank].node == self.me.node

    def free(self) -> None:
        self.window.Free()
        for comm in (self.node, self.wire, self.compute):
            comm.Free()

"""The MPI side of burst set up once per run: communicators, the shared window, who is where.

Burst talks on its own duplicate of COMM_WORLD, so the model's tags and communicators are
untouched. Each I/O rank's queue memory is a segment of one MPI shared-memory window per node.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from dataclasses import dataclass

import numpy as np

from nearline.errors import BurstError, ConfigError

POLL_MIN, POLL_MAX = 20e-6, 1e-3
SPINS_PER_YIELD = 64
LIVENESS_SECONDS = 0.25


# The start-up exchange: every rank's hello, gathered by every rank (docs/burst-protocol.md).
# A fixed little-endian struct, so a C or Fortran model speaks it without Python.
HELLO = struct.Struct("<4sIiiiiQ64s")
HELLO_MAGIC = b"NLBH"
HELLO_VERSION = 1
COMPUTE, IO = 0, 1


@dataclass(frozen=True)
class Peer:
    """Where a rank lives and what it does, so that shared memory and liveness checks know
    who is local and clients know the servers' queue sizes."""

    host: str
    pid: int
    node: int  # lowest COMM_WORLD rank on the same shared-memory node
    node_rank: int
    role: int = COMPUTE
    memory: int = 0  # an I/O rank's queue bytes

    def pack(self) -> bytes:
        host = self.host.encode()[:63]
        return HELLO.pack(
            HELLO_MAGIC, HELLO_VERSION, self.role, self.pid, self.node, self.node_rank,
            self.memory, host,
        )  # fmt: skip

    @classmethod
    def unpack(cls, data: bytes, rank: int) -> Peer:
        magic, version, role, pid, node, node_rank, memory, host = HELLO.unpack(data)
        if magic != HELLO_MAGIC or version != HELLO_VERSION or role not in (COMPUTE, IO):
            raise BurstError(
                f"rank {rank} did not speak burst's start-up exchange (magic {magic!r}, version "
                f"{version}); every rank must call nlb_init / burst.run, and all from the same "
                "nearline version"
            )
        return cls(host.rstrip(b"\0").decode(), pid, node, node_rank, role, memory)


def roles(peers: list[Peer]) -> int:
    """The number of compute ranks; refuse a job whose I/O ranks are not the last ones."""
    compute = sum(peer.role == COMPUTE for peer in peers)
    if compute == 0 or compute == len(peers):
        what = "no compute rank" if compute == 0 else "no I/O rank"
        raise BurstError(
            f"burst found {what} among {len(peers)} ranks; start the model and the servers in "
            "one job: mpiexec -n M ./model : -n N python -m nearline.burst.server --root OUT"
        )
    if any(peer.role != COMPUTE for peer in peers[:compute]):
        raise BurstError(
            "burst's I/O ranks must be the last ranks of the job: put the servers last, "
            "mpiexec -n M ./model : -n N python -m nearline.burst.server --root OUT"
        )
    return compute


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
    """Sleep a little longer each idle turn, so idle ranks leave the cores to the model; but
    for ``hot`` seconds after the last message poll at the shortest delay, because within a
    burst the next request comes soon and a lent block (``buffer``) waits on the reply."""

    def __init__(self, hot: float = 0.0, wake: threading.Event | None = None) -> None:
        self.delay = POLL_MIN
        self.hot = hot
        self.last_busy = time.monotonic()
        self.spins = 0
        self.wake = wake  # set by another thread that expects an answer soon (a reply sent)

    def idle(self) -> None:
        if time.monotonic() - self.last_busy < self.hot:
            # spin: even sleep(0) or sched_yield costs 50-80 us a call on a VM; yield now and
            # then so that a thread waiting for the GIL (the writer) gets it
            self.spins += 1
            if self.spins % SPINS_PER_YIELD == 0:
                os.sched_yield()
            return
        if self.wake is None:
            time.sleep(self.delay)
        elif self.wake.wait(self.delay):
            self.wake.clear()
            self.busy()
            return
        self.delay = min(self.delay * 2, POLL_MAX)

    def busy(self) -> None:
        self.delay = POLL_MIN
        self.last_busy = time.monotonic()


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
    """The communicators, the shared window and who is where; built collectively, in the
    order docs/burst-protocol.md gives, which the C client (nlb_init) follows too."""

    def __init__(self, MPI, *, is_io: bool, memory: int) -> None:
        world = MPI.COMM_WORLD
        self.MPI = MPI
        self.is_io = is_io
        node = world.Split_type(MPI.COMM_TYPE_SHARED, key=world.rank)
        found = np.zeros(1, dtype=np.intc)  # buffer collectives: what a C rank calls too
        node.Allreduce(np.array([world.rank], dtype=np.intc), found, op=MPI.MIN)
        leader = int(found[0])
        role = IO if is_io else COMPUTE
        me = Peer(socket.gethostname(), os.getpid(), leader, node.rank, role, memory * is_io)
        hellos = bytearray(HELLO.size * world.size)
        world.Allgather([me.pack(), MPI.BYTE], [hellos, MPI.BYTE])
        self.peers = [
            Peer.unpack(bytes(hellos[i * HELLO.size : (i + 1) * HELLO.size]), i)
            for i in range(world.size)
        ]
        self.me = me
        self.compute_size = roles(self.peers)
        self.io_ranks = world.size - self.compute_size
        self.compute = world.Split(role, world.rank)
        self.wire = world.Dup()
        self.window = MPI.Win.Allocate_shared(memory if self.is_io else 0, 1, comm=node)
        compute_here = sum(p.node == leader and p.role == COMPUTE for p in self.peers)
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

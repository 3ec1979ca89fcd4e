"""``burst.run``: the last ``io_ranks`` ranks of COMM_WORLD serve I/O for the others.

Burst talks on its own duplicate of COMM_WORLD, so the model's tags and communicators are
untouched. Each I/O rank's queue memory is an MPI shared-memory window segment: compute ranks
on the same node copy their blocks straight into it (as Damaris does for dedicated cores);
ranks on other nodes send them as one message that the server receives in place.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nearline.burst.arena import PAGE
from nearline.burst.base import Sink
from nearline.burst.client import Client
from nearline.burst.group import MPIGroup
from nearline.burst.protocol import (
    TAG_CONTROL,
    TAG_DATA,
    TAG_REPLY,
    Kind,
    Message,
    WriteRequest,
    decode,
    encode,
)
from nearline.burst.server import IOServer
from nearline.burst.settings import AutoFlush, BurstSettings, Overflow
from nearline.burst.sinks import get_sink
from nearline.errors import BurstError, ConfigError
from nearline.layout import Layout

log = logging.getLogger(__name__)

os.environ.setdefault("OMPI_MCA_osc", "^ucx")  # quiet Open MPI where UCX has no one-sided
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


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


class _Backoff:
    """Sleep a little longer each idle turn, so idle ranks leave the cores to the model."""

    def __init__(self) -> None:
        self.delay = POLL_MIN

    def idle(self) -> None:
        time.sleep(self.delay)
        self.delay = min(self.delay * 2, POLL_MAX)

    def busy(self) -> None:
        self.delay = POLL_MIN


class _Session:
    """The communicators, the shared window and who is where; built collectively."""

    def __init__(self, MPI, io_ranks: int, memory: int) -> None:
        world = MPI.COMM_WORLD
        if isinstance(io_ranks, bool) or not isinstance(io_ranks, int) or io_ranks < 1:
            raise ConfigError(f"io_ranks must be an int >= 1, got {io_ranks!r}")
        if io_ranks >= world.size:
            raise ConfigError(
                f"io_ranks={io_ranks} leaves no compute rank among {world.size} ranks; "
                f"start more ranks (mpiexec -n {io_ranks + 1} or more) or lower io_ranks"
            )
        self.MPI = MPI
        self.compute_size = world.size - io_ranks
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


class _MPITransport:
    """Server side of the wire."""

    def __init__(self, session: _Session) -> None:
        self.session = session
        self.incoming: list[tuple[int, Any, Callable[[], None]]] = []

    def reply(self, client: int, message: Message) -> None:
        data = encode(message)
        self.session.wire.Send([data, self.session.MPI.BYTE], dest=client, tag=TAG_REPLY)

    def shares_memory(self, client: int) -> bool:
        return self.session.local(client)

    def expect_data(self, client: int, into: np.ndarray, then: Callable[[], None]) -> None:
        request = self.session.wire.Irecv(
            [into, self.session.MPI.BYTE], source=client, tag=TAG_DATA
        )
        self.incoming.append((client, request, then))

    def complete(self, client: int | None = None, *, wait: bool = False) -> bool:
        """Finish receives that have arrived (all of ``client``'s if ``wait``)."""
        done = False
        for item in list(self.incoming):
            who, request, then = item
            if wait and who == client:
                request.Wait()
            elif not request.Test():
                continue
            self.incoming.remove(item)
            then()
            done = True
        return done


class _MPILink:
    """Client side of the wire."""

    def __init__(self, session: _Session) -> None:
        self.session = session
        self.servers = session.io_ranks
        self._segments: dict[int, np.ndarray | None] = {}
        self._status = session.MPI.Status()
        self._last_check = time.monotonic()
        for server in range(self.servers):
            segment = self.memory(server)
            if segment is not None:  # map every page now, not during the model's first burst
                int(segment[::PAGE].max(initial=0))

    def send(self, server: int, message: WriteRequest | Message) -> None:
        data = encode(message)
        rank = self.session.server_rank(server)
        self.session.wire.Send([data, self.session.MPI.BYTE], dest=rank, tag=TAG_CONTROL)

    def send_data(self, server: int, array: np.ndarray) -> None:
        flat = array.reshape(-1).view(np.uint8)
        rank = self.session.server_rank(server)
        self.session.wire.Send([flat, self.session.MPI.BYTE], dest=rank, tag=TAG_DATA)

    def memory(self, server: int) -> np.ndarray | None:
        if server not in self._segments:
            rank = self.session.server_rank(server)
            local = self.session.local(rank)
            self._segments[server] = self.session.segment(rank) if local else None
        return self._segments[server]

    def receive(self, deliver, *, block: bool) -> None:
        wire, MPI, status = self.session.wire, self.session.MPI, self._status
        backoff = _Backoff()
        while True:
            if wire.Iprobe(source=MPI.ANY_SOURCE, tag=TAG_REPLY, status=status):
                data = bytearray(status.Get_count(MPI.BYTE))
                wire.Recv([data, MPI.BYTE], source=status.Get_source(), tag=TAG_REPLY)
                deliver(status.Get_source() - self.session.compute_size, decode(data))
                block = False
                continue
            if not block:
                return
            self._check_servers()
            backoff.idle()

    def _check_servers(self) -> None:
        now = time.monotonic()
        if now - self._last_check < LIVENESS_SECONDS:
            return
        self._last_check = now
        for server in range(self.servers):
            peer = self.session.peers[self.session.server_rank(server)]
            if peer.host == self.session.me.host and not _alive(peer.pid):
                raise BurstError(
                    f"I/O rank {self.session.server_rank(server)} (pid {peer.pid} on {peer.host}) "
                    "died; data it had not made durable is lost"
                )


def _serve(session: _Session, sink: Sink, settings: BurstSettings) -> None:
    MPI = session.MPI
    transport = _MPITransport(session)
    index = session.wire.rank - session.compute_size
    server = IOServer(
        index=index,
        clients=session.compute_size,
        sink=sink,
        settings=settings,
        buffer=session.segment(session.wire.rank),
        transport=transport,
        group=MPIGroup(session.compute),
    )
    server.start()
    status, backoff = MPI.Status(), _Backoff()
    last_check = time.monotonic()
    while not server.finished.is_set():
        progressed = transport.complete()
        if session.wire.Iprobe(source=MPI.ANY_SOURCE, tag=TAG_CONTROL, status=status):
            source = status.Get_source()
            data = bytearray(status.Get_count(MPI.BYTE))
            session.wire.Recv([data, MPI.BYTE], source=source, tag=TAG_CONTROL)
            message = decode(data)
            if not isinstance(message, WriteRequest) and message.kind != Kind.READY:
                transport.complete(source, wait=True)  # its data was sent before this message
            server.handle(message)
            progressed = True
        if progressed:
            backoff.busy()
            continue
        if not server.alive and not server.finished.is_set():
            raise BurstError(f"I/O server {index}'s writer stopped unexpectedly")
        if time.monotonic() - last_check > LIVENESS_SECONDS:
            last_check = time.monotonic()
            _check_clients(session)
        backoff.idle()
    server.join()


def _check_clients(session: _Session) -> None:
    for rank in range(session.compute_size):
        peer = session.peers[rank]
        if peer.host == session.me.host and not _alive(peer.pid):
            raise BurstError(f"compute rank {rank} (pid {peer.pid}) died before closing burst")


def run(
    main: Callable[[Client, Any], Any],
    *,
    io_ranks: int = 1,
    memory: str | int = "1GiB",
    overflow: str | Overflow = "block",
    sink: str | Sink | Callable = "netcdf",
    root: str | Path = ".",
    spill_dir: str | Path | None = None,
    autoflush: AutoFlush | dict | None = None,
    fanout: int | None = None,
    steps: int | None = None,
) -> Any:
    """Under mpiexec: serve I/O on the last ``io_ranks`` ranks, run ``main(io, comm)`` on the rest.

    ``comm`` holds the compute ranks only. Returns ``main``'s result on compute ranks and None
    on I/O ranks, once all data is durable and each closed (step, file) set is marked
    ``.complete`` for the migrator. ``fanout`` (default: the number of compute ranks, at least
    1024) and ``steps`` shape the output tree (see :class:`nearline.layout.Layout`).

    If ``main`` raises (a :class:`BurstError` included), the error is printed and the job is
    aborted with exit code 1, as MPI programs must.
    """
    from mpi4py import MPI

    settings = BurstSettings.parse(
        root=root,
        memory=memory,
        overflow=overflow,
        spill_dir=spill_dir,
        autoflush=autoflush,
        layout=Layout.for_run(
            ranks=max(1, MPI.COMM_WORLD.size - io_ranks) if isinstance(io_ranks, int) else 1,
            fanout=fanout,
            steps=steps,
        ),
    )
    chosen = get_sink(sink)
    session = _Session(MPI, io_ranks, settings.memory)
    result = None
    try:
        if session.is_io:
            _serve(session, chosen, settings)
        else:
            client = Client(
                _MPILink(session),
                rank=session.compute.rank,
                autoflush=settings.autoflush,
                copy_threads=session.cores_per_compute_rank,
            )
            result = main(client, session.compute)
            client.close()
    except BaseException as error:  # an MPI job must not hang on one rank's error
        rank = MPI.COMM_WORLD.rank
        role = "I/O" if session.is_io else "compute"
        sys.stderr.write(f"nearline burst: {role} rank {rank}: {type(error).__name__}: {error}\n")
        if not isinstance(error, BurstError):
            traceback.print_exc()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
    session.wire.Barrier()
    session.free()
    return result

"""``burst.run``: the last ``io_ranks`` ranks of COMM_WORLD serve I/O for the others.

Burst talks on its own duplicate of COMM_WORLD, so the model's tags and communicators are
untouched. Each I/O rank's queue memory is an MPI shared-memory window segment: compute ranks
on the same node copy their blocks straight into it (as Damaris does for dedicated cores);
ranks on other nodes send them as one message that the server receives in place.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from nearline.burst._arena import PAGE
from nearline.burst._base import Sink
from nearline.burst._client import Client
from nearline.burst._group import MPIGroup
from nearline.burst._io_server import IOServer
from nearline.burst._mpi_session import (
    LIVENESS_SECONDS,
    Backoff,
    Session,
    alive,
    compute_ranks,
)
from nearline.burst._protocol import (
    TAG_CONTROL,
    TAG_DATA,
    TAG_REPLY,
    Kind,
    Message,
    WriteRequest,
    decode,
    encode,
)
from nearline.burst._settings import AutoFlush, BurstSettings, Overflow
from nearline.burst.sinks import get_sink
from nearline.errors import BurstError
from nearline.layout import Layout

log = logging.getLogger(__name__)
WAITING_HOT_SECONDS = 0.002  # a client spins this long for a reply before it backs off


class _MPITransport:
    """Server side of the wire."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.incoming: list[tuple[int, Any, Callable[[], None]]] = []
        self.replied = threading.Event()

    def reply(self, client: int, message: Message) -> None:
        data = encode(message)
        self.session.wire.Send([data, self.session.MPI.BYTE], dest=client, tag=TAG_REPLY)
        self.replied.set()  # a client that was answered asks again soon: be quick for it

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

    def __init__(self, session: Session) -> None:
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
        backoff = Backoff(hot=WAITING_HOT_SECONDS)  # a reply to a request comes soon
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
        self.check_servers()

    def check_servers(self) -> None:
        for server in range(self.servers):
            peer = self.session.peers[self.session.server_rank(server)]
            if peer.host == self.session.me.host and not alive(peer.pid):
                raise BurstError(
                    f"I/O rank {self.session.server_rank(server)} (pid {peer.pid} on {peer.host}) "
                    "died; data it had not made durable is lost"
                )


def _serve(session: Session, sink: Sink, settings: BurstSettings) -> None:
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
    # no hot spinning here: it starved whatever shared the cores (the test suite's timing
    # tests failed beside it); woken by its own replies instead, it answers a lease at once
    status, backoff = MPI.Status(), Backoff(wake=transport.replied)
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
        if progressed or transport.incoming:  # a large message needs the receiver's progress
            backoff.busy()
            continue
        if not server.alive and not server.finished.is_set():
            raise BurstError(f"I/O server {index}'s writer stopped unexpectedly")
        if time.monotonic() - last_check > LIVENESS_SECONDS:
            last_check = time.monotonic()
            _check_clients(session)
        backoff.idle()
    server.join()


def _check_clients(session: Session) -> None:
    for rank in range(session.compute_size):
        peer = session.peers[rank]
        if peer.host == session.me.host and not alive(peer.pid):
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
    write_behind: bool | None = None,
    on_full: str = "fail",
    full_timeout: float = 600.0,
) -> Any:
    """Under mpiexec: serve I/O on the last ``io_ranks`` ranks, run ``main(io, comm)`` on the rest.

    Every rank calls it. The model's ranks get a client and a communicator of their own, so
    their output leaves them at memory speed while the I/O ranks write it.

    Parameters
    ----------
    main
        ``main(io, comm)``, run on each compute rank: ``io`` is its
        [`Client`][nearline.burst.Client], ``comm`` an mpi4py communicator of the compute
        ranks only.
    io_ranks
        How many of the last ranks of ``COMM_WORLD`` serve I/O.
    memory
        Queue memory of each I/O rank, bytes or a size such as ``"512MiB"``.
    overflow
        What a write does when that memory is full: ``"block"``, ``"spill"`` or ``"sync"``
        (see [`Overflow`][nearline.burst.Overflow]); data is never dropped.
    sink
        The output format: a name from [`available_sinks`][nearline.burst.available_sinks],
        a [`Sink`][nearline.burst.Sink], or a callable ``sink(path, variables)``.
    root
        The folder the output tree is written under.
    spill_dir
        Where ``overflow="spill"`` puts blocks (default: under ``root``).
    autoflush
        Flush per-rank files by size or age without an explicit ``flush``
        (an [`AutoFlush`][nearline.burst.AutoFlush] or its dict).
    fanout
        Most entries per folder of the output tree (see `nearline.layout.Layout`); by
        default the number of compute ranks, at least 1024.
    steps
        Time steps per folder of the output tree.
    write_behind
        Let idle I/O ranks write queued blocks into their temporary files before ``flush``,
        which then only publishes them (default: ``NEARLINE_BURST_WRITE_BEHIND``, else off).
    on_full
        What a full output disk does: ``"fail"`` drops the file and says how much was free
        and needed; ``"wait"`` keeps everything queued, reports the stall in
        [`Client.stats`][nearline.burst.Client.stats] and the log, and goes on when room
        appears (``nearline migrate --watch`` frees it).
    full_timeout
        Seconds ``on_full="wait"`` waits for room before it fails.

    Returns
    -------
    Any
        ``main``'s result on compute ranks and None on I/O ranks, once all data is durable
        and each closed (step, file) set is marked ``.complete`` for the migrator.

    Raises
    ------
    ConfigError
        A setting nearline cannot use (before any rank starts work).

    Notes
    -----
    If ``main`` raises ([`BurstError`][nearline.burst.BurstError] included), the error is
    printed and the job is aborted with exit code 1, as MPI programs must.
    """
    os.environ.setdefault("OMPI_MCA_osc", "^ucx")  # before MPI starts: quiet where UCX lacks RMA
    from mpi4py import MPI

    settings = BurstSettings.parse(
        root=root,
        memory=memory,
        overflow=overflow,
        spill_dir=spill_dir,
        autoflush=autoflush,
        write_behind=write_behind,
        on_full=on_full,
        full_timeout=full_timeout,
        layout=Layout.for_run(
            ranks=compute_ranks(io_ranks, MPI.COMM_WORLD.size), fanout=fanout, steps=steps
        ),
    )
    chosen = get_sink(sink)
    world = MPI.COMM_WORLD
    session = Session(
        MPI, is_io=world.rank >= compute_ranks(io_ranks, world.size), memory=settings.memory
    )

    def work() -> Any:
        if session.is_io:
            return _serve(session, chosen, settings)
        client = Client(
            _MPILink(session),
            rank=session.compute.rank,
            autoflush=settings.autoflush,
            copy_threads=session.cores_per_compute_rank,
        )
        result = main(client, session.compute)
        client.close()
        return result

    return _closing(session, work)


def serve_beside(
    settings: BurstSettings, sink: Sink, *, fanout: int | None = None, steps: int | None = None
) -> None:
    """Serve I/O as one of the last ranks of a job whose first ranks run a model that called
    ``nlb_init`` (C, Fortran) or ``burst.run`` (python -m nearline.burst.server)."""
    from mpi4py import MPI

    session = Session(MPI, is_io=True, memory=settings.memory)
    layout = Layout.for_run(ranks=session.compute_size, fanout=fanout, steps=steps)
    _closing(session, lambda: _serve(session, sink, replace(settings, layout=layout)))


def _closing(session: Session, work: Callable[[], Any]) -> Any:
    """Run ``work`` on this rank, then close the session with the others; an error on any
    rank aborts the whole job, as an MPI job must rather than hang."""
    MPI = session.MPI
    result = None
    try:
        result = work()
    except BaseException as error:
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

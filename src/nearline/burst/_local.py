"""The embedded default: I/O servers as threads of the model's own process (no MPI).

``burst.open`` gives the same client as ``burst.run``; the queue memory is an ordinary
pre-touched buffer that the client copies into directly.
"""

from __future__ import annotations

import contextlib
import os
import queue
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from nearline.burst._base import Sink
from nearline.burst._client import Client
from nearline.burst._group import ThreadGroup
from nearline.burst._io_server import IOServer
from nearline.burst._protocol import Message, WriteRequest
from nearline.burst._settings import AutoFlush, BurstSettings, Overflow
from nearline.burst.sinks import get_sink
from nearline.errors import BurstError, ConfigError
from nearline.layout import Layout

POLL_SECONDS = 0.2


class _ThreadTransport:
    """Server side: replies land in the one client's inbox."""

    def __init__(self, index: int, inbox: queue.SimpleQueue) -> None:
        self.index = index
        self.inbox = inbox
        self.expected: deque[tuple[np.ndarray, Callable[[], None]]] = deque()

    def reply(self, client: int, message: Message) -> None:
        self.inbox.put((self.index, message))

    def shares_memory(self, client: int) -> bool:
        return True

    def expect_data(self, client: int, into: np.ndarray, then: Callable[[], None]) -> None:
        self.expected.append((into, then))


class _ThreadLink:
    """Client side: calls the servers directly and reads their replies from an inbox."""

    def __init__(self, servers: list[IOServer], transports: list[_ThreadTransport], inbox) -> None:
        self._servers = servers
        self._transports = transports
        self._inbox = inbox
        self.servers = len(servers)

    def send(self, server: int, message: WriteRequest | Message) -> None:
        self._servers[server].handle(message)

    def send_data(self, server: int, array: np.ndarray) -> None:
        into, then = self._transports[server].expected.popleft()
        into.view(array.dtype).reshape(array.shape)[...] = array
        then()

    def memory(self, server: int) -> np.ndarray:
        return self._servers[server].arena.buffer

    def receive(self, deliver, *, block: bool) -> None:
        while True:
            try:
                server, message = self._inbox.get(block=block, timeout=POLL_SECONDS)
            except queue.Empty:
                if not block:
                    return
                self._check_alive()
                continue
            deliver(server, message)
            block = False

    def check_servers(self) -> None:
        self._check_alive()

    def _check_alive(self) -> None:
        for server in self._servers:
            if not server.alive:
                raise BurstError(
                    f"I/O thread {server.index} stopped unexpectedly; see the log for its error"
                )


@contextlib.contextmanager
def open(
    root: str | Path,
    *,
    io_threads: int = 1,
    memory: str | int = "1GiB",
    overflow: str | Overflow = "block",
    sink: str | Sink | Callable = "netcdf",
    spill_dir: str | Path | None = None,
    autoflush: AutoFlush | dict | None = None,
    fanout: int | None = None,
    steps: int | None = None,
    write_behind: bool | None = None,
    on_full: str = "fail",
    full_timeout: float = 600.0,
) -> Iterator[Client]:
    """Serve a client with I/O threads in this process; everything is durable on exit.

    The same client as [`run`][nearline.burst.run] gives under MPI, for a model (or a test)
    without it: ``with burst.open("out") as io: io.write(...)``.

    Parameters
    ----------
    root
        The folder the output tree is written under.
    io_threads
        How many I/O threads serve the client.
    memory
        Queue memory of each I/O thread, bytes or a size such as ``"512MiB"``.
    overflow
        What a write does when that memory is full: ``"block"``, ``"spill"`` or ``"sync"``
        (see [`Overflow`][nearline.burst.Overflow]).
    sink
        The output format: a name from [`available_sinks`][nearline.burst.available_sinks],
        a [`Sink`][nearline.burst.Sink], or a callable ``sink(path, variables)``.
    spill_dir
        Where ``overflow="spill"`` puts blocks (default: under ``root``).
    autoflush
        Flush by size or age without an explicit ``flush``
        (an [`AutoFlush`][nearline.burst.AutoFlush] or its dict).
    fanout
        Most entries per folder of the output tree (see `nearline.layout.Layout`).
    steps
        Time steps per folder of the output tree.
    write_behind
        Let idle I/O threads write queued blocks into their temporary files before
        ``flush``, which then only finishes them; files still take their final names at
        flush (default: ``NEARLINE_BURST_WRITE_BEHIND``, else off).
    on_full
        What a full output disk does; as for [`run`][nearline.burst.run].
    full_timeout
        Seconds ``on_full="wait"`` waits for room.

    Yields
    ------
    Client
        The client; leaving the ``with`` block flushes, waits and closes it.

    Raises
    ------
    ConfigError
        A setting nearline cannot use.
    BurstError
        Writing failed (a sink raised, an I/O thread died); raised at the client's next call.
    """
    if isinstance(io_threads, bool) or not isinstance(io_threads, int) or io_threads < 1:
        raise ConfigError(f"io_threads must be an int >= 1, got {io_threads!r}")
    settings = BurstSettings.parse(
        root=root,
        memory=memory,
        overflow=overflow,
        spill_dir=spill_dir,
        autoflush=autoflush,
        write_behind=write_behind,
        on_full=on_full,
        full_timeout=full_timeout,
        layout=Layout.for_run(ranks=1, fanout=fanout, steps=steps),
    )
    group = ThreadGroup(io_threads)
    chosen = get_sink(sink)
    inbox: queue.SimpleQueue = queue.SimpleQueue()
    transports = [_ThreadTransport(i, inbox) for i in range(io_threads)]
    servers = [
        IOServer(
            index=i,
            clients=1,
            sink=chosen,
            settings=settings,
            buffer=np.empty(settings.memory, dtype=np.uint8),
            transport=transports[i],
            group=group.member(i),
        )
        for i in range(io_threads)
    ]
    for server in servers:
        server.start()
    client = Client(
        _ThreadLink(servers, transports, inbox),
        rank=0,
        autoflush=settings.autoflush,
        copy_threads=min(4, os.cpu_count() or 1),
    )
    try:
        yield client
        client.close()
    finally:
        if not client._closed:
            with contextlib.suppress(BurstError):
                client.close()
        for server in servers:
            server.join()

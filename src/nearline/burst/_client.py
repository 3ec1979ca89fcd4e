"""The compute side of burst: ``io.write`` hands a block over and returns at once.

The client is the same in both modes; a *link* carries its messages (to I/O threads in this
process, or to I/O ranks over MPI) and says whether the server's queue memory is shared.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from nearline.burst._arena import ALIGN, rounded
from nearline.burst._blocks import as_block, check_attrs, lendable, placement
from nearline.burst._copier import Copier
from nearline.burst._protocol import Kind, Message, Mode, WriteRequest
from nearline.burst._settings import AutoFlush
from nearline.errors import BurstError, BurstInputError


class Link(Protocol):
    """How a client reaches its I/O servers."""

    servers: int

    def send(self, server: int, message: WriteRequest | Message) -> None: ...

    def send_data(self, server: int, array: np.ndarray) -> None: ...

    def memory(self, server: int) -> np.ndarray | None: ...

    def receive(self, deliver: Callable[[int, Message], None], *, block: bool) -> None: ...

    def check_servers(self) -> None: ...


@dataclass(frozen=True)
class BurstStats:
    """What the I/O servers hold and have done, summed over servers, plus this client's pauses.

    Returned by [`Client.stats`][nearline.burst.Client.stats]; ``seconds_blocked`` is the
    figure a model cares about: how long its writes waited for the I/O servers.

    Parameters
    ----------
    bytes_queued
        Bytes held in the servers' queue memory now.
    bytes_spilled
        Bytes written to the spill folder because the queue was full.
    bytes_written
        Bytes the sinks have written.
    files_written
        Files published (durable under their final names).
    seconds_blocked
        This client's time waiting for room or for the servers.
    seconds_in_write
        This client's time inside ``write`` and ``buffer``, waiting included.
    writes
        This client's ``write`` and ``buffer`` calls.
    seconds_stalled
        The servers' time waiting for room on a full disk.
    waiting_for_space
        Bytes a stalled server waits for now (0: none is stalled).
    bytes_leased
        Queue memory lent out for ``buffer`` and not handed back yet.
    """

    bytes_queued: int
    bytes_spilled: int
    bytes_written: int
    files_written: int
    seconds_blocked: float
    seconds_in_write: float
    writes: int
    seconds_stalled: float = 0.0  # servers' time waiting for room on a full disk
    waiting_for_space: int = 0  # bytes a stalled server waits for now (0: none is stalled)
    bytes_leased: int = 0  # queue memory lent out for ``buffer`` and not handed back yet


@dataclass(slots=True)
class _Lent:
    """What ``buffer`` returns: ``with`` gives the array, leaving hands it over."""

    client: Client
    server: int
    request: WriteRequest
    array: np.ndarray
    grant: Message | None  # None: carved from a lease
    in_queue: bool  # the array is the server's queue memory (else ordinary memory)

    def __enter__(self) -> np.ndarray:
        return self.array

    def __exit__(self, kind: type | None, error: BaseException | None, trace: Any) -> None:
        self.client._hand_over(self, failed=kind is not None)


class Client:
    """What ``main(io, comm)`` receives: write, flush, wait, close, stats.

    Made by [`run`][nearline.burst.run] and [`open`][nearline.burst.open], never by the model:
    the same calls work whether the I/O servers are MPI ranks or threads. Files are named by
    ``file`` (a group such as ``"dynamics"``) and ``step``; where they go is the layout's
    choice.

    Parameters
    ----------
    link
        How the client reaches its I/O servers (MPI or in-process threads).
    rank
        This compute rank's number; it picks the server of its per-rank files.
    autoflush
        Flush per-rank files by size or age.
    copy_threads
        Threads that copy large blocks into shared queue memory.
    """

    def __init__(
        self,
        link: Link,
        *,
        rank: int,
        autoflush: AutoFlush | None = None,
        copy_threads: int = 1,
    ) -> None:
        self._link = link
        self._home = rank % link.servers  # the server of this rank's per-rank files
        self._copier = Copier(copy_threads)
        self.rank = rank
        self._autoflush = autoflush
        self._next_id = 0
        self._flush_seq = 0
        self._epoch = 0
        self._replies: dict[tuple[int, int], Message] = {}
        self._errors: list[BurstError] = []
        self._closed = False
        self._final_stats: BurstStats | None = None
        self._unflushed = 0
        self._last_flush = time.monotonic()
        self._blocked = 0.0
        self._in_write = 0.0
        self._writes = 0
        self._undurable: set[str] = set()
        self._leases: dict[int, list[int]] = {}  # server: [next free, end] of this client's lease
        self._lease_asked: dict[int, int] = {}  # server: the id of a LEASE not yet answered
        self._closing = False
        self._committed: list[tuple[int, WriteRequest]] = []  # leased blocks' unsent WRITEs

    # -- public API -------------------------------------------------------------------------
    def write(
        self,
        file: str,
        name: str,
        array: Any,
        *,
        step: int,
        start: Sequence[int] | None = None,
        shape: Sequence[int] | None = None,
        dims: Sequence[str] | None = None,
        attrs: Mapping[str, Any] | None = None,
    ) -> None:
        """Hand ``array`` over for ``file`` at ``step``; the buffer is free again on return.

        Without ``start``/``shape`` the variable goes to this rank's own file; with them, the
        block sits at ``start`` of a global variable of ``shape`` assembled from all ranks.

        Parameters
        ----------
        file
            The file group (``"dynamics"``): one file per step, per rank or assembled.
        name
            The variable's name in the file.
        array
            The data; anything ``numpy.asarray`` takes, of a numeric dtype.
        step
            The time step the data belongs to.
        start
            Offset of this block in the global variable, one per axis.
        shape
            The global variable's shape; given with ``start``.
        dims
            One dimension name per axis (default: generated from the name).
        attrs
            The variable's attributes (``units``, ``long_name``...): str, int or float.

        Raises
        ------
        BurstInputError
            The array, its bounds or its name cannot be stored.
        BurstError
            An earlier write or flush failed on the I/O side.
        """
        began = time.perf_counter()
        block = as_block(array, name=name)
        server, request = self._prepare(
            file, name, block.shape, block.dtype, step=step, start=start, shape=shape, dims=dims,
            attrs=attrs,
        )  # fmt: skip
        grant = self._grant(server, request, began)
        self._deliver_block(server, request, grant, block)
        self._done_block(file, block.nbytes, began)

    def buffer(
        self,
        file: str,
        name: str,
        shape: Sequence[int],
        dtype: Any,
        *,
        step: int,
        start: Sequence[int] | None = None,
        global_shape: Sequence[int] | None = None,
        dims: Sequence[str] | None = None,
        attrs: Mapping[str, Any] | None = None,
    ) -> AbstractContextManager[np.ndarray]:
        """An array in the I/O server's queue memory to compute into: no copy at all.

        ``with io.buffer(...) as a:`` gives the array; the model computes into it, and leaving
        the block hands it over. Where the server's memory is not shared (another node, a
        spilled or written-through block under a full queue), ``a`` is ordinary memory and
        leaving the block sends it: the model's code is the same everywhere. If the block
        raises, the server drops the block and the file is not written (flush says so); the
        error propagates.

        Parameters
        ----------
        file, name
            As for [`write`][nearline.burst.Client.write].
        shape
            This block's shape.
        dtype
            This block's dtype (numeric, native byte order).
        step
            The time step.
        start
            This block's offset, as for ``write``.
        global_shape
            ``write``'s ``shape``: the global variable's.
        dims
            Dimension names, as for ``write``.
        attrs
            Attributes, as for ``write``.

        Returns
        -------
        AbstractContextManager[numpy.ndarray]
            Gives the array on entry; hands it over on exit.

        Raises
        ------
        BurstInputError
            The shape, dtype, bounds or name cannot be stored.
        """
        began = time.perf_counter()
        shape = tuple(map(int, shape))
        if shape and min(shape) < 0:
            raise BurstInputError(f"variable {name!r}: shape {shape} has a negative length")
        dtype = lendable(dtype, name=name)
        server, request = self._prepare(
            file, name, shape, dtype, step=step, start=start,
            shape=global_shape, dims=dims, attrs=attrs, lent=True,
        )  # fmt: skip
        grant, offset = None, request.lease_offset  # from this client's lease: no round trip
        memory = self._link.memory(server)
        if offset is None:
            grant = self._grant(server, request, began)
            memory = memory if grant.get("mode") == Mode.MEMORY else None
            offset = grant.get("offset")
        if memory is not None:
            array = memory[offset : offset + request.nbytes].view(dtype).reshape(shape)
        else:  # ordinary memory only where the queue's cannot be lent
            array = np.empty(shape, dtype=dtype)
        self._in_write += time.perf_counter() - began
        return _Lent(self, server, request, array, grant, in_queue=memory is not None)

    def _hand_over(self, lent: _Lent, *, failed: bool) -> None:
        """The model left a ``buffer`` block: hand the array over, or drop it if it failed.

        A leased block's WRITE goes with this client's next message, so that a burst's
        WRITEs go out together: one after another each costs a few microseconds, while alone,
        between stretches of the model's computing, the code that sends one is out of the
        cache and costs a hundred.
        """
        server, request, grant = lent.server, lent.request, lent.grant
        if failed:
            if not lent.in_queue:  # the server waits for these bytes; it drops them on ABANDON
                self._deliver_block(server, request, grant, lent.array)
            self._abandon(server, request)
            return
        began = time.perf_counter()
        if grant is None:
            self._committed.append((server, request))
        elif lent.in_queue:
            self._send(server, Message(Kind.READY, request.id, self.rank))
        else:
            self._deliver_block(server, request, grant, lent.array)
        self._done_block(request.file, request.nbytes, began)

    def _carve(self, server: int, nbytes: int) -> int | None:
        """Where a lent block of ``nbytes`` goes in this client's lease of ``server``'s
        queue memory, taking a new lease when the old one is used up (asked for ahead, or
        one round trip for many blocks); None where memory is not shared or the server has
        none to lend."""
        if self._link.memory(server) is None:
            return None
        size = rounded(nbytes)

        def holds(lease: list[int] | None) -> bool:
            return lease is not None and lease[1] - lease[0] >= size

        lease = self._leases.get(server)
        if not holds(lease):
            self._return_lease(server)
            lease = self._take_lease(server)  # the one asked for ahead, if any
        if not holds(lease):
            self._return_lease(server)
            self._ask_lease(server, size)
            lease = self._take_lease(server)
        if not holds(lease):
            return None
        offset = lease[0]
        lease[0] += size
        return offset

    def _ask_lease(self, server: int, least: int) -> None:
        """Ask ``server`` for a lease (its share of the queue memory, at least ``least``
        bytes) without waiting for the answer."""
        self._next_id += 1
        fields = {"nbytes": rounded(self._link.memory(server).size) - ALIGN, "least": least}
        self._send(server, Message(Kind.LEASE, self._next_id, self.rank, fields))
        self._lease_asked[server] = self._next_id

    def _take_lease(self, server: int) -> list[int] | None:
        """The lease asked for from ``server``, once it answers (None: none asked, or none
        to lend)."""
        ident = self._lease_asked.pop(server, None)
        if ident is None:
            return None
        grant = self._await(server, ident)
        if grant.get("mode") != "lease":
            return None
        start = grant.get("offset")
        lease = self._leases[server] = [start, start + grant.get("nbytes")]
        return lease

    def _settle_lease(self, server: int) -> None:
        """Hold no lease of ``server``: take the one asked for, if any, and give it back."""
        self._take_lease(server)
        self._return_lease(server)

    def _return_lease(self, server: int) -> None:
        """Give back what is left of a lease (before a flush, or for a new lease)."""
        lease = self._leases.pop(server, None)
        if lease is not None and lease[1] > lease[0]:
            fields = {"offset": lease[0], "nbytes": lease[1] - lease[0]}
            self._send(server, Message(Kind.RETURN, 0, self.rank, fields))

    def _abandon(self, server: int, request: WriteRequest) -> None:
        where = {"file": request.file, "step": request.step, "name": request.name}
        fields = {**where, "assembled": request.assembled, "lease_offset": request.lease_offset,
                  "nbytes": request.nbytes}  # fmt: skip
        self._send(server, Message(Kind.ABANDON, request.id, self.rank, fields))

    def flush(self, file: str | None = None) -> None:
        """Ask the I/O servers to write what is queued for ``file`` (all files if None).

        Returns at once. Collective: every compute rank calls it, in the same order.

        Parameters
        ----------
        file
            The file group to flush; None flushes every group.

        Raises
        ------
        BurstError
            The client is closed, or an earlier write failed.
        """
        self._check_usable()
        self._send_flush(file, scope="all")
        self._epoch += 1

    def check_servers(self) -> None:
        """Raise now if an I/O server of this node has died, without waiting for one.

        A rank learns of a dead server when it waits on it; a model whose ranks rarely wait
        (the queue has room) can ask at each output instead, and agree on the answer with
        its own collective so that every rank stops at the same step.

        Raises
        ------
        BurstError
            A server died; the message names it.
        """
        self._link.check_servers()

    def wait(self, file: str | None = None) -> None:
        """Block until every flush made so far is durable (fsync'd and renamed into place).

        Parameters
        ----------
        file
            Accepted for symmetry with ``flush``; the wait covers every flush so far.

        Raises
        ------
        BurstError
            A flushed file could not be written; the message names it.
        """
        self._check_usable()
        leased = sorted(set(self._leases) | set(self._lease_asked))
        for server in leased:  # the rest of a lease is free memory again, for stats too
            self._settle_lease(server)
        ident = self._tell_everyone(Kind.WAIT)
        if not self._closing:
            for server in leased:  # the next burst's lease: answered with the wait, so no
                self._ask_lease(server, 0)  # round trip when the next burst starts
        self._await_everyone(ident)
        self._raise_errors()
        self._undurable.clear()

    def stats(self) -> BurstStats:
        """Bytes queued, spilled and written by the servers, and this rank's time blocked.

        After ``close`` it gives the final totals, gathered once everything was durable.

        Returns
        -------
        BurstStats
            Summed over the I/O servers.

        Raises
        ------
        BurstError
            ``close`` failed before the final figures were gathered.
        """
        if self._closed:
            if self._final_stats is None:
                raise BurstError(
                    "this burst client's close failed before its final figures were gathered; "
                    "the error close raised says what went wrong"
                )
            return self._final_stats
        self._check_usable()
        replies = self._everyone(Kind.STATS)
        summed = ("bytes_queued", "bytes_spilled", "bytes_written", "files_written",
                  "seconds_stalled", "waiting_for_space", "bytes_leased")  # fmt: skip
        return BurstStats(
            **{name: sum(r.get(name, 0) for r in replies) for name in summed},
            seconds_blocked=self._blocked,
            seconds_in_write=self._in_write,
            writes=self._writes,
        )

    def close(self) -> None:
        """Flush everything, wait until it is durable, and let the I/O servers stop.

        Calling it again does nothing.

        Raises
        ------
        BurstError
            A file could not be written; the message names it.
        """
        if self._closed:
            return
        self._closing = True
        try:
            self.flush()
            self.wait()
            self._final_stats = self.stats()
        finally:
            self._closed = True
            self._copier.close()
            for server in range(self._link.servers):
                self._send(server, Message(Kind.CLOSE, 0, self.rank))

    # -- internals ---------------------------------------------------------------------------
    def _prepare(
        self,
        file: str,
        name: str,
        block_shape: tuple[int, ...],
        dtype: np.dtype,
        *,
        step: int,
        start: Sequence[int] | None,
        shape: Sequence[int] | None,
        dims: Sequence[str] | None,
        attrs: Mapping[str, Any] | None,
        lent: bool = False,
    ) -> tuple[int, WriteRequest]:
        """Check a block and return (its server, its WRITE request). A ``lent`` block is
        carved from this client's lease of the server's memory where it can be."""
        self._check_usable()
        if isinstance(step, bool) or not isinstance(step, int | np.integer) or step < 0:
            raise BurstInputError(f"variable {name!r}: step must be an int >= 0, got {step!r}")
        place = placement(file, name, block_shape, start, shape, dims)
        attrs = check_attrs(attrs, name=name)
        if place.start is None:
            server = self._home
        else:
            server = zlib.crc32(file.encode()) % self._link.servers
        nbytes = math.prod(block_shape) * dtype.itemsize
        offset = self._carve(server, nbytes) if lent else None  # once all is checked
        self._next_id += 1
        request = WriteRequest(
            id=self._next_id,
            client=self.rank,
            file=file,
            name=name,
            step=int(step),
            dtype=dtype.str,
            shape=block_shape,
            global_shape=place.global_shape,
            start=place.start,
            dims=place.dims,
            attrs=attrs,
            epoch=self._epoch,
            lease_offset=offset,
            lent=lent,
        )
        return server, request

    def _grant(self, server: int, request: WriteRequest, began: float) -> Message:
        """Ask ``server`` for room for ``request`` and return its grant.

        What is left of a lease of ``server`` goes back first: held while this rank waits
        for room, it could be the very room it waits for.
        """
        self._settle_lease(server)
        self._send(server, request)
        grant = self._await(server, request.id)
        if grant.get("waited"):
            self._blocked += time.perf_counter() - began
        return grant

    def _send(self, server: int, message: WriteRequest | Message) -> None:
        """Send ``message``, after the WRITEs of committed leased blocks not yet sent."""
        if self._committed:
            committed, self._committed = self._committed, []
            for to, request in committed:
                self._link.send(to, request)
        self._link.send(server, message)

    def _done_block(self, file: str, nbytes: int, began: float) -> None:
        self._writes += 1
        self._undurable.add(file)
        self._unflushed += nbytes
        self._in_write += time.perf_counter() - began
        self._maybe_autoflush()

    def _deliver_block(
        self, server: int, request: WriteRequest, grant: Message, block: np.ndarray
    ) -> None:
        mode = grant.get("mode")
        if mode == Mode.MEMORY:
            memory = self._link.memory(server)
            offset = grant.get("offset")
            target = memory[offset : offset + request.nbytes].view(block.dtype)
            self._copier.copy(target.reshape(block.shape), block)
            self._send(server, Message(Kind.READY, request.id, self.rank))
        elif mode == Mode.SPILL:
            np.ascontiguousarray(block).tofile(grant.get("path"))
            self._send(server, Message(Kind.READY, request.id, self.rank))
        elif mode == Mode.MESSAGE:
            self._link.send_data(server, np.ascontiguousarray(block))
        elif mode == Mode.SYNC:
            began = time.perf_counter()
            self._link.send_data(server, np.ascontiguousarray(block))
            self._await(server, request.id)
            self._blocked += time.perf_counter() - began
        else:
            raise BurstError(f"I/O server {server} granted an unknown mode {mode!r}")

    def _send_flush(self, file: str | None, *, scope: str) -> None:
        self._flush_seq += 1
        fields = {"file": file, "scope": scope, "epoch": self._epoch}
        message = Message(Kind.FLUSH, self._flush_seq, self.rank, fields)
        for server in range(self._link.servers):
            self._send(server, message)
        self._unflushed = 0
        self._last_flush = time.monotonic()

    def _maybe_autoflush(self) -> None:
        policy = self._autoflush
        if policy is None:
            return
        if (policy.bytes is not None and self._unflushed >= policy.bytes) or (
            policy.age is not None and time.monotonic() - self._last_flush >= policy.age
        ):
            self._send_flush(None, scope="local")

    def _everyone(self, kind: Kind) -> list[Message]:
        return self._await_everyone(self._tell_everyone(kind))

    def _tell_everyone(self, kind: Kind) -> int:
        self._next_id += 1
        for server in range(self._link.servers):
            self._send(server, Message(kind, self._next_id, self.rank))
        return self._next_id

    def _await_everyone(self, ident: int) -> list[Message]:
        return [self._await(server, ident) for server in range(self._link.servers)]

    def _await(self, server: int, ident: int) -> Message:
        """Block until server answers request ``ident``; raise on an error for this client."""
        while (server, ident) not in self._replies:
            self._raise_errors()
            try:
                self._link.receive(self._deliver, block=True)
            except BurstError as error:  # a dead server: say which files are at risk
                files = ", ".join(repr(f) for f in sorted(self._undurable)) or "none"
                raise BurstError(f"{error}; files written since the last wait: {files}") from None
        self._raise_errors()
        return self._replies.pop((server, ident))

    def _deliver(self, server: int, message: Message) -> None:
        if message.kind == Kind.ERROR:
            error_type = BurstInputError if message.get("type") == "input" else BurstError
            self._errors.append(error_type(message.get("message")))
        else:
            self._replies[(server, message.id)] = message

    def _raise_errors(self) -> None:
        if self._errors:
            raise self._errors.pop(0)

    def _check_usable(self) -> None:
        if self._closed:
            raise BurstError("this burst client is closed; open a new one to write more")
        self._link.receive(self._deliver, block=False)
        self._raise_errors()

"""The I/O server: queue bookkeeping and the writer thread, independent of the transport.

The transport (threads in one process, or MPI) delivers client messages to :meth:`handle`
and carries replies back through :class:`Transport`. One lock guards the bookkeeping; sink
I/O happens on the writer thread outside it.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from nearline.burst._arena import Arena, rounded
from nearline.burst._assembly import FileKey, key_of
from nearline.burst._base import Sink
from nearline.burst._blocks import check_names
from nearline.burst._completion import CompletionBook
from nearline.burst._flushes import FlushBook
from nearline.burst._group import ServerGroup
from nearline.burst._protocol import Kind, Message, Mode, WriteRequest
from nearline.burst._settings import BurstSettings, Overflow
from nearline.burst._space import Room, explain
from nearline.burst._writer import FileWriter, OutputFile
from nearline.errors import BurstError, BurstInputError

log = logging.getLogger(__name__)


class Transport(Protocol):
    """What the server needs from whoever carries its messages."""

    def reply(self, client: int, message: Message) -> None: ...

    def shares_memory(self, client: int) -> bool: ...

    def expect_data(self, client: int, into: np.ndarray, then: callable) -> None: ...


@dataclass
class Piece:
    """One block held by the server: in queue memory, in a spill file, or passed through."""

    request: WriteRequest
    offset: int | None = None
    spill: Path | None = None
    data: np.ndarray | None = None
    order: int = 0


class IOServer:
    """Serves ``clients`` compute ranks; see docs/burst.md for the life of a block."""

    def __init__(
        self,
        *,
        index: int,
        clients: int,
        sink: Sink,
        settings: BurstSettings,
        buffer: np.ndarray,
        transport: Transport,
        group: ServerGroup,
    ) -> None:
        self.index = index
        self.clients = clients
        self.settings = settings
        self.transport = transport
        self.arena = Arena(buffer)
        self.writer = FileWriter(sink, settings.root, settings.layout)
        self.room = Room(settings.on_full, timeout=settings.full_timeout)
        self.group = group
        self.completion = CompletionBook(settings.root, settings.layout)
        self.outputs: dict[FileKey, OutputFile] = {}
        self.queued: dict[FileKey, list[Piece]] = {}
        self.pieces: dict[tuple[int, int], Piece] = {}
        self.pending: deque[WriteRequest] = deque()
        self.flushes = FlushBook(clients)
        self.bytes_spilled = 0
        self.bytes_leased = 0  # queue memory lent to clients and not yet filled and handed over
        self.spill_count = 0
        self.closed: set[int] = set()
        self.finished = threading.Event()
        self._lock = threading.RLock()
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._drain_scheduled = False
        self._arrivals = 0
        self._leases_after_wait: dict[int, Message] = {}
        self._thread = threading.Thread(target=self._run_writer, name=f"burst-io-{index}")

    # -- life cycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Touch the queue memory (before any client can be granted a piece) and serve."""
        self.arena.touch()
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # -- messages from clients --------------------------------------------------------------
    def handle(self, message: WriteRequest | Message) -> None:
        """Act on one client message; replies go out through the transport."""
        with self._lock:
            if isinstance(message, WriteRequest):
                self._on_write(message)
            elif message.kind == Kind.READY:
                self._on_ready(self.pieces[(message.client, message.id)])
            elif message.kind == Kind.ABANDON:
                self._on_abandon(message)
            elif message.kind == Kind.LEASE and self.flushes.waiting(message.client):
                self._leases_after_wait[message.client] = message  # wants what wait frees
            elif message.kind == Kind.LEASE:
                self._on_lease(message)
            elif message.kind == Kind.RETURN:
                self._unlease(message.get("nbytes"), message.get("offset"))
            elif message.kind == Kind.FLUSH:
                self._on_flush(message)
            elif message.kind == Kind.WAIT:
                self.flushes.add_waiter(message.client, message.id)
                self._answer_waiters()
            elif message.kind == Kind.STATS:
                self.transport.reply(message.client, self._stats_reply(message.id))
            elif message.kind == Kind.CLOSE:
                self.closed.add(message.client)
                if len(self.closed) == self.clients:
                    self._jobs.put(("stop",))
            else:
                raise BurstError(f"I/O server {self.index} got an unexpected {message.kind.name}")

    def _on_write(self, request: WriteRequest) -> None:
        try:  # the client checked too; a native client's text reaches here unchecked by Python
            check_names(request.file, request.name)
        except BurstInputError as error:
            self._refuse(request, error)
            return
        key = key_of(request)
        output = self.outputs.get(key)
        if output is None:
            output = self.outputs[key] = self.writer.output_for(key, epoch=request.epoch)
        try:
            output.state.accept(request)
        except BurstInputError as error:
            self._refuse(request, error)
            return
        self._arrivals += 1
        piece = self.pieces[(request.client, request.id)] = Piece(request, order=self._arrivals)
        if request.lease_offset is not None:  # in place already: queued as it comes
            self._unlease(request.nbytes)
            piece.offset = request.lease_offset
            self._on_ready(piece)
            return
        if self.pending or not self._grant_memory(piece):
            self._overflow(piece)

    def _refuse(self, request: WriteRequest, error: BurstInputError) -> None:
        self.transport.reply(request.client, _error(request.id, error))
        if request.lease_offset is not None:
            self._unlease(request.nbytes, request.lease_offset)

    def _unlease(self, nbytes: int, offset: int | None = None) -> None:
        """Bytes of a lease stop being lent: queued as a block, or given back at ``offset``."""
        self.bytes_leased -= rounded(nbytes)
        if offset is not None:
            self.arena.release(offset, nbytes)
            self._grant_pending()

    def _on_lease(self, message: Message) -> None:
        """Lend a client a slab of queue memory to carve lent blocks from without asking for
        each (``buffer``): as much as it asks for, or less down to ``least``, or none."""
        sharing = sum(self.transport.shares_memory(c) for c in range(self.clients))
        least = message.get("least")
        want = max(least, min(message.get("nbytes"), self.arena.capacity // max(1, sharing)))
        offset = None
        if self.transport.shares_memory(message.client) and not self.pending:
            while offset is None and want >= max(least, 1):
                offset = self.arena.allocate(want)
                if offset is None:
                    want //= 2
        fields = {"mode": "none"}
        if offset is not None:
            fields = {"mode": "lease", "offset": offset, "nbytes": rounded(want)}
            self.bytes_leased += rounded(want)
        self.transport.reply(message.client, Message(Kind.GRANT, message.id, fields=fields))

    def _on_abandon(self, message: Message) -> None:
        """The model raised inside ``buffer``: drop the block (wherever it got to) and make
        its file fail at flush rather than be written with garbage in it."""
        assembled = message.get("assembled")
        key = FileKey(
            message.get("file"), message.get("step"), None if assembled else message.client
        )
        output = self.outputs.get(key)
        if output is not None:
            output.state.abandon(message.get("name"), message.client)
        piece = self.pieces.get((message.client, message.id))
        if piece is not None:
            with contextlib.suppress(ValueError):
                self.queued.get(key, []).remove(piece)
            self._release(piece)
        elif message.get("lease_offset") is not None:  # a block carved from a lease
            self._unlease(message.get("nbytes"), message.get("lease_offset"))

    def _grant_memory(self, piece: Piece, *, waited: bool = False) -> bool:
        request = piece.request
        offset = self.arena.allocate(request.nbytes)
        if offset is None:
            return False
        piece.offset = offset
        if self.transport.shares_memory(request.client):
            self._grant(request, Mode.MEMORY, offset=offset, waited=waited)
        else:
            view = self.arena.view(offset, request.nbytes, "u1", (request.nbytes,))
            self._grant(request, Mode.MESSAGE, waited=waited)
            self.transport.expect_data(request.client, view, lambda: self._ready_later(piece))
        return True

    def _overflow(self, piece: Piece) -> None:
        request = piece.request
        policy = self.settings.overflow
        if policy is Overflow.SYNC or not self.arena.fits_ever(request.nbytes):
            if policy is Overflow.SPILL:
                self._spill(piece)
            else:  # a block larger than the whole queue can only be written through
                self._write_through(piece)
        elif policy is Overflow.SPILL:
            self._spill(piece)
        else:
            self.pending.append(request)
            self._schedule_drain()

    def _spill(self, piece: Piece) -> None:
        self.spill_count += 1
        folder = self.settings.spill_dir / f"io{self.index:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        piece.spill = folder / f"{self.spill_count:08d}.bin"
        self.bytes_spilled += piece.request.nbytes
        self._grant(piece.request, Mode.SPILL, path=str(piece.spill))

    def _write_through(self, piece: Piece, *, waited: bool = False) -> None:
        request = piece.request
        buffer = np.empty(request.nbytes, dtype=np.uint8)
        self._grant(request, Mode.SYNC, waited=waited)

        def arrived() -> None:
            piece.data = buffer
            self._jobs.put(("sync", piece))

        self.transport.expect_data(request.client, buffer, arrived)

    def _grant(self, request: WriteRequest, mode: str, **fields) -> None:
        self.transport.reply(
            request.client, Message(Kind.GRANT, request.id, fields={"mode": mode, **fields})
        )

    def _ready_later(self, piece: Piece) -> None:
        with self._lock:
            self._on_ready(piece)

    def _on_ready(self, piece: Piece) -> None:
        self.queued.setdefault(key_of(piece.request), []).append(piece)
        if self.pending or self.settings.write_behind:
            self._schedule_drain()

    def _on_flush(self, message: Message) -> None:
        client, seq, file = message.client, message.id, message.get("file")
        epoch = message.get("epoch")
        local = [k for k in self.outputs if k.rank == client and (file is None or k.file == file)]
        self.flushes.open_part(client, seq)
        self._jobs.put(("flush", local, [(client, seq)], epoch, False))
        if message.get("scope") != "all":
            return
        self.flushes.open_part(client, seq)  # the assembled part, done once all ranks flushed
        try:
            ready = self.flushes.collective_arrived(client, seq, epoch, file)
        except BurstInputError as error:
            self._broadcast_error(str(error))
            return
        if ready is not None:
            keys = [
                k
                for k, output in self.outputs.items()
                if k.rank is None and output.epoch <= epoch and (file is None or k.file == file)
            ]
            self._jobs.put(("flush", keys, ready, epoch, True))

    # -- writer thread ----------------------------------------------------------------------
    def _run_writer(self) -> None:
        while True:
            job = self._jobs.get()
            if job[0] == "stop":
                break
            try:
                getattr(self, f"_job_{job[0]}")(*job[1:])
            except Exception as error:  # reported to every client, never lost
                log.exception("I/O server %d failed", self.index)
                self._broadcast_error(f"I/O server {self.index}: {error}")
        self._remove_spill_folder()
        self.finished.set()

    def _remove_spill_folder(self) -> None:
        """Leave no empty spill folders behind (the spill files are gone once written)."""
        folder = self.settings.spill_dir / f"io{self.index:04d}"
        for path in (folder, folder.parent):
            with contextlib.suppress(OSError):
                path.rmdir()

    def _job_drain(self) -> None:
        """Write the oldest queued blocks to their (still temporary) files: to make room for
        a waiting write, or, with write-behind, whenever the writer is idle."""
        with self._lock:
            self._drain_scheduled = False
        while True:
            with self._lock:
                if not (self.pending or self.settings.write_behind):
                    return
                piece = self._oldest_in_memory()
                if piece is None:
                    self._unstall()
                    return
                key = key_of(piece.request)
                self.queued[key].remove(piece)
                output = self.outputs[key]
            self._write_piece(piece, output)

    def _unstall(self) -> None:
        """Write waiting blocks through when nothing queued can make room for them: what
        holds the queue is lent blocks (``buffer``) and leases, which their ranks hand back
        in their own time, maybe only after a collective that waits for the very rank that
        waits here. A copy under way is different: its READY comes by itself."""
        while self.pending and not self._copy_under_way():
            request = self.pending.popleft()
            log.info(
                "I/O server %d: the queue is held by lent blocks; writing %r of %s through",
                self.index,
                request.name,
                key_of(request).describe(),
            )
            self._write_through(self.pieces[(request.client, request.id)], waited=True)
            self._grant_pending()

    def _copy_under_way(self) -> bool:
        """True while a rank copies a block into memory it was granted (its READY comes)."""
        return any(p.offset is not None and not p.request.lent for p in self.pieces.values())

    def _job_sync(self, piece: Piece) -> None:
        with self._lock:
            output = self.outputs[key_of(piece.request)]
        self._write_piece(piece, output)
        self.transport.reply(piece.request.client, Message(Kind.DONE, piece.request.id))

    def _job_flush(
        self, keys: list[FileKey], parts: list[tuple[int, int]], epoch: int, collective: bool
    ) -> None:
        try:
            self._flush_files(keys, epoch)
            if collective:  # every server gets here once per collective flush, in order
                self.completion.close_epoch(epoch, self.group, leader=self.index == 0)
        finally:
            with self._lock:
                for client, seq in parts:
                    self.flushes.close_part(client, seq)
                self._answer_waiters()

    def _flush_files(self, keys: list[FileKey], epoch: int) -> None:
        for key in keys:
            with self._lock:
                output = self.outputs.pop(key, None)
                pieces = self.queued.pop(key, [])
            if output is None:
                continue
            try:
                for piece in pieces:
                    self._write_piece(piece, output)
                self.room.make(output.final.parent, 0, key.describe())  # metadata, buffers
                final = self.writer.finish(output)
                self.completion.published(epoch, key.file, key.step, final)
            except Exception as error:  # the file is dropped and every client told
                self.completion.failed(key.file, key.step)
                self.writer.abandon(output)
                for piece in pieces:
                    self._release(piece)
                self._broadcast_error(
                    f"writing {key.describe()} to {output.final} with sink "
                    f"{self.writer.sink.name!r} failed: {explain(error, output.final.parent)}"
                )

    def _write_piece(self, piece: Piece, output: OutputFile) -> None:
        request = piece.request
        if piece.offset is not None:
            data = self.arena.view(piece.offset, request.nbytes, request.dtype, request.shape)
        elif piece.spill is not None:
            data = np.fromfile(piece.spill, dtype=request.dtype).reshape(request.shape)
        else:
            data = piece.data.view(request.dtype).reshape(request.shape)
        self.room.make(output.final.parent, request.nbytes, output.state.key.describe())
        self.writer.write_block(output, request.name, data, request.start)
        self._release(piece)

    def _release(self, piece: Piece) -> None:
        """Free a piece's memory or spill file; safe to call twice."""
        with self._lock:
            if self.pieces.pop((piece.request.client, piece.request.id), None) is None:
                return
            if piece.offset is not None:
                self.arena.release(piece.offset, piece.request.nbytes)
                piece.offset = None
                self._grant_pending()
            if piece.spill is not None:
                piece.spill.unlink(missing_ok=True)
            piece.data = None

    def _grant_pending(self) -> None:
        while self.pending:
            request = self.pending[0]
            if not self._grant_memory(self.pieces[(request.client, request.id)], waited=True):
                return
            self.pending.popleft()

    def _oldest_in_memory(self) -> Piece | None:
        candidates = [p for ps in self.queued.values() for p in ps if p.offset is not None]
        return min(candidates, key=lambda p: p.order, default=None)

    def _schedule_drain(self) -> None:
        if not self._drain_scheduled:
            self._drain_scheduled = True
            self._jobs.put(("drain",))

    def _answer_waiters(self) -> None:
        for client, ident in self.flushes.answerable_waiters():
            self.transport.reply(client, Message(Kind.DONE, ident))
            lease = self._leases_after_wait.pop(client, None)
            if lease is not None:
                self._on_lease(lease)

    def _broadcast_error(self, text: str) -> None:
        for client in range(self.clients):
            self.transport.reply(client, Message(Kind.ERROR, 0, fields={"message": text}))

    def _stats_reply(self, ident: int) -> Message:
        return Message(
            Kind.STATS_REPLY,
            ident,
            fields={
                "bytes_queued": self.arena.used - self.bytes_leased,
                "bytes_leased": self.bytes_leased,
                "bytes_spilled": self.bytes_spilled,
                "bytes_written": self.writer.bytes_written,
                "files_written": self.writer.files_written,
                "seconds_writing": self.writer.seconds_writing,
                "seconds_stalled": self.room.seconds_stalled,
                "waiting_for_space": self.room.waiting_for,
                "time": time.time(),
            },
        )


def _error(ident: int, error: Exception) -> Message:
    kind = "input" if isinstance(error, BurstInputError) else "io"
    return Message(Kind.ERROR, ident, fields={"message": str(error), "type": kind})

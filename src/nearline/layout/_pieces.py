"""Reading a range of an archived object as pieces fetched at once, handled in order.

An object store answers one request at a time per connection, and a single GET stream is
far slower than several at once: boto3's ``download_file`` keeps ten ranged GETs in flight.
:class:`Pieces` does the same for a member of a bundle. Each piece lands in a reused,
already-touched buffer (this memory is slow on first touch); the caller's thread then hashes
it and hands it to ``consume`` (``os.pwrite`` into the restored file, or a compare with the
source), in order, a cache-sized slice at a time: each byte is then read from memory once
for both, and one sequential writer is what a file system serves cheapest. Pieces end
on multiples of the piece size in the object, where the parts it was uploaded in end, so
that no GET spans more of the store's chunks than it must. SHA-256 and file writes release
the GIL, so fetching overlaps them.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from nearline.closing import Closing
from nearline.layout._pump import Interrupted

SLICE = 256 * 1024  # bytes hashed and then consumed at once, while they are in the CPU's cache
ReadAt = Callable[[int, memoryview], int]  # read_at(offset, view) -> bytes read (short: end)
Consume = Callable[[memoryview, int], None]  # consume(view, offset within the range)


class BufferPool:
    """Buffers of one size handed out and taken back; new ones only when none is free."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._free: list[bytearray] = []
        self._lock = threading.Lock()

    def take(self) -> bytearray:
        with self._lock:
            if self._free:
                return self._free.pop()
        return bytearray(self.size)

    def give(self, buffer: bytearray) -> None:
        with self._lock:
            self._free.append(buffer)


class Pieces(Closing):
    """Up to ``workers`` pieces of ``chunk_size`` bytes in flight; one per run of work (a
    restore, a verify, a migrator's read-backs), so that its buffers are touched once.
    ``on_bytes`` is told of every piece as it is hashed: set it anew for each set."""

    def __init__(
        self,
        chunk_size: int,
        workers: int,
        *,
        on_bytes: Callable[[int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        self.pool = BufferPool(chunk_size)
        self.workers = max(1, workers)
        self.on_bytes = on_bytes or (lambda n: None)
        self.should_stop = should_stop or (lambda: False)
        self._executor: ThreadPoolExecutor | None = None

    def run(
        self,
        read_at: ReadAt,
        start: int,
        size: int,
        consume: Consume | None = None,
        *,
        digest: bool = True,
    ) -> tuple[str, int]:
        """Read bytes ``start`` to ``start + size`` with ``read_at``, handing each piece in
        order to ``consume``. Returns (their SHA-256, or "" without ``digest``; bytes read):
        fewer than ``size`` means the object ended. Raises :class:`Interrupted` on a stop."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="nearline-piece")
        hashing = hashlib.sha256() if digest else None
        window: deque[tuple[int, Future[tuple[bytearray, int]]]] = deque()
        submitted = count = 0
        try:
            while submitted < size or window:
                while submitted < size and len(window) < self.workers:
                    edge = self.pool.size - (start + submitted) % self.pool.size
                    n = min(edge, size - submitted)
                    task = self._executor.submit(self._piece, read_at, start + submitted, n)
                    window.append((n, task))
                    submitted += n
                wanted, task = window.popleft()
                buffer, got = task.result()
                try:
                    piece = memoryview(buffer)[:got]
                    for first in range(0, got, SLICE):  # hashed, then consumed from cache
                        part = piece[first : first + SLICE]
                        if hashing is not None:
                            hashing.update(part)
                        if consume is not None:
                            consume(part, count + first)
                finally:
                    self.pool.give(buffer)
                count += got
                self.on_bytes(got)
                if self.should_stop():
                    raise Interrupted
                if got < wanted:  # the object ended
                    break
        finally:
            self._drop(window)
        return (hashing.hexdigest() if hashing is not None else ""), count

    def _piece(self, read_at: ReadAt, offset: int, size: int) -> tuple[bytearray, int]:
        buffer = self.pool.take()
        try:
            return buffer, read_at(offset, memoryview(buffer)[:size])
        except BaseException:
            self.pool.give(buffer)
            raise

    def _drop(self, window: deque[tuple[int, Future[Any]]]) -> None:
        """Forget pieces no longer wanted, taking their buffers back once they end."""
        while window:
            _, task = window.popleft()
            if task.cancel():
                continue
            with contextlib.suppress(BaseException):
                self.pool.give(task.result()[0])

    def close(self) -> None:
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

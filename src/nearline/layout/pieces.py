"""Reading a range of an archived object as pieces fetched at once, hashed in order.

An object store answers one request at a time per connection, and a single GET stream is
far slower than its several at once: boto3's ``download_file`` keeps ten ranged GETs in
flight. :class:`Pieces` does the same for a member of a bundle. Each piece lands in a
reused, already-touched buffer (this memory is slow on first touch), is handed there to a
``consume`` callback in the fetching thread (``os.pwrite`` into the restored file, or a
compare with the source), and is then hashed by the caller's thread in order. No byte is
copied between the socket and the destination but by the kernel; SHA-256 and file writes
release the GIL, so fetching, writing and hashing overlap.
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
from nearline.layout.pump import Interrupted

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
        """Read bytes ``start`` to ``start + size`` with ``read_at``, handing each piece to
        ``consume``. Returns (their SHA-256, or "" without ``digest``; bytes read): fewer
        than ``size`` means the object ended. Raises :class:`Interrupted` on a stop."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="nearline-piece")
        hashing = hashlib.sha256() if digest else None
        window: deque[tuple[int, Future[tuple[bytearray, int]]]] = deque()
        submitted = count = 0
        try:
            while submitted < size or window:
                while submitted < size and len(window) < self.workers:
                    n = min(self.pool.size, size - submitted)
                    task = self._executor.submit(self._piece, read_at, start, submitted, n, consume)
                    window.append((n, task))
                    submitted += n
                wanted, task = window.popleft()
                buffer, got = task.result()
                try:
                    if hashing is not None:
                        hashing.update(memoryview(buffer)[:got])
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

    def _piece(
        self, read_at: ReadAt, start: int, offset: int, size: int, consume: Consume | None
    ) -> tuple[bytearray, int]:
        buffer = self.pool.take()
        try:
            view = memoryview(buffer)[:size]
            got = read_at(start + offset, view)
            if consume is not None and got:
                consume(view[:got], offset)
        except BaseException:
            self.pool.give(buffer)
            raise
        return buffer, got

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

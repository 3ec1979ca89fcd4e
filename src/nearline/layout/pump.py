"""Copying bytes while hashing them, in large buffers, with reading overlapped with writing.

For copies larger than one buffer, a helper thread reads and hashes the next buffer while
the caller's thread writes the last one (file reads, writes and SHA-256 all release the GIL),
so a copy costs about max(read + hash, write) instead of their sum.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Callable

ReadInto = Callable[[memoryview], int | None]
Write = Callable[[memoryview], object]


class Interrupted(Exception):
    """A stop was requested while bytes were being copied; the copy was abandoned."""


class Pump:
    """Reusable buffers and the callbacks a copy reports to; one per thread of work."""

    def __init__(
        self,
        chunk_size: int,
        *,
        on_bytes: Callable[[int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        self.chunk_size = chunk_size
        self.on_bytes = on_bytes or (lambda n: None)
        self.should_stop = should_stop or (lambda: False)
        self._buffers: list[bytearray] = []

    def _buffer(self, index: int) -> memoryview:
        while len(self._buffers) <= index:
            self._buffers.append(bytearray(self.chunk_size))
        return memoryview(self._buffers[index])

    def copy(self, read_into: ReadInto, write: Write | None, limit: int) -> tuple[str, int]:
        """Move up to ``limit`` bytes from ``read_into`` to ``write`` (None: only hash them).

        Returns (SHA-256 hex digest, bytes copied); fewer than ``limit`` means the source
        ended early. Raises :class:`Interrupted` if ``should_stop`` turns true.
        """
        if write is None or limit <= self.chunk_size:
            return self._copy_serial(read_into, write, limit)
        return self._copy_overlapped(read_into, write, limit)

    def _copy_serial(self, read_into: ReadInto, write: Write | None, limit: int) -> tuple[str, int]:
        digest = hashlib.sha256()
        view = self._buffer(0)
        count = 0
        while count < limit:
            if self.should_stop():
                raise Interrupted
            got = read_into(view[: min(len(view), limit - count)]) or 0
            if not got:
                break
            chunk = view[:got]
            digest.update(chunk)
            if write is not None:
                write(chunk)
            count += got
            self.on_bytes(got)
        return digest.hexdigest(), count

    def _copy_overlapped(self, read_into: ReadInto, write: Write, limit: int) -> tuple[str, int]:
        digest = hashlib.sha256()
        free: queue.Queue[memoryview] = queue.Queue()
        full: queue.Queue[tuple[memoryview, int] | BaseException | None] = queue.Queue()
        for index in range(3):
            free.put(self._buffer(index))
        abandon = threading.Event()

        def read_ahead() -> None:
            count = 0
            try:
                while count < limit:
                    view = free.get()
                    if abandon.is_set():
                        return
                    got = read_into(view[: min(len(view), limit - count)]) or 0
                    if not got:
                        break
                    digest.update(view[:got])
                    full.put((view, got))
                    count += got
                full.put(None)
            except BaseException as error:  # handed to the writing thread, raised there
                full.put(error)

        reader = threading.Thread(target=read_ahead, name="nearline-pump", daemon=True)
        reader.start()
        count = 0
        try:
            while True:
                item = full.get()
                if item is None:
                    break
                if isinstance(item, BaseException):
                    raise item
                view, got = item
                write(view[:got])
                count += got
                self.on_bytes(got)
                if self.should_stop():
                    raise Interrupted
                free.put(view)
        finally:
            abandon.set()
            free.put(self._buffer(0))  # wake the reader if it waits for a buffer
            reader.join()
        return digest.hexdigest(), count

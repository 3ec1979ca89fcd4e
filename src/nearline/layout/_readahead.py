"""Reading and hashing a sequence of files ahead of one writer, several files at a time.

SHA-256 runs at about 1 GiB/s on one core: hashing file after file in one thread would cap
a migration there. Here up to ``workers`` threads each read and hash a different file into
their own few buffers while the caller writes the files out, in order, as they come. Each
worker owns its buffers, so a worker ahead of the writer waits for it and never starves
the worker whose file the writer needs next. Reads, writes and hashing release the GIL.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from nearline.layout._pump import Interrupted

Opener = Callable[[], Any]  # a context manager with readinto(memoryview)
_END = object()


class _Worker:
    """One reading thread's buffers: made as needed, at most ``depth`` of them."""

    def __init__(self, chunk_size: int, depth: int) -> None:
        self.free: queue.Queue[memoryview] = queue.Queue()
        self.chunk_size = chunk_size
        self.unmade = depth

    def take(self) -> memoryview:
        if self.unmade and self.free.empty():
            self.unmade -= 1
            return memoryview(bytearray(self.chunk_size))
        return self.free.get()


class FileStream:
    """The chunks of one file, in order; ``digest`` and ``count`` once it is exhausted."""

    def __init__(self) -> None:
        self.chunks: queue.Queue[object] = queue.Queue()
        self.digest = ""
        self.count = 0
        self.worker: _Worker | None = None

    def __iter__(self) -> Iterator[memoryview]:
        while True:
            item = self.chunks.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            view, got = item  # type: ignore[misc]
            yield view[:got]
            assert self.worker is not None
            self.worker.free.put(view)


class ReadAhead:
    """Streams of ``sources`` (openers and byte limits), read and hashed ahead in threads.

    Use as a context manager; iterate to get one :class:`FileStream` per source, in order.
    A stream stops at its limit or where its file ends, whichever is first.
    """

    def __init__(
        self,
        sources: Sequence[tuple[Opener, int]],
        *,
        chunk_size: int,
        workers: int = 2,
        depth: int = 3,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        self.sources = list(sources)
        self.streams = [FileStream() for _ in self.sources]
        self.should_stop = should_stop or (lambda: False)
        self._next = 0
        self._claim = threading.Lock()
        self._abandon = threading.Event()
        count = max(1, min(workers, len(self.sources)))
        largest = max((limit for _, limit in self.sources), default=0)
        size = max(min(chunk_size, largest), 1)
        self._workers = [_Worker(size, depth) for _ in range(count)]
        self._threads = [
            threading.Thread(target=self._run, args=(w,), name="nearline-readahead", daemon=True)
            for w in self._workers
        ]

    def __enter__(self) -> ReadAhead:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._abandon.set()
        for worker in self._workers:  # wake any worker waiting for a buffer
            worker.free.put(memoryview(bytearray(0)))
        for thread in self._threads:
            thread.join()

    def __iter__(self) -> Iterator[FileStream]:
        for stream in self.streams:
            if self.should_stop():
                raise Interrupted
            yield stream

    def _run(self, worker: _Worker) -> None:
        while not self._abandon.is_set():
            with self._claim:
                index = self._next
                self._next += 1
            if index >= len(self.sources):
                return
            stream = self.streams[index]
            stream.worker = worker
            try:
                self._read(worker, stream, *self.sources[index])
            except BaseException as error:  # raised in the writer's thread
                stream.chunks.put(error)
                return

    def _read(self, worker: _Worker, stream: FileStream, opener: Opener, limit: int) -> None:
        digest = hashlib.sha256()
        count = 0
        with opener() as handle:
            while count < limit:
                view = worker.take()
                if self._abandon.is_set():
                    return
                got = _read_hashed(handle, view[: min(len(view), limit - count)], digest)
                if not got:
                    worker.free.put(view)
                    break
                count += got
                stream.chunks.put((view, got))
        stream.digest, stream.count = digest.hexdigest(), count
        stream.chunks.put(_END)


SLICE = 256 * 1024  # read, then hashed while still in the CPU's cache


def _read_hashed(handle: Any, view: memoryview, digest: Any) -> int:
    """Fill ``view`` from ``handle`` a cache-sized slice at a time, hashing each slice as it
    lands: each byte then crosses memory once for both. The bytes read (fewer: the end)."""
    count = 0
    while count < len(view):
        got = handle.readinto(view[count : count + SLICE]) or 0
        if not got:
            break
        digest.update(view[count : count + got])
        count += got
    return count

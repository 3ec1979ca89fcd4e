"""The embedded default archive tier: a folder on a local or mounted file system."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from nearline.durable import fsync_path
from nearline.layout._tier_base import ArchiveTier, fill

WRITEBACK = 8 * 1024**2  # start writing dirty pages to disk every this many bytes


class _WritebackFile(io.FileIO):
    """A file that asks the kernel to start writing its pages out as it goes, so that the
    fsync at publish finds little left to do, and the copy is not throttled in one burst."""

    _written = 0
    _started = 0

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(data).cast("B")
        total = len(view)
        while view:
            view = view[super().write(view) or 0 :]
        self._written += total
        if self._written - self._started >= WRITEBACK and hasattr(os, "posix_fadvise"):
            # DONTNEED on dirty pages starts their writeback without waiting for it
            length = self._written - self._started
            os.posix_fadvise(self.fileno(), self._started, length, os.POSIX_FADV_DONTNEED)
            self._started = self._written
        return total


class LocalTier(ArchiveTier):
    """Objects are files below ``root``; ``publish`` fsyncs the file, renames it and fsyncs
    its folder, so a published bundle survives a power cut."""

    supports_parallel_reads = True

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.url = str(self.root)

    def _path(self, name: str) -> Path:
        return self.root / name

    def open_write(self, name: str) -> BinaryIO:
        path = self._path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        return _WritebackFile(path, "wb")  # type: ignore[return-value]

    def open_read(self, name: str) -> BinaryIO:
        return open(self._path(name), "rb")

    def pieces(self, chunk_size: int) -> tuple[int, int]:
        return chunk_size, 4  # a few reads at once keep an SSD's queue busy

    @contextlib.contextmanager
    def ranges(self, name: str) -> Iterator[Callable[[int, memoryview], int]]:
        """``os.preadv`` on one descriptor, which threads may share."""
        fd = os.open(self._path(name), os.O_RDONLY)
        try:

            def read_at(offset: int, view: memoryview) -> int:
                end = offset + len(view)  # fill hands on what is left of view: its tail
                return fill(lambda rest: os.preadv(fd, [rest], end - len(rest)), view)

            yield read_at
        finally:
            os.close(fd)

    def publish(self, temporary: str, final: str) -> None:
        source, target = self._path(temporary), self._path(final)
        fsync_path(source)
        os.replace(source, target)
        fsync_path(target.parent)

    def remove(self, name: str) -> None:
        self._path(name).unlink(missing_ok=True)

    def list(self, folder: str) -> list[str]:
        path = self._path(folder) if folder else self.root
        try:
            return sorted(os.listdir(path))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def size(self, name: str) -> int | None:
        try:
            return self._path(name).stat().st_size
        except FileNotFoundError:
            return None

"""The archive tier: a flat space of named objects where bundles and manifests are kept.

A local folder by default; any fsspec URL (``s3://bucket/run``, ``memory://x``, ``file://``)
in real deployments. Names are ``/``-separated and relative to the tier's root.
"""

from __future__ import annotations

import contextlib
import errno
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from nearline.errors import ArchiveError

_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


class ArchiveTier(ABC):
    """Where bundles go. The contract every implementation keeps:

    - ``open_write`` creates any parent folders; what it writes is only trusted once
      ``publish`` has moved it to its final name, and ``publish`` replaces that name whole;
    - ``publish`` returns only once the object is durable under its final name;
    - ``remove`` of a missing name and ``list`` of a missing folder are not errors.
    """

    url: str
    supports_parallel_reads: bool = False  # may several threads read objects at once?

    @abstractmethod
    def open_write(self, name: str) -> BinaryIO:
        """A new (or truncated) object, open for writing; parent folders are created.

        Parameters
        ----------
        name
            A temporary name: what it holds is trusted only once published.
        """

    @abstractmethod
    def open_read(self, name: str) -> BinaryIO:
        """An object, open for reading and seekable.

        Parameters
        ----------
        name
            The object's name.

        Raises
        ------
        FileNotFoundError
            There is no such object.
        """

    @abstractmethod
    def publish(self, temporary: str, final: str) -> None:
        """Make an object durable under its final name, replacing any old one whole.

        Parameters
        ----------
        temporary
            The name it was written under.
        final
            The name it takes; returns only once it is durable there.
        """

    @abstractmethod
    def remove(self, name: str) -> None:
        """Delete an object; a missing one is not an error.

        Parameters
        ----------
        name
            The object's name.
        """

    @abstractmethod
    def list(self, folder: str) -> list[str]:
        """The names of the entries directly in a folder, sorted.

        Parameters
        ----------
        folder
            "" is the root; a missing folder lists as empty.
        """

    @abstractmethod
    def size(self, name: str) -> int | None:
        """Bytes in an object, or None if there is none.

        Parameters
        ----------
        name
            The object's name.
        """

    def exists(self, name: str) -> bool:
        """Whether an object exists.

        Parameters
        ----------
        name
            The object's name.
        """
        return self.size(name) is not None

    def describe(self, name: str = "") -> str:
        """A name as a user should read it in a message: the tier's URL and the name.

        Parameters
        ----------
        name
            The object's name ("": the tier itself).
        """
        return f"{self.url.rstrip('/')}/{name}" if name else self.url

    def pieces(self, chunk_size: int) -> tuple[int, int]:
        """How to read an object in pieces (see :meth:`ranges`).

        Parameters
        ----------
        chunk_size
            The bytes a reader would take at a time.

        Returns
        -------
        tuple of int
            (bytes a piece, pieces at once): one ``chunk_size`` at a time, unless the tier
            knows better.
        """
        return chunk_size, 1

    @contextlib.contextmanager
    def ranges(self, name: str) -> Iterator[Callable[[int, memoryview], int]]:
        """``read_at(offset, view)``: fills ``view`` from ``offset`` of an object and returns
        the bytes read (fewer: the object ended). Safe to call from several threads.

        Parameters
        ----------
        name
            The object's name.

        Raises
        ------
        FileNotFoundError
            There is no such object (on entry, or at the first read).
        """
        with self.open_read(name) as handle:
            read_into = reader(handle)
            lock = threading.Lock()

            def read_at(offset: int, view: memoryview) -> int:
                with lock:
                    handle.seek(offset)
                    return fill(read_into, view)

            yield read_at

    def read_bytes(self, name: str) -> bytes:
        """The whole of a small object.

        Parameters
        ----------
        name
            The object's name.
        """
        with self.open_read(name) as handle:
            return handle.read()

    def write_bytes(self, name: str, data: bytes) -> None:
        """Write a small object whole: under a temporary name, then published.

        Parameters
        ----------
        name
            The final name.
        data
            Its bytes.
        """
        temporary = temporary_name(name)
        with self.open_write(temporary) as handle:
            handle.write(data)
        self.publish(temporary, name)

    def close(self) -> None:  # noqa: B027 - an optional hook: most tiers hold nothing open
        """Release what the tier holds open (connections, caches)."""


def temporary_name(name: str) -> str:
    """The hidden name an object is written under until it is complete: deterministic, so a
    retry overwrites what a crashed attempt left instead of adding a second copy."""
    folder, _, base = name.rpartition("/")
    return f"{folder}/.{base}.partial" if folder else f".{base}.partial"


def is_temporary(name: str) -> bool:
    base = name.rpartition("/")[2]
    return base.startswith(".") and base.endswith(".partial")


def reader(handle: Any) -> Callable[[memoryview], int]:
    """``handle.readinto``, or ``read`` and a copy for a file object without it."""
    read_into = getattr(handle, "readinto", None)
    if read_into is not None:
        return read_into  # type: ignore[no-any-return]

    def read(view: memoryview) -> int:
        data = handle.read(len(view))
        view[: len(data)] = data
        return len(data)

    return read


def fill(read_into: Callable[[memoryview], int | None], view: memoryview) -> int:
    """Read until ``view`` is full or the stream ends; the bytes read."""
    count = 0
    while count < len(view):
        got = read_into(view[count:]) or 0
        if not got:
            break
        count += got
    return count


def archive_failure(tier: ArchiveTier, name: str, error: OSError, what: str) -> ArchiveError:
    """A typed error for an OSError the tier raised while writing or reading ``name``."""
    where = tier.describe(name)
    if error.errno in _FULL:
        return ArchiveError(
            f"the archive tier is full: {what} {where} failed ({error.strerror or error}); "
            "free space on the archive or point migrate at a larger one, then run it again"
        )
    return ArchiveError(f"{what} {where} failed: {error}; check the archive tier, then retry")

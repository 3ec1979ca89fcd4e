"""Room on the output disk: checked before each block is written, so that a full disk is
said plainly (how much was free, how much the file needed) and, with ``on_full="wait"``,
waited out with nothing half-written and nothing dropped."""

from __future__ import annotations

import errno
import logging
import shutil
import threading
import time
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path

from nearline.errors import BurstError, ConfigError
from nearline.units import format_size

log = logging.getLogger(__name__)

# Besides the block itself: the format's metadata and what the library buffers until close.
MARGIN = 256 * 1024


class OnFull(StrEnum):
    """What an I/O server does when the output disk has no room for the next block."""

    FAIL = "fail"  # drop the file and tell every client, naming the disk and the figures
    WAIT = "wait"  # keep everything queued, report the stall, go on when room appears


def parse_on_full(value: str | OnFull) -> OnFull:
    try:
        return OnFull(value)
    except ValueError:
        raise ConfigError(f"on_full must be 'fail' or 'wait', got {value!r}") from None


class DiskFull(BurstError):
    """No room on the output disk for a file's next block."""


def free_bytes(folder: Path) -> int:
    """Free bytes on the file system holding ``folder`` (or its nearest existing parent)."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return shutil.disk_usage(folder).free


class Room:
    """Checks and waits for room on the disk; remembers the stall for ``stats()``."""

    def __init__(
        self, policy: OnFull, *, timeout: float, poll: float = 0.5,
        free: Callable[[Path], int] = free_bytes,
    ) -> None:  # fmt: skip
        self.policy = policy
        self.timeout = timeout
        self.poll = poll
        self.free = free
        self.seconds_stalled = 0.0
        self.waiting_for = 0  # bytes a stalled write needs, 0 when not stalled
        self.stop = threading.Event()

    def make(self, folder: Path, nbytes: int, what: str) -> None:
        """Return once ``folder``'s disk has room for ``nbytes`` more; raise
        :class:`DiskFull` (at once under ``fail``, after ``timeout`` under ``wait``)."""
        need = nbytes + MARGIN
        free = self.free(folder)
        if free >= need:
            return
        if self.policy is OnFull.FAIL:
            raise DiskFull(
                _full(folder, free, need, what) + "; free some space, or run with "
                "on_full='wait' to wait for it (nearline migrate --watch frees it)"
            )
        log.warning("%s; waiting up to %.0f s for room", _full(folder, free, need, what),
                    self.timeout)  # fmt: skip
        began = time.monotonic()
        self.waiting_for = need
        try:
            while free < need:
                waited = time.monotonic() - began
                if waited >= self.timeout or self.stop.is_set():
                    raise DiskFull(
                        f"{_full(folder, free, need, what)}, still after waiting {waited:.0f} s "
                        "(on_full='wait'); nothing was written half and the file is dropped"
                    )
                self.stop.wait(self.poll)
                free = self.free(folder)
        finally:
            self.waiting_for = 0
            self.seconds_stalled += time.monotonic() - began
        log.warning("room on the disk of %s again after %.1f s: writing on", folder,
                    time.monotonic() - began)  # fmt: skip


def _full(folder: Path, free: int, need: int, what: str) -> str:
    return (
        f"no space left on the device holding {folder}: {format_size(free)} free, "
        f"{what} needs {format_size(need)}"
    )


def explain(error: Exception, folder: Path) -> str:
    """A sink's failure, said as a full disk when it was one (netCDF says only "HDF error")."""
    if isinstance(error, DiskFull):
        return str(error)
    full = isinstance(error, OSError) and error.errno == errno.ENOSPC
    try:
        free = free_bytes(folder)
    except OSError:
        return str(error)
    if full or free < MARGIN:
        return f"no space left on the device holding {folder} ({format_size(free)} free): {error}"
    return str(error)

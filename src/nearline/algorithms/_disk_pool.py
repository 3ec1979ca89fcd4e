"""Prepared run disks, kept for the next run of the same size: a small run would otherwise
spend more time making its file system (``mkfs.ext4``, ``mount``) and unmounting it than
running.

A disk goes back to the pool only when it is as it was made: its three places (the run's
folder, /tmp and /dev/shm) are deleted and made again, and the file system's free blocks and
free inodes must then equal what the fresh one had, so nothing of the run (a file, a hidden
link, a held inode) is left for the next. Anything else, and the disk is unmounted and
deleted as before. A deleted file's blocks are not wiped, but no run can read them: a run sees
only files, never the image or its loop device, and a new file reads as zeros until written.

Only a process that asks (``_disk.pool_disks``: ``nearline serve`` for its local runs) keeps
disks, under one folder beside its runs; they are named after the process, as every run disk
is, so ``cleanup_stale`` removes what a killed one left.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

IDLE = 4  # prepared disks kept per size, at most
PLACES = {"work": 0o755, "tmp": 0o1777, "shm": 0o1777}  # made in a run disk's root, and modes


@dataclass(frozen=True)
class Prepared:
    """A mounted run disk of ``size`` bytes at ``home``/mount, as made: ``free`` is its
    (free blocks, free inodes) with its places empty."""

    home: Path
    size: int
    free: tuple[int, int]


def free_of(mount: Path) -> tuple[int, int]:
    found = os.statvfs(mount)
    return found.f_bfree, found.f_ffree


def make_places(mount: Path) -> None:
    for name, mode in PLACES.items():
        (mount / name).mkdir()
        os.chmod(mount / name, mode)  # as asked, whatever the umask


def wipe(prepared: Prepared) -> bool:
    """Empty ``prepared`` as it was made; whether it now is exactly that."""
    mount = prepared.home / "mount"
    try:
        for name in os.listdir(mount):
            path = mount / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        make_places(mount)
        return sorted(os.listdir(mount)) == sorted(PLACES) and free_of(mount) == prepared.free
    except OSError as error:
        log.debug("a run disk at %s could not be emptied: %s", mount, error)
        return False


class DiskPool:
    """Prepared disks under ``folder``, at most :data:`IDLE` of each size waiting."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._idle: dict[int, list[Prepared]] = {}
        self._lock = threading.Lock()

    def take(self, size: int) -> Prepared | None:
        """A prepared disk of ``size`` bytes, or None (the caller makes one)."""
        with self._lock:
            waiting = self._idle.get(size)
            return waiting.pop() if waiting else None

    def give_back(self, prepared: Prepared, remove: Callable[[Path], None]) -> None:
        """Keep ``prepared`` for the next run if it empties to as it was made; else remove
        it with ``remove(home)``."""
        if wipe(prepared):
            with self._lock:
                waiting = self._idle.setdefault(prepared.size, [])
                if len(waiting) < IDLE:
                    waiting.append(prepared)
                    return
        remove(prepared.home)

    def drain(self, remove: Callable[[Path], None]) -> None:
        """Remove every disk waiting."""
        with self._lock:
            waiting = [p for kept in self._idle.values() for p in kept]
            self._idle.clear()
        for prepared in waiting:
            remove(prepared.home)

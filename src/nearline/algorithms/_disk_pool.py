"""Prepared run disks, kept for the next run of the same size: a small run would otherwise
spend more time making its file system (``mkfs.ext4``, ``mount``) and unmounting it than
running.

A disk goes back to the pool only when it is as it was made: its three places (the run's
folder, /tmp and /dev/shm) are deleted and made again, and the file system's free blocks and
free inodes must then equal what the fresh one had, so nothing of the run (a file, a hidden
link, a held inode) is left for the next. The folders furnished into the run's folder
(_furnish.py) are the one exception: they stay if they are still exactly as copied, and the
free blocks and inodes must then equal what the disk had just after they were copied.
Anything else, and the disk is unmounted and deleted as before. A deleted file's blocks are
not wiped, but no run can read them: a run sees only files, never the image or its loop
device, and a new file reads as zeros until written.

Only an owner that asks (``_disk.keep_run_disks``: ``nearline serve`` for its local runs)
keeps disks, under one folder beside its runs, and closes the pool when it stops (the
interpreter's exit closes one left open). The disks are named after the process, as every
run disk is, so ``cleanup_stale`` removes what a killed one left.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from nearline.algorithms._furnish import clear_except, delete, layout
from nearline.closing import Closing

log = logging.getLogger(__name__)

IDLE = 4  # prepared disks kept per size, at most
PLACES = {"work": 0o755, "tmp": 0o1777, "shm": 0o1777}  # made in a run disk's root, and modes


@dataclass(frozen=True)
class Prepared:
    """A mounted run disk of ``size`` bytes at ``home``/mount, as made: ``free`` is its
    (free blocks, free inodes) with its places empty; ``furnished`` the folders it holds in
    its run's folder (place, source) and ``free_furnished`` its free blocks and inodes with
    only those there."""

    home: Path
    size: int
    free: tuple[int, int]
    furnished: tuple[tuple[str, Path], ...] = ()
    free_furnished: tuple[int, int] | None = None


def free_of(mount: Path) -> tuple[int, int]:
    found = os.statvfs(mount)
    return found.f_bfree, found.f_ffree


def make_places(mount: Path) -> None:
    for name, mode in PLACES.items():
        (mount / name).mkdir(exist_ok=True)
        os.chmod(mount / name, mode)  # as asked, whatever the umask


def wipe(prepared: Prepared) -> Prepared | None:
    """Empty ``prepared`` as it was made, its furnished folders kept if they are exact; the
    disk as it now is, or None if it cannot be made exactly that."""
    mount = prepared.home / "mount"
    work = mount / "work"
    places = [place for place, _ in prepared.furnished]
    try:
        for name in os.listdir(mount):
            if name == "work" and places and work.is_dir() and not work.is_symlink():
                clear_except(work, places)
            else:
                delete(mount / name)
        intact = bool(places) and all(
            layout(work / place) == layout(source) for place, source in prepared.furnished
        )
        if places and not intact:
            delete(work)
            prepared = replace(prepared, furnished=(), free_furnished=None)
        make_places(mount)
        expected = prepared.free_furnished if intact else prepared.free
        if sorted(os.listdir(mount)) == sorted(PLACES) and free_of(mount) == expected:
            return prepared
    except OSError as error:
        log.debug("a run disk at %s could not be emptied: %s", mount, error)
    return None


class DiskPool(Closing):
    """Prepared disks under ``folder``, at most :data:`IDLE` of each size waiting; each is
    removed with ``remove(home)`` when it cannot be kept, and all of them on :meth:`close`.
    Its owner (``nearline serve``'s local executor) closes it; a disk given back after that
    is removed, not kept.

    Parameters
    ----------
    folder
        Where the kept disks wait.
    remove
        Unmounts and deletes a disk, given its folder.
    """

    def __init__(self, folder: Path, remove: Callable[[Path], None]) -> None:
        self.folder = folder
        self.remove = remove
        self._idle: dict[int, list[Prepared]] = {}
        self._lock = threading.Lock()
        self._closed = False
        atexit.register(self.close)  # mounted disks never outlive the process

    def take(self, size: int, furnished: tuple[tuple[str, Path], ...] = ()) -> Prepared | None:
        """A prepared disk of ``size`` bytes, one already ``furnished`` so if there is one,
        or None (the caller makes one).

        Parameters
        ----------
        size
            The image's size in bytes.
        furnished
            The (place, source) folders the run wants copied in, sorted.
        """
        with self._lock:
            waiting = self._idle.get(size)
            if not waiting:
                return None
            alike = [i for i, kept in enumerate(waiting) if kept.furnished == furnished]
            return waiting.pop(alike[-1] if alike else -1)

    def give_back(self, prepared: Prepared) -> None:
        """Keep ``prepared`` for the next run if it empties to as it was made and the pool
        is open; else remove it.

        Parameters
        ----------
        prepared
            The disk a run is done with.
        """
        emptied = None if self._closed else wipe(prepared)
        if emptied is not None:
            prepared = emptied
            with self._lock:
                waiting = self._idle.setdefault(prepared.size, [])
                if not self._closed and len(waiting) < IDLE:
                    waiting.append(prepared)
                    return
        self.remove(prepared.home)

    def close(self) -> None:
        """Keep no more disks, and remove every disk waiting; safe twice."""
        with self._lock:
            self._closed = True
            waiting = [p for kept in self._idle.values() for p in kept]
            self._idle.clear()
        atexit.unregister(self.close)
        for prepared in waiting:
            self.remove(prepared.home)

"""A run's disk allotment: everything its folder (and its private /tmp) holds at once, and
its log.

Where the service is root with bubblewrap, the run's folder is, inside its sandbox, an ext4
file system of its own: a sparse image beside the run's files, loop-mounted, a little larger
than the allotment, so the kernel refuses (ENOSPC) a write past it at once, and files
(inodes) are bounded with it. The folder's content is copied in before the run, and what the
caller keeps is copied back after a run that ended within its allotment; the image is
unmounted and deleted at the end. Elsewhere the folder (and the caller's writable mounts) is
walked at the watcher's samples, and a fast writer overshoots by what it writes between two.

Both count a file at its apparent size (``st_size``, what ``ls -l`` shows): a sparse file
counts at full size, as it would take once copied out and ingested; the walk is exact at the
run's end, before anything is copied back.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import secrets
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from nearline.algorithms._cgroups import service_stamp
from nearline.algorithms._disk_pool import DiskPool, Prepared, free_of, make_places
from nearline.algorithms._furnish import (
    clear_except,
    copy_beside,
    copy_entry,
    delete,
    furnish_into,
)
from nearline.algorithms._namespaces import SCRATCH
from nearline.algorithms._stages import run_helper

log = logging.getLogger(__name__)

SPACE_PREFIX = ".nearline-disk-"
_SPACE = re.compile(rf"{re.escape(SPACE_PREFIX)}(\d+)-(\d+)-[0-9a-f]+$")
_BLOCK = 4096
_INODE_RATIO = 16384  # one file per 16 KiB of image, ext4's usual
_INODE_SIZE = 256
# ext4's own: its inode tables (1/64 of the image), the clusters it keeps back for delayed
# allocation (2% of the image, at most 16 MiB), bitmaps and descriptors (1/8192) and a few
# MiB more
_RESERVED_MOST = 16 * 1024**2
_SMALL_OVERHEAD = 2 * 1024**2
# a walk of the folder costs the service time; between two walks at least this many times
# what the last one took (a run of a million files is walked seldom, a small one each sample)
_WALK_SPACING = 5


def tree_size(paths: Iterable[Path]) -> tuple[int, int]:
    """(the apparent size of every regular file, how many entries) under ``paths``; links
    are not followed, entries that vanish meanwhile are skipped."""
    total = count = 0
    pending = [os.fspath(path) for path in paths]
    while pending:
        with contextlib.suppress(OSError), os.scandir(pending.pop()) as entries:
            for entry in entries:
                count += 1
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_size
    return total, count


def files_allowed(limit: int) -> int:
    """How many files and folders a run may hold: as many as its own file system has inodes
    for (one per 16 KiB, and a hundred more)."""
    return limit // _INODE_RATIO + 100


def _size_of(path: Path | None) -> int:
    if path is None:
        return 0
    try:
        return path.stat().st_size
    except OSError:
        return 0


class Space:
    """What a run's disk allotment is counted over: ``places`` (walked) and the growth of
    its ``log``; what they held when the run started is not the run's."""

    kind = "sampled"

    def __init__(self, places: Sequence[Path], *, limit: int, log: Path | None) -> None:
        self.places = list(places)
        self.limit = limit
        self.log = log
        self._log_start = _size_of(log)
        self._start = tree_size(self.places)
        self._last = (0, 0, 0.0, 0.0)  # (bytes, entries, when walked, how long it took)

    def held(self, *, exact: bool = False) -> tuple[int, int]:
        """(bytes, files and folders) the run holds now; between samples a recent walk's
        figures may stand in, unless ``exact``."""
        size, entries, walked, took = self._last
        now = time.monotonic()
        if exact or now - walked >= took * _WALK_SPACING:
            size, entries = tree_size(self.places)
            size, entries = size - self._start[0], entries - self._start[1]
            self._last = (size, entries, now, time.monotonic() - now)
        return max(0, size) + max(0, _size_of(self.log) - self._log_start), entries

    def full(self) -> bool:
        """Whether the kernel has run out of room for the run (never, when only sampled)."""
        return False

    def over(self, *, exact: bool = False) -> bool:
        """Whether the run is past its allotment."""
        size, entries = self.held(exact=exact)
        return self.full() or size > self.limit or entries > files_allowed(self.limit)

    def bring_back(self, keep: Sequence[str] | None) -> None:
        """Make what the run left visible in its folder (sampled: it is there already)."""

    def close(self) -> None:
        """Release what holds the run's files apart (sampled: nothing)."""


class FileSystemSpace(Space):
    """The run's folder as an ext4 file system of its own, mounted at ``mount``: ``work`` is
    shown to the run as its folder, ``tmp`` as its /tmp and ``shm`` as its /dev/shm."""

    kind = "filesystem"

    def __init__(
        self,
        folder: Path,
        prepared: Prepared,
        *,
        limit: int,
        log: Path | None,
        also: Sequence[Path],
        pool: DiskPool | None = None,
    ) -> None:
        self.folder = folder
        self.prepared = prepared
        self.home = prepared.home
        self.mount = prepared.home / "mount"
        self.pool = pool  # where the disk goes back to after the run, if anywhere
        super().__init__([self.mount, *also], limit=limit, log=log)

    @property
    def work(self) -> Path:
        return self.mount / "work"

    def shown(self) -> dict[Path, Path]:
        """Where the run sees each part of its file system: {path inside: folder here}."""
        return {self.folder: self.work, **{path: self.mount / path.name for path in SCRATCH}}

    @classmethod
    def make(
        cls,
        folder: Path,
        *,
        limit: int,
        log: Path | None,
        also: Sequence[Path] = (),
        furnish: Mapping[str, Path] | None = None,
        pool: DiskPool | None = None,
    ) -> FileSystemSpace:
        """An image for ``folder``'s content and ``limit`` bytes more, mounted, with the
        content copied in, and ``furnish``'s folders at their places (:func:`furnish_into`);
        ``also`` are more writable places (the caller's writable mounts), only walked. A
        prepared one of the same size is taken from ``pool`` if given, and goes back there
        when the run is done (:func:`keep_run_disks`). Raises OSError (or
        CalledProcessError) if it cannot be made."""
        _remove_orphans(folder)
        furnish = furnish or {}
        # never another attempt's disk: its image and mount are not the run's content
        content = [entry for entry in folder.iterdir() if not entry.name.startswith(SPACE_PREFIX)]
        taken = [*content, *furnish.values()]
        size = _image_size(limit + sum(_allocated(entry) for entry in taken))
        wanted = tuple(sorted((place, Path(source)) for place, source in furnish.items()))
        prepared = pool.take(size, wanted) if pool is not None else None
        if prepared is None:
            prepared = _prepare(pool.folder if pool is not None else folder, size)
        work = prepared.home / "mount" / "work"
        try:
            if prepared.furnished != wanted:  # kept ones are exact: the pool checked them
                clear_except(work, ())
                kept = furnish_into(work, furnish)
                prepared = replace(
                    prepared,
                    furnished=tuple((p, s) for p, s in wanted if p in kept),
                    free_furnished=free_of(prepared.home / "mount"),
                )
            for entry in content:  # furnished places win, as they always have
                copy_beside(entry, work / entry.name, furnish, at=entry.name)
        except BaseException:
            remove_disk(prepared.home)
            raise
        return cls(folder, prepared, limit=limit, log=log, also=also, pool=pool)

    def full(self) -> bool:
        try:
            found = os.statvfs(self.mount)
        except OSError:
            return False
        return found.f_bavail * found.f_frsize < _BLOCK or found.f_favail == 0

    def bring_back(self, keep: Sequence[str] | None) -> None:
        """Copy the entries ``keep`` names (None: all) of the run's folder back into the
        real folder, replacing what was there."""
        names = sorted(os.listdir(self.work)) if keep is None else list(keep)
        for name in names:
            source, target = self.work / name, self.folder / name
            if not os.path.lexists(source):
                continue
            delete(target)
            copy_entry(source, target)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.give_back(self.prepared)
        else:
            remove_disk(self.home)


def _prepare(where: Path, size: int) -> Prepared:
    """A new disk of ``size`` bytes in a folder of its own under ``where``, mounted, with its
    places made."""
    home = where / f"{SPACE_PREFIX}{service_stamp()}-{secrets.token_hex(4)}"
    home.mkdir()
    try:
        _make_filesystem(home, size)
        make_places(home / "mount")
        return Prepared(home, size, free_of(home / "mount"))
    except BaseException:
        remove_disk(home)
        raise


def keep_run_disks(folder: Path) -> DiskPool:
    """A pool that keeps run disks under ``folder`` for the next run of the same size
    (_disk_pool.py says why that is safe); give it to the runs (``disks=``) and close it
    when done, which unmounts and deletes the disks waiting. ``nearline serve`` keeps one
    for its local runs. Should its owner never close it, the interpreter's exit does.

    Parameters
    ----------
    folder
        Where the kept disks wait (made if missing).
    """
    folder.mkdir(parents=True, exist_ok=True)
    return DiskPool(folder, remove_disk)


def _allocated(path: Path) -> int:
    """What copying ``path`` into the image takes: its files' blocks, at least one each."""
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode):
        return max(info.st_blocks * 512, _BLOCK)
    return _BLOCK + sum(_allocated(entry) for entry in path.iterdir())


def _image_size(need: int) -> int:
    """The bytes of an image with ``need`` bytes free: ext4's own overhead sized in."""
    overhead = need * _INODE_SIZE // (_INODE_RATIO - _INODE_SIZE) + need // 8192 + _SMALL_OVERHEAD
    size = need + overhead + min(need // 49, _RESERVED_MOST)
    return -(-size // _BLOCK) * _BLOCK


def _make_filesystem(home: Path, size: int) -> None:
    """A sparse ext4 image of ``size`` bytes in ``home``, mounted at home/mount."""
    image = home / "image"
    with open(image, "wb") as handle:
        handle.truncate(size)
    # no journal (the image is thrown away after a crash), nothing reserved for root
    options = ["-b", str(_BLOCK), "-i", str(_INODE_RATIO), "-I", str(_INODE_SIZE), "-m", "0"]
    options += ["-O", "^has_journal,^resize_inode", "-E", "nodiscard,root_owner=0:0"]
    _tool("mkfs.ext4", "-q", "-F", *options, str(image))
    (home / "mount").mkdir()
    _tool("mount", "-t", "ext4", "-o", "loop,nosuid,nodev", str(image), str(home / "mount"))
    shutil.rmtree(home / "mount" / "lost+found", ignore_errors=True)


def _tool(*argv: str) -> None:
    run_helper(argv, timeout=120)


def remove_disk(home: Path) -> None:
    """Unmount home/mount if it is mounted (lazily if something still holds it; the loop
    device goes with it) and delete ``home``."""
    mount = home / "mount"
    if os.path.ismount(mount):
        try:
            run_helper(["umount", str(mount)])
        except subprocess.CalledProcessError:
            with contextlib.suppress(subprocess.CalledProcessError):
                run_helper(["umount", "-l", str(mount)])
    if os.path.ismount(mount):
        log.warning("could not unmount a run's disk at %s", mount)
        return
    shutil.rmtree(home, ignore_errors=True)


def _orphaned(home: Path) -> bool:
    """Whether ``home`` is a run's disk whose maker (named in it: pid and start time) is
    gone, killed before it could remove it."""
    found = _SPACE.fullmatch(home.name)
    if found is None:
        return False
    pid, start = found.groups()
    return service_stamp(int(pid)) != f"{pid}-{start}"


def _remove_orphans(folder: Path) -> None:
    """Unmount and delete the disks that earlier attempts of a run left in its ``folder``
    when the process that made them was killed (a Dask worker killed mid-run, whose run is
    retried elsewhere); a disk whose maker still runs is left alone."""
    for home in folder.glob(f"{SPACE_PREFIX}*"):
        if _orphaned(home):
            remove_disk(home)


@functools.cache
def filesystem_works() -> bool:
    """Whether this process can make and mount a run's file system here (root, mkfs.ext4,
    loop devices); asked once per process."""
    if os.geteuid() != 0 or not shutil.which("mkfs.ext4") or not shutil.which("mount"):
        return False
    with tempfile.TemporaryDirectory(prefix="nearline-probe-") as folder:
        home = Path(folder) / "space"
        home.mkdir()
        try:
            _make_filesystem(home, _image_size(0))
        except (OSError, subprocess.SubprocessError) as error:
            log.debug("no file system for runs' disks: %s", error)
            return False
        finally:
            remove_disk(home)
    return True


def cleanup_stale() -> list[Path]:
    """Unmount and delete the run disks that services no longer running left mounted (a
    service killed with kill -9); returns their folders."""
    removed = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return removed
    for line in lines:
        point = Path(line.split()[4].replace("\\040", " "))
        home = point.parent
        if point.name != "mount" or not _orphaned(home):
            continue
        remove_disk(home)
        if not home.exists():
            removed.append(home)
    return removed

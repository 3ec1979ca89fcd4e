"""The source side of a migration: a closed set's files, checked against its marker, and
their removal once the archive copy is verified.

A member may be a folder (a Zarr store, or a block folder of per-rank files); it stands for
every regular file below it, and its marker records their total size and the folder's mtime.
"""

from __future__ import annotations

import logging
import os
import stat as stat_module
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from nearline.errors import MigrationError
from nearline.layout._markers import FileSet, Member, step_folders

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SourceFile:
    """One regular file of a closed set, as it was checked just before bundling."""

    path: str  # relative to the step folder
    full: Path
    size: int
    mtime_ns: int
    mode: int


def describe(fileset: FileSet) -> str:
    return f"set (step {fileset.step}, file {fileset.file!r})"


def _changed(fileset: FileSet, path: Path, what: str) -> MigrationError:
    return changed(describe(fileset), path, what)


def changed(label: str, path: Path, what: str) -> MigrationError:
    """The error for a source file of the set ``label`` that changed since it was marked."""
    return MigrationError(
        f"{label}: {path} changed after it was marked complete ({what}); its "
        f"source is kept. Re-mark the set (mark_complete) once its writer has finished with "
        f"it, then run migrate again"
    )


def _files_below(folder: Path, step_dir: Path) -> list[SourceFile]:
    found = []
    for parent, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names):
            full = Path(parent) / name
            info = full.lstat()
            if stat_module.S_ISREG(info.st_mode):
                relative = full.relative_to(step_dir).as_posix()
                found.append(
                    SourceFile(relative, full, info.st_size, info.st_mtime_ns, info.st_mode & 0o777)
                )
    return found


def _check_member(fileset: FileSet, member: Member) -> list[SourceFile]:
    full = fileset.step_dir / member.path
    try:
        info = full.stat()
    except FileNotFoundError:
        raise MigrationError(
            f"{describe(fileset)}: {full} is listed in {fileset.marker} but is missing; its "
            f"other files are kept. Restore the file, or re-mark the set without it"
        ) from None
    if stat_module.S_ISDIR(info.st_mode):
        files = _files_below(full, fileset.step_dir)
        size = sum(f.size for f in files)
    else:
        files = [
            SourceFile(member.path, full, info.st_size, info.st_mtime_ns, info.st_mode & 0o777)
        ]
        size = info.st_size
    if size != member.size:
        raise _changed(fileset, full, f"{member.size} bytes when marked, {size} now")
    if info.st_mtime_ns != member.mtime_ns:
        raise _changed(
            fileset, full, f"mtime_ns {member.mtime_ns} when marked, {info.st_mtime_ns} now"
        )
    return files


def checked_files(fileset: FileSet) -> list[SourceFile]:
    """Every regular file of ``fileset``; raise :class:`MigrationError` if one changed
    (size or mtime) or went missing since the set was marked complete."""
    files: list[SourceFile] = []
    for member in fileset.members:
        files.extend(_check_member(fileset, member))
    return files


def recheck(fileset: FileSet, files: Iterable[SourceFile]) -> None:
    """Raise :class:`MigrationError` if a file changed since :func:`checked_files` saw it;
    files already gone (removed before a crash) are fine."""
    for source in files:
        try:
            info = source.full.stat()
        except FileNotFoundError:
            continue
        if (info.st_size, info.st_mtime_ns) != (source.size, source.mtime_ns):
            raise _changed(fileset, source.full, "while it was being archived")


def remove_set(fileset: FileSet, files: Iterable[SourceFile]) -> None:
    """Remove an archived set's files, then its emptied folders, then its marker, last."""
    folders = set()
    for source in files:
        source.full.unlink(missing_ok=True)
        folders.update(p for p in source.full.parents if fileset.step_dir in p.parents)
    for member in fileset.members:
        folder = fileset.step_dir / member.path
        if folder.is_dir():
            _remove_empty_folders(folder)
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        _rmdir(folder)
    fileset.marker.unlink(missing_ok=True)
    _rmdir(fileset.marker.parent)
    _remove_old_step_folder(fileset)


def _remove_empty_folders(folder: Path) -> None:
    for parent, _, _ in os.walk(folder, topdown=False):
        _rmdir(Path(parent))


def _rmdir(folder: Path) -> bool:
    try:
        folder.rmdir()
    except OSError:  # not empty, or already gone
        return False
    return True


def _remove_old_step_folder(fileset: FileSet) -> None:
    """Remove the step folder once empty, unless it is the newest step: a writer may be
    about to fill that one, and must not find its folder gone."""
    newest = None
    for newest in step_folders(fileset.root):  # noqa: B007 - the last one is wanted
        pass
    if newest is not None and newest != fileset.step_dir and _rmdir(fileset.step_dir):
        log.debug("removed the emptied step folder %s", fileset.step_dir)

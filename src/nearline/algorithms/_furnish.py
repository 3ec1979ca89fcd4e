"""Folders furnished into a run's folder (nearline's kernel links, _kernels.py): copied in as
the run's disk is made, and on a disk kept for the next run (_disk_pool.py) kept as they are
when they are still exactly what was copied.

Making 96 links and deleting them again cost a loaded server about a tenth of its time (each
is a metadata write on the run's file system); reading them back to check costs a few
readlinks. "Exactly" means the same names, the same folder modes and the same link targets,
and nothing else: a run that wrote a file there (numba's new index, or a forged one for the
next run to load), replaced a link or changed a mode leaves a folder that is deleted and
copied anew. Only folders of folders and links are kept; any other kind is copied each time.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

FOLDER_MODE = 0o755  # the folders made on the way to a furnished place

Layout = frozenset[tuple[str, str, int | str]]  # (relative path, "d" or "l", mode or target)


def layout(folder: Path) -> Layout | None:
    """What ``folder`` holds, read without following a link: each folder's mode and each
    link's target; None if it is not a folder, or holds anything else."""
    try:
        if not stat.S_ISDIR(folder.lstat().st_mode):
            return None
    except OSError:
        return None
    found: set[tuple[str, str, int | str]] = set()
    pending = [("", os.fspath(folder))]
    while pending:
        relative, path = pending.pop()
        with os.scandir(path) as entries:
            for entry in entries:
                name = f"{relative}/{entry.name}" if relative else entry.name
                if entry.is_symlink():
                    found.add((name, "l", os.readlink(entry.path)))
                elif entry.is_dir(follow_symlinks=False):
                    mode = stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode)
                    found.add((name, "d", mode))
                    pending.append((name, entry.path))
                else:
                    return None
    found.add(("", "d", stat.S_IMODE(folder.lstat().st_mode)))
    return frozenset(found)


def furnish_into(
    root: Path, furnish: Mapping[str, Path], *, kept: Iterable[str] = ()
) -> tuple[str, ...]:
    """Copy each folder of ``furnish`` to its place (a path relative to ``root``), replacing
    what is there, except the places in ``kept`` whose copy is still exact; returns the
    places that may be kept for the next run (those of folders and links only)."""
    keepable = []
    for place, source in furnish.items():
        target = root / place
        make_folders_to(root, place)
        wanted = layout(source)
        if place in kept and wanted is not None and layout(target) == wanted:
            keepable.append(place)
            continue
        delete(target)
        copy_entry(source, target)
        if wanted is not None:
            keepable.append(place)
    return tuple(keepable)


def make_folders_to(root: Path, place: str) -> None:
    """The folders between ``root`` and ``place``, made if missing, at one mode."""
    folder = root
    for part in Path(place).parts[:-1]:
        folder = folder / part
        if not folder.is_dir() or folder.is_symlink():
            delete(folder)
            folder.mkdir()
        os.chmod(folder, FOLDER_MODE)


def clear_except(root: Path, places: Iterable[str]) -> None:
    """Delete everything under ``root`` but the furnished ``places`` (paths relative to it)
    and the folders on the way to them."""
    tree: dict[str, dict] = {}
    for place in places:
        branch = tree
        for part in Path(place).parts:
            branch = branch.setdefault(part, {})
    _clear(root, tree)


def _clear(folder: Path, tree: dict[str, dict]) -> None:
    for name in os.listdir(folder):
        path = folder / name
        below = tree.get(name)
        if below is None:
            delete(path)
        elif below:  # a folder on the way: only a real folder is walked
            if path.is_symlink() or not path.is_dir():
                delete(path)
            else:
                _clear(path, below)
                os.chmod(path, FOLDER_MODE)


def copy_beside(source: Path, target: Path, places: Iterable[str], at: str = "") -> None:
    """Copy ``source`` to ``target`` (``at`` below the root the furnished ``places`` are
    relative to) around what is furnished there: into a folder made on the way to a place,
    and never over a place."""
    if at in places:
        return
    if target.is_dir() and not target.is_symlink() and source.is_dir() and not source.is_symlink():
        for name in sorted(os.listdir(source)):
            below = f"{at}/{name}" if at else name
            copy_beside(source / name, target / name, places, below)
    else:
        copy_entry(source, target)


def delete(path: Path) -> None:
    """Delete a file, link or whole folder (a link is never followed)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def copy_entry(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target`` as it is: folders, files, links as links (never
    followed), named pipes and sockets as such; devices are not copied."""
    info = source.lstat()
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        target.mkdir(mode=stat.S_IMODE(mode))
        for entry in sorted(os.listdir(source)):
            copy_entry(source / entry, target / entry)
        os.chmod(target, stat.S_IMODE(mode))
    elif stat.S_ISREG(mode):
        shutil.copy2(source, target, follow_symlinks=False)
    elif stat.S_ISLNK(mode):
        os.symlink(os.readlink(source), target)
    elif stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        os.mknod(target, mode)

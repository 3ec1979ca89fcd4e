"""Looking into a running output tree by step and file group, one folder at a time.

A flat listing of a 100,000-file run is what HDS exists to avoid, so each question here reads
only the folders it needs: the root (and step-block folders) for the steps, one step folder
for its file groups, one file group's folder for its files.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from nearline.errors import LayoutError
from nearline.layout._markers import MARKER, files_below, step_folders, tree_size
from nearline.layout._paths import parse


@dataclass(frozen=True)
class GroupSummary:
    """One file group of one step."""

    step: int
    file: str
    files: int
    bytes: int
    complete: bool


@dataclass(frozen=True)
class FileEntry:
    path: Path
    rank: int | None
    bytes: int


def steps(root: str | Path) -> Iterator[tuple[int, Path]]:
    """(step, folder) for every step below ``root``, in order."""
    for folder in step_folders(check_root(root)):
        yield int(folder.name), folder


def check_root(root: str | Path) -> Path:
    """``root`` as a Path, if it is a folder; else :class:`LayoutError`, so that a mistyped
    root is not reported as an empty tree (``step_folders`` sees no steps in either)."""
    path = Path(root)
    if not path.exists():
        raise LayoutError(
            f"output folder {root} does not exist; name the root a run writes to (burst's root=)"
        )
    if not path.is_dir():
        raise LayoutError(
            f"{root} is a file, not an output folder; name the root a run writes to (burst's root=)"
        )
    return path


def _step_folder(root: str | Path, step: int) -> Path:
    for number, folder in steps(root):
        if number == step:
            return folder
    raise LayoutError(f"step {step} is not in {root}; `nearline ls {root}` lists the steps")


def files(root: str | Path, *, step: int, file: str) -> list[FileEntry]:
    """The files of one file group at one step: its assembled file and its per-rank files."""
    found = _entries(_step_folder(root, step), file)
    if not found:
        raise LayoutError(f"file group {file!r} has no files at step {step} in {root}")
    return found


def _entries(folder: Path, file: str) -> list[FileEntry]:
    """:func:`files` of a step folder; none for a group whose files a callable sink consumed
    (its folder holds only the marker)."""
    found = [
        FileEntry(Path(e.path), None, tree_size(Path(e.path)))
        for e in os.scandir(folder)
        if not e.name.startswith(".") and not e.is_dir() and e.name.startswith(f"{file}.")
    ]
    found += [
        FileEntry(Path(e.path), _rank(e.name), tree_size(Path(e.path)))
        for e in os.scandir(folder)
        if e.name.startswith(f"{file}.") and e.name.endswith(".zarr")
    ]
    if (folder / file).is_dir():
        found += [FileEntry(p, _rank(p.name), tree_size(p)) for p in files_below(folder / file)]
    return sorted(found, key=lambda f: (f.rank is not None, f.rank or 0, f.path.name))


def _rank(name: str) -> int | None:
    try:
        return parse(name).rank
    except LayoutError:
        return None


def groups(root: str | Path, *, step: int) -> list[GroupSummary]:
    """The file groups of one step, with their file counts, sizes and completeness."""
    folder = _step_folder(root, step)
    names = set()
    for entry in os.scandir(folder):
        if entry.name.startswith("."):
            continue
        names.add(
            entry.name if entry.is_dir() and "." not in entry.name else parse(entry.name).file
        )
    summaries = []
    for name in sorted(names):
        members = _entries(folder, name)
        summaries.append(
            GroupSummary(
                step=step,
                file=name,
                files=len(members),
                bytes=sum(m.bytes for m in members),
                complete=(folder / name / MARKER).exists(),
            )
        )
    return summaries

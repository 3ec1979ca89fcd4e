"""Closed file sets: a writer marks a (step, file group) complete once every file is durable.

The marker is ``<root>/<step>/<file>/.complete``: a JSON manifest listing each member file
(path relative to the step folder), its size and its modification time in nanoseconds, so
that a migrator can tell a file changed after it was marked. Members are the per-rank files
in that folder and the assembled file ``<root>/<step>/<file>.<step>.<ext>``, if any. A file
a callable sink consumed in place (an in-situ analysis, a plot) exists nowhere: it is listed
under ``consumed`` instead, ``{"path": ..., "created": false, "consumed_by": <callable>}``, so
that a reader of the marker can tell "used, never written" from "lost". The marker is written
under a temporary name and renamed, so a marker is always whole.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from nearline.durable import fsync_path
from nearline.errors import LayoutError
from nearline.layout._paths import STEP_WIDTH, Layout, check_name

MARKER = ".complete"


@dataclass(frozen=True)
class Member:
    """One file of a closed set, as it was when the set was marked."""

    path: str  # relative to the step folder, e.g. "dyn/dyn.000003.00012.nc"
    size: int
    mtime_ns: int


@dataclass(frozen=True, order=True)
class Consumed:
    """A file of a closed set that was never created: a callable sink consumed its data in
    place. ``consumed_by`` names the callable."""

    path: str  # relative to the step folder, as a member's would be
    consumed_by: str


@dataclass(frozen=True)
class FileSet:
    """A closed (step, file group) and its members; ``step_dir`` defaults to root/<step>.

    ``consumed`` lists the set's files a callable sink used in place without creating them.
    """

    root: Path
    step: int
    file: str
    members: tuple[Member, ...]
    step_dir: Path = None  # type: ignore[assignment]  # filled in below when not given
    consumed: tuple[Consumed, ...] = ()

    def __post_init__(self) -> None:
        if self.step_dir is None:
            object.__setattr__(self, "step_dir", Path(self.root) / f"{self.step:0{STEP_WIDTH}d}")

    @property
    def marker(self) -> Path:
        return self.step_dir / self.file / MARKER

    def paths(self) -> list[Path]:
        return [self.step_dir / m.path for m in self.members]


def marker_path(root: str | Path, *, step: int, file: str, layout: Layout | None = None) -> Path:
    check_name(file)
    return (layout or Layout()).step_dir(root, step) / file / MARKER


def mark_complete(
    root: str | Path,
    *,
    step: int,
    file: str,
    members: Iterable[str | Path] | None = None,
    layout: Layout | None = None,
    consumed: Mapping[str | Path, str] | None = None,
) -> FileSet:
    """Declare the set (step, file) closed; ``members`` default to what is on disk now.

    ``consumed`` maps files of the set that were never created (a callable sink used their
    data in place) to the name of what consumed them. Call it only once every member is
    durable. Returns the recorded :class:`FileSet`.
    """
    marker = marker_path(root, step=step, file=file, layout=layout)
    step_dir = marker.parent.parent
    if members is None:
        members = _present_members(step_dir, file)
    recorded = []
    for member in members:
        full = _below(step_dir, member)
        try:
            stat = full.stat()
        except FileNotFoundError:
            raise LayoutError(f"cannot mark {full} complete: it does not exist") from None
        recorded.append(Member(str(full.relative_to(step_dir)), tree_size(full), stat.st_mtime_ns))
    gone = sorted(
        Consumed(str(_below(step_dir, path).relative_to(step_dir)), by)
        for path, by in (consumed or {}).items()
    )
    marker.parent.mkdir(parents=True, exist_ok=True)
    partial = marker.with_name(MARKER + ".partial")
    document: dict = {"step": step, "file": file, "members": [m.__dict__ for m in recorded]}
    if gone:  # only then: the markers of sets written to files stay as they were
        document["consumed"] = [
            {"path": c.path, "created": False, "consumed_by": c.consumed_by} for c in gone
        ]
    partial.write_text(json.dumps(document, indent=1))
    fsync_path(partial)
    os.replace(partial, marker)
    fsync_path(marker.parent)
    return FileSet(Path(root), step, file, tuple(recorded), step_dir, tuple(gone))


def _below(step_dir: Path, path: str | Path) -> Path:
    """``path`` as given if absolute, else relative to the step folder."""
    path = Path(path)
    return path if path.is_absolute() else step_dir / path


def tree_size(path: Path) -> int:
    """Bytes of a file, or of every file below a folder (Zarr stores)."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def _present_members(step_dir: Path, file: str) -> list[Path]:
    folder = step_dir / file
    found = sorted(files_below(folder)) if folder.is_dir() else []
    found += sorted(step_dir.glob(f"{file}.{step_dir.name}.*"))
    visible = [p.relative_to(step_dir) for p in found]
    return [p for p in visible if not any(part.startswith(".") for part in p.parts)]


def files_below(folder: Path) -> Iterator[Path]:
    """Visible output files (or Zarr store folders) below ``folder``, through rank blocks."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir() and entry.name.isdigit():
                yield from files_below(Path(entry.path))
            else:
                yield Path(entry.path)


def read_marker(marker: str | Path, *, root: str | Path | None = None) -> FileSet:
    """The :class:`FileSet` a marker records; raise :class:`LayoutError` if it is not one."""
    marker = Path(marker)
    try:
        document = json.loads(marker.read_text())
        members = tuple(Member(**m) for m in document["members"])
        gone = tuple(Consumed(c["path"], c["consumed_by"]) for c in document.get("consumed", []))
        step, file = int(document["step"]), document["file"]
        step_dir = marker.parent.parent
        return FileSet(Path(root or step_dir.parent), step, file, members, step_dir, gone)
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise LayoutError(f"{marker} is not a nearline completion marker: {error}") from None


def closed_sets(root: str | Path) -> Iterator[FileSet]:
    """Every marked set below ``root``, oldest step first, without listing the file folders."""
    root = Path(root)
    for step_dir in step_folders(root):
        try:  # a migrator may remove a step folder while we look
            markers = sorted(step_dir.glob(f"*/{MARKER}"))
        except FileNotFoundError:
            continue
        for marker in markers:
            try:
                yield read_marker(marker, root=root)
            except LayoutError:
                if marker.exists():
                    raise


def step_folders(root: Path) -> Iterator[Path]:
    """Step folders below ``root`` in step order, looking through step-block folders."""
    try:
        entries = sorted(p for p in root.iterdir() if p.is_dir() and p.name.isdigit())
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        if len(entry.name) == STEP_WIDTH:
            yield entry
        else:
            yield from step_folders(entry)

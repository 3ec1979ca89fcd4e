"""Output paths: one folder per step, one sub-folder per per-rank file group.

Per-rank files:  ``<root>/<step>/<file>/<file>.<step>.<rank>.<ext>``
Assembled files: ``<root>/<step>/<file>.<step>.<ext>``

Steps and ranks are zero-padded so that a listing sorts in step and rank order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from nearline.errors import LayoutError

STEP_WIDTH = 6
RANK_WIDTH = 5
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-]*$")
_FILE = re.compile(
    r"^(?P<file>[A-Za-z0-9_][A-Za-z0-9_\-]*)\.(?P<step>\d+)(?:\.(?P<rank>\d+))?\.(?P<ext>[A-Za-z0-9]+)$"
)


@dataclass(frozen=True)
class OutputPath:
    """The parts of an output path: which file group, step and (for per-rank files) rank."""

    file: str
    step: int
    rank: int | None
    ext: str


def check_name(file: str) -> str:
    """Return ``file`` if it can name a file group, else raise :class:`LayoutError`."""
    if not isinstance(file, str) or not _NAME.match(file):
        raise LayoutError(
            f"file group name {file!r} is not usable in a path: use letters, digits, '_' or '-' "
            "(for example 'dynamics')"
        )
    return file


def hds_path(root: str | Path, *, step: int, file: str, rank: int | None = None, ext: str) -> Path:
    """Return where ``file`` at ``step`` (from ``rank``, if per-rank) is written below ``root``."""
    check_name(file)
    if step < 0 or (rank is not None and rank < 0):
        raise LayoutError(f"step and rank must be >= 0, got step={step}, rank={rank}")
    step_dir = Path(root) / f"{step:0{STEP_WIDTH}d}"
    stem = f"{file}.{step:0{STEP_WIDTH}d}"
    if rank is None:
        return step_dir / f"{stem}.{ext}"
    return step_dir / file / f"{stem}.{rank:0{RANK_WIDTH}d}.{ext}"


def parse(path: str | Path) -> OutputPath:
    """Return the parts of an output path made by :func:`hds_path`."""
    match = _FILE.match(Path(path).name)
    if match is None:
        raise LayoutError(f"{path} is not a nearline output path (<file>.<step>[.<rank>].<ext>)")
    rank = match.group("rank")
    return OutputPath(
        file=match.group("file"),
        step=int(match.group("step")),
        rank=None if rank is None else int(rank),
        ext=match.group("ext"),
    )

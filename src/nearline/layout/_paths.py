"""Output paths (Hierarchical Data Structuring): no folder holds more than ``fanout`` entries.

Per-rank files:  ``<root>/<step>/<file>/<file>.<step>.<rank>.<ext>``
Assembled files: ``<root>/<step>/<file>.<step>.<ext>``

Steps and ranks are zero-padded so that a listing sorts in step and rank order. When a run
declares more ranks (or steps) than one folder may hold, block folders are added above the
files (or step folders): rank 12345 of a 20,000-rank run with fanout 1000 lands in
``<root>/<step>/<file>/012/<file>.<step>.12345.<ext>``. The file name alone always tells the
step and rank, so :func:`parse` needs no folder names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from nearline.errors import LayoutError

STEP_WIDTH = 6
RANK_WIDTH = 5
DEFAULT_FANOUT = 1024
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-]*$")
_EXT = re.compile(r"^[A-Za-z0-9]+$")
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


@dataclass(frozen=True)
class Layout:
    """How many entries a folder may hold, and how many ranks and steps the run expects.

    ``fanout`` defaults to the number of ranks, as in Werne et al.'s T3E runs (Hierarchical
    Data Structuring), but never below 1024; ``ranks``/``steps`` of None mean "no more than
    fits in one folder". A step folder holds two entries per file group (its folder and its
    assembled file), so a run may use at most ``fanout // 2`` file groups.
    """

    fanout: int = DEFAULT_FANOUT
    ranks: int | None = None
    steps: int | None = None

    @classmethod
    def for_run(cls, *, ranks: int, fanout: int | None = None, steps: int | None = None) -> Layout:
        return cls(fanout=fanout or max(ranks, DEFAULT_FANOUT), ranks=ranks, steps=steps)

    def __post_init__(self) -> None:
        if self.fanout < 4:
            raise LayoutError(f"fanout must be at least 4 entries per folder, got {self.fanout}")

    @property
    def max_files(self) -> int:
        return self.fanout // 2

    def step_dir(self, root: str | Path, step: int) -> Path:
        """The folder of one step, below any step-block folders."""
        if step < 0:
            raise LayoutError(f"step must be >= 0, got {step}")
        blocks = _blocks(step, self.steps, self.fanout)
        return Path(root).joinpath(*blocks, f"{step:0{STEP_WIDTH}d}")

    def path(
        self, root: str | Path, *, step: int, file: str, rank: int | None = None, ext: str
    ) -> Path:
        """Where ``file`` at ``step`` (from ``rank``, if per-rank) is written below ``root``.

        ``ext`` may be given with or without its dot (``"nc"`` or ``".nc"``).
        """
        check_name(file)
        ext = check_ext(ext)
        step_dir = self.step_dir(root, step)
        stem = f"{file}.{step:0{STEP_WIDTH}d}"
        if rank is None:
            return step_dir / f"{stem}.{ext}"
        if rank < 0:
            raise LayoutError(f"rank must be >= 0, got {rank}")
        # one slot of the file group's folder is kept for its .complete marker
        blocks = _blocks(rank, self.ranks, self.fanout - 1)
        return step_dir.joinpath(file, *blocks, f"{stem}.{rank:0{RANK_WIDTH}d}.{ext}")

    def folders(self, root: str | Path, *, step: int, files: list[str]) -> list[Path]:
        """Every folder a step's per-rank files need, parents first: made once, by one process."""
        if len(files) > self.max_files:
            raise LayoutError(
                f"{len(files)} file groups exceed the {self.max_files} one step folder can hold "
                f"with fanout {self.fanout}; raise fanout or merge file groups"
            )
        ranks = self.ranks or 1
        wanted = {self.step_dir(root, step)}
        for file in files:
            for rank in range(0, ranks, self.fanout - 1):
                wanted.add(self.path(root, step=step, file=file, rank=rank, ext="x").parent)
                wanted.update(self.path(root, step=step, file=file, rank=rank, ext="x").parents)
        base = Path(root)
        return sorted(p for p in wanted if base in p.parents)


def _blocks(index: int, count: int | None, capacity: int) -> list[str]:
    """Block-folder names that keep ``count`` items at most ``capacity`` per folder."""
    levels = 0
    if count is not None:
        while capacity ** (levels + 1) < count:
            levels += 1
    width = len(str(max(count or 1, 1) // capacity or 1))
    return [f"{index // capacity ** (level + 1):0{width}d}" for level in reversed(range(levels))]


def is_plain_path(name: str) -> bool:
    """Whether ``name`` is a relative ``/``-separated path that stays below its root: not
    empty, no leading ``/``, no empty, ``.`` or ``..`` component. What an archive may name
    (an object, a member, a step folder), whatever its tier."""
    return bool(name) and not name.startswith("/") and not {"", ".", ".."} & set(name.split("/"))


def check_name(file: str) -> str:
    """Return ``file`` if it can name a file group, else raise :class:`LayoutError`."""
    if not isinstance(file, str) or not _NAME.match(file):
        raise LayoutError(
            f"file group name {file!r} is not usable in a path: use letters, digits, '_' or '-' "
            "(for example 'dynamics')"
        )
    return file


def check_ext(ext: str) -> str:
    """``ext`` without a leading dot, if :func:`parse` can read it back; else
    :class:`LayoutError`. Users write ".nc" as often as "nc": both name the same path."""
    bare = ext[1:] if isinstance(ext, str) and ext.startswith(".") else ext
    if not isinstance(bare, str) or not _EXT.match(bare):
        raise LayoutError(
            f"file extension {ext!r} is not usable in an output path: use letters and digits "
            "only, with or without one leading dot (for example 'nc' or '.nc')"
        )
    return bare


def hds_path(
    root: str | Path,
    *,
    step: int,
    file: str,
    rank: int | None = None,
    ext: str,
    layout: Layout | None = None,
) -> Path:
    """Return where ``file`` at ``step`` (from ``rank``, if per-rank) is written below ``root``;
    ``ext`` is given with or without its dot."""
    return (layout or Layout()).path(root, step=step, file=file, rank=rank, ext=ext)


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

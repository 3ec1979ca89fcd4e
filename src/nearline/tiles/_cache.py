"""Drawn tiles kept on disk, bounded: the oldest go when the folder outgrows its budget.

A tile is kept under the identity of the composite it was drawn from (and its set, band and
place), so a composite written again is drawn afresh, never served from the old one's
tiles. Each is written under a temporary name and renamed, so a reader never gets half a
PNG; several server processes may share the folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from nearline.durable import temporary_path

SHRINK_TO = 0.8  # of the budget, once it is passed: room for many tiles before the next sweep


class TileCache:
    """PNG tiles in ``folder``, at most about ``budget`` bytes.

    Parameters
    ----------
    folder
        Where the tiles are kept (made on first use).
    budget
        Bytes the tiles may take; past it the least recently written go, down to 80 % of it.
    """

    def __init__(self, folder: Path, budget: int) -> None:
        self.folder = folder
        self.budget = budget
        self._held: int | None = None  # bytes in the folder, as this process last counted

    def path(self, key: tuple[str, ...]) -> Path:
        return self.folder.joinpath(*key[:-1], f"{key[-1]}.png")

    def get(self, key: tuple[str, ...]) -> bytes | None:
        """The tile kept under ``key``, or None."""
        try:
            return self.path(key).read_bytes()
        except FileNotFoundError:
            return None

    def put(self, key: tuple[str, ...], png: bytes) -> None:
        """Keep ``png`` under ``key``, then sweep if the folder outgrew its budget."""
        final = self.path(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        partial = temporary_path(final).with_name(f"{temporary_path(final).name}.{os.getpid()}")
        partial.write_bytes(png)
        os.replace(partial, final)
        if self._held is None:
            self._held = sum(size for _, size, _ in self._files())
        else:
            self._held += len(png)
        if self._held > self.budget:
            self._sweep()

    def _files(self) -> list[tuple[float, int, Path]]:
        found = []
        for folder, _, names in os.walk(self.folder):
            for name in names:
                path = Path(folder) / name
                try:
                    status = path.stat()
                except FileNotFoundError:  # another process swept it
                    continue
                found.append((status.st_mtime, status.st_size, path))
        return found

    def _sweep(self) -> None:
        """Remove the oldest tiles until they take no more than 80 % of the budget."""
        files = sorted(self._files())
        held = sum(size for _, size, _ in files)
        for _, size, path in files:
            if held <= self.budget * SHRINK_TO:
                break
            path.unlink(missing_ok=True)
            held -= size
        self._held = held

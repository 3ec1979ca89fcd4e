"""Making a finished file durable: fsync it, rename it into place, fsync the folder.

A file is written under a hidden temporary name next to its final path, so that nothing
half-written ever carries the final name, and renamed only after its bytes are on disk.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def temporary_path(final: Path) -> Path:
    """The hidden name a file is written under until it is complete."""
    return final.with_name(f".{final.name}.partial")


def fsync_path(path: Path) -> None:
    """fsync one file or folder (a folder's fsync makes renames inside it durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(path: Path) -> None:
    """fsync a file, or every file and folder below a folder (Zarr stores are folders)."""
    if path.is_dir():
        for folder, _, files in os.walk(path):
            for name in files:
                fsync_path(Path(folder) / name)
            fsync_path(Path(folder))
    else:
        fsync_path(path)


def publish(temporary: Path, final: Path) -> None:
    """fsync ``temporary``, rename it to ``final`` and fsync the folder holding it."""
    fsync_tree(temporary)
    if final.is_dir():
        shutil.rmtree(final)
    os.replace(temporary, final)
    fsync_path(final.parent)


def discard(path: Path) -> None:
    """Remove a temporary file or folder left by a failed write."""
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextmanager
def publishing(final: Path) -> Iterator[Path]:
    """``with publishing(final) as temporary:`` write ``temporary``; it is published as
    ``final`` when the block ends, and discarded if the block raises."""
    temporary = temporary_path(final)
    discard(temporary)
    try:
        yield temporary
    except BaseException:
        discard(temporary)
        raise
    publish(temporary, final)

"""The algorithms nearline ships: package folders (package data beside this file) that the
service deploys at its start, public and owned by "nearline" (only the Pathfinder composite
for now); and the echo process, a test process the service answers in-process when its
operator turns it on (_echo.py)."""

from __future__ import annotations

from pathlib import Path

from nearline.algorithms.builtin._echo import (
    ECHO_ID,
    EchoOrder,
    echo_description,
    read_echo_order,
)

__all__ = ["ECHO_ID", "EchoOrder", "builtin_algorithms", "echo_description", "read_echo_order"]

HERE = Path(__file__).resolve().parent


def builtin_algorithms() -> list[Path]:
    """The packages nearline ships, which the service deploys at its start.

    Returns
    -------
    list[pathlib.Path]
        The packages' folders, each holding its ``algorithm.yaml``, sorted.
    """
    return sorted(path.parent for path in HERE.glob("*/algorithm.yaml"))

"""The algorithms nearline ships: package folders (package data beside this file) that the
service deploys at its start, public and owned by "nearline". Only the Pathfinder composite
for now."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def builtin_algorithms() -> list[Path]:
    """The packages nearline ships, which the service deploys at its start.

    Returns
    -------
    list[pathlib.Path]
        The packages' folders, each holding its ``algorithm.yaml``, sorted.
    """
    return sorted(path.parent for path in HERE.glob("*/algorithm.yaml"))

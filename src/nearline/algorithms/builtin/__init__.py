"""The algorithms nearline ships: package folders (package data beside this file) that the
service deploys at its start, public and owned by "nearline". Only the Pathfinder composite
for now."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def builtin_algorithms() -> list[Path]:
    """The built-in packages' folders, each holding its ``algorithm.yaml``."""
    return sorted(path.parent for path in HERE.glob("*/algorithm.yaml"))

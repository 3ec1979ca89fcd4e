"""Where nearline's files go: every output path is computed here, and closed sets marked."""

from __future__ import annotations

from nearline.layout.markers import (
    MARKER,
    FileSet,
    Member,
    closed_sets,
    mark_complete,
    marker_path,
    read_marker,
)
from nearline.layout.paths import Layout, OutputPath, hds_path, parse

__all__ = [
    "MARKER",
    "FileSet",
    "Layout",
    "Member",
    "OutputPath",
    "closed_sets",
    "hds_path",
    "mark_complete",
    "marker_path",
    "parse",
    "read_marker",
]

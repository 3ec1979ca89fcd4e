"""Where nearline's files go: every output path is computed here."""

from __future__ import annotations

from nearline.layout.paths import OutputPath, hds_path, parse

__all__ = ["OutputPath", "hds_path", "parse"]

"""Progress reports of migration and restore, handed to a caller's callback."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Phase(StrEnum):
    COPY = "copy"  # bytes bundled onto the archive
    VERIFY = "verify"  # bytes read back from the archive and checked
    REMOVE = "remove"  # verified and recorded; the source is being removed
    DONE = "done"  # archived, recorded and (unless kept) removed from the source
    RESTORE = "restore"  # bytes brought back from the archive and checked


@dataclass(frozen=True)
class MigrationEvent:
    """Progress of one set (step, file): ``done`` of ``total`` bytes through ``phase``."""

    step: int
    file: str
    phase: Phase
    done: int
    total: int

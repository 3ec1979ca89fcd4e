"""The contract between granule formats and the compositing chain.

A :class:`Reader` knows one format: ``can_open`` sniffs a file, ``open`` gives a
:class:`Granule`. A granule hands out :class:`~nearline.swath.block.SwathBlock` s of
contiguous scan lines in large reads, plus two small things the compositor needs up front:
the tie-point latitudes (to map lines to latitude bands by sampling) and the calibration
telemetry of the whole granule.

AVHRR GAC has 409 pixels per line; geolocation comes at 51 tie points per line (pixels
5, 13, ..., 405 counting from 1, as in the Level 1b files), and
:func:`~nearline.swath.geolocation.lonlat` interpolates it to every pixel as the GAC readers
do.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from pathlib import Path
from typing import ClassVar

import numpy as np

from nearline.swath.block import SwathBlock, Telemetry
from nearline.swath.wire import pack_block


class Granule(ABC):
    """One open granule. Implementations keep these true:

    - ``read(start, stop)`` returns exactly lines ``[start, stop)``, reading each variable
      in one request; it raises :class:`~nearline.errors.GranuleError` naming the file if
      the bytes are not there.
    - ``platform`` is pygac's spacecraft name ("noaa19", "metopb", ...).
    """

    path: Path
    platform: str
    n_lines: int
    start_time: datetime  # UTC, of the first line
    end_time: datetime  # UTC, of the last line

    @abstractmethod
    def read_tie_latitudes(self) -> np.ndarray:
        """Tie-point latitudes of every line, (n_lines, 51) float32."""

    @abstractmethod
    def read_telemetry(self) -> Telemetry:
        """Calibration telemetry of every line."""

    @abstractmethod
    def read(self, start: int, stop: int) -> SwathBlock:
        """Lines ``[start, stop)``."""

    def read_into(self, start: int, stop: int, buffer: np.ndarray) -> int:
        """Lines ``[start, stop)`` packed into ``buffer`` in the wire layout; bytes used.

        Formats stored contiguously override this to read straight into the buffer.
        """
        return pack_block(self.read(start, stop), buffer)

    def prefetch(self, start: int, stop: int) -> None:  # noqa: B027 - a hint; may do nothing
        """Hint that lines ``[start, stop)`` will be read soon (read-ahead)."""

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release the file."""

    def __enter__(self) -> Granule:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Reader(ABC):
    """A granule format, found by sniffing."""

    name: ClassVar[str]

    @classmethod
    @abstractmethod
    def can_open(cls, path: Path) -> bool:
        """True if ``path`` looks like this format (by its bytes, not its name)."""

    @abstractmethod
    def open(self, path: Path) -> Granule:
        """Open ``path``; raise GranuleError naming it if it is truncated or corrupt."""

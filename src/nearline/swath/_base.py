"""The contract between granule formats and the compositing chain.

A :class:`Reader` knows one format: ``can_open`` sniffs a file, ``open`` gives a
:class:`Granule`. A granule hands out :class:`~nearline.swath.SwathBlock` s of
contiguous scan lines in large reads, plus two small things the compositor needs up front:
the tie-point latitudes (to map lines to latitude bands by sampling) and the calibration
telemetry of the whole granule; and, for the catalogue, the tie-point longitudes and
latitudes of every few lines (:mod:`~nearline.swath._footprint` makes the footprint of them).

AVHRR GAC has 409 pixels per line; geolocation comes at 51 tie points per line (pixels
5, 13, ..., 405 counting from 1, as in the Level 1b files), and
:func:`~nearline.swath.lonlat` interpolates it to every pixel as the GAC readers
do.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any, BinaryIO, ClassVar

import numpy as np

from nearline.errors import GranuleError
from nearline.swath._block import TIE_COLUMNS, SwathBlock, Telemetry
from nearline.swath._wire import pack_block

READ_LINES = 1024  # lines a block read asks for at once (818 KiB of counts per channel)


def tie_rows(n_lines: int, step: int) -> np.ndarray:
    """The lines ``read_tie_lonlat(step)`` samples: ``0, step, 2 step, ...`` and the last."""
    if not isinstance(step, int | np.integer) or step < 1:
        raise ValueError(f"step: expected a whole number of lines >= 1, got {step!r}")
    rows = np.arange(0, n_lines, step)
    if n_lines and rows[-1] != n_lines - 1:
        rows = np.append(rows, n_lines - 1)
    return rows


class Granule(ABC):
    """One open granule. Implementations keep these true:

    - ``read(start, stop)`` returns exactly lines ``[start, stop)``, reading each variable
      in one request; it raises :class:`~nearline.errors.GranuleError` naming the file if
      the bytes are not there.
    - ``read_tie_lonlat(step)`` gives the same tie points as ``read`` does for the lines it
      samples; formats that can read the two variables alone override it (the default reads
      whole blocks, counts and all).
    - ``platform`` is pygac's spacecraft name ("noaa19", "metopb", ...).
    - ``reader`` is the name the format's :class:`Reader` is registered under (its entry
      point in ``nearline.readers``); ``instrument`` the sensor's name for the catalogue.
    - ``edge_reach``: how far the swath's outermost pixels lie beyond the outermost tie
      columns, in tie-point steps (the footprint reaches that far).
    - ``product`` names the product as the file itself does ("MOD04_L2", "GLM-L2-LCFA");
      ``media_type`` is the file's IANA media type for its catalogue asset.
    - ``warnings``: what the catalogue should record of a file that was read but is not
      whole (a Level 1b file holding fewer scan lines than its header promises).
    - A product that is not a swath of tie points (a map-projected tile, lightning points)
      overrides ``read_outline``, and its footprint is made of that outline instead.
    - ``item_properties``: what else its catalogue item should carry, under names with a
      ``nearline:`` prefix (a gridded product's grid and bands).

    Level-2 products (MODIS) hold geophysical fields, not AVHRR counts: their ``read``,
    ``read_telemetry`` and ``read_tie_latitudes`` raise GranuleError saying so.
    """

    reader: ClassVar[str]
    instrument: ClassVar[str] = "avhrr"
    media_type: ClassVar[str] = "application/octet-stream"
    product: str = "AVHRR-GAC-L1B"
    warnings: tuple[str, ...] = ()
    item_properties: Mapping[str, Any] = MappingProxyType({})
    edge_reach: float = float(TIE_COLUMNS[0] / (TIE_COLUMNS[1] - TIE_COLUMNS[0]))  # GAC: 0.5
    path: Path
    platform: str
    n_lines: int
    start_time: datetime  # UTC, of the first line
    end_time: datetime  # UTC, of the last line

    @abstractmethod
    def read_tie_latitudes(self) -> np.ndarray:
        """Tie-point latitudes of every line: what maps lines to latitude bands.

        Returns
        -------
        numpy.ndarray
            (n_lines, 51) float32 degrees.

        Raises
        ------
        GranuleError
            The bytes are not there, or the format has no AVHRR tie points.
        """

    @abstractmethod
    def read_telemetry(self) -> Telemetry:
        """Calibration telemetry of every line.

        Raises
        ------
        GranuleError
            The bytes are not there, or the format holds no AVHRR counts.
        """

    def read_tie_lonlat(self, step: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Tie-point longitudes and latitudes of every ``step``-th line and of the last line.

        The catalogue's footprint is made of them. The default reads whole blocks; a format
        that can read the two variables alone overrides it.

        Parameters
        ----------
        step
            Lines between samples, at least 1.

        Returns
        -------
        lon, lat : numpy.ndarray
            (number of sampled lines, 51) float32 degrees, lines ``0, step, 2 step, ...``
            and the last.
        """
        rows = tie_rows(self.n_lines, step)
        lon = np.empty((rows.size, TIE_COLUMNS.size), np.float32)
        lat = np.empty_like(lon)
        for start in range(0, self.n_lines, READ_LINES):
            stop = min(start + READ_LINES, self.n_lines)
            wanted = (rows >= start) & (rows < stop)
            block = self.read(start, stop)
            lon[wanted] = block.tie_lon[rows[wanted] - start]
            lat[wanted] = block.tie_lat[rows[wanted] - start]
        return lon, lat

    def read_tie_sun_zenith(self) -> np.ndarray:
        """Tie-point solar zenith angles of every line, (n_lines, 51) float32 degrees, as
        ``read`` gives them; formats that can read the variable alone override this (the
        default reads whole blocks, counts and all)."""
        out = np.empty((self.n_lines, TIE_COLUMNS.size), np.float32)
        for start in range(0, self.n_lines, READ_LINES):
            stop = min(start + READ_LINES, self.n_lines)
            out[start:stop] = self.read(start, stop).tie_sun_zenith
        return out

    @abstractmethod
    def read(self, start: int, stop: int) -> SwathBlock:
        """Lines ``[start, stop)``, each variable read in one request.

        Parameters
        ----------
        start, stop
            The lines, ``0 <= start < stop <= n_lines``.

        Returns
        -------
        SwathBlock
            Exactly those lines: counts, tie points and times.

        Raises
        ------
        GranuleError
            The bytes are not there (a truncated file); the message names the file.
        """

    def check_lines(self, start: int, stop: int) -> None:
        """Raise GranuleError naming the file unless ``0 <= start <= stop <= n_lines``: what
        ``read`` and ``read_into`` check first.

        Parameters
        ----------
        start, stop
            The lines asked for.
        """
        if not 0 <= start <= stop <= self.n_lines:
            raise GranuleError(
                f"granule {self.path}: lines {start}..{stop} asked of {self.n_lines}"
            )

    def read_into(self, start: int, stop: int, buffer: np.ndarray) -> int:
        """Lines ``[start, stop)`` packed into ``buffer`` in the wire layout.

        What an input data server sends; formats stored contiguously override this to read
        straight into the buffer.

        Parameters
        ----------
        start, stop
            The lines.
        buffer
            A uint8 buffer large enough for them.

        Returns
        -------
        int
            Bytes of ``buffer`` used.
        """
        return pack_block(self.read(start, stop), buffer)

    def prefetch(self, start: int, stop: int) -> None:  # noqa: B027 - a hint; may do nothing
        """Hint that lines ``[start, stop)`` will be read soon (read-ahead); may do nothing.

        Parameters
        ----------
        start, stop
            The lines.
        """

    def read_outline(self) -> list[np.ndarray] | None:
        """The footprint's outline, for a product that is not a swath of tie points; None
        (the default): the footprint is made of ``read_tie_lonlat``.

        Returns
        -------
        list of numpy.ndarray or None
            Polygons, each an (n, 2) array of (longitude, latitude) degrees, closed or not,
            in one longitude frame: a ring that crosses ±180 continues past it (179 to
            181) rather than jumping, and the footprint cuts it there.
        """
        return None

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release the file."""

    def __enter__(self) -> Granule:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FieldGranule(Granule):
    """A granule of geophysical fields or of a product without AVHRR scan lines (MODIS
    Level 2 and tiles, CF products): the compositing calls refuse it, saying what it is.
    Subclasses say it with :meth:`why_no_counts`."""

    def why_no_counts(self) -> str:
        """Why this granule cannot feed the AVHRR compositing chain (a clause)."""
        return f"a {self.product} product holds no AVHRR counts to composite"

    def _no_counts(self) -> GranuleError:
        return GranuleError(f"granule {self.path}: {self.why_no_counts()}")

    def read_tie_latitudes(self) -> np.ndarray:
        raise self._no_counts()

    def read_telemetry(self) -> Telemetry:
        raise self._no_counts()

    def read(self, start: int, stop: int) -> SwathBlock:
        raise self._no_counts()


class Reader(ABC):
    """A granule format, found by sniffing."""

    name: ClassVar[str]
    supports_streams: ClassVar[bool] = False  # can it read a file object by ranged reads?

    @classmethod
    @abstractmethod
    def can_open(cls, path: Path) -> bool:
        """Whether ``path`` looks like this format, by its bytes, not its name.

        Must be cheap (a few bytes read) and never raise for a file of another format.

        Parameters
        ----------
        path
            Any file.
        """

    @abstractmethod
    def open(self, path: Path) -> Granule:
        """Open a granule of this format.

        Parameters
        ----------
        path
            A file ``can_open`` accepted.

        Returns
        -------
        Granule
            Open; close it, or use it in a ``with`` block.

        Raises
        ------
        GranuleError
            The file is truncated or corrupt; the message names it.
        """

    @classmethod
    def why_not(cls, path: Path) -> str:
        """Why ``can_open`` refused ``path``: what this reader looked for and did not find, as
        a short phrase ("no CoreMetadata.0 naming a Level-2 swath product"). Called only to
        explain a file no reader took, so it may read more than ``can_open`` does; it never
        raises.

        Parameters
        ----------
        path
            A file ``can_open`` refused.
        """
        return f"not a {cls.name} file"

    @classmethod
    def can_open_head(cls, head: bytes) -> bool:
        """Whether a file whose first bytes are ``head`` (at least 8) looks like this format,
        for a reader that ``supports_streams``; never raises.

        Parameters
        ----------
        head
            The file's first bytes.
        """
        return False

    def open_stream(self, stream: BinaryIO, *, name: str) -> Granule:
        """Open a granule of this format from a seekable file object (an object store's
        ranged reader), reading only what is asked; for a reader that ``supports_streams``.

        Parameters
        ----------
        stream
            Seekable, binary, positioned anywhere.
        name
            The granule's name, for messages.
        """
        raise NotImplementedError(f"the {self.name} reader cannot read from a stream")

"""The contract between burst's I/O servers and the formats they write.

A :class:`Sink` names a format; :meth:`Sink.create` starts one output file and returns a
:class:`SinkFile`, into which the I/O server defines variables and writes blocks of them
(hyperslabs) in any order, possibly before all blocks have arrived (when a full queue is
drained early). The server calls :meth:`SinkFile.close` once every block is written, then
fsyncs the result and renames it into place: a sink never chooses the final name and never
needs to be atomic itself.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from nearline.errors import BurstError


@dataclass(frozen=True)
class VariableSpec:
    """What a sink needs to define a variable before any block of it is written.

    ``shape`` is the global shape (the whole variable); ``dims`` has one name per axis;
    ``attrs`` are the user's attributes (``units``, ``long_name``...), values str/int/float.
    ``encoding`` holds storage hints a format may honour and others ignore: ``chunksizes``
    (one per axis), ``compression`` ("zlib"), ``complevel`` and ``shuffle``.
    """

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    dims: tuple[str, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    encoding: Mapping[str, Any] = field(default_factory=dict)


class SinkFile(ABC):
    """One output file being written. Implementations keep these true:

    - ``define`` is called once per variable, before any ``write`` of it; variables are
      defined in the order the model first wrote them.
    - ``write`` stores ``data`` at ``start`` (one offset per axis) of the variable; blocks of
      one variable never overlap, and together they cover it by the time ``close`` is called.
    - ``close`` leaves the file complete on disk (no fsync needed: the server does that).
    - ``abort`` releases everything after a failure; the server deletes the path afterwards.
    - ``data`` has the variable's dtype in native byte order.
    - One SinkFile is used by one thread at a time, but different SinkFiles of one process may
      be written from several threads at once (one writer thread per I/O server): a sink whose
      library is not thread-safe must serialise its own calls.
    """

    @abstractmethod
    def define(self, spec: VariableSpec) -> None:
        """Declare a variable of the file."""

    @abstractmethod
    def write(self, name: str, data: np.ndarray, *, start: tuple[int, ...]) -> None:
        """Write one block of variable ``name`` at offset ``start``."""

    @abstractmethod
    def close(self) -> None:
        """Finish the file."""

    def set_attributes(self, attrs: Mapping[str, Any]) -> None:
        """Attach file-wide attributes (title, provenance); formats without them refuse."""
        raise BurstError(f"the {type(self).__name__} format keeps no file-wide attributes")

    def abort(self) -> None:
        """Release resources after a failure; by default the same as :meth:`close`."""
        with contextlib.suppress(Exception):
            self.close()


class Sink(ABC):
    """A format the I/O servers can write. Implementations set ``name`` and ``extension``.

    ``is_directory`` is True for formats stored as a folder (Zarr); the server then fsyncs
    every file below the path and renames the folder.
    """

    name: ClassVar[str]
    extension: ClassVar[str]
    is_directory: ClassVar[bool] = False

    @abstractmethod
    def create(self, path: Path, *, step: int) -> SinkFile:
        """Start a new file at ``path`` (a temporary name chosen by the server)."""

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

    Parameters
    ----------
    name
        The variable's name.
    dtype
        Its dtype, native byte order.
    shape
        The global shape (the whole variable, not one block).
    dims
        One dimension name per axis.
    attrs
        The user's attributes (``units``, ``long_name``...), values str, int or float.
    encoding
        Storage hints a format may honour and others ignore: ``chunksizes`` (one per
        axis), ``compression`` (``"zlib"``), ``complevel`` and ``shuffle``.
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
        """Declare a variable of the file.

        Parameters
        ----------
        spec
            Its name, dtype, global shape, dimensions, attributes and storage hints.
        """

    @abstractmethod
    def write(self, name: str, data: np.ndarray, *, start: tuple[int, ...]) -> None:
        """Write one block of variable ``name`` at offset ``start``.

        Parameters
        ----------
        name
            A variable already defined.
        data
            The block, of the variable's dtype in native byte order.
        start
            The block's offset in the variable, one per axis.
        """

    @abstractmethod
    def close(self) -> None:
        """Finish the file: complete on disk once this returns (the server fsyncs it)."""

    def set_attributes(self, attrs: Mapping[str, Any]) -> None:
        """Attach file-wide attributes (title, provenance).

        Parameters
        ----------
        attrs
            Names and str, int or float values.

        Raises
        ------
        BurstError
            By default: the format keeps no file-wide attributes.
        """
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
        """Start a new file at ``path``.

        Parameters
        ----------
        path
            A temporary name chosen by the server, in the file's final folder; the server
            renames it once the file is complete.
        step
            The time step the file holds.

        Returns
        -------
        SinkFile
            The open file.
        """

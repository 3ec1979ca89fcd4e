"""A user's own write routine as a sink: the Fortran "procedure pointer" of AsyncIO.

Blocks can arrive before a variable is whole, and the I/O server's memory is bounded, so
each variable is staged in a ``.npy`` memory map in a hidden folder next to the target. When
the file closes, the callable gets ``fn(path, variables)`` (name -> read-only array, in define
order), plus ``attrs=`` (name -> attributes) if it accepts that keyword; the staging folder is
removed afterwards. The callable may carry ``extension`` and ``is_directory`` attributes.

A callable that consumes the data in place (an in-situ analysis, a plot, a socket) may create
nothing at ``path``: the file is then not published, and its set's completion marker lists it
as consumed by the callable instead of as a member.
"""

from __future__ import annotations

import inspect
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from nearline.burst._base import Sink, SinkFile, VariableSpec
from nearline.errors import BurstError, ConfigError, LayoutError
from nearline.layout import check_ext


def _accepts_attrs(fn: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # some builtins and C callables have no signature
        return False
    return any(
        p.kind is p.VAR_KEYWORD
        or (p.name == "attrs" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
        for p in parameters
    )


def _describe(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    module = getattr(fn, "__module__", None)
    return f"{module}.{name}" if module else name


class CallableSink(Sink):
    """Wraps ``fn(path, variables[, attrs=...])`` that writes one whole file at ``path``, or
    consumes the variables and creates nothing."""

    name = "callable"
    extension = "dat"

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        try:  # checked now, not at the first file a run closes
            self.extension = check_ext(getattr(fn, "extension", "dat"))  # type: ignore[misc]
        except LayoutError as error:
            raise ConfigError(f"callable sink {_describe(fn)}: {error}") from None
        self.is_directory = bool(getattr(fn, "is_directory", False))  # type: ignore[misc]
        self.accepts_attrs = _accepts_attrs(fn)

    def create(self, path: Path, *, step: int) -> SinkFile:
        return _StagedFile(self, path)


def staging_path(path: Path) -> Path:
    """The hidden folder next to ``path`` where its variables wait for the callable."""
    return path.with_name(f".{path.name.lstrip('.')}.staging")


class _StagedFile(SinkFile):
    def __init__(self, sink: CallableSink, path: Path) -> None:
        self._sink = sink
        self._path = path
        self._staging = staging_path(path)
        shutil.rmtree(self._staging, ignore_errors=True)  # left by a crashed run
        self._staging.mkdir()
        self._arrays: dict[str, np.ndarray] = {}
        self._attrs: dict[str, dict[str, Any]] = {}
        self.consumed_by: str | None = None  # set by close if the callable made no file

    def define(self, spec: VariableSpec) -> None:
        shape, dtype = tuple(spec.shape), np.dtype(spec.dtype)
        if 0 in shape:  # nothing to map: numpy cannot memory-map an empty region
            array = np.empty(shape, dtype=dtype)
        else:
            staged = self._staging / f"{len(self._arrays):05d}-{spec.name}.npy"
            array = np.lib.format.open_memmap(staged, mode="w+", dtype=dtype, shape=shape)
        self._arrays[spec.name] = array
        self._attrs[spec.name] = dict(spec.attrs)

    def write(self, name: str, data: np.ndarray, *, start: tuple[int, ...]) -> None:
        slices = tuple(slice(s, s + n) for s, n in zip(start, data.shape, strict=True))
        self._arrays[name][slices] = data

    def close(self) -> None:
        fn, path = self._sink.fn, self._path
        variables = {}
        for name, array in self._arrays.items():
            view = array.view(np.ndarray)
            view.flags.writeable = False
            variables[name] = view
        try:
            if self._sink.accepts_attrs:
                fn(path, variables, attrs=self._attrs)
            else:
                fn(path, variables)
        except Exception as error:
            raise BurstError(
                f"the sink callable {_describe(fn)} failed writing {path}: "
                f"{type(error).__name__}: {error}"
            ) from error
        finally:
            del variables
            self._discard()
        if not path.exists():  # it used the data in place: the writer publishes nothing
            self.consumed_by = _describe(fn)

    def abort(self) -> None:
        self._discard()

    def _discard(self) -> None:
        self._arrays.clear()  # drops the maps; the callable may still hold its views
        shutil.rmtree(self._staging, ignore_errors=True)

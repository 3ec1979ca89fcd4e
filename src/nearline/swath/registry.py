"""Finding the reader for a granule by sniffing it; readers come from entry points."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

from nearline.errors import GranuleError
from nearline.swath.base import Granule, Reader

GROUP = "nearline.readers"


@functools.lru_cache(maxsize=1)
def _reader_points() -> tuple[EntryPoint, ...]:
    """The ``nearline.readers`` entry points, scanned once a process (a scan costs ~12 ms,
    more than opening a small granule), as xarray lists its engines; loaded only when used."""
    return tuple(sorted(entry_points(group=GROUP), key=lambda point: point.name))


def available_readers() -> list[str]:
    """Names of the installed readers (entry points of the ``nearline.readers`` group)."""
    return [point.name for point in _reader_points()]


def get_reader(name: str) -> type[Reader]:
    """The reader class called ``name``, imported only now."""
    for point in _reader_points():
        if point.name == name:
            return point.load()
    raise GranuleError(f"no granule reader called {name!r}; installed: {available_readers()}")


def open_granule(path: str | Path) -> Granule:
    """Open ``path`` with the first reader that recognises its bytes."""
    path = Path(path)
    if not path.is_file():
        raise GranuleError(f"granule {path} does not exist or is not a file")
    # nearline's own format first: its sniff is cheapest and it is the common case
    for name in sorted(available_readers(), key=lambda n: n != "nearline-avhrr"):
        reader = get_reader(name)
        if reader.can_open(path):
            return reader().open(path)
    raise GranuleError(
        f"granule {path}: no reader recognises this file (tried {', '.join(available_readers())})"
    )


def granule_paths(inputs: Iterable[str | Path], *, recursive: bool = False) -> list[Path]:
    """Files as given; a folder stands for the files directly inside it (``recursive``: every
    file below it), sorted, hidden ones (such as a half-written ``.name.partial``) left out."""
    inputs = [Path(name) for name in inputs]
    paths: list[Path] = []
    for path in inputs:
        if path.is_dir():
            found = path.rglob("*") if recursive else path.iterdir()
            paths += sorted(p for p in found if p.is_file() and not _hidden(p.relative_to(path)))
        elif path.exists():
            paths.append(path)
        else:
            raise GranuleError(f"input {path} does not exist")
    if not paths:
        raise GranuleError(f"no input files in {', '.join(map(str, inputs))}")
    return paths


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)

"""Finding the reader for a granule by sniffing it; readers are nearline's own, or plugged in
through the ``nearline.readers`` entry points (read once a process, loaded only when used)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import BinaryIO

from nearline.errors import GranuleError, NotThisFormat
from nearline.plugins import Registry
from nearline.swath._base import Granule, Reader
from nearline.swath._companions import companion_kind

log = logging.getLogger(__name__)
READERS: Registry[type[Reader]] = Registry(
    "granule reader",
    group="nearline.readers",
    builtins={
        "nearline-avhrr": "nearline.swath.netcdf_granule:NetCDFGranuleReader",
        "avhrr-gac": "nearline.swath._gac:GACReader",
        "modis-l2": "nearline.swath._modis:ModisL2Reader",
        "modis-grid": "nearline.swath._modis_grid:ModisGridReader",
        "avhrr-l1c": "nearline.swath._fdr:FDRReader",
        "cf-netcdf": "nearline.swath._cf:CFReader",
        "nearline-composite": "nearline.swath._gridded:CompositeReader",
        "nearline-gridded": "nearline.swath._gridded:GriddedReader",
    },
    error=GranuleError,
)
FIRST = "nearline-avhrr"  # nearline's own format: its sniff is cheapest and it is the common case
LAST = "cf-netcdf"  # a convention, not a product: a reader of a particular product goes first


def _trial_order(names: list[str]) -> list[str]:
    """The readers in the order they are tried: nearline's own first, the CF reader last."""
    return sorted(names, key=lambda name: (name != FIRST, name == LAST, name))


def available_readers() -> list[str]:
    """Names of the installed readers: nearline's own and the plug-ins, sorted."""
    return sorted(READERS.names())


def get_reader(name: str) -> type[Reader]:
    """The reader class called ``name``, imported only now."""
    return READERS.get(name)


def open_granule(path: str | Path) -> Granule:
    """Open ``path`` with the first reader that recognises its bytes."""
    path = Path(path)
    if not path.is_file():
        raise GranuleError(f"granule {path} does not exist or is not a file")
    for name in _trial_order(available_readers()):
        reader = get_reader(name)
        if reader.can_open(path):
            return _opened(name, partial(reader().open, path), path)
    raise GranuleError(f"granule {path}: no reader recognises this file; {_refusals(path)}")


def _opened(name: str, opening: Callable[[], Granule], path: Path | str) -> Granule:
    """``opening()``, with any error but a GranuleError (a reader's own bug, or a library's
    surprise at a file it half-knows) turned into one naming the file and the reader; the
    traceback goes to the log."""
    try:
        return opening()
    except GranuleError:
        raise
    except Exception as error:
        log.debug("the %s reader failed on %s", name, path, exc_info=True)
        raise GranuleError(
            f"granule {path}: the {name} reader failed on it ({type(error).__name__}: {error}); "
            "the file may be damaged, or this is a bug in the reader: please report it"
        ) from None


def _refusals(path: Path) -> str:
    """What each reader found missing, in one line: ``tried avhrr-gac (...), modis-l2 (...)``."""
    reasons = []
    for name in available_readers():
        try:
            why = get_reader(name).why_not(path)
        except Exception as error:  # a plug-in's explanation must not hide the refusal
            why = f"could not say why ({type(error).__name__})"
        reasons.append(f"{name} ({' '.join(why.split())})")
    return "tried " + ", ".join(reasons)


def open_granule_stream(stream: BinaryIO, *, name: str) -> Granule | None:
    """Open the granule in a seekable file object with the first reader that recognises its
    first bytes and reads by ranged reads; None if none does (the caller reads a copy)."""
    head = stream.read(8)
    stream.seek(0)
    for reader_name in _trial_order(available_readers()):
        reader = get_reader(reader_name)
        if reader.supports_streams and reader.can_open_head(head):
            try:
                return _opened(reader_name, partial(reader().open_stream, stream, name=name), name)
            except NotThisFormat:  # its first bytes fooled the sniff: read a copy instead
                stream.seek(0)
    return None


def granule_paths(
    inputs: Iterable[str | Path], *, recursive: bool = False, companions: bool = False
) -> list[Path]:
    """Files as given; a folder stands for the files directly inside it (``recursive``: every
    file below it), sorted, hidden ones (such as a half-written ``.name.partial``) left out,
    and the text files beside its granules (READMEs, element sets: :func:`companion_kind`)
    too unless ``companions`` (the caller sorts them out and says so)."""
    inputs = [Path(name) for name in inputs]
    paths: list[Path] = []
    for path in inputs:
        if path.is_dir():
            found = path.rglob("*") if recursive else path.iterdir()
            paths += sorted(
                p
                for p in found
                if p.is_file()
                and not _hidden(p.relative_to(path))
                and (companions or companion_kind(p) is None)
            )
        elif path.exists():
            paths.append(path)
        else:
            raise GranuleError(f"input {path} does not exist")
    if not paths:
        raise GranuleError(f"no input files in {', '.join(map(str, inputs))}")
    return paths


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)

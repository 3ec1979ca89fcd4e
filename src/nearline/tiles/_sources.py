"""A composite as the tiles read it: its grid, its bands in physical values (CF packing
undone, fill values NaN), and the NDVI index from its red and near-infrared bands, found by
the wavelengths their ``long_name`` gives (``channel 1 (0.63 um) reflectance``).

It is read through the coverage's reader (``nearline.coverage``: h5py on a file object, only
the chunks a window needs), so a composite is drawn wherever the coverage reads one: a file
on the service's disks, or an object in a bucket by ranged reads (:class:`Source`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from hashlib import sha256
from pathlib import Path
from typing import BinaryIO

import numpy as np

from nearline.coverage import BandInfo, Layer, read_attributes, read_bands, read_window
from nearline.errors import NearlineError, NotFound
from nearline.grid import Grid, get_grid
from nearline.tiles._styles import NDVI_INDEX

PRODUCT = "nearline-composite"
WAVELENGTH = re.compile(r"\(([0-9.]+)\s*um\)")
RED = (0.6, 0.7)  # micrometres: AVHRR channel 1 is 0.58-0.68, centred on 0.63
NEAR_INFRARED = (0.7, 1.1)  # channel 2 is 0.725-1.0, centred on 0.86
UNDATED = datetime(1970, 1, 1, tzinfo=UTC)  # a layer's period, which drawing never reads


class NotAComposite(NotFound):
    """An item's file the tiles cannot draw: not a gridded composite nearline wrote."""

    code = "not-found"


@dataclass(frozen=True)
class Source:
    """Where a composite's bytes are and who it is.

    Parameters
    ----------
    name
        What messages call it (the file's or the item's name).
    identity
        ``NAME-STATE`` (see :func:`file_identity`): the same for the same bytes, another
        when they change, so nothing made from old bytes is served for new ones.
    open
        Opens the bytes for reading (a new binary file object each call).
    """

    name: str
    identity: str
    open: Callable[[], BinaryIO]


def local_source(path: Path) -> Source:
    """A composite file on this machine's disks as a :class:`Source`.

    Raises
    ------
    NotAComposite
        The file is not there.
    """
    try:
        identity = file_identity(path)
    except OSError:
        raise NotAComposite(f"{Path(path).name} cannot be read as a composite") from None
    return Source(Path(path).name, identity, lambda: open(path, "rb"))


def object_source(name: str, location: str, checksum: str,
                  opener: Callable[[], BinaryIO]) -> Source:  # fmt: skip
    """An object in a bucket as a :class:`Source`, its identity made of its URL and the
    checksum the catalogue keeps for it (a new object under the same URL has another).

    Parameters
    ----------
    name
        The item's name.
    location
        The object's URL.
    checksum
        Its SHA-256 (or any text that changes with its bytes).
    opener
        Opens it for ranged reads.
    """
    url = sha256(location.encode()).hexdigest()[:16]
    return Source(name, f"{url}-{sha256(checksum.encode()).hexdigest()[:16]}", opener)


@dataclass(frozen=True)
class Composite:
    """One composite: where it is, what it holds and who it is.

    Parameters
    ----------
    source
        Its bytes and identity.
    grid
        Its grid (the ``grid`` attribute, by ``nearline.grid.get_grid``'s name).
    bands
        Its bands (the variables on the grid), in file order, as the coverage reads them.
    red, near_infrared
        The bands the NDVI index is made of (None: the file has no such pair).
    """

    source: Source
    grid: Grid
    bands: dict[str, BandInfo]
    red: str | None
    near_infrared: str | None

    @property
    def identity(self) -> str:
        return self.source.identity

    @classmethod
    def open(cls, source: Source | Path) -> Composite:
        """Read a composite's description (not its data).

        Parameters
        ----------
        source
            A composite nearline wrote (product attribute ``nearline-composite``), or its
            path.

        Raises
        ------
        NotAComposite
            Missing, unreadable, or another kind of file.
        """
        if not isinstance(source, Source):
            source = local_source(source)
        layer = Layer(source.name, UNDATED, UNDATED, source.open)
        try:
            attributes = read_attributes(layer)
            if attributes.get("product") != PRODUCT:
                raise NotAComposite(f"{source.name} is not a nearline composite")
            grid = get_grid(str(attributes.get("grid")))
            bands = read_bands(layer, grid)
        except (OSError, NearlineError) as error:
            if isinstance(error, NotAComposite):
                raise
            raise NotAComposite(f"{source.name} cannot be read as a composite") from None
        wavelengths = {name: _wavelength(info.long_name) for name, info in bands.items()}
        return cls(
            source=source,
            grid=grid,
            bands=bands,
            red=_within(wavelengths, RED),
            near_infrared=_within(wavelengths, NEAR_INFRARED),
        )

    @property
    def has_index(self) -> bool:
        """Whether the NDVI index can be made: the file has a red and a near-infrared band."""
        return self.red is not None and self.near_infrared is not None

    def read(self, band: str, rows: slice, cols: slice) -> np.ndarray:
        """A window of ``band`` (or the NDVI index) in physical values, float32, NaN where
        the file holds its fill value; only the chunks the window touches are read.

        Parameters
        ----------
        band
            One of ``bands``, or ``ndvi-index``.
        rows, cols
            The window, as slices of the grid's rows and columns.
        """
        names = [band] if band != NDVI_INDEX else [self.red, self.near_infrared]
        layer = Layer(self.source.name, UNDATED, UNDATED, self.source.open)
        stored, _ = read_window(layer, names, rows, cols, self.grid)
        values = {name: self.bands[name].physical(stored[name]).astype(np.float32)
                  for name in names}  # fmt: skip
        if band != NDVI_INDEX:
            return values[band]
        return ndvi(values[self.red], values[self.near_infrared])


def file_identity(path: Path) -> str:
    """``NAME-STATE``: a digest of ``path``'s resolved name, then one of its size, change
    time and inode (no byte is read). What was made of an earlier state of the same file
    shares the NAME part (:func:`earlier_states`).

    Raises
    ------
    OSError
        The file is not there.
    """
    status = os.stat(path)
    name = sha256(str(Path(path).resolve()).encode()).hexdigest()[:16]
    state = f"{status.st_size}|{status.st_ctime_ns}|{status.st_ino}"
    return f"{name}-{sha256(state.encode()).hexdigest()[:16]}"


def earlier_states(folder: Path, identity: str, suffix: str = "") -> list[Path]:
    """What ``folder`` holds of the same file in another state than ``identity``'s (entries
    named ``NAME-STATE`` + ``suffix``): a composite written again leaves them stale."""
    name = identity.split("-", 1)[0]
    return [path for path in folder.glob(f"{name}-*{suffix}") if path.name != f"{identity}{suffix}"]


def ndvi(red: np.ndarray, nir: np.ndarray) -> np.ndarray:
    """(NIR - red) / (NIR + red), NaN where either is missing or both are 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        index = (nir - red) / (nir + red)
    return np.where(np.isfinite(index), index, np.nan).astype(np.float32)


def _wavelength(long_name: str) -> float | None:
    found = WAVELENGTH.search(str(long_name))
    return float(found.group(1)) if found else None


def _within(wavelengths: dict[str, float | None], bounds: tuple[float, float]) -> str | None:
    """The first band whose wavelength lies within ``bounds`` (micrometres)."""
    for band, wavelength in wavelengths.items():
        if wavelength is not None and bounds[0] <= wavelength < bounds[1]:
            return band
    return None

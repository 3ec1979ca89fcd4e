"""A composite file as the tiles read it: its grid, its bands in physical values (CF packing
undone, fill values NaN), and the NDVI index from its red and near-infrared bands, found by
the wavelengths their ``long_name`` gives (``channel 1 (0.63 um) reflectance``)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path

import numpy as np

from nearline.errors import NotFound
from nearline.grid import Grid, get_grid
from nearline.hdf_lock import HDF_LOCK
from nearline.tiles._styles import NDVI_INDEX

PRODUCT = "nearline-composite"
WAVELENGTH = re.compile(r"\(([0-9.]+)\s*um\)")
RED = (0.6, 0.7)  # micrometres: AVHRR channel 1 is 0.58-0.68, centred on 0.63
NEAR_INFRARED = (0.7, 1.1)  # channel 2 is 0.725-1.0, centred on 0.86


class NotAComposite(NotFound):
    """An item's file the tiles cannot draw: not a gridded composite nearline wrote."""

    code = "not-found"


@dataclass(frozen=True)
class Composite:
    """One composite file: where it is, what it holds and who it is.

    Parameters
    ----------
    path
        The netCDF-4 file.
    grid
        Its grid (the ``grid`` attribute, by ``nearline.grid.get_grid``'s name).
    bands
        Its 2-D band variables, in file order.
    red, near_infrared
        The bands the NDVI index is made of (None: the file has no such pair).
    identity
        A digest of the file's path, size, change time and inode: a composite written again
        (re-ingested, or replaced in place) has another, so nothing made from the old one is
        served for it.
    """

    path: Path
    grid: Grid
    bands: tuple[str, ...]
    red: str | None
    near_infrared: str | None
    identity: str

    @classmethod
    def open(cls, path: Path) -> Composite:
        """Read a composite's description (not its data).

        Parameters
        ----------
        path
            A composite nearline wrote (product attribute ``nearline-composite``).

        Raises
        ------
        NotAComposite
            Missing, unreadable, or another kind of file.
        """
        import netCDF4

        try:
            identity = file_identity(path)
            with HDF_LOCK, netCDF4.Dataset(path) as dataset:
                if getattr(dataset, "product", None) != PRODUCT:
                    raise NotAComposite(f"{path.name} is not a nearline composite")
                grid = get_grid(str(dataset.grid))
                bands = tuple(
                    name
                    for name, variable in dataset.variables.items()
                    if variable.dimensions == ("y", "x")
                )
                wavelengths = {
                    name: _wavelength(getattr(dataset.variables[name], "long_name", ""))
                    for name in bands
                }
        except OSError:
            raise NotAComposite(f"{path.name} cannot be read as a composite") from None
        return cls(
            path=path,
            grid=grid,
            bands=bands,
            red=_within(wavelengths, RED),
            near_infrared=_within(wavelengths, NEAR_INFRARED),
            identity=identity,
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
        import netCDF4

        with HDF_LOCK, netCDF4.Dataset(self.path) as dataset:
            if band != NDVI_INDEX:
                return _physical(dataset.variables[band][rows, cols])
            red = _physical(dataset.variables[self.red][rows, cols])
            nir = _physical(dataset.variables[self.near_infrared][rows, cols])
        return ndvi(red, nir)


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


def _physical(values: np.ma.MaskedArray) -> np.ndarray:
    return np.ma.filled(np.ma.asarray(values).astype(np.float32), np.nan)


def _wavelength(long_name: str) -> float | None:
    found = WAVELENGTH.search(str(long_name))
    return float(found.group(1)) if found else None


def _within(wavelengths: dict[str, float | None], bounds: tuple[float, float]) -> str | None:
    """The first band whose wavelength lies within ``bounds`` (micrometres)."""
    for band, wavelength in wavelengths.items():
        if wavelength is not None and bounds[0] <= wavelength < bounds[1]:
            return band
    return None

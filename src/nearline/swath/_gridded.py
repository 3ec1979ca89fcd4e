"""nearline's composites for the catalogue: a gridded product, catalogued as a granule is.

A composite (``nearline composite``; product attribute ``nearline-composite``) is one CF
netCDF-4 file of 2-D bands on a named grid (``nearline.grid.get_grid`` knows the name the
file's ``grid`` attribute gives). Its item says what a coverage service needs to find it
without opening it: ``nearline:grid`` (the grid's name) and ``nearline:bands`` (the band
variables, in file order), and what a data cube's description names of each band:
``nearline:units`` and ``nearline:long_names`` (band to its CF ``units`` and ``long_name``,
for the bands that carry them). Its time range is the composite's period, whole days: from the
start of ``time_coverage_start``'s day to the last second of ``time_coverage_end``'s. Its
footprint is the grid's extent, whether or not the day's orbits saw every cell: a coverage
query anywhere on the grid is answered (with fill values where nothing was seen).

Other gridded products are catalogued the same way (reader ``nearline-gridded``): a CF
netCDF-4 file whose ``grid`` attribute names one of nearline's grids and whose variables lie
on it, as the GEOS-5 reductions write theirs ((time, lat, lon) with one time, latitudes
south to north; docs/reductions.md). A band is a variable of the grid's shape, with only
dimensions of length one before its rows and columns: a composite's (y, x) bands and a
reduction's (time, lat, lon) ones alike, never a coordinate or its bounds.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nearline.errors import GranuleError, GridError
from nearline.swath._base import FieldGranule, Granule, Reader
from nearline.swath.netcdf_granule import hdf5_grid_attributes, hdf5_product

if TYPE_CHECKING:
    from nearline.grid import Grid

PRODUCT = "nearline-composite"
READER = "nearline-composite"
GRIDDED_READER = "nearline-gridded"
GRID_PROPERTY = "nearline:grid"
BANDS_PROPERTY = "nearline:bands"
UNITS_PROPERTY = "nearline:units"
LONG_NAMES_PROPERTY = "nearline:long_names"
DESCRIBED = ("units", "long_name")  # the CF attributes of a band its item carries


class CompositeGranule(FieldGranule):
    """An open gridded file: its period, its grid and its bands (it holds no counts)."""

    reader = READER
    media_type = "application/x-netcdf"
    product = PRODUCT
    n_lines = None  # type: ignore[assignment]  # a grid has no scan lines

    def __init__(self, path: Path) -> None:
        import netCDF4

        self.path = path
        try:
            with netCDF4.Dataset(path) as dataset:
                attrs = {name: dataset.getncattr(name) for name in dataset.ncattrs()}
                self.grid_name = str(attrs.get("grid", ""))
                grid = _grid_of(path, self.grid_name)
                bands = {
                    name: _described(variable)
                    for name, variable in dataset.variables.items()
                    if grid.holds(variable.shape)
                }
        except OSError as error:
            raise GranuleError(f"granule {path}: netCDF cannot read it ({error})") from None
        self.bands = tuple(bands)
        if attrs.get("product") != PRODUCT:
            self.reader = GRIDDED_READER
            self.product = str(attrs.get("product", GRIDDED_READER))
        self.platform = str(attrs.get("platform", ""))
        self.start_time = _day_edge(path, attrs, "time_coverage_start", end=False)
        self.end_time = _day_edge(path, attrs, "time_coverage_end", end=True)
        if not self.bands:
            raise GranuleError(
                f"granule {path}: no variable of its grid's {grid.height} x {grid.width} cells"
            )
        self.item_properties = {
            GRID_PROPERTY: self.grid_name,
            BANDS_PROPERTY: list(self.bands),
            UNITS_PROPERTY: _per_band(bands, "units"),
            LONG_NAMES_PROPERTY: _per_band(bands, "long_name"),
        }

    def read_outline(self) -> list[np.ndarray]:
        """The grid's extent in longitude and latitude, one ring."""
        from nearline.grid import Kind

        grid = _grid_of(self.path, self.grid_name)
        south, north = grid.latitude_range((0, grid.height))
        west, _, east, _ = grid.extent
        if grid.kind is Kind.IGH or grid.wraps:
            west, east = -180.0, 180.0
        return [np.array([(west, south), (east, south), (east, north), (west, north)])]

    def why_no_counts(self) -> str:
        return f"a {PRODUCT} file is a gridded product, not AVHRR counts to composite"


def _grid_of(path: Path, name: str) -> Grid:
    from nearline.grid import get_grid

    try:
        return get_grid(name)
    except GridError as error:
        raise GranuleError(f"granule {path}: its grid attribute: {error}") from None


def _described(variable: Any) -> dict[str, str]:
    """The attributes of :data:`DESCRIBED` a band variable carries."""
    return {key: str(variable.getncattr(key)) for key in DESCRIBED if key in variable.ncattrs()}


def _per_band(bands: dict[str, dict[str, str]], attribute: str) -> dict[str, str]:
    """Each band's ``attribute``, for the bands that have it."""
    return {name: attrs[attribute] for name, attrs in bands.items() if attribute in attrs}


def _day_edge(path: Path, attrs: dict[str, Any], name: str, *, end: bool) -> datetime:
    """The first (or, with ``end``, the last) second of the day an ISO date attribute names;
    a full date and time is taken as it is."""
    text = str(attrs.get(name, ""))
    try:
        if "T" in text:
            moment = datetime.fromisoformat(text)
            return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment
        day = datetime.combine(datetime.fromisoformat(text).date(), time(), UTC)
    except ValueError:
        raise GranuleError(
            f"granule {path}: its {name} attribute is {text!r}, not an ISO 8601 date"
        ) from None
    return day + timedelta(days=1, seconds=-1) if end else day


class CompositeReader(Reader):
    """nearline's composites, recognised by their ``product`` attribute."""

    name = READER

    @classmethod
    def can_open(cls, path: Path) -> bool:
        return hdf5_product(path)[0] == PRODUCT

    @classmethod
    def why_not(cls, path: Path) -> str:
        value, missing = hdf5_product(path)
        return missing or f"its 'product' attribute is {value!r}, not {PRODUCT!r}"

    def open(self, path: Path) -> Granule:
        return CompositeGranule(Path(path))


class GriddedReader(Reader):
    """Other gridded products: netCDF-4 whose ``grid`` attribute names one of nearline's
    grids (the GEOS-5 reductions' daily files), with a variable on it."""

    name = GRIDDED_READER

    @classmethod
    def can_open(cls, path: Path) -> bool:
        return not cls.why_not(path)

    @classmethod
    def why_not(cls, path: Path) -> str:
        from nearline.grid import get_grid

        product, grid, shapes, missing = hdf5_grid_attributes(path)
        if missing:
            return missing
        if product == PRODUCT:
            return f"a {PRODUCT} file, which the {READER} reader reads"
        if grid is None:
            return "netCDF-4/HDF5 without a global attribute 'grid' naming one of nearline's grids"
        try:
            found = get_grid(grid)
        except GridError:
            return f"its 'grid' attribute {grid!r} names none of nearline's grids"
        if not any(found.holds(shape) for shape in shapes):
            return f"no variable of its grid {grid}'s {found.height} x {found.width} cells"
        return ""

    def open(self, path: Path) -> Granule:
        return CompositeGranule(Path(path))

"""Gridded collections served by a live server, for the catalogue's and the coverage
services' tests: the Pathfinder composite of a synthetic day (made by nearline's chain once a
session, composites.py) and two later days made from it, their NDVI moved so that each day
differs, catalogued by `nearline ingest` for everyone, and the first day again as alice's
own collection."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import netCDF4
import numpy as np
import pyproj
import pytest

from nearline.archive import ingest, open_catalogue
from nearline.coverage import LIMIT_SETTING

from ..live_service import LiveService, database_of, nearline
from .composites import COMPOSITE, made_composite
from .conftest import serving

COLLECTION = "composite-8km"
LIMIT = 20_000_000  # values a request may read on the test server (a global band: 10.8 M)
PRIVATE = "alice-composites"
DAYS = ("2012-12-12", "2012-12-13", "2012-12-14")
IGH_EXTENT = (-20016000.0, -8672000.0, 20016000.0, 8672000.0)  # the igh-8km grid's, metres
CELL = 8000.0
IGH = pyproj.Transformer.from_crs("EPSG:4326", "+proj=igh +R=6370997 +units=m", always_xy=True)
NDVI_STEP = 100  # stored NDVI units (0.01) each later day adds to every seen cell


def made_series(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The three days' composites, made once a session (a worker's)."""
    first = made_composite(tmp_path_factory)
    folder = tmp_path_factory.getbasetemp() / "composite-series"
    paths = [folder / COMPOSITE.replace(DAYS[0], day) for day in DAYS]
    if not folder.is_dir():
        partial = folder.with_suffix(".partial")
        partial.mkdir()
        for number, (day, path) in enumerate(zip(DAYS, paths, strict=True)):
            later_day(first, partial / path.name, day, NDVI_STEP * number)
        partial.rename(folder)
    return paths


def later_day(source: Path, path: Path, day: str, ndvi_step: int) -> None:
    """``source`` as the composite of ``day``, ``ndvi_step`` added to each seen NDVI."""
    shutil.copyfile(source, path)
    with netCDF4.Dataset(path, "r+") as dataset:
        dataset.setncatts({"time_coverage_start": day, "time_coverage_end": day})
        ndvi = dataset["ndvi"]
        ndvi.set_auto_maskandscale(False)
        stored = ndvi[...]
        seen = stored != ndvi.getncattr("_FillValue")
        ndvi[...] = np.where(seen, np.minimum(stored + ndvi_step, 10000), stored).astype(np.int16)


@pytest.fixture(scope="module")
def series(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return made_series(tmp_path_factory)


@pytest.fixture(scope="module")
def gridded(tmp_path_factory: pytest.TempPathFactory, series: list[Path]) -> Iterator[LiveService]:
    """A server whose catalogue holds the three days for everyone (by `nearline ingest`) and
    the first day in alice's own collection; one a test module that imports it."""

    def prepare(service: LiveService) -> None:
        nearline("ingest", *map(str, series), "--collection", COLLECTION, data=service.data)
        data = service.data
        with open_catalogue(database_of(data), data / "catalogue.db") as catalogue:
            ingest(catalogue, series[:1], collection=PRIVATE, owner="alice", workers=1)

    with pytest.MonkeyPatch.context() as patch:  # the server reads its limit when it starts
        patch.setenv(LIMIT_SETTING, str(LIMIT))
        with serving(tmp_path_factory.mktemp("gridded"), prepare) as service:
            yield service


def physical(path: Path, band: str) -> np.ndarray:
    """A band of a composite as numpy sees it: unpacked, NaN where the file has no value."""
    with netCDF4.Dataset(path) as dataset:
        return np.ma.filled(dataset[band][...].astype(np.float64), np.nan)


def seen_cell(path: Path) -> tuple[int, int]:
    """The middle one of the cells the day's orbits saw (NDVI there), as (row, column)."""
    seen = np.argwhere(np.isfinite(physical(path, "ndvi")))
    row, col = seen[len(seen) // 2]
    return int(row), int(col)


def cell_lonlat(row: int, col: int) -> tuple[float, float]:
    """A cell's centre in longitude and latitude, by PROJ's inverse of IGH (not nearline's)."""
    x = IGH_EXTENT[0] + (col + 0.5) * CELL
    y = IGH_EXTENT[3] - (row + 0.5) * CELL
    lon, lat = IGH.transform(x, y, direction="INVERSE")
    return float(lon), float(lat)


def cell_of(lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (row, column) of the cell holding each point, by PROJ's IGH (not nearline's)."""
    x, y = IGH.transform(lon, lat)
    col = np.floor((np.asarray(x) - IGH_EXTENT[0]) / CELL).astype(int)
    row = np.floor((IGH_EXTENT[3] - np.asarray(y)) / CELL).astype(int)
    return row, col

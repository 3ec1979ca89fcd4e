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
import pytest

from nearline.archive import ingest, open_catalogue

from ..live_service import LiveService, database_of, nearline
from .composites import COMPOSITE, made_composite
from .conftest import serving

COLLECTION = "composite-8km"
PRIVATE = "alice-composites"
DAYS = ("2012-12-12", "2012-12-13", "2012-12-14")
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

    with serving(tmp_path_factory.mktemp("gridded"), prepare) as service:
        yield service

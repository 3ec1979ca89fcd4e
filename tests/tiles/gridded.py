"""A live service holding gridded collections of composites, catalogued by ``ingest`` through
the composites' reader (items carrying ``nearline:grid`` and ``nearline:bands``, the day's
period and the file as their ``data`` asset). One public collection of two days (the
synthetic day's composite, and the day after: a copy whose NDVI is 0.8 wherever the first
saw anything) and alice's private collection of the first."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import netCDF4
import numpy as np

from nearline.archive import Collection, ingest, open_catalogue

from ..live_service import LiveService, database_of
from ..service.conftest import serving

PUBLIC = "composite-8km"
PRIVATE = "alices-composites"
DAY = datetime(2012, 12, 12, tzinfo=UTC)
NEXT_DAY_NDVI = 0.8


def next_day(composite: Path, folder: Path) -> Path:
    """The composite copied as the next day's, its NDVI set to 0.8 wherever it has one."""
    copy = folder / "composite-next-day.nc"
    shutil.copy(composite, copy)
    with netCDF4.Dataset(copy, "a") as dataset:
        dataset.time_coverage_start = dataset.time_coverage_end = "2012-12-13"
        ndvi = dataset["ndvi"]
        ndvi[:] = np.ma.where(np.ma.getmaskarray(ndvi[:]), np.ma.masked, NEXT_DAY_NDVI)
    return copy


def catalogue_composites(data: Path, first: Path, second: Path) -> None:
    with open_catalogue(database_of(data), data / "catalogue.db") as catalogue:
        catalogue.put_collection(Collection(id=PUBLIC, title="Pathfinder composites, 8 km"))
        catalogue.put_collection(Collection(id=PRIVATE, title="alice's", owner="alice"))
        ingest(catalogue, [first, second], collection=PUBLIC, workers=1)
        ingest(catalogue, [first], collection=PRIVATE, owner="alice", workers=1)


@contextmanager
def serving_composites(folder: Path, composite: Path) -> Iterator[LiveService]:
    """A live service on ``folder`` holding the two days and alice's collection."""
    second = next_day(composite, folder)
    with serving(folder, lambda s: catalogue_composites(s.data, composite, second)) as service:
        yield service

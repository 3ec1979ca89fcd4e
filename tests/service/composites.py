"""A composite and its orbits served by a live server, for the tests of reading part of an
asset (test_ranges.py, test_references.py): the orbits synthesized and the composite made by
nearline's Pathfinder chain once a test session, the orbits ingested for everyone and the
composite catalogued as alice's, as an order's output is."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import nearline.composite as composite
from nearline.archive import Asset, Collection, Item, open_catalogue
from nearline.swath import synthesize_day

from ..live_service import LiveService, database_of, nearline
from .conftest import serving

COMPOSITE = "pathfinder-igh-8km-day-2012-12-12.nc"
DAY = datetime(2012, 12, 12, tzinfo=UTC)


def made_day(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two short NOAA-19 orbits as nearline's netCDF granules (10 MB each), made once a
    session (a worker's)."""
    folder = tmp_path_factory.getbasetemp() / "orbits-2012-12-12"
    if not folder.is_dir():
        synthesize_day("2012-12-12", 2, folder.with_suffix(".partial"), lines_per_orbit=2000)
        folder.with_suffix(".partial").rename(folder)
    return sorted(folder.glob("*.nc"))


def made_composite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The orbits composited to the 8 km Goode world, as the pathfinder algorithm writes
    them (4 MB), made once a session."""
    out = tmp_path_factory.getbasetemp() / "composite" / COMPOSITE
    if not out.is_file():
        composite.run(made_day(tmp_path_factory), out=out, grid="igh-8km", workers=1)
    return out


def catalogue_netcdf(
    data: Path,
    path: Path,
    *,
    collection: str,
    owner: str | None,
    location: str | None = None,
) -> None:
    """The netCDF file ``path`` catalogued as an item of ``collection`` (created, owned by
    ``owner``), as the service keeps an order's output; ``location``: where its bytes lie, if
    not at ``path`` (an object in a bucket)."""
    payload = path.read_bytes()
    item = Item(
        id=path.name,
        collection=collection,
        start=DAY,
        end=DAY,
        geometry=None,
        bbox=None,
        assets={
            "data": Asset(
                location=location or str(path),
                media_type="application/x-netcdf",
                size=len(payload),
                sha256=hashlib.sha256(payload).hexdigest(),
                title=path.name,
            )
        },
        owner=owner,
    )
    with open_catalogue(database_of(data), data / "catalogue.db") as catalogue:
        catalogue.put_collection(Collection(id=collection, title=collection, owner=owner))
        catalogue.add_items([item])


@pytest.fixture(scope="module")
def day(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return made_day(tmp_path_factory)


@pytest.fixture(scope="module")
def composite_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return made_composite(tmp_path_factory)


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory, day: list[Path], composite_file: Path
) -> Iterator[LiveService]:
    """A server logging JSON (its access lines count the bytes sent), with the orbits
    ingested for everyone and the composite alice's; one a test module that imports it."""

    def prepare(service: LiveService) -> None:
        nearline("ingest", str(day[0].parent), "--collection", "avhrr-gac", data=service.data)
        catalogue_netcdf(service.data, composite_file, collection="pathfinder", owner="alice")

    with serving(
        tmp_path_factory.mktemp("served"), prepare, extra=("--log-format", "json")
    ) as service:
        yield service


def seen_window(path: Path, name: str, shape: tuple[int, int]) -> tuple[slice, ...]:
    """A window of variable ``name``, ``shape`` in its last two dimensions and one deep in
    any before them, whose first cell holds a value (the orbits saw it)."""
    with xr.open_dataset(path) as dataset:
        seen = np.argwhere(np.isfinite(dataset[name].values))
    *outer, row, col = seen[len(seen) // 2]
    inner = (slice(row, row + shape[0]), slice(col, col + shape[1]))
    return (*(slice(index, index + 1) for index in outer), *inner)

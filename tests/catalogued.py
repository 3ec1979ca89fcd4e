"""Test support for readers' real and hand-made files: ``nearline ingest`` run as a user runs
it, the item it catalogued, that item's STAC validated offline, and broken copies of a file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pystac
import pytest
import shapely
import stac_pydantic
from pystac.validation import JsonSchemaSTACValidator, validate_dict
from shapely.geometry import shape

from nearline.archive import FILE_EXTENSION, Item, Search, item_to_stac, open_catalogue
from nearline.errors import GranuleError
from nearline.swath import GranuleSummary, describe_granule

from .service.test_standards import offline_schemas

NEARLINE = Path(sys.executable).parent / "nearline"
CORNER = 2.5 * 0.05  # degrees: how far a footprint's corner may stand from the swath


def ingest(paths: list[Path], data: Path, collection: str = "real") -> subprocess.CompletedProcess:
    """``nearline ingest PATHS --collection COLLECTION --data DATA`` in a process of its own."""
    command = [str(NEARLINE), "ingest", *map(str, paths), "--collection", collection,
               "--data", str(data), "--workers", "1"]  # fmt: skip
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=180)


def items(data: Path, collection: str = "real") -> list[Item]:
    """Every item the catalogue in ``data`` holds in ``collection`` (none if it has none)."""
    if not (data / "catalogue.db").exists():
        return []
    with open_catalogue(None, data / "catalogue.db") as catalogue:
        return catalogue.search(Search(collections=(collection,), limit=100)).items


def ingested(path: Path, data: Path) -> Item:
    """The one item ``nearline ingest`` makes of ``path``; fails with its stderr if it fails."""
    done = ingest([path], data)
    assert done.returncode == 0, done.stderr
    (item,) = items(data)
    return item


def assert_valid_stac(item: Item) -> dict:
    """The item's STAC as the API serves it, validated by stac-pydantic and by pystac against
    the STAC and GeoJSON schemas (local copies); returned for further checks."""
    stac = item_to_stac(item, "http://127.0.0.1:8000")
    stac_pydantic.Item.model_validate(stac)
    validator = JsonSchemaSTACValidator()
    validator.schema_cache.update(offline_schemas())
    item_schema = validator.schema_uri_map.get_object_schema_uri(
        pystac.STACObjectType.ITEM, stac["stac_version"]
    )
    assert validate_dict(stac, validator=validator) == [item_schema, FILE_EXTENSION]
    assert shapely.is_valid(shape(stac["geometry"]))
    return stac


def _noise(size: int) -> bytes:
    return bytes((index * 151 + 7) % 251 for index in range(size))


def assert_tight_footprint(summary: GranuleSummary, lon: np.ndarray, lat: np.ndarray) -> None:
    """The footprint covers every pixel (lon, lat: a swath, not across ±180) and its bbox
    stands beyond them by less than a footprint's corner may."""
    assert shapely.covers(shape(summary.geometry), shapely.points(lon, lat)).all()
    west, south, east, north = summary.bbox
    assert 0 < lon.min() - west < CORNER
    assert 0 < east - lon.max() < CORNER
    assert 0 < lat.min() - south < CORNER
    assert 0 < north - lat.max() < CORNER


def broken_copies(path: Path, folder: Path, *, chunk_of: str | None = None) -> dict[str, Path]:
    """Copies of ``path``: "truncated", cut in half; "corrupt", its bytes from 1 KiB to the
    middle garbage (the netCDF-4 header); and with ``chunk_of`` (a compressed variable)
    "garbled", that variable's first chunk garbage, the file opening as before."""
    import h5py

    folder.mkdir(parents=True, exist_ok=True)
    data = path.read_bytes()
    copies = {damage: folder / f"{damage}-{path.name}" for damage in ("truncated", "corrupt")}
    copies["truncated"].write_bytes(data[: len(data) // 2])
    middle = len(data) // 2
    copies["corrupt"].write_bytes(data[:1024] + _noise(middle - 1024) + data[middle:])
    if chunk_of is not None:
        with h5py.File(path, "r") as file:
            chunk = file[chunk_of].id.get_chunk_info(0)
        start, end = chunk.byte_offset, chunk.byte_offset + chunk.size
        copies["garbled"] = folder / f"garbled-{path.name}"
        copies["garbled"].write_bytes(data[:start] + _noise(end - start) + data[end:])
    return copies


def assert_broken_copy_refused(
    path: Path, damage: str, folder: Path, *, chunk_of: str | None = None
) -> None:
    """A ``damage`` copy of ``path`` (:func:`broken_copies`) is refused by
    ``describe_granule`` with a GranuleError naming it, and by ``nearline ingest``."""
    broken = broken_copies(path, folder / "files", chunk_of=chunk_of)[damage]
    with pytest.raises(GranuleError, match=re.escape(str(broken))):
        describe_granule(broken)
    assert_ingest_refuses(broken, folder / "data")


def assert_ingest_refuses(path: Path, data: Path) -> None:
    """``nearline ingest`` of ``path`` fails in one line naming it and catalogues nothing."""
    done = ingest([path], data)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert path.name in lines[0]
    assert "Traceback" not in done.stderr
    assert items(data) == []

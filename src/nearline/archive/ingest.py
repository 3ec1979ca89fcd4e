"""Granule files into the catalogue: each file's reader found by sniffing (as ``nearline
composite`` finds it), its time range and footprint read from the file, its bytes hashed.

Files are described first, in parallel worker processes, and only then catalogued, all in
one transaction: an ingest that meets a bad file (with ``on_error="fail"``) adds nothing, so
no half-ingested folder is left looking complete.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from nearline.archive.base import Asset, Catalogue, Collection, Item
from nearline.errors import CollectionNotFound, GranuleError, IngestError

log = logging.getLogger(__name__)
CHUNK = 8 * 1024**2
MEDIA_TYPES = {"nearline-avhrr": "application/x-netcdf"}
Progress = Callable[[int, int], None]  # (files described, files in all)


@dataclass(frozen=True)
class IngestReport:
    """What an ingest did: the items it catalogued and the files it skipped (with why)."""

    collection: str
    items: list[Item]
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    bytes: int = 0


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def describe_file(path: Path, location: str | None = None) -> dict[str, Any]:
    """One granule file as the fields of its item (picklable, for worker processes)."""
    from nearline.swath import describe_granule

    summary = describe_granule(path)
    return {
        "id": path.name,
        "start": summary.start,
        "end": summary.end,
        "geometry": summary.geometry,
        "bbox": summary.bbox,
        "properties": {
            "platform": summary.platform,
            "instruments": ["avhrr"],
            "nearline:reader": summary.reader,
            "nearline:lines": summary.n_lines,
        },
        "asset": Asset(
            location=location or str(path.resolve()),
            media_type=MEDIA_TYPES.get(summary.reader, "application/octet-stream"),
            size=path.stat().st_size,
            sha256=sha256_of(path),
            title=path.name,
        ),
    }


def _describe(path: Path) -> tuple[Path, dict[str, Any] | None, str | None]:
    try:
        return path, describe_file(path), None
    except (GranuleError, OSError) as error:
        return path, None, str(error)


def file_paths(inputs: Iterable[str | Path]) -> list[Path]:
    """Files as given; a folder stands for every file below it (hidden ones left out)."""
    paths: list[Path] = []
    for name in inputs:
        path = Path(name)
        if path.is_dir():
            paths += sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and not any(part.startswith(".") for part in p.parts[-1:])
            )
        elif path.is_file():
            paths.append(path)
        else:
            raise IngestError(f"{path} does not exist; give granule files or folders of them")
    if not paths:
        raise IngestError(f"no files in {', '.join(str(n) for n in inputs)}")
    return paths


def describe_all(
    paths: Sequence[Path], *, workers: int | None = None, progress: Progress | None = None
) -> list[tuple[Path, dict[str, Any] | None, str | None]]:
    """(path, fields or None, error or None) of each file, in order, ``workers`` at once."""
    report = progress or (lambda done, total: None)
    workers = workers or min(len(paths), os.cpu_count() or 1)
    found = []
    if workers <= 1 or len(paths) < 8:
        for done, path in enumerate(paths, 1):
            found.append(_describe(path))
            report(done, len(paths))
        return found
    # fork is cheapest (workers inherit the loaded readers); a threaded caller gets forkserver
    method = "fork" if threading.active_count() == 1 else "forkserver"
    with ProcessPoolExecutor(workers, mp_context=get_context(method)) as pool:
        for done, result in enumerate(pool.map(_describe, paths, chunksize=16), 1):
            found.append(result)
            report(done, len(paths))
    return found


def ingest(
    catalogue: Catalogue,
    inputs: Iterable[str | Path],
    *,
    collection: str,
    owner: str | None = None,
    on_error: str = "fail",
    workers: int | None = None,
    progress: Progress | None = None,
) -> IngestReport:
    """Catalogue the granule files ``inputs`` (folders: every file below them) as items of
    ``collection`` (created if missing). ``on_error="skip"`` leaves out files no reader
    knows, and says which; ``"fail"`` adds nothing if any file is bad."""
    if on_error not in ("fail", "skip"):
        raise IngestError(f"on_error: expected 'fail' or 'skip', got {on_error!r}")
    paths = file_paths(inputs)
    described = describe_all(paths, workers=workers, progress=progress)
    bad = [(path, why) for path, _, why in described if why is not None]
    if bad and on_error == "fail":
        _, why = bad[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise IngestError(f"{why}{more}; nothing was ingested (--on-error skip leaves them out)")
    items = [_item(fields, collection, owner) for _, fields, _ in described if fields]
    _check_unique(items, [path for path, fields, _ in described if fields])
    try:
        catalogue.get_collection(collection, viewer=owner)
    except CollectionNotFound:
        catalogue.put_collection(Collection(id=collection, title=collection, owner=owner))
    catalogue.add_items(items)
    size = sum(item.assets["data"].size or 0 for item in items)
    return IngestReport(collection=collection, items=items, skipped=bad, bytes=size)


def _item(fields: dict[str, Any], collection: str, owner: str | None) -> Item:
    return Item(
        id=fields["id"],
        collection=collection,
        start=fields["start"],
        end=fields["end"],
        geometry=fields["geometry"],
        bbox=fields["bbox"],
        properties=fields["properties"],
        assets={"data": fields["asset"]},
        owner=owner,
    )


def _check_unique(items: list[Item], paths: list[Path]) -> None:
    seen: dict[str, Path] = {}
    for item, path in zip(items, paths, strict=True):
        if item.id in seen:
            raise IngestError(
                f"{seen[item.id]} and {path} have the same name, {item.id!r}, which is the "
                "item id in the collection; ingest them into different collections"
            )
        seen[item.id] = path

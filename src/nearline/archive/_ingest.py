"""Granule files into the catalogue: each file's reader found by sniffing (as ``nearline
composite`` finds it), its time range and footprint read from the file, its bytes hashed.

Files are described first, in parallel worker processes, and only then catalogued, all in
one transaction: an ingest that meets a bad file (with ``on_error="fail"``) adds nothing, so
no half-ingested folder is left looking complete.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from multiprocessing import get_context
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nearline.archive._assets import bundle_members, fetch, sha256_of
from nearline.archive._base import Asset, Catalogue, Collection, Item
from nearline.errors import CollectionNotFound, GranuleError, IngestError

if TYPE_CHECKING:
    from nearline.swath import GranuleSummary

log = logging.getLogger(__name__)
ARCHIVE_BATCH = 64  # bundle members restored to scratch at once
Progress = Callable[[int, int], None]  # (files described, files in all)


@dataclass(frozen=True)
class IngestReport:
    """What an ingest did: the items it catalogued and the files it skipped (with why)."""

    collection: str
    items: list[Item]
    skipped: list[tuple[Path | str, str]] = field(default_factory=list)
    bytes: int = 0
    # files found in a folder that are not granules at all (README, checksums, element sets)
    passed_over: list[tuple[Path, str]] = field(default_factory=list)


def describe_file(
    path: Path, *, location: str | None = None, sha256: str | None = None, name: str | None = None
) -> dict[str, Any]:
    """One granule file as the fields of its item (picklable, for worker processes).

    Parameters
    ----------
    path
        The file, read by the reader that knows it.
    location, sha256, name
        Of the original, when ``path`` is a copy of it (None: ``path``'s own).

    Returns
    -------
    dict
        ``id``, ``start``, ``end``, ``geometry``, ``bbox``, ``properties`` and ``asset``.

    Raises
    ------
    GranuleError
        No reader knows the file, or it is damaged.
    """
    from nearline.swath import describe_granule

    return granule_fields(
        describe_granule(path),
        name=name or path.name,
        location=location or str(path.resolve()),
        size=path.stat().st_size,
        sha256=sha256 or sha256_of(path),
    )


def granule_fields(
    summary: GranuleSummary, *, name: str, location: str, size: int, sha256: str
) -> dict[str, Any]:
    """A granule's item fields from what its reader said of it and where its bytes are."""
    properties: dict[str, Any] = {
        **({"platform": summary.platform} if summary.platform else {}),  # not a composite's
        "instruments": [summary.instrument],
        "nearline:reader": summary.reader,
        "nearline:product": summary.product,
    }
    if summary.n_lines is not None:
        properties["nearline:lines"] = summary.n_lines
    if summary.warnings:
        properties["nearline:warnings"] = list(summary.warnings)
    properties.update(summary.properties)
    return {
        "id": name,
        "start": summary.start,
        "end": summary.end,
        "geometry": summary.geometry,
        "bbox": summary.bbox,
        "properties": properties,
        "asset": Asset(
            location=location,
            media_type=summary.media_type,
            size=size,
            sha256=sha256,
            title=name,
        ),
    }


Described = tuple[Path | str, dict[str, Any] | None, str | None]  # (file or URL, fields, error)


def _describe(job: tuple[Path, dict[str, Any]]) -> Described:
    path, original = job
    try:
        return path, describe_file(path, **original), None
    except (GranuleError, OSError) as error:
        return path, None, str(error)


def file_paths(inputs: Iterable[str | Path]) -> list[Path]:
    """Files as given; a folder stands for every file below it (hidden ones left out)."""
    from nearline.swath import granule_paths

    try:
        return granule_paths(inputs, recursive=True, companions=True)
    except GranuleError as error:
        raise IngestError(f"{error}; give granule files, or folders of them") from None


def sort_out(inputs: Iterable[str | Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The files of ``inputs`` to describe, and those a folder holds beside its granules that
    are no granules at all, with what each is: text (a README, a checksum list, ECS ``.met``
    metadata, the element sets AVHRR Level 1b geolocation uses). A file named on its own is
    always described, so that a wrong one is refused by name."""
    from nearline.swath import companion_kind

    inputs = [Path(name) for name in inputs]
    named = {path for path in inputs if not path.is_dir()}
    paths, companions = [], []
    for path in file_paths(inputs):
        kind = None if path in named else companion_kind(path)
        if kind is None:
            paths.append(path)
        else:
            companions.append((path, kind))
    return paths, companions


def describe_all(
    paths: Sequence[Path],
    *,
    originals: Sequence[dict[str, Any]] | None = None,
    workers: int | None = None,
    progress: Progress | None = None,
    start_method: str = "forkserver",
) -> list[Described]:
    """(path, fields or None, error or None) of each file, in order, ``workers`` at once.
    ``originals``: for each path that is a copy, its original's location, SHA-256 and name.
    ``start_method``: of the worker processes; "fork" is fastest (they inherit the readers
    already loaded) and safe in a caller whose other threads hold no locks the workers need,
    such as the CLI's progress bar."""
    report = progress or (lambda done, total: None)
    jobs = list(zip(paths, originals or [{}] * len(paths), strict=True))
    workers = workers or min(len(paths), os.cpu_count() or 1)
    found = []
    if workers <= 1 or len(paths) < 8:
        for done, job in enumerate(jobs, 1):
            found.append(_describe(job))
            report(done, len(paths))
        return found
    found.append(_describe(jobs[0]))  # here first: the workers inherit the loaded readers
    report(1, len(paths))
    with ProcessPoolExecutor(workers, mp_context=get_context(start_method)) as pool:
        for done, result in enumerate(pool.map(_describe, jobs[1:], chunksize=16), 2):
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
    start_method: str = "forkserver",
) -> IngestReport:
    """Catalogue the granule files ``inputs`` as items of ``collection``.

    Parameters
    ----------
    catalogue
        The catalogue the items go into.
    inputs
        Granule files, and folders: every file below them but the text files among them
        (READMEs, element sets: :func:`sort_out`), which the report lists as passed over.
    collection
        The collection the items join; created if missing.
    owner
        Who owns the items; None: every user may see them.
    on_error
        ``"skip"`` leaves out files no reader knows, and says which; ``"fail"`` adds nothing
        if any file is bad.
    workers
        Processes reading the granules; None: one per core (and no more than there are).
    progress
        Called with (files done, files) as they are read.
    start_method
        How the reading processes start (a multiprocessing start method).

    Returns
    -------
    IngestReport
        The items added and the files skipped, with why.

    Raises
    ------
    nearline.errors.IngestError
        If a file is bad and ``on_error`` is ``"fail"``, or ``on_error`` is neither.
    """
    check_on_error(on_error)
    paths, companions = sort_out(inputs)
    if not paths:
        kinds = ", ".join(f"{path.name} ({kind})" for path, kind in companions[:3])
        raise IngestError(f"no granules among the files given, only {kinds}; nothing was ingested")
    described = describe_all(paths, workers=workers, progress=progress, start_method=start_method)
    report = catalogue_described(catalogue, described, collection, owner, on_error)
    return replace(report, passed_over=companions)


def ingest_archive(
    catalogue: Catalogue,
    tier: str,
    *,
    collection: str,
    owner: str | None = None,
    on_error: str = "fail",
    workers: int | None = None,
    progress: Progress | None = None,
    start_method: str = "forkserver",
    scratch: Path | None = None,
) -> IngestReport:
    """Catalogue every granule that layout migrated to the archive ``tier``, where it lies.

    Each granule is restored to ``scratch`` a batch at a time (checked against its bundle's
    manifest) to be read, and its asset points into its bundle.

    Parameters
    ----------
    catalogue
        The catalogue the items go into.
    tier
        The archive tier: a folder or an fsspec URL.
    collection
        The collection the items join; created if missing.
    owner
        Who owns the items; None: every user may see them.
    on_error
        ``"skip"`` leaves out granules no reader knows; ``"fail"`` adds nothing if any is bad.
    workers
        Processes reading the granules; None: one per core (and no more than there are).
    progress
        Called with (granules done, granules) after each batch.
    start_method
        How the reading processes start (a multiprocessing start method).
    scratch
        Where a batch is restored to be read; None: the system's temporary folder.

    Returns
    -------
    IngestReport
        The items added and the granules skipped, with why.

    Raises
    ------
    nearline.errors.IngestError
        If a granule is bad and ``on_error`` is ``"fail"``, or ``on_error`` is neither.
    """
    check_on_error(on_error)
    members = bundle_members(tier)
    described: list[Described] = []
    with tempfile.TemporaryDirectory(dir=scratch, prefix="nearline-ingest-") as folder:
        for first in range(0, len(members), ARCHIVE_BATCH):
            batch = members[first : first + ARCHIVE_BATCH]
            paths = [
                fetch(Asset(location=m.location), Path(folder) / str(first + i))
                for i, (m, _, _) in enumerate(batch)
            ]
            originals = [
                {"location": m.location, "sha256": digest, "name": m.name} for m, _, digest in batch
            ]
            described += describe_all(
                paths, originals=originals, workers=workers, start_method=start_method
            )
            for path in paths:
                path.unlink()
            if progress is not None:
                progress(len(described), len(members))
    return catalogue_described(catalogue, described, collection, owner, on_error)


def check_on_error(on_error: str) -> None:
    if on_error not in ("fail", "skip"):
        raise IngestError(f"on_error: expected 'fail' or 'skip', got {on_error!r}")


def catalogue_described(
    catalogue: Catalogue,
    described: list[Described],
    collection: str,
    owner: str | None,
    on_error: str,
) -> IngestReport:
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


def _check_unique(items: list[Item], paths: list[Path | str]) -> None:
    seen: dict[str, Path | str] = {}
    for item, path in zip(items, paths, strict=True):
        if item.id in seen:
            raise IngestError(
                f"{seen[item.id]} and {path} have the same name, {item.id!r}, which is the "
                "item id in the collection; ingest them into different collections"
            )
        seen[item.id] = path

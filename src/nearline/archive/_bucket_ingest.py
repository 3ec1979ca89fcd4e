"""Granules in an S3 bucket catalogued where they lie: ``nearline ingest s3://bucket/prefix/``.

Every byte of every object must be hashed, so each object is read by one streamed GET that
goes through SHA-256 as it arrives. An object up to ``ranged_above`` bytes (64 MiB by default)
is held in memory as it streams, and its reader describes it from there: a format read from a
file object (nearline's netCDF-4, through h5py) straight from the bytes, any other (MODIS HDF4
through pyhdf, GAC Level 1b through pygac, which want a file name) from a copy written to
scratch. That is one request per object, and no second pass over its bytes. A larger object
is not held in memory: a format that allows it is described by ranged reads of its header and
tie points (s3fs), then hashed by its GET; any other streams to scratch through SHA-256 and is
read there.

Objects are read by threads, not processes: a thread waits on the store, and SHA-256 lets go
of the GIL; worker processes, each with its own boto3 client, cost more to start than a day of
granules takes to read (measured on 2 cores: 1.4 s with two forked workers against 0.65 s in
one thread, for benchmarks/s3_ingest.py's 14 granules). Listing and GETs go through layout's
S3 tier: retried through an outage, its refusals one line each.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO

from nearline.archive._base import Catalogue
from nearline.archive._ingest import (
    Described,
    IngestReport,
    Progress,
    catalogue_described,
    check_on_error,
    granule_fields,
)
from nearline.errors import GranuleError, IngestError, NearlineError

if TYPE_CHECKING:
    from nearline.layout import S3Tier
    from nearline.swath import GranuleSummary

log = logging.getLogger(__name__)
RANGED_ABOVE = 64 * 1024**2  # bytes above which an object is not held in memory to be read
RANGE = 1024**2  # bytes a ranged read of a large granule's header or tie points fetches
CHUNK = 1024**2  # bytes hashed at a time as an object streams in
THREADS_PER_CORE = 2  # objects read at once: one waits on the store while another is read


def ingest_bucket(
    catalogue: Catalogue,
    url: str,
    *,
    collection: str,
    owner: str | None = None,
    on_error: str = "fail",
    workers: int | None = None,
    progress: Progress | None = None,
    storage_options: Mapping[str, Any] | None = None,
    scratch: Path | None = None,
    ranged_above: int = RANGED_ABOVE,
) -> IngestReport:
    """Catalogue every granule object under ``url`` as items of ``collection``, where they lie.

    Each item records its object's size and SHA-256 (every byte read once, by one GET) and
    is equal to the item a local ingest of the same file makes, but for its asset's href:
    the object's ``s3://`` URL.

    Parameters
    ----------
    catalogue
        The catalogue the items go into.
    url
        ``s3://bucket/prefix``: every object below it (hidden keys, a part of which starts
        with ".", left out), or one object.
    collection
        The collection the items join; created if missing.
    owner
        Who owns the items; None: every user may see them.
    on_error
        ``"skip"`` leaves out objects no reader knows, and says which; ``"fail"`` adds
        nothing if any object is bad.
    workers
        Threads reading objects at once; None: two a core.
    progress
        Called with (objects done, objects) as they are read.
    storage_options
        How to reach the store: ``endpoint_url``, ``profile``, ``region_name``, and the S3
        tier's retry options (``retry_attempts``, ``retry_seconds``). Credentials come from
        boto's usual chain: the AWS_* environment, ``~/.aws``, the profile.
    scratch
        Where an object whose reader wants a file name is copied to be read; None: the
        system's temporary folder.
    ranged_above
        Objects larger than this many bytes are not held in memory: described by ranged
        reads where the format allows, else copied to ``scratch``.

    Returns
    -------
    IngestReport
        The items added and the objects skipped, with why.

    Raises
    ------
    nearline.errors.IngestError
        If an object is bad and ``on_error`` is ``"fail"``, ``on_error`` is neither, or
        ``url`` holds no objects.
    nearline.errors.ObjectStoreError
        If the store refuses the credentials, has no such bucket, or does not answer.
    nearline.errors.ConfigError
        If ``url`` is not ``s3://bucket/prefix`` or a storage option is unknown.
    """
    from nearline.layout import open_tier, split_s3_url

    check_on_error(on_error)
    bucket, prefix = split_s3_url(url)
    tier = open_tier(f"s3://{bucket}", storage_options=storage_options)
    try:
        objects = list_objects(tier, prefix.strip("/"))
        reader = _Reader(tier, storage_options, ranged_above)
        threads = workers or THREADS_PER_CORE * (os.cpu_count() or 1)
        described: list[Described] = []
        with (
            tempfile.TemporaryDirectory(dir=scratch, prefix="nearline-ingest-") as folder,
            ThreadPoolExecutor(max(1, min(threads, len(objects)))) as pool,
        ):
            copies = (Path(folder) / str(n) for n in range(len(objects)))
            jobs = zip(objects, copies, strict=False)
            for done, found in enumerate(pool.map(lambda job: reader.read(*job), jobs), 1):
                described.append(found)
                if progress is not None:
                    progress(done, len(objects))
    finally:
        tier.close()
    return catalogue_described(catalogue, described, collection, owner, on_error)


def list_objects(tier: S3Tier, prefix: str) -> list[tuple[str, int]]:
    """(key, size) of every object below ``prefix`` in the tier's bucket (or of the object
    ``prefix`` names), sorted, hidden ones left out; a key with a ``..`` part is refused, as
    a folder's would be."""
    pages = tier.client.get_paginator("list_objects_v2").paginate
    found = tier.store.call(
        f"listing {tier.describe(prefix)}", lambda **kw: list(pages(**kw)), Prefix=prefix
    )
    objects = []
    for entry in sorted((e for page in found for e in page.get("Contents", [])), key=_key):
        key = entry["Key"]
        if prefix and key != prefix and not key.startswith(f"{prefix}/"):
            continue  # a sibling such as prefix2/...: the prefix names a folder
        relative = PurePosixPath(key[len(prefix) :].lstrip("/") or PurePosixPath(key).name)
        if ".." in relative.parts:
            raise IngestError(f"{tier.describe(key)}: a key with '..' in it is refused")
        if key.endswith("/") or any(part.startswith(".") for part in relative.parts):
            continue
        objects.append((key, int(entry["Size"])))
    if not objects:
        raise IngestError(
            f"{tier.describe(prefix)} holds no objects; give the bucket and prefix of granules"
        )
    return objects


def _key(entry: dict[str, Any]) -> str:
    return str(entry["Key"])


class _Reader:
    """Reads one object, by one GET, into the fields of its item (or why it cannot be)."""

    def __init__(
        self, tier: S3Tier, storage_options: Mapping[str, Any] | None, ranged_above: int
    ) -> None:
        self.tier = tier
        self.storage_options = storage_options
        self.ranged_above = ranged_above
        self._ranged: Any = None  # an s3fs file system, made for the first large object
        self._lock = threading.Lock()

    def read(self, listed: tuple[str, int], copy: Path) -> Described:
        key, size = listed
        url, name = self.tier.describe(key), PurePosixPath(key).name
        try:
            if size <= self.ranged_above:
                summary, size, sha256 = self._from_memory(key, name, copy)
            else:
                summary, size, sha256 = self._from_ranges(key, name, size, copy)
            fields = granule_fields(summary, name=name, location=url, size=size, sha256=sha256)
            return url, fields, None
        except (GranuleError, OSError, NearlineError) as error:
            return url, None, str(error).replace(str(copy), url)
        finally:
            copy.unlink(missing_ok=True)

    def _from_memory(self, key: str, name: str, copy: Path) -> tuple[GranuleSummary, int, str]:
        """Described from the object's bytes, hashed as they came; from a copy of them if
        its reader wants a file name."""
        from nearline.swath import describe_granule, describe_stream

        digest = hashlib.sha256()
        data = b"".join(self._pieces(key, digest))
        summary = describe_stream(io.BytesIO(data), name=name)
        if summary is None:
            copy.write_bytes(data)
            summary = describe_granule(copy)
        return summary, len(data), digest.hexdigest()

    def _from_ranges(
        self, key: str, name: str, size: int, copy: Path
    ) -> tuple[GranuleSummary, int, str]:
        """Described by ranged reads if its format allows, then hashed by its GET; else
        streamed to a copy through SHA-256 and read there."""
        from nearline.swath import describe_granule, describe_stream

        with self._open_ranged(key, size) as stream:
            summary = describe_stream(stream, name=name)
        digest, count = hashlib.sha256(), 0
        with open(copy if summary is None else os.devnull, "wb") as sink:
            for piece in self._pieces(key, digest):
                sink.write(piece)
                count += len(piece)
        if summary is None:
            summary = describe_granule(copy)
        return summary, count, digest.hexdigest()

    def _pieces(self, key: str, digest: Any) -> Iterator[bytes]:
        """The object's bytes as one GET streams them (retried if the store does not
        answer), each through ``digest`` first."""
        doing = f"reading {self.tier.describe(key)}"
        answer = self.tier.store.call(doing, self.tier.client.get_object, Key=key)
        try:
            for piece in answer["Body"].iter_chunks(CHUNK):
                digest.update(piece)
                yield piece
        except Exception as error:  # the connection broke mid-body: one typed line
            raise self.tier.store.failure(error, doing) from None

    def _open_ranged(self, key: str, size: int) -> BinaryIO:
        with self._lock:
            if self._ranged is None:
                self._ranged = s3_filesystem(self.storage_options)
        path = f"{self.tier.bucket}/{key}"
        return self._ranged.open(path, "rb", block_size=RANGE, cache_type="blockcache", size=size)


def s3_filesystem(storage_options: Mapping[str, Any] | None = None) -> Any:
    """An s3fs file system from nearline's S3 options (``endpoint_url``, ``profile``,
    ``region_name``; the S3 tier's own options left out)."""
    import s3fs

    options = dict(storage_options or {})
    settings: dict[str, Any] = {"skip_instance_cache": True}
    if endpoint := options.get("endpoint_url"):
        settings["endpoint_url"] = endpoint
    if profile := options.get("profile"):
        settings["profile"] = profile
    if region := options.get("region_name"):
        settings["client_kwargs"] = {"region_name": region}
    return s3fs.S3FileSystem(**settings)

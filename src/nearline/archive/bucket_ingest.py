"""Granules in an S3 bucket catalogued where they lie: ``nearline ingest s3://bucket/prefix/``.

A format whose reader reads by ranged reads (nearline's netCDF-4 granules, through h5py on an
s3fs file object) is described from the few byte ranges its header and sampled tie points
take; any other (MODIS HDF4 through pyhdf, GAC Level 1b through pygac, which want a file
name) is downloaded to scratch first and read there. Either way every byte is streamed once
through SHA-256, so an item records its object's size and digest as for a local file, and its
asset's href is the object's ``s3://`` URL.

Objects are read by threads, not processes: the work is waiting on the store and hashing,
both of which let go of the GIL.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Any

from nearline.archive.base import Catalogue
from nearline.archive.ingest import (
    Described,
    IngestReport,
    Progress,
    catalogue_described,
    check_on_error,
    granule_fields,
)
from nearline.errors import GranuleError, IngestError

log = logging.getLogger(__name__)
RANGE = 1024**2  # bytes a ranged read of a granule's header or tie points fetches at least
CHUNK = 8 * 1024**2  # bytes a hashing (or copying) read fetches at once
THREADS_PER_CORE = 4  # objects read at once: the store's latency is what they wait on


def is_s3_url(text: str) -> bool:
    """Whether an ingest argument names objects in an S3 bucket (``s3://bucket/prefix``)."""
    return str(text).startswith("s3://")


def s3_filesystem(storage_options: Mapping[str, Any] | None = None) -> Any:
    """An s3fs file system from nearline's S3 options (``endpoint_url``, ``profile``,
    ``region_name``; credentials from boto's usual chain: environment, ~/.aws, profile)."""
    import s3fs

    options = dict(storage_options or {})
    settings: dict[str, Any] = {"skip_instance_cache": True}
    if endpoint := options.pop("endpoint_url", None):
        settings["endpoint_url"] = endpoint
    if profile := options.pop("profile", None):
        settings["profile"] = profile
    if region := options.pop("region_name", None):
        settings["client_kwargs"] = {"region_name": region}
    if options:
        raise IngestError(f"unknown S3 options {sorted(options)}; expected endpoint_url, profile")
    return s3fs.S3FileSystem(**settings)


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
) -> IngestReport:
    """Catalogue every granule object under ``url`` (``s3://bucket/prefix``; hidden keys,
    whose parts start with ".", left out) as items of ``collection``, their assets pointing
    at the objects. ``on_error`` as for :func:`~nearline.archive.ingest.ingest`."""
    check_on_error(on_error)
    fs = s3_filesystem(storage_options)
    where = storage_options.get("endpoint_url") if storage_options else None
    where = where or os.environ.get("AWS_ENDPOINT_URL") or "the default S3 endpoint"
    with s3_errors(url, where):
        objects = list_objects(fs, url)
        report = progress or (lambda done, total: None)
        threads = workers or THREADS_PER_CORE * (os.cpu_count() or 1)
        with (
            tempfile.TemporaryDirectory(dir=scratch, prefix="nearline-ingest-") as folder,
            ThreadPoolExecutor(max(1, min(threads, len(objects)))) as pool,
        ):
            described: list[Described] = []
            jobs = [(fs, key, size, Path(folder) / str(n)) for n, (key, size) in enumerate(objects)]
            for done, result in enumerate(pool.map(_describe_object, jobs), 1):
                described.append(result)
                report(done, len(objects))
    return catalogue_described(catalogue, described, collection, owner, on_error)


def list_objects(fs: Any, url: str) -> list[tuple[str, int]]:
    """(key with its bucket, size) of every object under ``url``, sorted, hidden ones left
    out; a key with a ``..`` part is refused, as a folder's would be."""
    root = url.removeprefix("s3://").rstrip("/")
    found = fs.find(root, detail=True)
    objects = []
    for key, info in sorted(found.items()):
        relative = PurePosixPath(key[len(root) :].lstrip("/") or PurePosixPath(key).name)
        if ".." in relative.parts:
            raise IngestError(f"s3://{key}: a key with '..' in it is refused")
        if info.get("type") == "directory" or any(p.startswith(".") for p in relative.parts):
            continue
        objects.append((key, int(info["size"])))
    if not objects:
        raise IngestError(f"{url} holds no objects; give the bucket and prefix of granules")
    return objects


def _describe_object(job: tuple[Any, str, int, Path]) -> Described:
    fs, key, size, copy = job
    url, name = f"s3://{key}", PurePosixPath(key).name
    try:
        return url, _object_fields(fs, key, size, copy, url=url, name=name), None
    except (GranuleError, OSError) as error:
        return url, None, str(error).replace(str(copy), url)
    finally:
        copy.unlink(missing_ok=True)


def _object_fields(fs: Any, key: str, size: int, copy: Path, *, url: str, name: str) -> dict:
    from nearline.swath import describe_granule, describe_stream

    with fs.open(key, "rb", block_size=RANGE, cache_type="readahead", size=size) as stream:
        summary = describe_stream(stream, name=name)
    if summary is not None:  # read where it lies: now its bytes, once, for the digest
        digest = _stream_digest(fs, key, size)
    else:  # a format read by file name: a copy, hashed as it is written
        digest = _stream_digest(fs, key, size, copy=copy)
        summary = describe_granule(copy)
    return granule_fields(summary, name=name, location=url, size=size, sha256=digest)


def _stream_digest(fs: Any, key: str, size: int, *, copy: Path | None = None) -> str:
    """The SHA-256 of an object, read in :data:`CHUNK` pieces (written to ``copy`` too)."""
    digest = hashlib.sha256()
    with contextlib.ExitStack() as stack:
        source = stack.enter_context(
            fs.open(key, "rb", block_size=CHUNK, cache_type="none", size=size)
        )
        sink = stack.enter_context(open(copy, "wb")) if copy is not None else None
        while piece := source.read(CHUNK):
            digest.update(piece)
            if sink is not None:
                sink.write(piece)
    return digest.hexdigest()


@contextlib.contextmanager
def s3_errors(url: str, endpoint: str) -> Iterator[None]:
    """The store's refusals as one line each, naming the endpoint and the fix."""
    try:
        yield
    except PermissionError as error:
        raise IngestError(
            f"{endpoint} refused access to {url} ({_first_line(error)}); check the access key "
            "and secret (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or --profile)"
        ) from None
    except FileNotFoundError as error:
        raise IngestError(
            f"{url}: {_first_line(error)} at {endpoint}; check the bucket's name "
            "(and --endpoint-url)"
        ) from None
    except OSError as error:
        raise IngestError(
            f"cannot read {url} from {endpoint} ({_first_line(error)}); is the store up, "
            "and --endpoint-url right?"
        ) from None


def _first_line(error: BaseException) -> str:
    return (str(error) or type(error).__name__).splitlines()[0]

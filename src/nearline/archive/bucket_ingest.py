"""Granules in an S3 bucket catalogued where they lie: ``nearline ingest s3://bucket/prefix/``.

A format whose reader reads by ranged reads (nearline's netCDF-4 granules, through h5py on an
s3fs file object) is described from the few byte ranges its header and sampled tie points
take; any other (MODIS HDF4 through pyhdf, GAC Level 1b through pygac, which want a file
name) is downloaded to scratch and read there. Either way every byte is streamed through
SHA-256, so an item records its object's size and digest as for a local file, and its
asset's href is the object's ``s3://`` URL.

Objects are read by threads, not processes: the work is waiting on the store and hashing,
both of which let go of the GIL. The digest is taken from one streamed GET of each object
(through layout's S3 tier: retried through an outage, its errors one line), at the same time
as the ranged reads that describe it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from nearline.archive.base import Catalogue
from nearline.archive.ingest import (
    Described,
    IngestReport,
    Progress,
    catalogue_described,
    check_on_error,
    granule_fields,
)
from nearline.errors import GranuleError, IngestError, NearlineError

if TYPE_CHECKING:
    from nearline.swath import GranuleSummary

log = logging.getLogger(__name__)
RANGE = 1024**2  # bytes a ranged read of a granule's header or tie points fetches at least
CHUNK = 1024**2  # bytes hashed at a time as an object streams in
THREADS_PER_CORE = 4  # objects read at once: the store's latency is what they wait on


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
    from nearline.layout import open_tier

    check_on_error(on_error)
    fs = s3_filesystem(storage_options)
    where = storage_options.get("endpoint_url") if storage_options else None
    where = where or os.environ.get("AWS_ENDPOINT_URL") or "the default S3 endpoint"
    with s3_errors(url, where):
        objects = list_objects(fs, url)
        bucket = open_tier(
            f"s3://{objects[0][0].partition('/')[0]}", storage_options=storage_options
        )
        threads = workers or THREADS_PER_CORE * (os.cpu_count() or 1)
        with (
            tempfile.TemporaryDirectory(dir=scratch, prefix="nearline-ingest-") as folder,
            ThreadPoolExecutor(max(1, min(threads, 2 * len(objects)))) as pool,
        ):
            # the header and tie points by ranged reads, and every byte through SHA-256 by a
            # streamed GET, at once: an object takes the longer of the two, not their sum
            summaries = [pool.submit(_summary, fs, key, size) for key, size in objects]
            digests = [pool.submit(_digest, bucket, key) for key, _ in objects]
            described: list[Described] = []
            for n, (key, size) in enumerate(objects):
                copy = Path(folder) / str(n)
                described.append(_described(key, size, summaries[n], digests[n], bucket, copy))
                if progress is not None:
                    progress(n + 1, len(objects))
        bucket.close()
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


def _described(
    key: str, size: int, summary: Future, digest: Future, bucket: Any, copy: Path
) -> Described:
    """An object's item fields, or why it cannot be catalogued."""
    from nearline.swath import describe_granule

    url, name = f"s3://{key}", PurePosixPath(key).name
    try:
        found = summary.result()
        if found is None:  # a format read by file name: a copy, read there
            bucket.download_file(key.partition("/")[2], copy)
            found = describe_granule(copy)
        fields = granule_fields(found, name=name, location=url, size=size, sha256=digest.result())
        return url, fields, None
    except (GranuleError, OSError, NearlineError) as error:
        return url, None, str(error).replace(str(copy), url)
    finally:
        copy.unlink(missing_ok=True)


def _summary(fs: Any, key: str, size: int) -> GranuleSummary | None:
    """What the granule's reader says of it, read by ranged reads; None if its format is
    not read that way."""
    from nearline.swath import describe_stream

    with fs.open(key, "rb", block_size=RANGE, cache_type="blockcache", size=size) as stream:
        return describe_stream(stream, name=PurePosixPath(key).name)


def _digest(bucket: Any, key: str) -> str:
    """The SHA-256 of an object, streamed by one GET (retried through an outage)."""
    name = key.partition("/")[2]
    answer = bucket.store.call(
        f"reading {bucket.describe(name)}", bucket.client.get_object, Key=name
    )
    digest = hashlib.sha256()
    for piece in answer["Body"].iter_chunks(CHUNK):
        digest.update(piece)
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

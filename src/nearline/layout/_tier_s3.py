"""An archive tier in an S3 bucket, on boto3: ``s3://bucket/prefix``.

A bundle is streamed into a multipart upload of its final key, several parts in flight, and
:meth:`S3Tier.publish` completes the upload: a partial object is never visible, and a failed or
abandoned write aborts its upload (a crashed writer's upload is aborted by the next writer of
the key, as it starts its own). Reads are ranged GETs, several parts ahead. A "folder" is a
key prefix ending in ``/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO

from nearline.errors import ArchiveError, ConfigError
from nearline.layout._pieces import BufferPool
from nearline.layout._s3_store import Bucket, object_key
from nearline.layout._s3_transfer import MIN_PART, PartWriter, RangedReader, read_range
from nearline.layout._tier_base import ArchiveTier, temporary_name
from nearline.units import parse_size

PART_SIZE = 8 * 1024**2  # boto3's TransferConfig default chunk size
READ_PARTS = 4  # parts a ranged GET of a bundle reads
READS = 3  # ranged GETs at once


def final_name(temporary: str) -> str:
    """The name a temporary name (``folder/.base.partial``) stands for: ``folder/base``."""
    folder, _, base = temporary.rpartition("/")
    if not (base.startswith(".") and base.endswith(".partial")):
        raise ValueError(f"{temporary!r} is not a temporary name (.NAME.partial)")
    base = base[1 : -len(".partial")]
    return f"{folder}/{base}" if folder else base


def split_s3_url(url: str, *, what: str = "prefix") -> tuple[str, str]:
    """(bucket, the rest) of ``s3://bucket/rest``; ConfigError naming ``what`` the rest is."""
    scheme, sep, rest = url.partition("://")
    bucket, _, tail = rest.partition("/")
    if scheme != "s3" or not sep or not bucket:
        raise ConfigError(f"{url!r} is not an s3://bucket/{what} URL")
    return bucket, tail


class S3Tier(ArchiveTier):
    """Objects are keys ``prefix/name`` in ``bucket``.

    ``storage_options``: ``endpoint_url``, ``profile`` (of ``~/.aws``), ``region_name``,
    ``part_size`` (default 8MiB), ``max_concurrency`` (parts in flight, default 10),
    ``retry_attempts`` and ``retry_seconds`` (how long an outage is ridden out: 6 over 30 s).
    """

    supports_parallel_reads = True

    def __init__(self, bucket: Bucket, prefix: str, *, part_size: int = PART_SIZE) -> None:
        self.store = bucket
        self.bucket = bucket.bucket
        self.prefix = prefix.strip("/")
        object_key("", self.prefix)  # refuse a prefix with '..' or empty components
        self.url = f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"
        self.client = bucket.client
        self.endpoint_url = bucket.endpoint_url
        if part_size < MIN_PART:
            raise ConfigError(f"part_size must be at least 5MiB (S3's minimum), got {part_size}")
        self.pool = BufferPool(part_size)
        self._executor: ThreadPoolExecutor | None = None
        self._writers: dict[str, PartWriter] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str, *, storage_options: Mapping[str, Any] | None = None) -> S3Tier:
        """The tier ``s3://bucket/prefix`` names."""
        bucket, prefix = split_s3_url(url)
        options = dict(storage_options or {})
        part_size = parse_size(options.pop("part_size", PART_SIZE), what="part_size")
        return cls(Bucket(bucket, options=options, url=url), prefix, part_size=part_size)

    def __repr__(self) -> str:
        return f"S3Tier({self.url!r}, endpoint_url={self.endpoint_url!r})"

    # -- names -----------------------------------------------------------------------------
    def key(self, name: str) -> str:
        """The object key of ``name``; a name with ``..``, ``.``, empty components or a
        leading ``/`` raises :class:`~nearline.errors.ArchiveError`."""
        return object_key(self.prefix, name)

    def _folder_key(self, folder: str) -> str:
        key = self.key(folder)
        return f"{key}/" if key else ""

    @property
    def executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:  # started on first use, never at import
                workers = self.store.max_concurrency
                self._executor = ThreadPoolExecutor(workers, thread_name_prefix="nearline-s3")
            return self._executor

    # -- the contract ----------------------------------------------------------------------
    def open_write(self, name: str) -> BinaryIO:
        final = final_name(name)
        key = self.key(final)
        writer = PartWriter(
            self.store, key, label=self.describe(final), pool=self.pool, executor=self.executor
        )
        with self._lock:
            old = self._writers.pop(name, None)
            self._writers[name] = writer
        if old is not None:
            old.abort()
        return writer  # type: ignore[return-value]

    def publish(self, temporary: str, final: str) -> None:
        with self._lock:
            writer = self._writers.pop(temporary, None)
        if writer is None:
            raise FileNotFoundError(f"nothing was written as {self.describe(temporary)}")
        if writer.key != self.key(final):
            writer.abort()
            raise ValueError(f"{temporary!r} was written for {writer.key!r}, not {final!r}")
        try:
            writer.complete()
        except BaseException:
            writer.abort()
            raise

    def open_read(self, name: str) -> BinaryIO:
        size = self.size(name)
        if size is None:
            raise FileNotFoundError(f"no object {self.describe(name)}")
        return RangedReader(  # type: ignore[return-value]
            self.store,
            self.key(name),
            size,
            label=self.describe(name),
            pool=self.pool,
            executor=self.executor,
        )

    def pieces(self, chunk_size: int) -> tuple[int, int]:
        """Four parts a GET, three GETs at once: measured against SeaweedFS here, 1 GB read
        this way took 25% less time and CPU than in one-part GETs ten at once (each request
        costs botocore ~1 ms of CPU). A piece starts where a part does."""
        return READ_PARTS * self.pool.size, min(READS, self.store.max_concurrency)

    @contextlib.contextmanager
    def ranges(self, name: str) -> Iterator[Callable[[int, memoryview], int]]:
        """Ranged GETs, each its own request: as many threads at once as there are
        connections (a missing object raises FileNotFoundError at the first)."""
        key, label = self.key(name), self.describe(name)
        yield lambda offset, view: read_range(self.store, key, label, offset, view)

    def remove(self, name: str) -> None:
        if self._abort(name):  # an unpublished write: its upload dropped
            return
        self.store.call(
            f"removing {self.describe(name)}", self.client.delete_object, Key=self.key(name)
        )

    def _abort(self, name: str) -> bool:
        """Drop the unpublished write of ``name``, if there is one (best effort)."""
        with self._lock:
            writer = self._writers.pop(name, None)
        if writer is not None:
            writer.abort()
        return writer is not None

    def list(self, folder: str) -> list[str]:
        prefix = self._folder_key(folder)
        names: set[str] = set()
        pages = self.client.get_paginator("list_objects_v2").paginate
        for page in self.store.call(
            f"listing {self.describe(folder)}",
            lambda **kw: list(pages(**kw)),
            Prefix=prefix,
            Delimiter="/",
        ):
            found = [entry["Key"] for entry in page.get("Contents", [])]
            found += [entry["Prefix"].rstrip("/") for entry in page.get("CommonPrefixes", [])]
            for key in found:
                name = key[len(prefix) :]
                object_key(self.prefix, f"{folder}/{name}" if folder else name, listed=True)
                names.add(name)
        return sorted(names)

    def size(self, name: str) -> int | None:
        try:
            head = self.store.call(
                f"looking up {self.describe(name)}", self.client.head_object, Key=self.key(name)
            )
        except FileNotFoundError:
            return None
        return int(head["ContentLength"])

    def close(self) -> None:
        with self._lock:
            writers, self._writers = list(self._writers.values()), {}
            executor, self._executor = self._executor, None
        for writer in writers:
            writer.abort()
        if executor is not None:
            executor.shutdown(wait=True)

    # -- whole files, links, sums ----------------------------------------------------------
    def upload_file(self, path: str | Path, name: str) -> None:
        """Upload a local file as ``name``: a multipart upload, parts several at once,
        completed only if the file was read whole and unchanged; else aborted, and nothing
        appears under ``name``."""
        source = Path(path)
        temporary = temporary_name(name)
        with open(source, "rb", buffering=0) as handle:
            before = os.fstat(handle.fileno())
            try:
                with self.open_write(temporary) as out:
                    chunk = bytearray(self.pool.size)
                    count = 0
                    while got := handle.readinto(chunk):
                        out.write(memoryview(chunk)[:got])
                        count += got
                after = os.fstat(handle.fileno())
                if count != before.st_size or _stamp(after) != _stamp(before):
                    raise ArchiveError(
                        f"{source} changed while it was uploaded to {self.describe(name)} "
                        f"({before.st_size} bytes when it began, {count} read): nothing was "
                        "published; upload it again once its writer is done with it"
                    )
                self.publish(temporary, name)
            except BaseException:
                self._abort(temporary)  # its parts go; publish aborts its own failure
                raise

    def download_file(self, name: str, path: str | Path) -> Path:
        """Download ``name`` to ``path`` with parallel ranged GETs, into a hidden
        ``.NAME.partial`` beside it that takes its name only once whole."""
        target = Path(path)
        partial = target.with_name(f".{target.name}.partial")
        try:
            self.store.call(
                f"downloading {self.describe(name)}",
                lambda Bucket, **kw: self.client.download_file(Bucket=Bucket, **kw),
                Key=self.key(name),
                Filename=str(partial),
                Config=self._transfer_config(),
            )
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        return target

    def _transfer_config(self) -> Any:
        from boto3.s3.transfer import TransferConfig

        size = self.pool.size
        return TransferConfig(
            multipart_threshold=size,
            multipart_chunksize=size,
            max_concurrency=self.store.max_concurrency,
        )

    def presigned_url(self, name: str, *, expires: int = 300) -> str:
        """A URL anyone may GET ``name`` with for ``expires`` seconds, without credentials."""
        return str(
            self.client.generate_presigned_url(
                "get_object",
                Params={"Bucket": self.bucket, "Key": self.key(name)},
                ExpiresIn=int(expires),
            )
        )

    def sha256_of(self, name: str) -> str:
        """The SHA-256 of an object's bytes, read back from the store."""
        digest = hashlib.sha256()
        with self.open_read(name) as handle:
            while chunk := handle.read(self.pool.size):
                digest.update(chunk)
        return digest.hexdigest()


def _stamp(info: os.stat_result) -> tuple[int, int]:
    return info.st_size, info.st_mtime_ns

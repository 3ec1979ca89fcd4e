"""Assets in an S3 bucket, and a service's archive there (``nearline serve --archive
s3://bucket/prefix``): where job outputs are kept, and how ``s3://`` assets are fetched, linked
and removed, through layout's S3 tier (its retries with backoff and its one-line errors).

Outputs are uploaded with publish-at-complete (a multipart upload completes only once every
part is in), so a server killed mid-upload leaves no visible partial object. The service's
credentials stay in the service: a run is given copies of its inputs, never a URL or a key.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from nearline.errors import ConfigError, NearlineError

S3 = "s3://"
LINK_SECONDS = 300  # how long a presigned download link works


def is_object_url(location: str) -> bool:
    """Whether an asset location is an object in an S3 bucket.

    Parameters
    ----------
    location
        An asset's location: a path, a URL.

    Returns
    -------
    bool
        True for an ``s3://bucket/key`` URL.
    """
    return location.startswith(S3)


class ObjectStores:
    """The S3 buckets a service reaches with one set of options, one tier per bucket.

    Parameters
    ----------
    storage_options
        ``endpoint_url``, ``profile``, ``region_name`` (and the S3 tier's tuning options);
        credentials come from boto3's usual chain (environment, ``~/.aws``, the profile).
    """

    def __init__(self, storage_options: Mapping[str, Any] | None = None) -> None:
        self.storage_options = dict(storage_options or {})
        self._tiers: dict[str, Any] = {}

    def _object(self, location: str) -> tuple[Any, str]:
        """The tier of the bucket holding ``location`` and the object's key in it."""
        from nearline.layout import open_tier, split_s3_url

        bucket, key = split_s3_url(location, what="key")
        if not key:
            raise ConfigError(f"{location!r} is not an s3://bucket/key URL")
        if bucket not in self._tiers:
            self._tiers[bucket] = open_tier(f"{S3}{bucket}", storage_options=self.storage_options)
        return self._tiers[bucket], key

    def download(self, location: str, target: Path) -> Path:
        """Copy an object to a file, whole or not at all.

        Parameters
        ----------
        location
            The object's ``s3://bucket/key`` URL.
        target
            The file it is copied to.

        Returns
        -------
        Path
            ``target``.
        """
        tier, key = self._object(location)
        return tier.download_file(key, target)

    def open(self, location: str) -> BinaryIO:
        """An object, open for (ranged) reading.

        Parameters
        ----------
        location
            The object's ``s3://bucket/key`` URL.
        """
        tier, key = self._object(location)
        return tier.open_read(key)

    def size(self, location: str) -> int | None:
        """Bytes in an object, or None if there is none.

        Parameters
        ----------
        location
            The object's ``s3://bucket/key`` URL.
        """
        tier, key = self._object(location)
        return tier.size(key)

    def link(self, location: str, *, expires: int = LINK_SECONDS) -> str | None:
        """A presigned URL that GETs the object, for a download's redirect.

        Parameters
        ----------
        location
            The object's ``s3://bucket/key`` URL.
        expires
            Seconds the link works for.

        Returns
        -------
        str or None
            The link; None if this store cannot sign (no credentials to sign with).
        """
        tier, key = self._object(location)
        try:
            return tier.presigned_url(key, expires=expires)
        except (NearlineError, OSError, ValueError) as error:
            import logging

            logging.getLogger(__name__).warning("cannot sign a link to %s: %s", location, error)
            return None

    def remove(self, location: str) -> None:
        """Delete an object; a missing one is not an error.

        Parameters
        ----------
        location
            The object's ``s3://bucket/key`` URL.
        """
        tier, key = self._object(location)
        tier.remove(key)

    def close(self) -> None:
        """Release every bucket's connections."""
        for tier in self._tiers.values():
            tier.close()
        self._tiers.clear()


class ObjectArchive:
    """Where a service keeps its job outputs, in a bucket (``nearline serve --archive``).

    Parameters
    ----------
    url
        ``s3://bucket/prefix``: outputs are kept below it.
    stores
        The service's buckets, whose options (endpoint, profile) this archive shares.

    Raises
    ------
    nearline.errors.ConfigError
        If ``url`` is not an ``s3://`` URL.
    """

    def __init__(self, url: str, stores: ObjectStores) -> None:
        from nearline.layout import open_tier

        if not is_object_url(url):
            raise ConfigError(f"archive: expected s3://bucket/prefix, got {url!r}")
        self.stores = stores
        self.tier = open_tier(url.rstrip("/"), storage_options=stores.storage_options)
        self.url = self.tier.url

    def check(self) -> None:
        """Prove the archive can be written, read and cleaned now (at a server's start), so
        a wrong key, a missing bucket or a read-only one is one line then, not a failed run
        later.

        Raises
        ------
        nearline.errors.ConfigError
            Naming the archive and what the store refused.
        """
        probe = f".nearline-probe/{socket.gethostname()}-{os.getpid()}"
        try:
            self.tier.write_bytes(probe, b"nearline can write here")
            if self.tier.read_bytes(probe) != b"nearline can write here":
                raise ConfigError(f"{self.tier.describe(probe)} read back other bytes")
            self.tier.remove(probe)
        except NearlineError as error:
            raise ConfigError(f"cannot keep outputs in {self.url}: {error}") from None

    def location(self, name: str) -> str:
        """The ``s3://`` URL of an output.

        Parameters
        ----------
        name
            The output's name below the archive's prefix.
        """
        return f"{self.url.rstrip('/')}/{name}"

    def holds(self, name: str, size: int) -> bool:
        """Whether an output is published whole already (a retried ingest skips it).

        Parameters
        ----------
        name
            The output's name below the archive's prefix.
        size
            Its bytes, when whole.
        """
        return self.tier.size(name) == size

    def keep(self, path: Path, name: str) -> str:
        """Upload a file as an output, visible only once whole.

        Parameters
        ----------
        path
            The run's output file.
        name
            Its name below the archive's prefix.

        Returns
        -------
        str
            Its ``s3://`` URL.
        """
        self.tier.upload_file(path, name)
        return self.location(name)

    def close(self) -> None:
        """Release the bucket's connections."""
        self.tier.close()

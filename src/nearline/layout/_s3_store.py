"""One S3 bucket as the S3 tier sees it: a boto3 client, object keys checked before use, and
every request retried through an outage, then turned into one typed error.

Credentials come from boto3's usual chain (the AWS_* environment, ``~/.aws``, a named
profile) and go no further than the client: messages name the endpoint and the bucket, and
the error codes the store sent, never a key or the store's own message (a signature mismatch
echoes the string it signed).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from nearline.errors import ArchiveError, ConfigError, ObjectStoreError, ObjectStoreUnreachable
from nearline.layout._paths import is_plain_path

log = logging.getLogger(__name__)
T = TypeVar("T")

OPTIONS = (
    "endpoint_url", "profile", "region_name", "part_size", "max_concurrency",
    "retry_attempts", "retry_seconds",
)  # fmt: skip
_CREDENTIALS = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken"}
_TRANSIENT = {"InternalError", "ServiceUnavailable", "SlowDown", "RequestTimeout", "503", "500"}
_MISSING = {"NoSuchKey", "404", "NotFound"}


@dataclass(frozen=True)
class Retry:
    """A bounded retry: ``attempts`` tries, their waits doubling and adding up to ``seconds``."""

    attempts: int = 6
    seconds: float = 30.0

    def waits(self) -> Iterator[float]:
        """The waits between attempts: 1, 2, 4, 8, 15 s for 6 attempts over 30 s."""
        gaps = max(self.attempts - 1, 0)
        base = self.seconds / max(2**gaps - 1, 1)
        return (base * 2**n for n in range(gaps))


def object_key(prefix: str, name: str, *, listed: bool = False) -> str:
    """The key of ``name`` below ``prefix``; a name with an empty, ``.`` or ``..`` component
    or a leading ``/`` is refused, as the folder tier's restore refuses such paths."""
    if (name or listed) and not is_plain_path(name):
        where = "the bucket lists" if listed else "asked for"
        raise ArchiveError(
            f"object name {name!r} ({where}) is not a plain path below {prefix or 'the bucket'!r}: "
            "it has an empty, '.' or '..' component or starts with '/'; nearline refuses it. "
            "Rename or remove that object, or fix the manifest that names it"
        )
    return "/".join(p for p in (prefix, name) if p)


def _retryable(error: BaseException) -> bool:
    from botocore.exceptions import ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as BotoConnectionError
    from urllib3.exceptions import HTTPError

    if isinstance(error, ClientError):
        code = str(error.response.get("Error", {}).get("Code", ""))
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return code in _TRANSIENT or status >= 500
    network = HTTPClientError | BotoConnectionError | HTTPError | ConnectionError
    return isinstance(error, network)


class Bucket:
    """A bucket at an endpoint: :meth:`call` runs a request with retries and typed errors."""

    def __init__(
        self, bucket: str, *, options: Mapping[str, Any] | None = None, url: str = ""
    ) -> None:
        options = dict(options or {})
        unknown = set(options) - set(OPTIONS)
        if unknown:
            raise ConfigError(
                f"the s3 archive {url} takes the storage options {', '.join(OPTIONS)}, not "
                f"{sorted(unknown)}; credentials come from the AWS_* environment, ~/.aws or "
                "a profile (--profile), the store's address from endpoint_url (--endpoint-url)"
            )
        self.bucket = bucket
        self.max_concurrency = int(options.get("max_concurrency", 10))
        self.retry = Retry(
            int(options.get("retry_attempts", Retry.attempts)),
            float(options.get("retry_seconds", Retry.seconds)),
        )
        self.client = _client(options, self.max_concurrency, url)
        self.endpoint_url: str = self.client.meta.endpoint_url

    def call(self, doing: str, request: Callable[..., T], /, **params: Any) -> T:
        """``request(Bucket=..., **params)``, retried through an outage; ``doing`` says what
        was in flight ("uploading part 3 of s3://b/x.tar") if it fails for good."""
        waits = self.retry.waits()
        began = time.monotonic()
        while True:
            try:
                return request(Bucket=self.bucket, **params)
            except Exception as error:
                if not _retryable(error):
                    raise self.failure(error, doing) from None
                wait = next(waits, None)
                if wait is None:
                    raise ObjectStoreUnreachable(
                        f"the object store at {self.endpoint_url} did not answer while "
                        f"{doing} ({self.retry.attempts} attempts over "
                        f"{time.monotonic() - began:.0f} s; last: {_short(error)}); start it "
                        "or fix --endpoint-url, then run the command again: nothing published "
                        "was lost"
                    ) from None
                log.warning("%s: %s; retrying in %.1f s", doing, _short(error), wait)
                time.sleep(wait)

    def abort_uploads(self, key: str) -> None:
        """Abort the multipart uploads of ``key`` a killed writer left open: invisible, but
        they hold space. Best effort: a store that cannot list them keeps them."""
        with contextlib.suppress(Exception):
            found = self.client.list_multipart_uploads(Bucket=self.bucket, Prefix=key)
            for upload in found.get("Uploads", []):
                if upload["Key"] == key:
                    self.client.abort_multipart_upload(
                        Bucket=self.bucket, Key=key, UploadId=upload["UploadId"]
                    )

    def failure(self, error: Exception, doing: str) -> Exception:
        """A typed error for a request the store refused (FileNotFoundError for no object)."""
        from botocore.exceptions import ClientError, NoCredentialsError

        where = f"bucket {self.bucket!r} at {self.endpoint_url}"
        if isinstance(error, NoCredentialsError):
            return ObjectStoreError(
                f"no credentials for {where} while {doing}: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, or name a profile of ~/.aws with --profile"
            )
        if not isinstance(error, ClientError):
            return ObjectStoreError(f"{doing} in {where} failed: {_short(error)}")
        code = str(error.response.get("Error", {}).get("Code", ""))
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "?")
        if code in _MISSING:
            return FileNotFoundError(f"{doing}: no such object in {where}")
        if code in _CREDENTIALS:
            return ObjectStoreError(
                f"the object store at {self.endpoint_url} refused the credentials for bucket "
                f"{self.bucket!r} ({code}) while {doing}: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY (or --profile) to a key this store knows"
            )
        if code == "NoSuchBucket":
            return ObjectStoreError(
                f"there is no bucket {self.bucket!r} at {self.endpoint_url} (while {doing}): "
                "create it, or fix the bucket in the archive URL or --endpoint-url"
            )
        if code in {"AccessDenied", "AllAccessDisabled"} or status == 403:
            return ObjectStoreError(
                f"the credentials in use may not do this in {where} ({code or status}, while "
                f"{doing}): the bucket is read-only to them; use an identity that may write "
                "(--profile or the AWS_* variables) or ask the store's owner for access"
            )
        return ObjectStoreError(f"{doing} in {where} failed: {code or 'HTTP'} {status}")


def _short(error: BaseException) -> str:
    """An error in a few words, without the store's own message (it may echo signed text)."""
    from botocore.exceptions import ClientError

    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        return f"{code} {error.response.get('ResponseMetadata', {}).get('HTTPStatusCode', '')}"
    return f"{type(error).__name__}: {error}"[:200]


def _client(options: Mapping[str, Any], connections: int, url: str) -> Any:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError

    endpoint = options.get("endpoint_url")
    config = Config(
        retries={"max_attempts": 2, "mode": "standard"},  # our own Retry is the long one
        connect_timeout=5,
        read_timeout=60,
        max_pool_connections=2 * connections + 4,  # parts in flight, and readers beside them
        # an unsigned payload and no CRC32 of every part: each byte's SHA-256 is taken as it
        # is bundled, and the copy is read back and compared before its source goes, which
        # is the stronger check. Signing a payload hashes it twice more (SHA-256 here, and
        # again in the store, which checks it): on plain http, botocore otherwise does so
        s3={"payload_signing_enabled": False} | ({"addressing_style": "path"} if endpoint else {}),
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
    try:
        session = boto3.session.Session(profile_name=options.get("profile"))
        return session.client(
            "s3", endpoint_url=endpoint, region_name=options.get("region_name"), config=config
        )
    except BotoCoreError as error:  # an unknown profile, a malformed endpoint
        raise ConfigError(f"the s3 archive {url} cannot be opened: {error}") from None

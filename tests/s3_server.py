"""A real S3-compatible server for the tests, started once a session: SeaweedFS on
127.0.0.1 (``nearline.testing.s3server``), with a new bucket for each test that asks.

A machine where SeaweedFS is not built fails the tests that need it, loudly, with the command
that builds it (``nearline doctor s3-server``'s): the object-storage tests are part of
``make test``, which builds it first.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from nearline.testing.s3server import S3ServerMissing, SeaweedFS, weed_binary

_buckets = itertools.count()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedFS]:
    """One SeaweedFS for the whole session (per xdist worker)."""
    try:
        weed_binary()
    except S3ServerMissing as error:
        pytest.fail(f"the object-storage tests need a real S3 server: {error}", pytrace=False)
    with SeaweedFS(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server


@pytest.fixture
def s3_bucket(s3_server: SeaweedFS) -> Iterator[str]:
    """A new, empty bucket of the session's server, for this test alone; deleted afterwards,
    which frees its volumes (SeaweedFS gives each bucket its own, and a session that keeps
    every bucket runs out: "No writable volumes and no free volumes left")."""
    bucket = s3_server.make_bucket(f"test-{next(_buckets)}")
    yield bucket
    s3_server.empty_bucket(bucket)
    s3_server.client().delete_bucket(Bucket=bucket)

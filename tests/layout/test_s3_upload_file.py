"""``S3Tier.upload_file`` against a real S3 server (its own SeaweedFS, which the tests kill):
a file comes back byte for byte, and one that changes or loses its server midway leaves
nothing visible under its name."""

from __future__ import annotations

import hashlib
import os
import threading
import time

import pytest

from nearline.errors import ArchiveError, ObjectStoreError
from nearline.layout import S3Tier
from nearline.testing.s3server import SeaweedFS

MiB = 1024**2
FAST_FAIL = {"retry_attempts": 2, "retry_seconds": 0.5, "part_size": "5MiB"}


@pytest.fixture
def own_server(tmp_path, monkeypatch):
    """A SeaweedFS of this test alone (killed by it), with a bucket; its credentials set."""
    with SeaweedFS(tmp_path / "seaweedfs") as server:
        server.make_bucket("uploads")
        for name, value in server.credentials().items():
            monkeypatch.setenv(name, value)
        yield server


def random_file(path, size: int) -> str:
    data = os.urandom(size)
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def when_upload_starts(server: SeaweedFS, action) -> threading.Thread:
    """Run ``action`` (in a thread) as soon as a multipart upload is open on the server."""

    def watch() -> None:
        client = server.client()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if client.list_multipart_uploads(Bucket="uploads").get("Uploads"):
                action()
                return
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def test_a_file_uploads_and_comes_back_byte_for_byte(own_server, tmp_path):
    tier = S3Tier.from_url("s3://uploads/out", storage_options={"part_size": "5MiB"})
    for size in (0, 1000, 12 * MiB + 7):  # one put, one put, three parts
        digest = random_file(tmp_path / "f.dat", size)
        tier.upload_file(tmp_path / "f.dat", f"job/{size}.dat")
        assert tier.size(f"job/{size}.dat") == size
        assert tier.sha256_of(f"job/{size}.dat") == digest
        back = tier.download_file(f"job/{size}.dat", tmp_path / f"back-{size}.dat")
        assert hashlib.sha256(back.read_bytes()).hexdigest() == digest
    assert tier.list("job") == ["0.dat", "1000.dat", f"{12 * MiB + 7}.dat"]
    tier.close()


def test_a_file_truncated_midway_is_not_published(own_server, tmp_path):
    tier = S3Tier.from_url("s3://uploads/out", storage_options=FAST_FAIL)
    path = tmp_path / "big.dat"
    random_file(path, 120 * MiB)  # ten 5 MiB parts in flight are 50 MiB: it cannot be read yet
    watcher = when_upload_starts(own_server, lambda: os.truncate(path, MiB))
    with pytest.raises(ArchiveError, match=r"big\.dat changed while it was uploaded.*nothing"):
        tier.upload_file(path, "job/big.dat")
    watcher.join()
    assert tier.size("job/big.dat") is None
    assert tier.list("job") == []
    uploads = own_server.client().list_multipart_uploads(Bucket="uploads")
    assert uploads.get("Uploads", []) == []  # its parts went too
    tier.close()


def test_a_server_killed_midway_leaves_nothing_visible(own_server, tmp_path):
    tier = S3Tier.from_url("s3://uploads/out", storage_options=FAST_FAIL)
    path = tmp_path / "big.dat"
    random_file(path, 120 * MiB)
    watcher = when_upload_starts(own_server, own_server.kill)
    with pytest.raises(ObjectStoreError, match=own_server.endpoint_url):
        tier.upload_file(path, "job/big.dat")
    watcher.join()
    own_server.start()  # the same folder and ports: everything it had
    assert tier.size("job/big.dat") is None
    assert tier.list("job") == []
    digest = random_file(path, 6 * MiB)  # and the store takes the next upload whole
    tier.upload_file(path, "job/big.dat")
    assert tier.sha256_of("job/big.dat") == digest
    tier.close()

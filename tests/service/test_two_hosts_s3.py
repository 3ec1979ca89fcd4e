"""Two `nearline serve` processes that share nothing but one PostgreSQL database and one S3
bucket (SeaweedFS): two data folders, inputs and outputs in the bucket. An order taken by
either is run by one of them and downloadable from both (redirect followed, and streamed); a
server killed with kill -9 while it uploads an output leaves no partial object in sight, and
its run is taken over by the other, which runs it again (its outputs went with the host)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import psycopg
import pytest

from nearline.testing.s3server import SeaweedFS

from ..live_service import LiveService
from ..postgres_server import PostgresServer
from .conftest import deploy
from .granules import add_granules
from .test_quotas import order
from .test_s3_archive import uploader

BIG = 300 * 1024**2  # an output whose upload takes long enough to be caught in the act


def spewed(size: int) -> bytes:
    """What the spewer package writes for ``size`` bytes."""
    mib = 1 << 20
    pieces = [
        start.to_bytes(8, "little") * ((min(size - start, mib) + 7) // 8)
        for start in range(0, size, mib)
    ]
    return b"".join(pieces)[:size]


def fetched(live: LiveService, user: str, job: str) -> list[bytes]:
    """Each output of ``job`` from ``live``: by its redirect, followed by a plain client
    (the presigned URL carries no token), and streamed; the two must agree."""
    bodies = []
    with live.client(user) as client:
        for links in client.get(f"/jobs/{job}/results").json().values():
            for link in links:
                redirect = client.get(link["href"])
                assert redirect.status_code == 307, redirect.text
                body = httpx.get(redirect.headers["location"], timeout=60).content
                streamed = client.get(link["href"], params={"redirect": "false"})
                assert streamed.status_code == 200
                assert streamed.content == body
                bodies.append(body)
    return bodies


def holders(url: str) -> dict[str, tuple[str, str]]:
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT id, station, server FROM runs").fetchall()
    return {id: (station, server or "") for id, station, server in rows}


@pytest.fixture
def hosts(
    tmp_path: Path, postgres_server: PostgresServer, s3_server: SeaweedFS, s3_bucket, monkeypatch
):
    for name, value in s3_server.credentials().items():
        monkeypatch.setenv(name, value)
    url = postgres_server.new_database("hosts")
    one = LiveService(tmp_path / "one", db=url)
    two = LiveService(tmp_path / "two", db=url)
    add_granules(one.data, 3, keep=uploader(s3_server, s3_bucket))
    one.add_user("alice")
    one.add_user("bob")
    two.tokens = one.tokens
    archive = f"s3://{s3_bucket}/archive"
    one.start("--cpus", "2", "--archive", archive)
    two.start("--cpus", "2", "--archive", archive)
    try:
        yield one, two, url
    finally:
        one.stop()
        two.stop()


def test_an_order_taken_by_either_host_is_downloadable_from_both(hosts, tmp_path: Path) -> None:
    one, two, _ = hosts
    deploy(one, "alice", "spewer")
    jobs = [
        order(server, "alice", "spewer", [f"granule-00{n}"], bytes=(n + 1) * 3_000_000)
        for n, server in enumerate((one, two))
    ]
    for n, job in enumerate(jobs):
        assert two.wait_for_job("alice", job, timeout=180)["status"] == "successful"
        for server in (one, two):
            assert fetched(server, "alice", job) == [spewed((n + 1) * 3_000_000)]
    assert not list(tmp_path.glob("*/archive/outputs"))  # neither host keeps them itself
    with two.client("bob") as client, one.client("alice") as owner:
        href = owner.get(f"/jobs/{jobs[0]}/results").json()["big"][0]["href"]
        assert client.get(href).status_code == 404


def test_a_host_killed_mid_upload_leaves_no_partial_output_and_its_run_is_taken_over(
    hosts, s3_server: SeaweedFS, s3_bucket: str
) -> None:
    one, two, url = hosts
    deploy(one, "alice", "spewer")
    job = order(one, "alice", "spewer", ["granule-002"], bytes=BIG)
    s3 = s3_server.client()
    deadline, uploading = time.monotonic() + 180, []
    while time.monotonic() < deadline and not uploading:
        uploading = s3.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", [])
        time.sleep(0.02)
    assert uploading, "the output's upload was never seen under way"
    (station, server), *_ = holders(url).values()
    assert station == "ingest"
    uploader_pid = int(server.split(":")[1])
    killed, survivor = (one, two) if uploader_pid == one.process.pid else (two, one)
    killed.kill()
    key = uploading[0]["Key"]
    assert key.endswith("/big.bin")
    listed = s3.list_objects_v2(Bucket=s3_bucket, Prefix="archive/outputs/").get("Contents", [])
    assert [entry["Size"] for entry in listed if entry["Size"] != BIG] == []  # none partial
    status = survivor.wait_for_job("alice", job, timeout=300)
    assert status["status"] == "successful", status
    (run,) = status["nearline:runs"]
    assert run["attempts"] == 1  # taken over once, and run again by the survivor
    assert fetched(survivor, "alice", job) == [spewed(BIG)]

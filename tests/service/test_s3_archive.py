"""`nearline serve --archive s3://bucket/prefix` against a real S3 server (SeaweedFS): inputs
that lie in the bucket are staged into the run, checked, and the run never sees a credential;
outputs are kept in the bucket; a download is a redirect to a presigned URL, or the bytes
streamed on request; a bad key, a missing bucket or a read-only one is one line at the start;
a store that stops while a run stages fails it with one line, and loses nothing."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from nearline.testing.s3server import READER, SeaweedFS

from ..live_service import LiveService
from .conftest import deploy
from .granules import add_granules
from .test_quotas import order

SECRET = "nearline-admin-secret"  # the admin identity's secret key


def uploader(server: SeaweedFS, bucket: str):
    """Puts a file in ``bucket`` under granules/ and gives its s3:// URL."""
    s3 = server.client()

    def keep(path: Path) -> str:
        s3.upload_file(str(path), bucket, f"granules/{path.name}")
        path.unlink()  # it lies in the bucket alone
        return f"s3://{bucket}/granules/{path.name}"

    return keep


def download(live: LiveService, user: str, job: str, **params) -> dict[str, httpx.Response]:
    """Each output of ``job``: GET of its asset, redirects not followed."""
    found = {}
    with live.client(user) as client:
        results = client.get(f"/jobs/{job}/results").json()
        for links in results.values():
            for link in links:
                found[link["title"]] = client.get(link["href"], params=params)
    return found


@pytest.fixture
def served(tmp_path: Path, s3_server: SeaweedFS, s3_bucket: str, monkeypatch):
    """A service whose granules and outputs lie in the bucket; its credentials in its
    environment, as an operator's would be."""
    for name, value in s3_server.credentials().items():
        monkeypatch.setenv(name, value)
    live = LiveService(tmp_path / "data")
    add_granules(live.data, 3, keep=uploader(s3_server, s3_bucket))
    live.add_user("alice")
    live.add_user("bob")
    live.start("--cpus", "2", "--archive", f"s3://{s3_bucket}/archive")
    try:
        yield live
    finally:
        live.stop()


def test_outputs_in_the_bucket_redirected_or_streamed_and_no_credential_reaches_a_run(
    served: LiveService, s3_server: SeaweedFS, s3_bucket: str
) -> None:
    deploy(served, "alice", "snoop")
    job = order(served, "alice", "snoop", ["granule-000", "granule-001"])
    status = served.wait_for_job("alice", job, timeout=120)
    assert status["status"] == "successful", status
    s3 = s3_server.client()
    kept = [e["Key"] for e in s3.list_objects_v2(Bucket=s3_bucket, Prefix="archive/")["Contents"]]
    assert sorted(key.rpartition("/")[2] for key in kept) == [
        "copy-granule-000.dat",
        "copy-granule-001.dat",
        "seen.txt",
    ]
    assert all(key.startswith("archive/outputs/snoop/") for key in kept)
    assert not (served.data / "archive" / "outputs").exists()  # nothing kept on this host
    redirects = download(served, "alice", job)
    streamed = download(served, "alice", job, redirect="false")
    for name, answer in redirects.items():
        assert answer.status_code == 307
        link = answer.headers["location"]
        assert link.startswith(s3_server.endpoint_url)
        assert "Signature=" in link  # presigned: the key id, never the secret
        assert SECRET not in link
        assert httpx.get(link).content == streamed[name].content  # no credentials asked
        assert streamed[name].status_code == 200
    with served.client("alice") as client:
        items = client.get("/search", params={"collections": "snoop", "limit": 10}).json()
    for item in items["features"]:
        data = item["assets"]["data"]
        body = streamed[data["title"]].content
        assert hashlib.sha256(body).hexdigest() == data["file:checksum"][4:]  # multihash
    # the inputs were staged whole and checked: the run's copies are the granules' bytes
    seen = streamed["seen.txt"].text
    for n in (0, 1):
        payload = bytes([n]) * (1000 + 37 * n)
        assert streamed[f"copy-granule-{n:03d}.dat"].content == payload
        assert f"input granule-{n:03d}.dat {hashlib.sha256(payload).hexdigest()}" in seen
    assert "env NEARLINE_JOB=" in seen  # the dump is complete: its environment is there
    assert "job.json " in seen
    with served.client("alice") as client:
        logs = client.get(f"/jobs/{job}/logs").text
    for text in (seen, logs):
        assert SECRET not in text
        assert "nearline-admin" not in text  # nor the access key
        assert "AWS_" not in text
    # ownership first: bob's answer is a 404, with no link in it
    with served.client("alice") as client:
        href = client.get(f"/jobs/{job}/results").json()["seen"][0]["href"]
    with served.client("bob") as client:
        refused = client.get(href)
    assert refused.status_code == 404
    assert "location" not in refused.headers
    # deleting the job's results deletes them from the bucket
    with served.client("alice") as client:
        assert client.delete(f"/jobs/{job}").status_code == 200
    assert "Contents" not in s3.list_objects_v2(Bucket=s3_bucket, Prefix="archive/outputs/")


def serve_fails(tmp_path: Path, env: dict[str, str], archive: str) -> str:
    """The one line `nearline serve --archive` fails with."""
    command = [sys.executable, "-m", "nearline", "serve", "--port", "0", "--data",
               str(tmp_path / "data"), "--archive", archive]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("nearline: error: cannot keep outputs in ")
    return line


def test_a_wrong_key_a_missing_bucket_or_a_read_only_one_is_one_line_at_the_start(
    tmp_path: Path, s3_server: SeaweedFS, s3_bucket: str
) -> None:
    import os

    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    wrong = {**base, **s3_server.credentials(), "AWS_SECRET_ACCESS_KEY": "not-the-secret"}
    line = serve_fails(tmp_path, wrong, f"s3://{s3_bucket}/archive")
    assert s3_server.endpoint_url in line
    assert "not-the-secret" not in line
    missing = serve_fails(tmp_path, {**base, **s3_server.credentials()}, "s3://nobucket/a")
    assert "nobucket" in missing
    reader = serve_fails(tmp_path, {**base, **s3_server.credentials(READER)}, f"s3://{s3_bucket}/a")
    assert s3_bucket in reader


def test_a_store_that_stops_while_a_run_stages_fails_it_in_one_line_and_loses_nothing(
    served: LiveService, s3_server: SeaweedFS, s3_bucket: str
) -> None:
    deploy(served, "alice", "sleeper")
    s3_server.stop()
    try:
        job = order(served, "alice", "sleeper", ["granule-002"], seconds=0)
        status = served.wait_for_job("alice", job, timeout=180)
    finally:
        s3_server.start()
    assert status["status"] == "failed"
    (run,) = status["nearline:runs"]
    message = run["message"]
    assert "station stage" in message
    assert s3_server.endpoint_url in message
    assert "granules/granule-002.dat" in message  # what was in flight
    assert "\n" not in message
    again = order(served, "alice", "sleeper", ["granule-002"], seconds=0)
    assert served.wait_for_job("alice", again, timeout=120)["status"] == "successful"

"""``nearline migrate`` and ``nearline restore`` on a real S3 server, as a user runs them:
killed with SIGKILL mid-upload, the server killed under them, wrong keys, a missing bucket, a
read-only identity, credentials from a profile. Real processes, a real server."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from nearline.testing.s3server import ADMIN, READER, SeaweedFS
from tests.layout.s3_sets import keys, make_sets, shas_below

MiB = 1024**2
NEARLINE = [str(Path(sys.executable).parent / "nearline")]
BIG = {(0, "dyn"): [24 * MiB, 9 * MiB], (1, "dyn"): [30 * MiB], (2, "phy"): [20 * MiB, 5]}


def nearline(*args: str, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*NEARLINE, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def user_env(server: SeaweedFS, identity=ADMIN) -> dict[str, str]:
    """A shell with this identity's keys, and the endpoint given on the command line only."""
    env = {**os.environ, **server.credentials(identity)}
    del env["AWS_ENDPOINT_URL"]
    return env


def one_error_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("nearline: error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def uploading(server: SeaweedFS, bucket: str) -> bool:
    return bool(server.client().list_multipart_uploads(Bucket=bucket).get("Uploads"))


def wait_for(condition, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def visible_bundles_are_whole(server: SeaweedFS, bucket: str, expected: dict[str, str]) -> int:
    """Every tar a client can see holds each of its members whole; how many there are."""
    client = server.client()
    tars = [key for key in keys(server, bucket) if key.endswith(".tar")]
    for key in tars:
        data = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        with tarfile.open(fileobj=io.BytesIO(data)) as bundle:
            members = bundle.getmembers()
            assert members
            for member in members:
                path = f"{key.split('/')[1]}/{member.name}"
                content = bundle.extractfile(member).read()
                assert len(content) == member.size
                assert path in expected
    assert not [key for key in keys(server, bucket) if "partial" in key]
    return len(tars)


def archived_paths(server: SeaweedFS, bucket: str) -> set[str]:
    """Member paths of the sets whose manifest is on the archive (verified)."""
    client, found = server.client(), set()
    for key in keys(server, bucket):
        if key.endswith(".manifest.json"):
            manifest = json.loads(client.get_object(Bucket=bucket, Key=key)["Body"].read())
            found |= {f"{manifest['folder']}/{e['path']}" for e in manifest["entries"]}
    return found


def test_migrate_and_restore_from_the_command_line(s3_server, s3_bucket, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    expected = make_sets(tmp_path / "out", {(0, "dyn"): [3 * MiB, 10], (1, "phy"): [100]})
    url, env = f"s3://{s3_bucket}/run42", user_env(s3_server)
    endpoint = ["--endpoint-url", s3_server.endpoint_url]
    migrated = nearline("migrate", "out", url, "--watch", "--max-sets", "2", *endpoint, env=env)
    assert migrated.returncode == 0, migrated.stderr
    assert f"archived 2 sets (3 files, 3.0 MiB): {url}" in migrated.stdout
    restored = nearline("restore", url, "back", *endpoint, env=env)
    assert restored.returncode == 0, restored.stderr
    assert shas_below(tmp_path / "back") == expected


def test_a_migrate_killed_mid_upload_loses_nothing_and_shows_no_partial_object(
    s3_server, s3_bucket, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    expected = make_sets(tmp_path / "out", BIG)
    url, env = f"s3://{s3_bucket}/run", user_env(s3_server)
    command = [*NEARLINE, "migrate", "out", url, "--endpoint-url", s3_server.endpoint_url]
    killed = 0
    for delay in (0.0, 0.3, 0.8, 1.5):
        with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL) as process:
            wait_for(lambda p=process: uploading(s3_server, s3_bucket) or p.poll() is not None)
            time.sleep(delay)
            process.send_signal(signal.SIGKILL)
            killed += process.wait() == -signal.SIGKILL
        visible_bundles_are_whole(s3_server, s3_bucket, expected)
        assert set(shas_below(tmp_path / "out")) | archived_paths(s3_server, s3_bucket) >= set(
            expected
        ), "a file is neither in the source nor archived"
    assert killed >= 3
    finished = nearline("migrate", "out", url, "--endpoint-url", s3_server.endpoint_url, env=env)
    assert finished.returncode == 0, finished.stderr
    assert shas_below(tmp_path / "out") == {}
    assert visible_bundles_are_whole(s3_server, s3_bucket, expected) == 3
    assert not uploading(s3_server, s3_bucket)  # the killed runs' uploads were aborted
    restored = nearline("restore", url, "back", "--endpoint-url", s3_server.endpoint_url, env=env)
    assert restored.returncode == 0, restored.stderr
    assert shas_below(tmp_path / "back") == expected


def test_the_store_going_away_fails_in_one_line_and_a_rerun_finishes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    expected = make_sets(tmp_path / "out", BIG)
    with SeaweedFS(tmp_path / "s3") as server:
        server.make_bucket("archive")
        url, env = "s3://archive/run", user_env(server)
        retry = ["--storage-option", "retry_attempts=4", "--storage-option", "retry_seconds=6"]
        command = [*NEARLINE, "migrate", "out", url, "--endpoint-url", server.endpoint_url, *retry]
        with subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ) as process:
            wait_for(lambda: uploading(server, "archive"))
            server.kill()
            stdout, stderr = process.communicate(timeout=120)
        result = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
        line = one_error_line(result)
        assert f"the object store at {server.endpoint_url} did not answer while" in line
        assert "of s3://archive/run/" in line  # what was in flight

        server.start()
        assert set(shas_below(tmp_path / "out")) | archived_paths(server, "archive") >= set(
            expected
        ), "a file is neither in the source nor archived"
        visible_bundles_are_whole(server, "archive", expected)
        finished = nearline("migrate", "out", url, "--endpoint-url", server.endpoint_url, env=env)
        assert finished.returncode == 0, finished.stderr
        assert shas_below(tmp_path / "out") == {}
        restored = nearline("restore", url, "back", "--endpoint-url", server.endpoint_url, env=env)
        assert restored.returncode == 0, restored.stderr
        assert shas_below(tmp_path / "back") == expected


def test_a_wrong_key_a_missing_bucket_and_a_read_only_bucket_each_say_so_in_one_line(
    s3_server, s3_bucket, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    expected = make_sets(tmp_path / "out", {(0, "dyn"): [1000]})
    endpoint = ["--endpoint-url", s3_server.endpoint_url]
    wrong = {**user_env(s3_server), "AWS_SECRET_ACCESS_KEY": "not-the-secret"}
    cases = {
        "wrong key": (
            nearline("migrate", "out", f"s3://{s3_bucket}/r", *endpoint, env=wrong),
            "refused the credentials for bucket",
        ),
        "missing bucket": (
            nearline("migrate", "out", "s3://no-such-bucket/r", *endpoint, env=user_env(s3_server)),
            "there is no bucket 'no-such-bucket' at",
        ),
        "read-only": (
            nearline(
                "migrate", "out", f"s3://{s3_bucket}/r", *endpoint, env=user_env(s3_server, READER)
            ),
            "the bucket is read-only to them",
        ),
        "restore with a wrong key": (
            nearline("restore", f"s3://{s3_bucket}/r", "back", *endpoint, env=wrong),
            "refused the credentials for bucket",
        ),
    }
    for name, (result, says) in cases.items():
        line = one_error_line(result)
        assert says in line, name
        assert s3_server.endpoint_url in line, name
        assert "secret" not in result.stderr + result.stdout, name
    assert shas_below(tmp_path / "out") == expected  # nothing lost


def test_credentials_come_from_a_profile_and_are_never_shown_or_stored(
    s3_server, s3_bucket, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    credentials = home / ".aws" / "credentials"
    credentials.write_text(
        f"[archive]\naws_access_key_id = {ADMIN.access_key}\n"
        f"aws_secret_access_key = {ADMIN.secret_key}\n"
    )
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("AWS_") or key == "AWS_CONFIG_FILE"
    }
    env |= {"HOME": str(home), "AWS_SHARED_CREDENTIALS_FILE": str(credentials)}
    make_sets(tmp_path / "out", {(0, "dyn"): [2 * MiB]})
    options = ["--endpoint-url", s3_server.endpoint_url, "--profile", "archive"]
    url = f"s3://{s3_bucket}/r"
    migrated = nearline("migrate", "out", url, *options, env=env)
    assert migrated.returncode == 0, migrated.stderr
    restored = nearline("restore", url, "back", *options, env=env)
    assert restored.returncode == 0, restored.stderr
    without = nearline("restore", url, "back2", "--endpoint-url", s3_server.endpoint_url, env=env)
    assert "no credentials for bucket" in one_error_line(without)
    shown = migrated.stdout + migrated.stderr + restored.stdout + restored.stderr + without.stderr
    client = s3_server.client()
    stored = b"".join(
        client.get_object(Bucket=s3_bucket, Key=key)["Body"].read()
        for key in keys(s3_server, s3_bucket)
        if key.endswith(".json")
    )
    for secret in (ADMIN.secret_key, ADMIN.access_key):
        assert secret not in shown
        assert secret.encode() not in stored
        assert secret not in (tmp_path / "out" / ".nearline-migrate.sqlite").read_bytes().decode(
            "latin-1"
        )

"""`nearline ingest s3://bucket/prefix/` against a real S3 server (SeaweedFS): granules are
catalogued where they lie, each item equal to a local ingest's of the same file (time,
footprint, size, SHA-256) but for its href; a wrong key or a missing bucket is one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nearline.archive import Search, ingest_bucket, open_catalogue
from nearline.swath import synthesize_day, synthesize_modis_day
from nearline.testing.s3server import READER, SeaweedFS

PREFIX = "granules/2012/347"


@pytest.fixture(scope="module")
def granules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two short AVHRR orbits (netCDF-4: read by ranged reads) and a MODIS granule (HDF4:
    copied to scratch to be read), in one folder."""
    folder = tmp_path_factory.mktemp("granules")
    synthesize_day("2012-12-12", 2, folder, lines_per_orbit=900)
    (modis,) = synthesize_modis_day("MOD05_L2", "2012-12-12", 1, folder / "m", first=110, scans=8)
    shutil.move(modis, folder / modis.name)
    (folder / "m").rmdir()
    return folder


def upload(server: SeaweedFS, bucket: str, folder: Path) -> None:
    s3 = server.client()
    for path in sorted(folder.iterdir()):
        s3.upload_file(str(path), bucket, f"{PREFIX}/{path.name}")
    s3.put_object(Bucket=bucket, Key=f"{PREFIX}/.half-written.partial", Body=b"not yet")


def ingest(
    *args: str, data: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "nearline", "ingest", *args, "--data", str(data)]
    environment = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        command, capture_output=True, text=True, env=environment, timeout=300, check=False
    )


def items_of(data: Path, collection: str) -> dict:
    with open_catalogue(None, data / "catalogue.db") as catalogue:
        page = catalogue.search(Search(collections=(collection,), limit=100))
    return {item.id: item for item in page.items}


def test_granules_in_a_bucket_are_catalogued_where_they_lie_as_a_local_ingest_would(
    granules: Path, s3_server: SeaweedFS, s3_bucket: str, tmp_path: Path
) -> None:
    upload(s3_server, s3_bucket, granules)
    data = tmp_path / "data"
    # read-only credentials are enough; the endpoint from --endpoint-url, not the environment
    reader = {**s3_server.credentials(READER), "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}
    url = f"s3://{s3_bucket}/{PREFIX}/"
    done = ingest(url, "--collection", "remote", "--endpoint-url", s3_server.endpoint_url,
                  data=data, env=reader)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ingested 3 granules")
    local = ingest(str(granules), "--collection", "local", data=data)
    assert local.returncode == 0, local.stderr
    remote, here = items_of(data, "remote"), items_of(data, "local")
    assert sorted(remote) == sorted(here) == sorted(p.name for p in granules.iterdir())
    readers = set()
    for name, item in remote.items():
        twin = here[name]
        assert (item.start, item.end, item.bbox) == (twin.start, twin.end, twin.bbox)
        assert item.geometry == twin.geometry
        assert item.properties == twin.properties
        asset, original = item.assets["data"], twin.assets["data"]
        assert asset.location == f"s3://{s3_bucket}/{PREFIX}/{name}"
        assert (asset.size, asset.sha256, asset.media_type) == (
            original.size,
            original.sha256,
            original.media_type,
        )
        assert asset.size == (granules / name).stat().st_size
        readers.add(item.properties["nearline:reader"])
    assert readers == {"nearline-avhrr", "modis-l2"}  # ranged reads, and a copy to scratch


def test_objects_too_large_to_hold_are_read_by_ranges_or_a_copy_to_the_same_items(
    granules: Path, s3_server: SeaweedFS, s3_bucket: str, tmp_path: Path
) -> None:
    """An object above ``ranged_above`` is not held in memory: netCDF-4 is described by ranged
    reads and HDF4 streamed to scratch through SHA-256; both give the items an object held in
    memory gives, and scratch is left empty."""
    upload(s3_server, s3_bucket, granules)
    options = {"endpoint_url": s3_server.endpoint_url}
    url = f"s3://{s3_bucket}/{PREFIX}"
    found = {}
    for name, ranged_above in (("whole", 2**40), ("ranged", 0)):
        scratch = tmp_path / name
        scratch.mkdir()
        with (
            pytest.MonkeyPatch.context() as patch,
            open_catalogue(None, tmp_path / f"{name}.db") as catalogue,
        ):
            for key, value in s3_server.credentials().items():
                patch.setenv(key, value)
            report = ingest_bucket(
                catalogue, url, collection=name, storage_options=options, scratch=scratch,
                ranged_above=ranged_above,
            )  # fmt: skip
        assert list(scratch.iterdir()) == []
        found[name] = {item.id: (item.bbox, item.geometry, item.assets) for item in report.items}
    assert found["whole"] == found["ranged"]
    assert sorted(found["whole"]) == sorted(p.name for p in granules.iterdir())
    for name, (_, _, assets) in found["ranged"].items():
        assert assets["data"].size == (granules / name).stat().st_size


def test_a_wrong_key_and_a_missing_bucket_are_one_line_each(
    s3_server: SeaweedFS, s3_bucket: str, tmp_path: Path
) -> None:
    s3_server.client().put_object(Bucket=s3_bucket, Key="g/one.nc", Body=b"x")
    wrong = {**s3_server.credentials(), "AWS_SECRET_ACCESS_KEY": "not-the-secret"}
    refused = ingest(f"s3://{s3_bucket}/g/", "--collection", "c", data=tmp_path, env=wrong)
    assert refused.returncode == 2
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("nearline: error: ")
    assert s3_server.endpoint_url in line
    assert "refused the credentials" in line
    assert "AWS_SECRET_ACCESS_KEY" in line  # the fix: the variables (or --profile) to set
    assert "not-the-secret" not in line
    missing = ingest(
        "s3://no-such-bucket/g/", "--collection", "c", data=tmp_path, env=s3_server.credentials()
    )
    assert missing.returncode == 2
    (line,) = missing.stderr.strip().splitlines()
    assert "there is no bucket 'no-such-bucket'" in line
    empty = ingest(
        f"s3://{s3_bucket}/none/", "--collection", "c", data=tmp_path, env=s3_server.credentials()
    )
    assert empty.returncode == 2
    (line,) = empty.stderr.strip().splitlines()
    assert "holds no objects" in line
    with open_catalogue(None, tmp_path / "catalogue.db") as catalogue:
        assert catalogue.count("c") == 0

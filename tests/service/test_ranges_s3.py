"""Ranges through the S3 archive's presigned redirect, against a real S3 server (SeaweedFS):
the client re-sends its Range to the presigned URL and the store answers 206 with those bytes
alone; HEAD is answered by the service (a presigned URL is signed for GET only); and real
clients read a netCDF4 granule lying in the bucket by ranges: xarray through fsspec's HTTP
file system, GDAL's /vsicurl/, and the kerchunk references, whose chunk URLs are the
service's and redirect to the store."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import fsspec
import numpy as np
import orjson
import pytest
import xarray as xr

from nearline.testing.s3server import SeaweedFS

from ..live_service import LiveService
from .access_log import asset_url, token_headers
from .composites import catalogue_netcdf, made_day, seen_window

COLLECTION = "bucket-orbits"


@pytest.fixture(scope="module")
def granule(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return made_day(tmp_path_factory)[0]


@pytest.fixture
def served(
    tmp_path: Path, s3_server: SeaweedFS, s3_bucket: str, granule: Path, monkeypatch
) -> Iterator[LiveService]:
    """A service with one netCDF4 granule in the bucket, its credentials in its environment."""
    for name, value in s3_server.credentials().items():
        monkeypatch.setenv(name, value)
    live = LiveService(tmp_path / "data")
    key = f"granules/{granule.name}"
    s3_server.client().upload_file(str(granule), s3_bucket, key)
    live.data.mkdir(parents=True)
    location = f"s3://{s3_bucket}/{key}"
    catalogue_netcdf(live.data, granule, collection=COLLECTION, owner=None, location=location)
    live.add_user("alice")
    live.start("--cpus", "2", "--log-format", "json")
    try:
        yield live
    finally:
        live.stop()


def test_a_range_survives_the_redirect_and_the_store_answers_206(served, s3_server, granule):
    url = asset_url(served, "alice", COLLECTION, granule.name, "data")
    payload = granule.read_bytes()
    with served.client("alice", follow_redirects=True) as client:
        ranged = client.get(url, headers={"Range": "bytes=1000-1999"})
        several = client.get(url, headers={"Range": "bytes=0-7, 4096-4103"})
        head = client.head(url)
        same = client.get(url, headers={"Range": "bytes=0-7", "If-Range": head.headers["ETag"]})
        stale = client.get(url, headers={"Range": "bytes=0-7", "If-Range": '"other-bytes"'})
    (redirect,) = ranged.history
    assert redirect.status_code == 307
    assert redirect.headers["Location"].startswith(s3_server.endpoint_url)
    assert str(ranged.url).startswith(s3_server.endpoint_url)  # answered by the store
    assert ranged.status_code == 206
    assert ranged.headers["Content-Range"] == f"bytes 1000-1999/{len(payload)}"
    assert ranged.content == payload[1000:2000]
    assert "authorization" not in ranged.request.headers  # the token stayed with the service
    assert (several.status_code, several.content) == (200, payload)  # SeaweedFS: the whole
    assert [answer.status_code for answer in same.history] == [307]  # the ETag holds: redirected
    assert (same.status_code, same.content) == (206, payload[:8])
    assert stale.history == []  # other bytes than the client's: the service sends them all
    assert (stale.status_code, stale.content) == (200, payload)
    assert head.history == []  # the service answers HEAD itself
    assert head.status_code == 200
    assert int(head.headers["Content-Length"]) == len(payload)
    assert head.headers["ETag"] == f'"{hashlib.sha256(payload).hexdigest()}"'
    assert head.headers["Accept-Ranges"] == "bytes"


def test_xarray_gdal_and_references_read_a_granule_in_the_bucket(served, granule):
    url = asset_url(served, "alice", COLLECTION, granule.name, "data")
    headers = token_headers(served, "alice", "bucket-reads")
    window = seen_window(granule, "latitude", (64, 16))
    with xr.open_dataset(granule) as local:
        expected = local["latitude"][window].values
    http = fsspec.filesystem("http", headers=headers)
    with (
        http.open(url, block_size=2**14, cache_type="blockcache") as remote,
        xr.open_dataset(remote, engine="h5netcdf") as dataset,
    ):
        np.testing.assert_array_equal(dataset["latitude"][window].values, expected)
    references = orjson.loads(http.cat_file(url.removesuffix("/data") + "/references"))
    assert {ref[0] for ref in references["refs"].values() if isinstance(ref, list)} == {url}
    with xr.open_dataset(
        references,
        engine="kerchunk",
        storage_options={"remote_protocol": "http", "remote_options": {"headers": headers}},
    ) as virtual:
        np.testing.assert_array_equal(virtual["latitude"][window].values, expected)
    env = {
        **os.environ,
        "GDAL_HTTP_HEADERS": "\r\n".join(f"{name}: {value}" for name, value in headers.items()),
        "GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR",
    }
    shown = subprocess.run(
        ["gdalinfo", f"/vsicurl/{url}"], capture_output=True, text=True, env=env, timeout=120
    )
    assert shown.returncode == 0, shown.stderr
    assert "latitude" in shown.stdout


def test_a_streamed_download_answers_one_range_and_if_range(served, granule):
    url = asset_url(served, "alice", COLLECTION, granule.name, "data")
    payload = granule.read_bytes()
    etag = f'"{hashlib.sha256(payload).hexdigest()}"'
    stream = {"redirect": "false"}
    with served.client("alice") as client:
        whole = client.get(url, params=stream)
        ranged = client.get(url, params=stream, headers={"Range": "bytes=-100", "If-Range": etag})
        stale = client.get(url, params=stream, headers={"Range": "bytes=0-9", "If-Range": '"x"'})
        beyond = client.get(url, params=stream, headers={"Range": "bytes=999999999-"})
        malformed = client.get(url, params=stream, headers={"Range": "bytes=9-1"})
    assert (whole.status_code, whole.headers["ETag"]) == (200, etag)
    assert whole.content == payload
    assert ranged.status_code == 206
    size = len(payload)
    assert ranged.headers["Content-Range"] == f"bytes {size - 100}-{size - 1}/{size}"
    assert ranged.content == payload[-100:]
    assert (stale.status_code, stale.content) == (200, payload)
    assert (beyond.status_code, beyond.headers["Content-Range"]) == (416, f"bytes */{size}")
    assert malformed.status_code == 400

"""Reading part of an asset, as the field's clients do, against a live server: HEAD, ranges
and If-Range on the download; GDAL's /vsicurl/ reading a composite's metadata and xarray
reading a slice of it through fsspec's HTTP file system, each under a byte budget counted
from the server's own access lines; and bad ranges, none of which is a 500.
(the composite and its orbits: composites.py)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from email.parser import BytesParser

import fsspec
import numpy as np
import pytest
import xarray as xr

from ..live_service import LiveService
from . import composites
from .access_log import asset_url, bytes_sent, ranged, token_headers
from .composites import COMPOSITE, seen_window

day, composite_file, live = composites.day, composites.composite_file, composites.live  # fixtures


@pytest.fixture(scope="module")
def composite_url(live: LiveService) -> str:
    return asset_url(live, "alice", "pathfinder", COMPOSITE, "data")


def test_head_gives_length_etag_and_ranges_without_a_body(live, day):
    url = asset_url(live, "bob", "avhrr-gac", day[0].name, "data")
    with live.client("bob") as client:
        head = client.head(url)
        missing = client.head(url.replace(day[0].name, "no-such-granule"))
    assert head.status_code == 200
    assert head.content == b""
    assert int(head.headers["Content-Length"]) == day[0].stat().st_size
    assert head.headers["ETag"] == f'"{hashlib.sha256(day[0].read_bytes()).hexdigest()}"'
    assert head.headers["Accept-Ranges"] == "bytes"
    assert missing.status_code == 404


def test_another_users_asset_is_a_404_to_head_and_get(live, composite_url):
    with live.client("bob") as client:
        assert client.head(composite_url).status_code == 404
        assert client.get(composite_url, headers={"Range": "bytes=0-9"}).status_code == 404
    with live.client("alice") as client:
        assert client.head(composite_url).status_code == 200


def test_if_range_gives_the_range_only_while_the_etag_matches(live, day):
    url = asset_url(live, "bob", "avhrr-gac", day[0].name, "data")
    payload = day[0].read_bytes()
    etag = f'"{hashlib.sha256(payload).hexdigest()}"'
    same = ranged(live, "bob", url, Range="bytes=100-199", If_Range=etag)
    other = ranged(live, "bob", url, Range="bytes=100-199", If_Range='"another-version"')
    weak = ranged(live, "bob", url, Range="bytes=100-199", If_Range=f"W/{etag}")
    assert same.status_code == 206
    assert same.content == payload[100:200]
    assert same.headers["Content-Range"] == f"bytes 100-199/{len(payload)}"
    assert same.headers["ETag"] == etag
    for whole in (other, weak):  # a changed (or only weakly equal) file comes whole
        assert whole.status_code == 200
        assert whole.content == payload


def test_bad_and_odd_ranges_are_answered_never_with_a_500(live, day):
    url = asset_url(live, "bob", "avhrr-gac", day[0].name, "data")
    payload = day[0].read_bytes()
    size = len(payload)
    beyond = ranged(live, "bob", url, Range="bytes=999999999-")
    assert beyond.status_code == 416
    assert beyond.headers["Content-Range"] == f"bytes */{size}"
    assert beyond.json()["detail"] == (
        f"Range 'bytes=999999999-': no range starts in the file's {size} bytes"
    )
    over = ranged(live, "bob", url, Range=f"bytes={size - 10}-{size + 1000}")
    assert over.status_code == 206  # clipped to the file's end
    assert over.content == payload[-10:]
    assert over.headers["Content-Range"] == f"bytes {size - 10}-{size - 1}/{size}"
    suffix = ranged(live, "bob", url, Range="bytes=-16")
    assert (suffix.status_code, suffix.content) == (206, payload[-16:])
    several = ranged(live, "bob", url, Range="bytes=0-3, 1000-1009, 5000-5001")
    assert several.status_code == 206
    assert parts_of(several) == [
        (f"bytes 0-3/{size}", payload[0:4]),
        (f"bytes 1000-1009/{size}", payload[1000:1010]),
        (f"bytes 5000-5001/{size}", payload[5000:5002]),
    ]
    for malformed in ("bytes=abc", "bytes=10-5", "bytes=", "items=0-9", "0-9"):
        answer = ranged(live, "bob", url, Range=malformed)
        assert answer.status_code == 400, (malformed, answer.status_code)
        assert answer.json()["detail"].startswith(f"Range {malformed!r}: "), malformed
    negative = ranged(live, "bob", url, Range="bytes=--1")  # a suffix of -1 bytes: past the end
    assert (negative.status_code, negative.headers["Content-Range"]) == (416, f"bytes */{size}")


def parts_of(response) -> list[tuple[str, bytes]]:
    """The (Content-Range, bytes) of each part of a multipart/byteranges answer."""
    kind = response.headers["Content-Type"]
    assert kind.startswith("multipart/byteranges; boundary=")
    message = BytesParser().parsebytes(f"Content-Type: {kind}\r\n\r\n".encode() + response.content)
    return [
        (part["Content-Range"], part.get_payload(decode=True)) for part in message.get_payload()
    ]


def test_gdal_vsicurl_reads_the_composites_metadata_with_the_token_header(
    live, composite_url, composite_file
):
    request_id = "gdal-vsicurl"
    headers = token_headers(live, "alice", request_id)
    env = {
        **os.environ,
        "GDAL_HTTP_HEADERS": "\r\n".join(f"{name}: {value}" for name, value in headers.items()),
        "GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR",
        "CPL_VSIL_CURL_USE_HEAD": "YES",
    }
    shown = subprocess.run(
        ["gdalinfo", f"/vsicurl/{composite_url}"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    with xr.open_dataset(composite_file) as local:
        bands = sorted(name for name, band in local.data_vars.items() if band.ndim == 2)
    described = re.findall(
        r"SUBDATASET_\d+_DESC=\[2168x5004\] //(\w+) ", shown.stdout, flags=re.MULTILINE
    )
    assert sorted(described) == bands  # the twelve bands, each a subdataset GDAL can open
    assert shown.stdout.startswith("Driver: HDF5/")  # netCDF4 read as HDF5, over /vsicurl/
    assert "  grid=igh-8km\n" in shown.stdout  # the composite's own attributes
    assert "crs_proj4=+proj=igh +R=6370997" in shown.stdout
    sent, requests = bytes_sent(live, request_id, "/items/")
    size = composite_file.stat().st_size
    print(f"gdalinfo: {requests} requests, {sent} bytes sent of {size} ({sent / size:.2%})")
    assert sent < 0.05 * size


@pytest.mark.parametrize("which", ["composite", "granule"])
def test_xarray_over_fsspec_http_reads_a_slice_within_the_byte_budget(
    live, composite_url, composite_file, day, which
):
    """A slice of a variable, under 1% of the file, costs the server under 5% of it: the
    file's metadata, the coordinates xarray loads and the chunks the slice falls in."""
    if which == "composite":
        url, path, name = composite_url, composite_file, "ndvi"
    else:
        url = asset_url(live, "alice", "avhrr-gac", day[0].name, "data")
        path, name = day[0], "counts"
    request_id = f"xarray-slice-{which}"
    fs = fsspec.filesystem("http", headers=token_headers(live, "alice", request_id))
    window = seen_window(path, name, (64, 128))
    with (
        fs.open(url, block_size=2**14, cache_type="blockcache") as remote,
        xr.open_dataset(remote, engine="h5netcdf") as dataset,
    ):
        variable = dataset[name]
        got = variable[window].values
    with xr.open_dataset(path) as local:
        expected = local[name][window].values
    np.testing.assert_array_equal(got, expected)
    size = path.stat().st_size
    assert got.size * variable.encoding["dtype"].itemsize < 0.01 * size
    sent, requests = bytes_sent(live, request_id, "/items/")
    print(f"xarray {which}: {requests} requests, {sent} B of {size} B ({sent / size:.2%})")
    assert sent < 0.05 * size

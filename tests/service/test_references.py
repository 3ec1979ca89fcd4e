"""Virtual Zarr over a live server: the kerchunk references asset of a netCDF4 composite and
granule opens in xarray (``engine="kerchunk"``, the references and the chunks fetched over
HTTP with the user's token) with the same values as the file; its chunks point at the asset's
own download URL and nothing else; another user's is a 404; and they are made once, then kept
(the composite and its orbits: composites.py)."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import fsspec
import numpy as np
import orjson
import pytest
import xarray as xr

from ..live_service import LiveService
from . import composites
from .access_log import asset_url, bytes_sent, token_headers
from .composites import COMPOSITE, catalogue_netcdf, seen_window

day, composite_file, live = composites.day, composites.composite_file, composites.live  # fixtures


def open_virtual(live: LiveService, user: str, url: str, request_id: str) -> xr.Dataset:
    """The references at ``url`` fetched and opened as xarray opens kerchunk references, the
    chunks read over HTTP with the user's token."""
    headers = token_headers(live, user, request_id)
    references = orjson.loads(fsspec.filesystem("http", headers=headers).cat_file(url))
    return xr.open_dataset(
        references,
        engine="kerchunk",
        storage_options={"remote_protocol": "http", "remote_options": {"headers": headers}},
    )


def assert_same_values(virtual: xr.Dataset, path: Path) -> None:
    """Every variable of the file, its values and dtype, and its attributes, as xarray
    decodes them from the file itself."""
    with xr.open_dataset(path) as local:
        assert sorted(virtual.variables) == sorted(local.variables)
        for name, variable in local.variables.items():
            got, expected = virtual[name].values, variable.values
            if expected.dtype.kind == "U":  # variable-length strings come as numpy's StringDType
                got = got.astype(expected.dtype)
            assert got.dtype == expected.dtype, name
            np.testing.assert_array_equal(got, expected, err_msg=name)
            assert virtual[name].attrs.keys() == variable.attrs.keys(), name


@pytest.mark.parametrize("which", ["composite", "granule"])
def test_references_open_in_xarray_with_the_files_values(live, day, composite_file, which):
    collection, path = ("pathfinder", composite_file)
    if which == "granule":
        collection, path = "avhrr-gac", day[0]
    data = asset_url(live, "alice", collection, path.name, "data")
    references = asset_url(live, "alice", collection, path.name, "references")
    assert references == data.removesuffix("/data") + "/references"
    with open_virtual(live, "alice", references, f"virtual-{which}") as virtual:
        assert_same_values(virtual, path)
    with live.client("alice") as client:
        kept = client.get(references)
    assert kept.status_code == 200
    assert kept.headers["Content-Type"] == "application/json"
    refs = orjson.loads(kept.content)["refs"]
    chunks = [value for value in refs.values() if isinstance(value, list)]
    assert chunks
    assert {chunk[0] for chunk in chunks} == {data}  # the service's own URL, and only it
    assert str(path.parent) not in kept.text
    assert str(live.data) not in kept.text


@pytest.mark.parametrize(("which", "name"), [("composite", "ndvi"), ("granule", "counts")])
def test_a_slice_through_the_references_reads_only_its_chunks(
    live, day, composite_file, which, name
):
    """The server sends the chunks the slice falls in, the coordinates xarray loads as its
    index and a granule's time, which xarray reads twice as it opens (its first and last
    values, to choose how to decode it): byte for byte what the references say they are, and
    nothing else. A granule's contiguous variables are cut into chunks of about 256 KiB."""
    collection, path = ("pathfinder", composite_file)
    if which == "granule":
        collection, path = "avhrr-gac", day[0]
    url = asset_url(live, "alice", collection, path.name, "references")
    request_id = f"virtual-slice-{which}"
    window = seen_window(path, name, (64, 128))
    with open_virtual(live, "alice", url, request_id) as virtual:
        got = virtual[name][window].values
        chunks, dims = virtual[name].encoding["chunks"], virtual[name].dims
    with xr.open_dataset(path) as local:
        expected = local[name][window].values
    np.testing.assert_array_equal(got, expected)
    with live.client("alice") as client:
        refs = orjson.loads(client.get(url).content)["refs"]
    cuts = zip(window, chunks, strict=True)
    reached = itertools.product(*(range(c.start // n, (c.stop - 1) // n + 1) for c, n in cuts))
    needed = [f"{name}/{'.'.join(map(str, index))}" for index in reached]
    needed += [key for key in refs if key.split("/")[0] in dims and not key.endswith(".zarray")]
    needed += ["time/0", "time/0"] if which == "granule" else []
    size = path.stat().st_size
    sent, requests = bytes_sent(live, request_id, "/assets/data")
    print(f"slice of {which} through references: {requests} requests, {sent} B of {size} B")
    assert sent == sum(refs[key][2] for key in needed if isinstance(refs.get(key), list))
    assert sent < 0.05 * size


def test_another_users_references_are_a_404(live):
    url = asset_url(live, "alice", "pathfinder", COMPOSITE, "references")
    with live.client("bob") as client:
        assert client.get(url).status_code == 404
        assert client.head(url).status_code == 404
        listed = client.get("/collections/pathfinder/items")
    assert listed.status_code == 404  # bob cannot see alice's collection at all
    with live.client("alice") as client:
        assert client.head(url).status_code == 200


def test_references_are_made_once_and_kept_by_the_datas_digest(live, composite_file):
    url = asset_url(live, "alice", "pathfinder", COMPOSITE, "references")
    with live.client("alice") as client:
        first, again = client.get(url), client.get(url)
    assert first.content == again.content
    digest = hashlib.sha256(composite_file.read_bytes()).hexdigest()
    kept = live.data / "references" / digest[:2] / f"{digest}.json"
    stored = orjson.loads(kept.read_bytes())
    assert {value[0] for value in stored["refs"].values() if isinstance(value, list)} == {"{{u}}"}
    assert len(kept.read_bytes()) < 0.01 * composite_file.stat().st_size


def test_an_item_that_is_not_netcdf_shows_no_references(live):
    with live.client("bob") as client:
        item = client.get("/collections/test-granules/items/granule-000").json()
        missing = client.get(f"{item['links'][0]['href']}/assets/references")
    assert sorted(item["assets"]) == ["data"]
    assert missing.status_code == 404


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"\x89HDF\r\n\x1a\n" + bytes(range(256)) * 64, "cannot be read as netCDF4/HDF5"),
        (b"CDF\x01" + bytes(4096), "is not netCDF4/HDF5 (netCDF classic?)"),
    ],
    ids=["broken-hdf5", "netcdf-classic"],
)
def test_a_file_that_cannot_be_indexed_is_a_404_saying_why(live, tmp_path, content, why):
    """A user's output that only claims to be netCDF4 is read apart from the server (the
    process that reads it may fail as it likes): a 404 saying why, and the server goes on."""
    path = tmp_path / "claims-to-be.nc"
    path.write_bytes(content)
    catalogue_netcdf(live.data, path, collection="outputs-of-alice", owner="alice")
    url = asset_url(live, "alice", "outputs-of-alice", path.name, "references")
    with live.client("alice") as client:
        refused = client.get(url)
        assert client.get(url.removesuffix("/references") + "/data").content == content
    assert refused.status_code == 404
    assert why in refused.json()["detail"]
    assert str(tmp_path) not in refused.text

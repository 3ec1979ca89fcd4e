"""Real granules through the service: `nearline ingest` (files, folders, bad files, layout
archive bundles), then orders on them: the built-in Pathfinder composite and the C example
built at deploy, each checked against what nearline's readers decode from the same files."""

from __future__ import annotations

import csv
import hashlib
import io
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import shapely
import xarray as xr
from shapely.geometry import Point, shape

from nearline.swath import open_granule, synthesize_day

from ..algorithms.example_data import EXAMPLES, counts_of
from ..live_service import nearline
from .conftest import deploy


@pytest.fixture(scope="module")
def day(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two short NOAA-19 orbits as nearline's netCDF granules."""
    folder = tmp_path_factory.mktemp("day")
    return sorted(synthesize_day("2012-12-12", 2, folder, lines_per_orbit=900))


@pytest.fixture(scope="module")
def level1b(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two short orbits as NOAA KLM GAC Level 1b, as NOAA CLASS serves them."""
    folder = tmp_path_factory.mktemp("l1b")
    return sorted(synthesize_day("2012-12-12", 2, folder, lines_per_orbit=120, file_format="l1b"))


@pytest.fixture(scope="module")
def ingested(live, day) -> list[Path]:
    result = nearline("ingest", str(day[0].parent), "--collection", "avhrr-gac", data=live.data)
    assert result.stdout.startswith("ingested 2 granules")
    return day


def search(live, user, **params) -> list[dict]:
    with live.client(user) as client:
        response = client.get("/search", params={"limit": 100, **params})
    assert response.status_code == 200, response.text
    return response.json()["features"]


def test_ingest_reads_each_granules_time_footprint_size_and_checksum(live, ingested):
    items = {item["id"]: item for item in search(live, "bob", collections="avhrr-gac")}
    assert sorted(items) == [path.name for path in ingested]
    for path in ingested:
        item = items[path.name]
        with open_granule(path) as granule:
            start, end = granule.start_time, granule.end_time
            lon, lat = granule.read_tie_lonlat(1)
        properties = item["properties"]
        assert properties["start_datetime"] == start.isoformat().replace("+00:00", "Z")
        assert properties["end_datetime"] == end.isoformat().replace("+00:00", "Z")
        assert properties["platform"] == "noaa19"
        footprint = shape(item["geometry"])
        points = shapely.points(lon.ravel().astype(float), lat.ravel().astype(float))
        assert shapely.covers(footprint.buffer(1e-6), points).all()  # every tie point inside
        asset = item["assets"]["data"]
        assert asset["file:size"] == path.stat().st_size
        assert asset["file:checksum"] == "1220" + hashlib.sha256(path.read_bytes()).hexdigest()
        assert "nearline-data" not in asset["href"]
        assert str(path) not in asset["href"]


def test_a_search_finds_a_granule_where_it_passed_and_not_elsewhere(live, ingested):
    with open_granule(ingested[0]) as granule:
        lon, lat = granule.read_tie_lonlat(1)
    middle = lon.shape[0] // 2
    x, y = float(lon[middle, 25]), float(lat[middle, 25])
    near = f"{x - 0.5},{y - 0.5},{x + 0.5},{y + 0.5}"
    assert ingested[0].name in [i["id"] for i in search(live, "bob", bbox=near)]
    antipode = (x + 360) % 360 - 180, -y  # the other side of the Earth, where it never was
    assert not shape(search(live, "bob", ids=ingested[0].name)[0]["geometry"]).intersects(
        Point(*antipode).buffer(0.5)
    )
    far = f"{antipode[0] - 0.5},{antipode[1] - 0.5},{antipode[0] + 0.5},{antipode[1] + 0.5}"
    assert ingested[0].name not in [i["id"] for i in search(live, "bob", bbox=far)]


def test_ingesting_again_replaces_and_a_bad_file_adds_nothing(live, ingested, tmp_path):
    again = nearline("ingest", str(ingested[0]), "--collection", "avhrr-gac", data=live.data)
    assert again.stdout.startswith("ingested 1 granules")
    assert len(search(live, "bob", collections="avhrr-gac")) == 2  # replaced, not added
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(ingested[1], mixed / "renamed.nc")
    (mixed / "junk.bin").write_bytes(bytes(range(256)) * 40)  # binary, no format's
    (mixed / "README.md").write_text("# what this folder holds\n")  # a text companion
    failed = nearline(
        "ingest", str(mixed), "--collection", "avhrr-gac", data=live.data, check=False
    )
    assert failed.returncode == 2
    (line,) = failed.stderr.strip().splitlines()  # one line, no traceback
    assert "junk.bin: no reader recognises this file; tried avhrr-gac (" in line
    assert "nothing was ingested" in line
    assert "renamed.nc" not in [i["id"] for i in search(live, "bob", collections="avhrr-gac")]
    skipped = nearline(
        "ingest", str(mixed), "--collection", "avhrr-gac", "--on-error", "skip", data=live.data
    )
    assert skipped.stdout.startswith("ingested 1 granules")
    lines = skipped.stderr.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == [
        f"skipped {mixed / 'junk.bin'}",
        "passed over README.md",  # not a granule: said, and no failure
    ]
    assert lines[1] == "passed over README.md: text, not a granule"
    assert "renamed.nc" in [i["id"] for i in search(live, "bob", collections="avhrr-gac")]
    named = nearline(  # a text file named on its own is refused by name
        "ingest", str(mixed / "README.md"), "--collection", "avhrr-gac", data=live.data,
        check=False,
    )  # fmt: skip
    assert named.returncode == 2
    assert "README.md: no reader recognises this file" in named.stderr


def test_the_builtin_composite_ordered_through_the_api(live, ingested, tmp_path):
    names = [path.name for path in ingested]
    with live.client("alice") as client:
        response = client.post(
            "/processes/pathfinder/execution",
            json={"inputs": {"granules": {"ids": names}, "grid": "igh-8km"}},
            headers={"Prefer": "respond-async"},
        )
        assert response.status_code == 201, response.text
        status = live.wait_for_job("alice", response.json()["jobID"], timeout=600)
        assert status["status"] == "successful", client.get(f"/jobs/{status['jobID']}/logs").text
        (run,) = status["nearline:runs"]
        assert run["inputs"] == [f"avhrr-gac/{name}" for name in names]
        assert run["usage"]["cpu_seconds"] > 1
        assert run["usage"]["peak_memory"] > 50 * 2**20
        results = client.get(f"/jobs/{status['jobID']}/results").json()
        (composite,) = results["composite"]
        (quicklook,) = results["quicklook"]
        netcdf = client.get(composite["href"]).content
        png = client.get(quicklook["href"]).content
        item = client.get(composite["nearline:item"]).json()
    assert composite["title"] == "pathfinder-igh-8km-day-2012-12-12.nc"
    assert png.startswith(b"\x89PNG")
    (tmp_path / "composite.nc").write_bytes(netcdf)
    with xr.open_dataset(tmp_path / "composite.nc") as dataset:
        bands = sorted(name for name in dataset.data_vars if name != "crs")
        assert len(bands) == 12
        assert dataset["ndvi"].shape == (2168, 5004)
        assert int(np.isfinite(dataset["ndvi"].values).sum()) > 1000
        assert dataset.attrs["input_granules"].split() == names
    assert item["properties"]["nearline:algorithm"] == {"id": "pathfinder", "version": "1.0"}
    assert item["properties"]["nearline:inputs"] == run["inputs"]
    assert item["collection"] == "pathfinder"
    # the composite is catalogued as a gridded item, so its collection offers coverages
    assert item["properties"]["nearline:grid"] == "igh-8km"
    assert sorted(item["properties"]["nearline:bands"]) == bands
    assert item["properties"]["start_datetime"].startswith("2012-12-12T00:00:00")
    with live.client("alice") as client:
        point = client.get("/collections/pathfinder/position",
                           params={"coords": "POINT(10 5)", "parameter-name": "ndvi"})  # fmt: skip
        document = client.get("/collections/pathfinder").json()
    assert point.status_code == 200, point.text
    assert len(point.json()["ranges"]["ndvi"]["values"]) == 1
    assert "ndvi" in document["parameter_names"]
    with live.client("bob") as bob:  # alice's composite is hers: bob's pathfinder has none
        assert bob.get("/collections/pathfinder/position",
                       params={"coords": "POINT(10 5)"}).status_code == 404  # fmt: skip


def test_a_c_algorithm_built_at_deploy_and_ordered(live, level1b):
    nearline("ingest", str(level1b[0].parent), "--collection", "avhrr-gac-l1b", data=live.data)
    summary = deploy(live, "bob", EXAMPLES / "gac-quicklook")
    assert summary["id"] == "gac-quicklook"
    with live.client("bob") as client:
        response = client.post(
            "/processes/gac-quicklook/execution",
            json={"inputs": {"granules": {"collections": ["avhrr-gac-l1b"]}, "channel": 4}},
            headers={"Prefer": "respond-async"},
        )
        assert response.status_code == 201, response.text
        status = live.wait_for_job("bob", response.json()["jobID"])
        assert status["status"] == "successful", client.get(f"/jobs/{status['jobID']}/logs").text
        results = client.get(f"/jobs/{status['jobID']}/results").json()
        images = {link["title"]: client.get(link["href"]).content for link in results["images"]}
        (table,) = [client.get(link["href"]).text for link in results["summary"]]
    rows = list(csv.reader(io.StringIO(table)))
    assert rows[0] == ["granule", "lines", *(f"mean_ch{i}" for i in range(1, 6))]
    for path, row in zip(level1b, rows[1:], strict=True):
        counts = counts_of(path)  # decoded by pygac, not by the C program
        assert row[:2] == [path.name, str(counts.shape[1])]
        assert [float(v) for v in row[2:]] == pytest.approx(
            counts.reshape(5, -1).mean(axis=1), abs=1e-3
        )
        image = images[f"{path.name}.pgm"]
        header = f"P5\n409 {counts.shape[1]}\n255\n".encode()
        assert image[: len(header)] == header
        pixels = np.frombuffer(image[len(header) :], np.uint8).reshape(counts.shape[1], 409)
        assert np.array_equal(pixels, (counts[3] >> 2).astype(np.uint8))


def test_granules_in_a_layout_archive_are_ingested_and_ordered_where_they_lie(live, day, tmp_path):
    from nearline.layout import mark_complete

    out, archive = tmp_path / "out", tmp_path / "archive"
    group = out / "000000" / "orbits"
    group.mkdir(parents=True)
    for path in day:
        shutil.copy(path, group / path.name)
    mark_complete(out, step=0, file="orbits", members=[f"orbits/{p.name}" for p in day])
    nearline("migrate", str(out), str(archive), data=live.data)
    assert not group.exists()  # migrated: the bundle on the archive tier is the only copy
    result = nearline(
        "ingest", "--archive", str(archive), "--collection", "avhrr-archived", data=live.data
    )
    assert result.stdout.startswith("ingested 2 granules")
    items = search(live, "alice", collections="avhrr-archived")
    assert sorted(i["id"] for i in items) == [p.name for p in day]
    with live.client("alice") as client:  # a download is restored from its bundle, verified
        for item in items:
            original = next(p for p in day if p.name == item["id"])
            response = client.get(item["assets"]["data"]["href"])
            assert response.status_code == 200
            assert response.content == original.read_bytes()

    def copies() -> list[Path]:  # scratch/disks is the kept run disks' pool, not a copy
        scratch = live.data / "scratch"  # (a front's copies are under its own folder there)
        return [  # os.walk, unlike rglob, passes over a folder removed while it looks
            Path(folder, name)
            for folder, _, names in os.walk(scratch)
            if "disks" not in Path(folder).relative_to(scratch).parts
            for name in names
        ]

    for _ in range(50):  # the copy is removed once sent (just after the client has it)
        if not copies():
            break
        time.sleep(0.1)
    assert copies() == []
    summary = deploy(live, "alice", _histogram_package(tmp_path, "avhrr-archived"))
    with live.client("alice") as client:
        response = client.post(
            f"/processes/{summary['id']}/execution",
            json={"inputs": {"granules": {"collections": ["avhrr-archived"]}, "bins": 8}},
            headers={"Prefer": "respond-async"},
        )
        assert response.status_code == 201, response.text
        status = live.wait_for_job("alice", response.json()["jobID"])
        assert status["status"] == "successful", client.get(f"/jobs/{status['jobID']}/logs").text
        (link,) = client.get(f"/jobs/{status['jobID']}/results").json()["summary"]
        rows = list(csv.reader(io.StringIO(client.get(link["href"]).text)))
    for path, row in zip(day, rows[1:], strict=True):  # restored from the bundle, verified
        counts = counts_of(path)[1]
        assert row == [path.name, str(counts.shape[0]), f"{counts.mean():.3f}"]


def _histogram_package(tmp_path: Path, collection: str) -> Path:
    """The counts-histogram example, reading granules of ``collection``."""
    package = tmp_path / "histogram"
    shutil.copytree(EXAMPLES / "counts-histogram", package)
    manifest = package / "algorithm.yaml"
    text = manifest.read_text().replace("collection: avhrr-gac", f"collection: {collection}")
    manifest.write_text(text.replace("id: counts-histogram", "id: archived-histogram"))
    return package

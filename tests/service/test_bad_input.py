"""Bad input gets a 4xx with a message naming what is wrong, never a 5xx, and leaves nothing
half-made behind."""

from __future__ import annotations

import io
import os
import zipfile

import pytest

from .conftest import PACKAGES, zip_folder

ZIP = {"Content-Type": "application/zip"}


def zipped(files: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def manifest(**changes) -> str:
    text = (PACKAGES / "sizes" / "algorithm.yaml").read_text()
    for old, new in changes.items():
        text = text.replace(old, new)
    return text


def post(live, body: bytes, headers=ZIP):
    with live.client("alice") as client:
        return client.post("/processes", content=body, headers=headers, timeout=300)


@pytest.mark.parametrize(
    ("files", "status", "words"),
    [
        ({"run.py": "print(1)"}, 400, "algorithm.yaml"),
        ({"algorithm.yaml": "id: [unclosed"}, 400, "algorithm.yaml"),
        (
            {"algorithm.yaml": manifest(**{"command: [python, run.py]": "command: []"})},
            400,
            "command",
        ),
        ({"algorithm.yaml": manifest(**{"max: 4": "max: many"})}, 400, "max"),
        ({"algorithm.yaml": manifest(**{"id: granule-sizes": "id: Bad Id!"})}, 400, "id"),
        ({"algorithm.yaml": manifest(), "../evil.py": "x"}, 400, "../evil.py"),
        ({"algorithm.yaml": manifest(), "/etc/evil": "x"}, 400, "/etc/evil"),
    ],
)
def test_a_bad_package_is_refused_naming_the_problem(live, files, status, words):
    response = post(live, zipped(files))
    assert response.status_code == status, response.text
    assert words in response.json()["detail"]


def test_not_a_zip_and_the_wrong_media_type(live):
    assert post(live, b"not a zip at all").status_code == 400
    response = post(live, zip_folder(PACKAGES / "sizes"), headers={"Content-Type": "text/plain"})
    assert response.status_code == 415
    assert "application/zip" in response.json()["detail"]


def test_an_oversized_upload_is_refused(live):
    response = post(live, zipped({"algorithm.yaml": manifest(), "big.bin": os.urandom(5 * 2**20)}))
    assert response.status_code == 413
    assert "limit" in response.json()["detail"]


def test_a_build_that_fails_is_refused_with_its_log(live):
    files = {
        "algorithm.yaml": manifest(**{"id: granule-sizes": "id: broken-build"})
        + "build: [sh, -c, 'echo compiler says no >&2; exit 3']\n",
        "run.py": "print(1)",
    }
    response = post(live, zipped(files))
    assert response.status_code == 400, response.text
    assert "compiler says no" in response.json()["detail"]
    with live.client("alice") as client:
        assert client.get("/processes/broken-build").status_code == 404  # not promoted


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"bbox": "1,2,3"}, "bbox"),
        ({"bbox": "0,0,0,0,0,false"}, "bbox"),
        ({"bbox": "0,0,200,1"}, "bbox"),
        ({"bbox": "0,10,5,-10"}, "bbox"),  # STAC: south north of north is a 400
        ({"datetime": "2012-12-13T00:00:00Z/2012-12-12T00:00:00Z"}, "datetime"),
        ({"datetime": "2012-12-12"}, "datetime"),  # a date alone, as STAC's validator asks
        ({"bbox": "a,b,c,d"}, "bbox"),
        ({"datetime": "yesterday"}, "datetime"),
        ({"datetime": "2012-12-12T00:00:00"}, "datetime"),
        ({"limit": "0"}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"intersects": "{not json"}, "intersects"),
        ({"token": "forged"}, "token"),
        ([("limit", "many"), ("limit", "")], "limit: given 2 times"),  # not the last alone
        ([("collections", "a"), ("collections", "b")], "collections: given 2 times"),
    ],
)
def test_bad_searches_are_400(live, params, words):
    with live.client("alice") as client:
        response = client.get("/search", params=params)
    assert response.status_code == 400, response.text
    assert words in response.json()["detail"].lower()


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"bbox": [0, 0, 0, 0, 0, False]}, "bbox"),  # a JSON false is not the number 0
        ({"bbox": [0, 0, 1, True]}, "bbox"),
        ({"limit": True}, "limit"),
        ({"bbox": "0,0,1,1"}, "bbox"),  # GET's text is not a JSON body's array
        ({"datetime": {}}, "datetime"),
        ({"intersects": {"type": "Point", "coordinates": [0, False]}}, "intersects"),
    ],
)
def test_booleans_and_text_where_numbers_and_arrays_belong_are_400(live, body, words):
    with live.client("alice") as client:
        response = client.post("/search", json=body)
    assert response.status_code == 400, response.text
    assert words in response.json()["detail"]


def test_a_geometry_without_positions_finds_nothing(live):
    empty = '{"type": "MultiPolygon", "coordinates": []}'
    with live.client("alice") as client:
        response = client.get("/search", params={"intersects": empty})
    assert response.status_code == 200, response.text
    assert (response.json()["features"], response.json()["numberMatched"]) == ([], 0)


def test_unknown_things_are_404(live):
    with live.client("alice") as client:
        assert client.get("/collections/nope").status_code == 404
        assert client.get("/collections/nope/items").status_code == 404
        assert client.get("/collections/test-granules/items/nope").status_code == 404
        assert client.get("/processes/nope").status_code == 404
        assert client.get("/jobs/nope").status_code == 404
        response = client.post("/processes/nope/execution", json={"inputs": {}})
        assert response.status_code == 404


@pytest.mark.parametrize(
    ("inputs", "words"),
    [
        ({}, "granules is required"),
        ({"granules": {"ids": []}}, "at least 1"),
        ({"granules": {"collections": ["other"]}}, "test-granules"),
        ({"granules": {"bbox": [1, 2, 3]}}, "bbox"),
        ({"granules": {"ids": ["granule-001"]}, "scale": -1}, "scale"),
        ({"granules": {"ids": ["granule-001"]}, "colour": "red"}, "colour"),
        ({"granules": "all of them"}, "granules"),
    ],
)
def test_bad_orders_are_400(live, alices_processes, inputs, words):
    with live.client("alice") as client:
        response = client.post("/processes/granule-sizes/execution", json={"inputs": inputs})
    assert response.status_code == 400, response.text
    assert words in response.json()["detail"]


def test_a_package_whose_outputs_would_land_among_archive_granules_is_refused(live):
    text = manifest(**{"id: granule-sizes": "id: test-granules"})  # the archive's collection
    response = post(live, zipped({"algorithm.yaml": text, "run.py": "print(1)"}))
    assert response.status_code == 400, response.text
    assert "collection" in response.json()["detail"]
    assert "holds other data" in response.json()["detail"]
    with live.client("alice") as client:
        assert client.get("/processes/test-granules").status_code == 404
        found = client.get("/collections/test-granules").json()
    assert found["title"] == "Test granules"  # untouched

"""The built-in ``subset`` process through a live server: ordered on catalogued granules,
run in the sandbox, its cut files catalogued with their provenance and downloadable, equal to
the source's rows; bad requests answered 400 or a failed job naming the cause, never a file."""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np
import pytest

from nearline.swath import synthesize_day

from ..live_service import nearline


@pytest.fixture(scope="module")
def ingested(live, tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("day")
    granules = sorted(synthesize_day("2012-12-12", 1, folder, lines_per_orbit=400))
    result = nearline("ingest", str(folder), "--collection", "swaths", data=live.data)
    assert result.stdout.startswith("ingested 1 granule")
    return granules


def _order(live, body):
    with live.client("alice") as client:
        response = client.post("/processes/subset/execution", json=body,
                               headers={"Prefer": "respond-async"})  # fmt: skip
    return response


def test_a_window_and_variables_ordered_through_the_api(live, ingested, tmp_path):
    (granule,) = ingested
    window = "2012-12-12T00:01:00Z/2012-12-12T00:02:00Z"
    response = _order(live, {"inputs": {
        "granules": {"collections": ["swaths"], "ids": [granule.name]},
        "variables": ["counts"], "datetime": window}})  # fmt: skip
    assert response.status_code == 201, response.text
    status = live.wait_for_job("alice", response.json()["jobID"], timeout=300)
    with live.client("alice") as client:
        assert status["status"] == "successful", client.get(f"/jobs/{status['jobID']}/logs").text
        results = client.get(f"/jobs/{status['jobID']}/results").json()
        (cut,) = results["netcdf"]
        body = client.get(cut["href"]).content
        item = client.get(cut["nearline:item"]).json()
    assert cut["title"] == granule.stem + ".subset.nc"
    (tmp_path / "cut.nc").write_bytes(body)
    with netCDF4.Dataset(granule) as src, netCDF4.Dataset(tmp_path / "cut.nc") as out:
        assert list(out.variables) == ["channel", "counts", "latitude", "longitude", "time"]
        np.testing.assert_array_equal(out["counts"][:], src["counts"][:, 120:241])
    assert item["properties"]["nearline:algorithm"] == {"id": "subset", "version": "1.0"}
    assert item["properties"]["nearline:inputs"] == [f"swaths/{granule.name}"]


def test_bad_requests_are_refused_or_fail_naming_the_cause(live, ingested):
    (granule,) = ingested
    ids = {"collections": ["swaths"], "ids": [granule.name]}
    response = _order(live, {"inputs": {"granules": {"ids": [granule.name]}}})
    assert response.status_code == 400
    assert "takes granules of any collection: name them" in response.json()["detail"]
    response = _order(live, {"inputs": {"granules": ids, "bbox": [1, 2, 3]}})
    assert response.status_code == 400
    assert "bbox" in response.json()["detail"]
    for inputs, words in (
        ({"bbox": [10, 50, 20, 40]}, "is reversed: south (50.0) lies north of north"),
        ({"variables": ["nope"]}, "has no variable 'nope'"),
        ({"datetime": "2013-01-01T00:00:00Z/.."}, "no scan line lies in the window"),
    ):
        response = _order(live, {"inputs": {"granules": ids, **inputs}})
        assert response.status_code == 201, response.text
        status = live.wait_for_job("alice", response.json()["jobID"], timeout=300)
        assert status["status"] == "failed"
        with live.client("alice") as client:
            log = client.get(f"/jobs/{status['jobID']}/logs").text
            assert words in log
            assert client.get(f"/jobs/{status['jobID']}/results").status_code >= 400

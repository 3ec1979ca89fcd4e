"""openEO batch jobs are nearline's own jobs: the openEO client creates, starts and waits for
one on a live server, downloads its results through their signed links, and its values are
those numpy computes on the same composite files; the job is one of `nearline jobs`, and
another user cannot see it."""

from __future__ import annotations

from pathlib import Path

import httpx
import numpy as np
import openeo
import pytest
import xarray as xr
from openeo.rest import OpenEoApiError

from ..live_service import LiveService, nearline
from ..tiles.gridded import PRIVATE, PUBLIC
from .conftest import connect

BOX = {"west": -170.0, "south": -40.0, "east": -150.0, "north": -20.0}  # 20 by 20 degrees, seen
DAYS = ["2012-12-12", "2012-12-14"]
SCALE_UDF = """
import xarray


def apply_datacube(cube: xarray.DataArray, context: dict) -> xarray.DataArray:
    return cube * context["factor"]
"""


def composites(live: LiveService, composite: Path) -> list[xr.Dataset]:
    """The two days' composite files the collection holds, read with xarray alone."""
    paths = (composite, live.data.parent / "composite-next-day.nc")
    return [xr.open_dataset(path) for path in paths]


def on_cells(dataset: xr.Dataset, result: xr.Dataset) -> xr.Dataset:
    """``dataset`` on ``result``'s cells (the same grid: the nearest is the cell itself)."""
    found = dataset.sel(x=result["x"].values, y=result["y"].values, method="nearest")
    assert np.allclose(found["x"].values, result["x"].values)
    assert np.allclose(found["y"].values, result["y"].values)
    return found


def ndvi_max(connection: openeo.Connection) -> openeo.DataCube:
    cube = connection.load_collection(PUBLIC, spatial_extent=BOX, temporal_extent=DAYS,
                                      bands=["ndvi"])  # fmt: skip
    return cube.max_time()


@pytest.fixture(scope="module")
def finished(live: LiveService, alice: openeo.Connection) -> openeo.BatchJob:
    job = ndvi_max(alice).create_job(out_format="netCDF", title="NDVI max over two days")
    job.start_and_wait(max_poll_interval=1, print=lambda *_: None)
    return job


def test_a_batch_job_gives_the_max_numpy_computes_on_the_files(
    finished: openeo.BatchJob, live: LiveService, composite: Path, tmp_path: Path
) -> None:
    assert finished.status() == "finished"
    results = finished.get_results()
    (asset,) = results.get_assets()
    assert asset.href.startswith(f"{live.url}/openeo/1.2/jobs/{finished.job_id}/results/")
    assert "signature=" in asset.href
    path = asset.download(tmp_path / "ndvi-max.nc")
    with xr.open_dataset(path) as result:
        days = [on_cells(day, result)["ndvi"].values for day in composites(live, composite)]
        expected = np.fmax(*days)
        got = result["ndvi"].values
        assert got.shape == expected.shape
        assert got.size > 1000
        assert np.isfinite(got).sum() > 100
        np.testing.assert_allclose(got, expected, rtol=1e-6, equal_nan=True)


def test_the_signed_link_needs_no_token_and_only_works_signed(
    finished: openeo.BatchJob, tmp_path: Path
) -> None:
    (asset,) = finished.get_results().get_assets()
    answer = httpx.get(asset.href)  # no Authorization header
    assert answer.status_code == 200
    assert answer.content[:4] == b"\x89HDF"
    forged = asset.href.replace("signature=", "signature=x")
    refused = httpx.get(forged)
    assert refused.status_code == 404
    assert refused.json()["code"] == "NotFound"


def test_the_job_is_a_nearline_job(finished: openeo.BatchJob, live: LiveService) -> None:
    listed = nearline("jobs", "--user", "alice", "--limit", "100", data=live.data).stdout
    (row,) = [line for line in listed.splitlines() if finished.job_id[:8] in line]
    assert "openeo" in row
    assert "successful" in row
    with live.client("alice") as client:
        status = client.get(f"/jobs/{finished.job_id}").json()
    assert status["processID"] == "openeo"
    assert status["status"] == "successful"
    (run,) = status["nearline:runs"]
    assert len(run["inputs"]) == 2  # the two days, found when it started
    assert all(name.startswith(f"{PUBLIC}/") for name in run["inputs"])
    assert status["nearline:usage"]["cpu_seconds"] > 0


def test_the_job_lists_and_logs_as_openeo_says(
    finished: openeo.BatchJob, alice: openeo.Connection
) -> None:
    assert finished.job_id in [job["id"] for job in alice.list_jobs()]
    described = finished.describe()
    assert described["title"] == "NDVI max over two days"
    assert described["progress"] == 100
    graph = described["process"]["process_graph"]
    assert [node["process_id"] for node in graph.values()] == [
        "load_collection", "reduce_dimension", "save_result"]  # fmt: skip
    messages = [entry["message"] for entry in finished.logs()]
    assert any(message.startswith("saved result.nc (netCDF") for message in messages), messages


def test_another_users_job_is_not_found(finished: openeo.BatchJob, live: LiveService) -> None:
    bob = connect(live, "bob")
    with pytest.raises(OpenEoApiError) as refused:
        bob.job(finished.job_id).describe()
    assert (refused.value.http_status_code, refused.value.code) == (404, "JobNotFound")
    with pytest.raises(OpenEoApiError) as refused:
        bob.job(finished.job_id).get_results().get_metadata()
    assert refused.value.code == "JobNotFound"
    assert finished.job_id not in [job["id"] for job in bob.list_jobs()]


def test_another_users_private_collection_is_not_found(live: LiveService) -> None:
    """bob's client would not even describe it; a job of a graph loading it is kept as a draft
    (openEO's create-then-start) and meets the same 404 when it starts, as at its estimate."""
    graph = {
        "load": {"process_id": "load_collection", "arguments": {"id": PRIVATE}},
        "save": {"process_id": "save_result", "result": True,
                 "arguments": {"data": {"from_node": "load"}, "format": "netCDF"}},
    }  # fmt: skip
    job = connect(live, "bob").create_job(graph)
    assert job.status() == "created"
    for attempt in (job.start, job.estimate):
        with pytest.raises(OpenEoApiError) as refused:
            attempt()
        assert (refused.value.http_status_code, refused.value.code) == (404, "CollectionNotFound")
        assert PRIVATE in refused.value.message
    assert job.status() == "created"


def test_a_udf_scales_a_band(
    live: LiveService, alice: openeo.Connection, composite: Path, tmp_path: Path
) -> None:
    cube = alice.load_collection(PUBLIC, spatial_extent=BOX, temporal_extent=["2012-12-12",
                                 "2012-12-13"], bands=["ndvi"])  # fmt: skip
    scaled = cube.apply(openeo.UDF(SCALE_UDF, runtime="Python", context={"factor": 3.0}))
    job = scaled.create_job(out_format="netCDF")
    job.start_and_wait(max_poll_interval=1, print=lambda *_: None)
    (path,) = [p for p in job.get_results().download_files(tmp_path) if p.suffix == ".nc"]
    with xr.open_dataset(path) as result:
        first = on_cells(composites(live, composite)[0], result)["ndvi"].values
        got = result["ndvi"].isel(t=0).values
        assert np.isfinite(got).sum() > 100
        np.testing.assert_allclose(got, 3.0 * first, rtol=1e-6, equal_nan=True)


def test_a_created_job_waits_until_started_and_can_be_edited(alice: openeo.Connection) -> None:
    job = ndvi_max(alice).create_job(out_format="GTiff", title="draft")
    assert job.status() == "created"
    job.connection.patch(f"/jobs/{job.job_id}", json={"title": "renamed"}, expected_status=204)
    assert job.describe()["title"] == "renamed"
    with pytest.raises(OpenEoApiError) as refused:
        job.get_results().get_metadata()
    assert refused.value.code == "JobNotStarted"
    assert job.estimate()["costs"] == 0
    job.delete()
    assert job.job_id not in [listed["id"] for listed in alice.list_jobs()]


def test_a_synchronous_udf_runs_in_the_sandbox_as_a_job_and_answers_its_result(
    live: LiveService, alice: openeo.Connection, composite: Path, tmp_path: Path
) -> None:
    """POST /result with run_udf: the graph runs as an order of the built-in openeo process
    (never in the server), awaited; its result is the answer, and the order is dismissed."""
    cube = alice.load_collection(PUBLIC, spatial_extent=BOX, temporal_extent=["2012-12-12",
                                 "2012-12-13"], bands=["ndvi"])  # fmt: skip
    scaled = cube.apply(openeo.UDF(SCALE_UDF, runtime="Python", context={"factor": 2.0}))
    scaled.download(tmp_path / "scaled.nc", format="netCDF")
    with xr.open_dataset(tmp_path / "scaled.nc") as result:
        first = on_cells(composites(live, composite)[0], result)["ndvi"].values
        got = result["ndvi"].isel(t=0).values
    assert np.isfinite(got).sum() > 100
    np.testing.assert_allclose(got, 2.0 * first, rtol=1e-6, equal_nan=True)
    listed = nearline("jobs", "--user", "alice", "--limit", "100", data=live.data).stdout
    ran = [line for line in listed.splitlines() if "openeo" in line and "dismissed" in line]
    assert ran  # it ran as one of alice's jobs, dismissed once its result was sent

"""A batch job survives its server: killed (SIGKILL) while the job's run sleeps in its UDF,
started again on the same data folder, the server resumes the order, and the openEO client
finds the same job finished with its values."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import openeo
import pytest
import xarray as xr

from ..live_service import LiveService
from ..tiles.gridded import PUBLIC, serving_composites
from .conftest import connect

SLOW_UDF = """
import time, xarray

def apply_datacube(cube: xarray.DataArray, context: dict) -> xarray.DataArray:
    time.sleep(context["seconds"])
    return cube + 1
"""
ONE_DAY = ["2012-12-12", "2012-12-13"]
BOX = {"west": -170.0, "south": -40.0, "east": -160.0, "north": -30.0}


@pytest.fixture(scope="module")
def restarted(tmp_path_factory: pytest.TempPathFactory, composite: Path) -> Iterator[LiveService]:
    with serving_composites(tmp_path_factory.mktemp("openeo-restart"), composite) as service:
        yield service


def test_a_batch_job_survives_a_killed_server(
    restarted: LiveService, composite: Path, tmp_path: Path
) -> None:
    alice = connect(restarted, "alice")
    cube = alice.load_collection(PUBLIC, spatial_extent=BOX, temporal_extent=ONE_DAY,
                                 bands=["ndvi"])  # fmt: skip
    udf = openeo.UDF(SLOW_UDF, runtime="Python", context={"seconds": 8})
    job = cube.apply(udf).create_job(out_format="netCDF", title="slow")
    job.start()
    while job.status() != "running":  # its run has started: the kill catches it
        time.sleep(0.2)
    restarted.kill()
    restarted.start("--cpus", "2")  # as serving_composites started it
    alice = connect(restarted, "alice")
    again = alice.job(job.job_id)
    assert again.describe()["title"] == "slow"
    again.start_and_wait(max_poll_interval=1, print=lambda *_: None)  # already going: waits
    (path,) = [p for p in again.get_results().download_files(tmp_path) if p.suffix == ".nc"]
    with xr.open_dataset(path) as result, xr.open_dataset(composite) as day:
        first = day["ndvi"].sel(x=result["x"].values, y=result["y"].values, method="nearest")
        got = result["ndvi"].isel(t=0).values
        assert np.isfinite(got).sum() > 10
        np.testing.assert_allclose(got, first.values + 1, rtol=1e-6, equal_nan=True)

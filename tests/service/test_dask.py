"""A live `nearline serve --executor dask://...` on a real Dask cluster (a LocalCluster on
127.0.0.1 with 2 worker processes): orders run on the workers in their sandbox, and an order
whose worker is killed mid-run is started again on the other one and says so."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest
from distributed import Client, LocalCluster

from ..dask_cluster import local_cluster
from ..live_service import LiveService
from .conftest import deploy, serving
from .test_orders import order


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with local_cluster() as started:
        yield started


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, cluster: LocalCluster) -> Iterator[LiveService]:
    address = cluster.scheduler_address.removeprefix("tcp://")
    folder = tmp_path_factory.mktemp("dask-service")
    with serving(folder, extra=("--executor", f"dask://{address}")) as service:
        for package in ("sizes", "sleeper"):
            deploy(service, "alice", package)
        yield service


@pytest.fixture
def client(cluster: LocalCluster) -> Iterator[Client]:
    with Client(cluster, set_as_default=False) as connected:
        connected.wait_for_workers(2, timeout=60)
        yield connected


def test_the_service_says_where_runs_go(live, cluster):
    address = cluster.scheduler_address.removeprefix("tcp://")
    assert f"runs go to dask://{address} (2 workers)" in live.log.read_text()


def test_an_order_runs_on_the_cluster(live, client):
    response = order(
        live,
        "alice",
        "granule-sizes",
        {"granules": {"ids": ["granule-001", "granule-002"]}, "scale": 2},
    )
    assert response.status_code == 201, response.text
    job_id = response.json()["jobID"]
    status = live.wait_for_job("alice", job_id, timeout=120)
    assert status["status"] == "successful", status
    (run,) = status["nearline:runs"]
    assert run["station"] == "done"
    assert run["attempts"] == 0
    assert run["waiting"] is None
    assert run["message"] is None
    assert run["usage"]["wall_seconds"] > 0
    assert run["usage"]["cpu_seconds"] > 0
    with live.client("alice") as http:
        (link,) = http.get(f"/jobs/{job_id}/results").json()["summary"]
        summary = http.get(link["href"]).json()
    assert summary == {
        "job": job_id,
        "granules": [
            {"item": "granule-001", "size": 2 * (1000 + 37)},
            {"item": "granule-002", "size": 2 * (1000 + 74)},
        ],
    }


def test_an_order_whose_worker_is_killed_runs_again_on_the_other(live, client):
    response = order(live, "alice", "sleeper", {"granules": {"ids": ["granule-004"]}, "seconds": 3})
    assert response.status_code == 201, response.text
    job_id = response.json()["jobID"]
    run_id = f"{job_id}-0"
    deadline = time.monotonic() + 60
    with live.client("alice") as http:
        while "started" not in http.get(f"/jobs/{job_id}/logs").text:
            assert time.monotonic() < deadline, "the run did not start"
            time.sleep(0.1)
    running = [address for address, keys in client.processing().items()
               if any(run_id in str(key) for key in keys)]  # fmt: skip
    assert len(running) == 1, client.processing()
    pid = client.run(os.getpid, workers=running)[running[0]]
    os.kill(pid, signal.SIGKILL)
    status = live.wait_for_job("alice", job_id, timeout=120)
    assert status["status"] == "successful", status
    (run,) = status["nearline:runs"]
    assert run["station"] == "done"
    assert run["attempts"] == 1
    assert run["waiting"] == "started again on another machine 1 time(s): a worker was lost"
    with live.client("alice") as http:
        (link,) = http.get(f"/jobs/{job_id}/results").json()["done"]
        assert http.get(link["href"]).text == "granule-004"
        logs = http.get(f"/jobs/{job_id}/logs").text
    assert logs.count("started") >= 2
    assert "the worker running it was lost" in logs

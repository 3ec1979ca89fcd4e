"""A run's disk from the outside: an uploaded algorithm that writes many files, each under
its declared ``disk``, together past it, is stopped and keeps nothing; a run within its disk
whose outputs would take its owner past their disk quota is refused at ingest, and its files
are kept nowhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ..live_service import LiveService, nearline
from .conftest import deploy, serving

MiB = 2**20


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    def users(live: LiveService) -> None:
        for name, quota in (("erin", "300MiB"), ("dave", "30MiB")):
            token = nearline("users", "add", name, "--disk", quota, data=live.data).stdout
            live.tokens[name] = token.strip()
        deploy(live, "bob", "spiller", public=True)

    with serving(tmp_path_factory.mktemp("disk"), users) as live:
        yield live


def order(live: LiveService, user: str, granules: list[str], **parameters: int) -> str:
    with live.client(user) as client:
        response = client.post(
            "/processes/spiller/execution",
            json={"inputs": {"granules": {"ids": granules}, **parameters}},
            headers={"Prefer": "respond-async"},
        )
    assert response.status_code == 201, response.text
    return response.json()["jobID"]


def held(live: LiveService, user: str) -> int:
    with live.client(user) as client:
        return client.get("/users/me").json()["usage"]["disk"]


def files_of(live: LiveService, job_id: str) -> list[Path]:
    """Every file the service keeps for ``job_id``: in runs' folders, staged inputs, the
    archive."""
    places = [*(live.data / "runs").glob(f"{job_id}*"), live.data / "archive" / "outputs"]
    return [path for place in places for path in place.rglob("*") if job_id in str(path)]


def test_many_files_each_under_the_disk_past_it_together_stop_the_run(live):
    job_id = order(live, "erin", ["granule-000"], files=60, megabytes=1)  # 60 MiB in all
    job = live.wait_for_job("erin", job_id)
    assert job["status"] == "failed"
    (run,) = job["nearline:runs"]
    assert run["station"] == "failed"
    assert run["message"].startswith("disk limit of 20 MiB exceeded")
    assert held(live, "erin") == 0
    with live.client("erin") as client:
        assert client.get(f"/jobs/{job_id}/results").status_code == 404
        assert "disk limit of 20 MiB exceeded" in client.get(f"/jobs/{job_id}/logs").text
    assert [path for path in files_of(live, job_id) if path.is_file()] == []


def test_a_run_within_its_disk_past_its_owners_quota_is_refused_at_ingest(live):
    # two runs of one order start together (2 CPUs, each declares 20 MiB of a 30 MiB quota
    # with nothing held); each writes 16 MiB, so only the first to end fits
    job_id = order(live, "dave", ["granule-001", "granule-002"], files=16, megabytes=1)
    job = live.wait_for_job("dave", job_id)
    assert job["status"] == "failed"
    runs = sorted(job["nearline:runs"], key=lambda run: run["station"])
    assert [run["station"] for run in runs] == ["done", "failed"]
    done, refused = runs
    assert refused["message"].startswith(
        "outputs of 16.0 MiB would exceed dave's disk quota of 30.0 MiB (held 16.0 MiB)"
    )
    assert held(live, "dave") == 16 * MiB
    kept = sorted(path for path in files_of(live, job_id) if path.is_file())
    assert len(kept) == 16  # the done run's outputs, in the archive; nothing of the other
    assert all(f"run-{done['index']:04d}" in str(path) for path in kept)
    assert not any((live.data / "runs").glob(f"{job_id}*"))

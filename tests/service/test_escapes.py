"""A run reaches nothing but its own folder: hostile algorithms, ordered through the API.
Each attempt either fails inside the run (its report says so) or the run is stopped by a
limit and the job says which."""

from __future__ import annotations

import pytest

from .conftest import deploy


@pytest.fixture(scope="module")
def escape(live):
    deploy(live, "alice", "escape", public=True)
    return "escape"


def attempt(live, user, **parameters):
    with live.client(user) as client:
        response = client.post(
            "/processes/escape/execution",
            json={"inputs": {"granules": {"ids": ["granule-011"]}, **parameters}},
            headers={"Prefer": "respond-async"},
        )
        assert response.status_code == 201, response.text
        status = live.wait_for_job(user, response.json()["jobID"], timeout=120)
        report = None
        if status["status"] == "successful":
            (link,) = client.get(f"/jobs/{status['jobID']}/results").json()["report"]
            report = client.get(link["href"]).json()
    return status, report


def test_no_network_not_even_the_service(live, escape):
    status, report = attempt(live, "bob", attempt="socket", port=live.port)
    assert status["status"] == "successful"
    assert report["connected"] is False


@pytest.mark.parametrize("what", ["service.db", "catalogue.db", "another user's output"])
def test_no_reading_the_database_or_other_users_files(live, escape, alices_processes, what):
    if what == "another user's output":
        with live.client("alice") as client:
            job = client.post(
                "/processes/granule-sizes/execution",
                json={"inputs": {"granules": {"ids": ["granule-000"]}}},
                headers={"Prefer": "respond-async"},
            ).json()
        assert live.wait_for_job("alice", job["jobID"])["status"] == "successful"
        target = next((live.data / "archive").rglob("summary.json"))
    else:
        target = live.data / what
    assert target.exists()
    status, report = attempt(live, "bob", attempt="read", target=str(target))
    assert status["status"] == "successful"
    assert report["read"] is None
    assert "No such file" in report["error"] or "denied" in report["error"]


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("fork-bomb", "process limit"),
        ("memory", "memory limit"),
        ("loop", "wall-clock limit"),
    ],
)
def test_limits_stop_the_run_and_say_which(live, escape, kind, reason):
    status, _ = attempt(live, "bob", attempt=kind)
    assert status["status"] == "failed"
    assert reason in status["message"], status
    assert reason in status["nearline:runs"][0]["message"]
    assert status["nearline:runs"][0]["usage"]["wall_seconds"] > 0

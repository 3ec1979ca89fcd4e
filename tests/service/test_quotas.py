"""Users' strings from the outside: CPU allotments, disk quotas freed by deleting results, fair
share between users, and GET /users/me."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime

import pytest

from ..live_service import LiveService, nearline
from .conftest import deploy, serving

# what a run holds its CPUs and memory through: until its algorithm exits (ingest and
# clean-up are the service's own work, done after the next run may start)
BUSY = ("stage", "allocate", "run")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    def strings(live: LiveService) -> None:
        nearline("users", "set", "alice", "--cpus", "1", data=live.data)
        token = nearline("users", "add", "carol", "--disk", "3KiB", data=live.data).stdout
        live.tokens["carol"] = token.strip()
        deploy(live, "bob", "sleeper", public=True)
        deploy(live, "carol", "filler")

    with serving(tmp_path_factory.mktemp("quotas"), strings) as live:
        yield live


def order(live, user, process, granules, **parameters) -> str:
    with live.client(user) as client:
        response = client.post(
            f"/processes/{process}/execution",
            json={"inputs": {"granules": {"ids": granules}, **parameters}},
            headers={"Prefer": "respond-async"},
        )
    assert response.status_code == 201, response.text
    return response.json()["jobID"]


def runs_of(live, user, job_ids) -> list[dict]:
    """The jobs' runs as one listing reads them (all runs in one query: a snapshot, where
    one GET a job could see a run leave a station after seeing the next one arrive)."""
    with live.client(user) as client:
        page = client.get("/jobs", params={"limit": 1000}).json()["jobs"]
        listed = {job["jobID"]: job for job in page}
    return [run for job_id in job_ids for run in listed[job_id]["nearline:runs"]]


def test_a_users_cpu_allotment_bounds_their_runs_at_once(live):
    jobs = [order(live, "alice", "sleeper", [f"granule-00{i}"], seconds=1) for i in range(3)]
    most, reasons = 0, set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = runs_of(live, "alice", jobs)
        most = max(most, sum(run["station"] in BUSY for run in runs))
        reasons |= {run["waiting"] for run in runs if run["station"] == "queued" and run["waiting"]}
        if all(run["station"] == "done" for run in runs):
            break
        time.sleep(0.05)
    assert [run["station"] for run in runs_of(live, "alice", jobs)] == ["done"] * 3
    assert most == 1  # the service lends 2 CPUs, alice's string 1
    assert "waiting for your allotment: 1 of your 1 CPUs in use" in reasons


def test_another_users_single_order_waits_at_most_one_run_behind_a_crowd(live):
    crowd = order(live, "bob", "sleeper", [f"granule-{i:03d}" for i in range(6)], seconds=2)
    time.sleep(0.5)  # bob's runs fill both of the service's CPUs
    single = order(live, "alice", "sleeper", ["granule-011"], seconds=0)
    alices = live.wait_for_job("alice", single)
    bobs = live.wait_for_job("bob", crowd)
    assert alices["status"] == bobs["status"] == "successful"
    ended = sorted(datetime.fromisoformat(r["finished"]) for r in bobs["nearline:runs"])
    alice_ended = datetime.fromisoformat(alices["nearline:runs"][0]["finished"])
    # bob held both CPUs, and two more of his runs were readied behind them; the first CPU
    # to free went to alice's run (readied too, and put first at the CPUs' gate by fair
    # share), so her 0 s run ended before bob's third 2 s run could
    assert alice_ended <= ended[2]


def me(live, user) -> dict:
    with live.client(user) as client:
        response = client.get("/users/me")
    assert response.status_code == 200
    return response.json()


def test_a_disk_quota_holds_runs_back_until_old_results_are_deleted(live):
    assert me(live, "carol")["quota"] == {"cpus": None, "memory": None, "disk": 3 * 1024}
    first = order(live, "carol", "filler", ["granule-000"], bytes=1500)
    assert live.wait_for_job("carol", first)["status"] == "successful"
    assert me(live, "carol")["usage"]["disk"] == 1500
    second = order(live, "carol", "filler", ["granule-001"], bytes=100)  # may write 2 KiB
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        (run,) = runs_of(live, "carol", [second])
        if run["waiting"] and "quota" in run["waiting"]:
            break
        time.sleep(0.1)
    assert run["station"] == "queued"
    assert run["waiting"].startswith("waiting for disk quota: your results take 1.5 KiB of 3.0 KiB")
    with live.client("carol") as client:
        deleted = client.delete(f"/jobs/{first}").json()
        assert deleted["status"] == "dismissed"
        assert client.get(f"/jobs/{first}/results").status_code == 404
    assert live.wait_for_job("carol", second)["status"] == "successful"
    assert me(live, "carol")["usage"]["disk"] == 100
    leftovers = list((live.data / "archive" / "outputs" / "filler").rglob(f"{first}*"))
    assert leftovers == []  # the deleted results' files are gone


def test_users_me_shows_what_a_user_holds(live):
    bob = me(live, "bob")
    assert bob["name"] == "bob"
    assert bob["quota"] == {"cpus": None, "memory": None, "disk": None}
    assert bob["usage"]["runs_queued"] == 0
    assert bob["usage"]["disk"] > 0  # bob's sleepers' outputs are kept
    listed = nearline("users", "list", data=live.data).stdout.splitlines()
    assert "alice\tactive" in next(line for line in listed if line.startswith("alice"))
    assert next(line for line in listed if line.startswith("carol")).endswith("\t3.0 KiB")

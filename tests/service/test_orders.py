"""Orders through the live API: deploy an uploaded algorithm, order it on catalogue granules,
watch the job through its stations, fetch the results, and check what they say."""

from __future__ import annotations

import time

from nearline.db import open_database
from nearline.orders._store import JobStore

from .conftest import deploy
from .granules import COLLECTION, add_granules

BACKENDS = ("sqlite", "postgresql")  # each test runs against a server on each


def order(live, user, process, inputs, *, prefer="respond-async"):
    headers = {"Prefer": prefer} if prefer else {}
    with live.client(user) as client:
        return client.post(
            f"/processes/{process}/execution", json={"inputs": inputs}, headers=headers
        )


def test_deploy_order_and_results(live, alices_processes):
    summary = alices_processes["sizes"]
    assert (summary["id"], summary["version"]) == ("granule-sizes", "1.0")
    response = order(
        live,
        "alice",
        "granule-sizes",
        {"granules": {"ids": ["granule-001", "granule-002"]}, "scale": 2},
    )
    assert response.status_code == 201, response.text
    job_id = response.json()["jobID"]
    assert response.headers["location"].endswith(f"/jobs/{job_id}")
    status = live.wait_for_job("alice", job_id)
    assert status["status"] == "successful", status
    assert status["progress"] == 100
    run = status["nearline:runs"][0]
    assert run["station"] == "done"
    assert run["inputs"] == [f"{COLLECTION}/granule-001", f"{COLLECTION}/granule-002"]
    assert run["usage"]["wall_seconds"] > 0
    assert run["usage"]["cpu_seconds"] > 0
    with live.client("alice") as client:
        results = client.get(f"/jobs/{job_id}/results").json()
        (link,) = results["summary"]
        assert link["type"] == "application/json"
        summary = client.get(link["href"]).json()
        item = client.get(link["nearline:item"]).json()
    assert summary == {
        "job": job_id,
        "granules": [
            {"item": "granule-001", "size": 2 * (1000 + 37)},
            {"item": "granule-002", "size": 2 * (1000 + 74)},
        ],
    }
    provenance = item["properties"]
    assert provenance["nearline:inputs"] == run["inputs"]
    assert provenance["nearline:algorithm"] == {"id": "granule-sizes", "version": "1.0"}
    assert provenance["nearline:parameters"] == {"scale": 2}
    assert provenance["nearline:usage"]["cpu_seconds"] > 0
    assert item["bbox"] == [-160.0, -5.0, -142.0, 5.0]  # the two inputs' footprints together
    assert provenance["start_datetime"] == "2012-12-12T00:05:00Z"
    assert_stages_recorded(live, job_id, run)


READIED = "readied: its sandbox is made; waiting for a CPU to free"
SLOTS = "waiting for free slots: 2 of 2 CPUs busy, 2 more readied to follow"
STAGES = [  # in the order a run passes them (docs/benchmarks.md's small-runs table)
    "admit", "dispatch", "stage", "allocate", "job files", "cgroups", "disk", "held", "ready",
    "watch", "algorithm", "teardown", "executor", "outputs", "ingest", "cleanup",
]  # fmt: skip


def assert_stages_recorded(live, job_id: str, shown: dict) -> None:
    """The run recorded where its time went: every stage, in order, and together no more
    than the run took from its admission to its end."""
    with open_database(live.db, live.data / "service.db") as database:
        (run,) = JobStore(database).get(job_id, viewer=None).runs
    assert list(run.timings) == STAGES
    assert all(wall >= 0 and cpu >= 0 for wall, cpu in run.timings.values())
    assert run.timings["algorithm"][0] == shown["usage"]["wall_seconds"]
    assert run.timings["algorithm"][1] == shown["usage"]["cpu_seconds"]
    after_admission = sum(wall for name, (wall, _) in run.timings.items() if name != "admit")
    assert after_admission <= (run.finished - run.started).total_seconds() + 0.01


def test_an_order_over_the_maximum_is_split_into_runs(live, alices_processes):
    response = order(
        live,
        "alice",
        "granule-sizes",
        {
            "granules": {
                "bbox": [-180, -10, 180, 10],
                "datetime": "2012-12-12T00:00:00Z/2012-12-12T00:49:59Z",
            }
        },
    )
    assert response.status_code == 201, response.text
    status = live.wait_for_job("alice", response.json()["jobID"])
    assert status["status"] == "successful", status
    sizes = [len(run["inputs"]) for run in status["nearline:runs"]]
    assert sizes == [4, 3, 3]  # 10 granules start in those 50 minutes; at most 4 a run
    every = [ref for run in status["nearline:runs"] for ref in run["inputs"]]
    assert every == [f"{COLLECTION}/granule-{i:03d}" for i in range(10)]
    with live.client("alice") as client:
        results = client.get(f"/jobs/{status['jobID']}/results").json()
        granules = [
            g["item"]
            for link in results["summary"]
            for g in client.get(link["href"]).json()["granules"]
        ]
    assert granules == [f"granule-{i:03d}" for i in range(10)]


def test_without_prefer_a_short_job_answers_with_its_results(live, alices_processes):
    response = order(
        live, "alice", "granule-sizes", {"granules": {"ids": ["granule-005"]}}, prefer=None
    )
    assert response.status_code == 200, response.text
    (link,) = response.json()["summary"]
    with live.client("alice") as client:
        assert client.get(link["href"]).json()["granules"] == [
            {"item": "granule-005", "size": 1000 + 5 * 37}
        ]


def test_job_list_logs_and_dismiss(live, alices_processes):
    response = order(
        live, "alice", "sleeper", {"granules": {"ids": ["granule-003"]}, "seconds": 60}
    )
    job_id = response.json()["jobID"]
    with live.client("alice") as client:
        ids = [job["jobID"] for job in client.get("/jobs").json()["jobs"]]
        assert job_id in ids
        for _ in range(100):  # until the algorithm prints
            if "started" in client.get(f"/jobs/{job_id}/logs").text:
                break
            time.sleep(0.1)
        assert "started" in client.get(f"/jobs/{job_id}/logs").text
        dismissed = client.delete(f"/jobs/{job_id}").json()
        assert dismissed["status"] == "dismissed"
        final = live.wait_for_job("alice", job_id)
        assert final["nearline:runs"][0]["station"] == "dismissed"
        assert client.get(f"/jobs/{job_id}/results").status_code == 404
    run_folders = list((live.data / "runs").glob(f"{job_id}-*"))
    assert run_folders == []  # its working folder is removed


def test_the_order_records_stations_and_waiting_reasons(live, alices_processes):
    # two 60 s sleepers fill both CPUs and two more are readied (their sandboxes made,
    # waiting at the CPUs' gate: which two of the first four run is whichever were ready
    # first); the fifth waits in the queue; each says why
    ids = []
    for index in range(5):
        granule = f"granule-{6 + index:03d}"
        response = order(live, "alice", "sleeper", {"granules": {"ids": [granule]}, "seconds": 60})
        ids.append(response.json()["jobID"])
    with live.client("alice") as client:
        for _ in range(100):
            jobs = [client.get(f"/jobs/{job_id}").json() for job_id in ids]
            said = [job["nearline:runs"][0]["waiting"] for job in jobs]
            if sorted(said[:4], key=str) == [None, None, READIED, READIED] and said[4] == SLOTS:
                break
            time.sleep(0.1)
        assert sorted(said[:4], key=str) == [None, None, READIED, READIED]
        assert said[4] == SLOTS
        assert [job["status"] for job in jobs] == ["running"] * 4 + ["accepted"]
        assert [job["nearline:runs"][0]["station"] for job in jobs] == ["run"] * 4 + ["queued"]
        running = [job_id for job_id, why in zip(ids, said, strict=False) if why is None]
        for job_id in running:  # only the running two have started their program
            assert "started" in wait_for_log(client, job_id)
        # a readied run dismissed leaves the gate having started nothing, and the queue's
        # next run is readied in its place
        readied = said.index(READIED)
        assert client.delete(f"/jobs/{ids[readied]}").json()["status"] == "dismissed"
        for _ in range(100):
            fifth = client.get(f"/jobs/{ids[4]}").json()["nearline:runs"][0]
            if fifth["waiting"] == READIED:
                break
            time.sleep(0.1)
        assert fifth["station"] == "run"
        assert fifth["waiting"] == READIED
        assert "started" not in client.get(f"/jobs/{ids[readied]}/logs").text
        assert not list((live.data / "runs").glob(f"{ids[readied]}-*"))  # its sandbox is gone
        for job_id in ids:
            client.delete(f"/jobs/{job_id}")


def wait_for_log(client, job_id: str) -> str:  # type: ignore[no-untyped-def]
    """The job's log once its program has said something (or after 10 s)."""
    for _ in range(100):
        text = client.get(f"/jobs/{job_id}/logs").text
        if text.strip():
            return text
        time.sleep(0.1)
    return client.get(f"/jobs/{job_id}/logs").text


def test_many_inputs_and_many_outputs_per_run(live):
    """NADM ran one file in, one file out; here two data inputs (one split over runs, one
    given whole to each run) and several outputs of two kinds per run."""
    add_granules(live.data, 2, collection="test-references")
    deploy(live, "alice", "pairs")
    response = order(
        live,
        "alice",
        "pairs",
        {
            "granules": {"ids": [f"granule-{i:03d}" for i in range(6)]},
            "reference": {"ids": ["granule-001"], "collections": ["test-references"]},
        },
    )
    assert response.status_code == 201, response.text
    status = live.wait_for_job("alice", response.json()["jobID"])
    assert status["status"] == "successful", status
    runs = status["nearline:runs"]
    assert [len(run["inputs"]) for run in runs] == [4, 4]  # 3 + 3 granules, each + 1 reference
    assert all("test-references/granule-001" in run["inputs"] for run in runs)
    with live.client("alice") as client:
        results = client.get(f"/jobs/{status['jobID']}/results").json()
        pairs = [client.get(link["href"]).json() for link in results["pairs"]]
        counts = [client.get(link["href"]).text for link in results["count"]]
    assert sorted(p["granule"] for p in pairs) == [f"granule-{i:03d}" for i in range(6)]
    assert {p["reference"] for p in pairs} == {"granule-001"}
    assert all(p["sizes"][1] == 1000 + 37 for p in pairs)  # the reference's own bytes
    assert counts == ["3", "3"]

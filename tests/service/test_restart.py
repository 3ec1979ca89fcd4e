"""kill -9 of the server in the middle of jobs, then a restart: every job accounted for,
every run's algorithm finished exactly once."""

from __future__ import annotations

import time

import psutil

from nearline.algorithms._launch import HOLD

from ..live_service import LiveService
from .conftest import deploy
from .granules import add_granules

BACKENDS = ("sqlite", "postgresql")  # each test runs against a server on each


def test_kill_9_mid_jobs_then_restart_loses_nothing_and_repeats_nothing(tmp_path, state_db):
    live = LiveService(tmp_path / "data", db=state_db)
    add_granules(live.data, 6)
    live.add_user("alice")
    live.start("--cpus", "2")
    try:
        deploy(live, "alice", "sleeper")
        with live.client("alice") as client:
            response = client.post(
                "/processes/sleeper/execution",
                json={
                    "inputs": {
                        "granules": {"ids": [f"granule-{i:03d}" for i in range(5)]},
                        "seconds": 3,
                    }
                },
                headers={"Prefer": "respond-async"},
            )
            job_id = response.json()["jobID"]
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # until two runs are inside the algorithm
                # 'run' comes before the algorithm starts (and two more runs wait there,
                # readied, for a CPU): the algorithm's own line says it has started
                said = client.get(f"/jobs/{job_id}/logs").text.splitlines()
                runs = client.get(f"/jobs/{job_id}").json()["nearline:runs"]
                if said.count("started") == 2 and "done" not in said:
                    break
                time.sleep(0.05)
        caught = [run["station"] for run in runs].count("run")
        assert caught in (2, 3, 4)  # the two running, and those readied by then
        assert said.count("started") == 2
        live.kill()

        def left(held: bool) -> list[psutil.Process]:
            """The processes in the runs' folders: the held shells of readied runs, or the
            rest."""
            return [
                p
                for p in psutil.process_iter(["cwd", "cmdline"])
                if (p.info["cwd"] or "").startswith(str(live.data / "runs"))
                and (HOLD in (p.info["cmdline"] or [])) == held
            ]

        assert left(held=False) == []  # the runs died with their service
        # a readied run's held shell reads the end of its pipe and exits by itself, a moment
        # later (docs/sandbox.md, "How a run's first process starts")
        deadline = time.monotonic() + 5
        while left(held=True) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert left(held=True) == []
        live.start("--cpus", "2")
        status = live.wait_for_job("alice", job_id, timeout=120)
        assert status["status"] == "successful", status
        runs = status["nearline:runs"]
        assert [run["station"] for run in runs] == ["done"] * 5
        # those caught at station run, once each (a readied one too: its sandbox was made)
        assert caught <= sum(run["attempts"] for run in runs) <= 4  # never the queued fifth
        with live.client("alice") as client:
            logs = client.get(f"/jobs/{job_id}/logs").text
            results = client.get(f"/jobs/{job_id}/results").json()["done"]
            made = [client.get(link["href"]).text for link in results]
            found = client.get("/search", params={"collections": "sleeper", "limit": 100}).json()
        assert logs.splitlines().count("done") == 5  # every algorithm finished exactly once
        assert logs.splitlines().count("started") == 7  # the two killed runs started twice
        assert sorted(made) == [f"granule-{i:03d}" for i in range(5)]
        assert len(found["features"]) == 5  # no output catalogued twice
    finally:
        live.stop()

"""Admission by memory from the outside: a real `nearline serve` started inside a 1 GiB memory
budget (a cgroup the test makes) takes eight orders at once of a package that declares 300 MiB
and really touches 250 MiB, held 1.5 s. With admission on, runs wait for memory and every one
succeeds, the budget's limit never reached; with it off (the 2005 behaviour) the same overload
makes the kernel kill runs, never the service. The first server also records the machine
(`--record`), and its recording marks each run's start and end around the run."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from nearline.monitor import read_recording

from .conftest import deploy
from .granules import add_granules
from .memory_budget import Budget, BudgetedService, memory_budget

MIB = 1024**2
BUDGET = 1024 * MIB  # lends 1 GiB less the service's 256 MiB: two runs of 300 MiB at once
RUNS = 8
HOLD = 1.5  # seconds each run holds its 250 MiB
# what a run holds its CPUs and memory through: until its algorithm exits (ingest and
# clean-up are the service's own work, done after the next run may start)
BUSY = ("stage", "allocate", "run")


@contextmanager
def budgeted(folder: Path, *extra: str) -> Iterator[tuple[BudgetedService, Budget]]:
    """A server inside a fresh 1 GiB budget, with alice, eight granules and the hog."""
    with memory_budget(BUDGET) as budget:
        live = BudgetedService(folder / "data", budget=budget)
        add_granules(live.data, RUNS)
        live.add_user("alice")
        live.start("--cpus", "2", "--max-upload", "4MiB", *extra)
        try:
            deploy(live, "alice", "hog")
            yield live, budget
        finally:
            live.stop()


def overload(live: BudgetedService) -> list[str]:
    """Eight orders at once, each one run touching 250 MiB and holding it 1.5 s."""
    jobs = []
    with live.client("alice") as client:
        for index in range(RUNS):
            body = {
                "inputs": {
                    "granules": {"ids": [f"granule-{index:03d}"]},
                    "megabytes": 250,
                    "seconds": HOLD,
                }
            }
            response = client.post(
                "/processes/hog/execution", json=body, headers={"Prefer": "respond-async"}
            )
            assert response.status_code == 201, response.text
            jobs.append(response.json()["jobID"])
    return jobs


def follow(live: BudgetedService, jobs: list[str]) -> tuple[list[dict], int, set[str]]:
    """Poll the jobs until all have ended: their final status documents, the most runs seen
    busy in one poll (the jobs are read one after another, so it may count a run that ended
    and the one that took its place), and every reason a run gave for waiting."""
    most, reasons = 0, set()
    deadline = time.monotonic() + 120
    with live.client("alice") as client:
        while time.monotonic() < deadline:
            statuses = [client.get(f"/jobs/{job}").json() for job in jobs]
            runs = [run for status in statuses for run in status["nearline:runs"]]
            most = max(most, sum(run["station"] in BUSY for run in runs))
            reasons |= {run["waiting"] for run in runs if run["waiting"]}
            if all(s["status"] in ("successful", "failed", "dismissed") for s in statuses):
                return statuses, most, reasons
            time.sleep(0.2)
    raise AssertionError(f"the jobs did not end in 120 s: {statuses}")


def test_admission_keeps_an_overload_within_the_budget_and_nothing_is_killed(tmp_path: Path):
    record = tmp_path / "load"
    with budgeted(tmp_path, "--record", str(record)) as (live, budget):
        jobs = overload(live)
        statuses, _, reasons = follow(live, jobs)
        with live.client("alice") as client:
            logs = [client.get(f"/jobs/{job}/logs").text for job in jobs]
        assert [s["status"] for s in statuses] == ["successful"] * RUNS, statuses
        assert any(reason.startswith("waiting for memory: ") for reason in reasons), reasons
        # the kernel never had to act: the budget's limit was never reached, nothing killed
        assert budget.read("memory.max_usage_in_bytes") < budget.limit
        assert budget.read("memory.failcnt") == 0
        assert budget.oom_control().get("oom_kill", 0) == 0
        # every run's processes were marked the kernel's first choice, the service was not
        assert all("holding 250 MiB; oom_score_adj 1000, child's 1000" in log for log in logs)
        assert live.process.poll() is None
        server_log = live.log.read_text() if live.log else ""
        assert "768.0 MiB at once (the memory budget of " in server_log
    # the recording (closed when the server stopped) marks each run's start and end around it
    recording = read_recording(record)
    assert len(recording.samples) >= 3
    runs = {
        f"hog job {status['jobID'][:8]} #{run['index']}": run
        for status in statuses
        for run in status["nearline:runs"]
    }
    marks = {(mark.event, mark.name): mark.time for mark in recording.marks}
    assert sorted(marks) == sorted((event, name) for name in runs for event in ("start", "end"))
    for name, run in runs.items():
        started = datetime.fromisoformat(run["started"]).timestamp()
        finished = datetime.fromisoformat(run["finished"]).timestamp()
        assert started <= marks["start", name] < marks["end", name] <= finished
        assert marks["end", name] - marks["start", name] >= HOLD
    # 768 MiB lent: never more than two runs of 300 MiB at once, by the marks (one clock, in
    # one process: polling the jobs one by one would see a run end and the next start apart)
    events = sorted((time_, event == "start") for (event, _), time_ in marks.items())
    running = peak = 0
    for _, starts in events:
        running += 1 if starts else -1
        peak = max(peak, running)
    assert peak <= 2


def test_with_admission_off_the_same_overload_gets_runs_killed(tmp_path: Path):
    with budgeted(tmp_path, "--admission", "off") as (live, budget):
        jobs = overload(live)
        statuses, most, _ = follow(live, jobs)
        failed = [s for s in statuses if s["status"] == "failed"]
        assert failed, "with admission off the overload should have run out of memory"
        assert most > 2
        for status in failed:  # not for its own limit: the budget ran out around it
            assert status["message"].startswith(
                "killed by the kernel: memory ran out around the run (in the service's memory "
                "budget, or on the machine) while it held "
            ), status
            assert status["message"].count("of its 300 MiB limit") == 1, status
        assert budget.read("memory.max_usage_in_bytes") == budget.limit  # reached
        # the kernel took runs, never the service: it still answers
        assert live.process.poll() is None
        with live.client("alice") as client:
            assert client.get("/jobs").status_code == 200

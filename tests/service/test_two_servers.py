"""Two `nearline serve` processes on one PostgreSQL database and one data folder: orders sent
to either are run by one of them, each run exactly once; one server killed with kill -9 has
its runs taken over by the other, which never restarts a run it holds itself."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import psycopg

from ..live_service import LiveService
from ..postgres_server import PostgresServer
from .conftest import deploy
from .granules import add_granules

JOBS = 4
RUNS = 3  # granules (and runs: the sleeper takes one a run) a job


def holders(url: str) -> dict[str, tuple[str, str, int]]:
    """Each run: its station, the server holding it ("": none) and its attempts."""
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT id, station, server, attempts FROM runs").fetchall()
    return {id: (station, server or "", attempts) for id, station, server, attempts in rows}


def test_two_servers_run_every_run_once_and_a_killed_ones_runs_are_taken_over(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    url = postgres_server.new_database("two")
    one = LiveService(tmp_path / "data", db=url)
    two = LiveService(tmp_path / "data", db=url)
    add_granules(one.data, JOBS * RUNS)
    one.add_user("alice")
    two.tokens = one.tokens
    one.start("--cpus", "2")
    two.start("--cpus", "2")
    try:
        deploy(one, "alice", "sleeper")
        jobs = []
        for n in range(JOBS):
            server = (one, two)[n % 2]
            ids = [f"granule-{n * RUNS + k:03d}" for k in range(RUNS)]
            with server.client("alice") as client:
                response = client.post(
                    "/processes/sleeper/execution",
                    json={"inputs": {"granules": {"ids": ids}, "seconds": 8}},
                    headers={"Prefer": "respond-async"},
                )
            assert response.status_code == 201, response.text
            jobs.append(response.json()["jobID"])
        assert one.process is not None
        killed = f"{socket.gethostname()}:{one.process.pid}:"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until each server runs something
            held = holders(url)
            running = {server for station, server, _ in held.values() if station == "run"}
            if len(running - {""}) == 2:
                break
            time.sleep(0.05)
        assert len(running - {""}) == 2, held
        one.kill()
        caught = {id for id, (station, server, _) in held.items() if server.startswith(killed)}
        survivors = {
            id
            for id, (station, server, _) in held.items()
            if station == "run" and not server.startswith(killed)
        }
        assert [id for id in caught if held[id][0] == "run"]  # the killed one was running
        statuses = [two.wait_for_job("alice", job, timeout=180) for job in jobs]
        assert [status["status"] for status in statuses] == ["successful"] * JOBS
        final = holders(url)
        assert {final[id][2] for id in survivors} == {0}  # never taken from a live server
        assert all(final[id][2] == 1 for id in caught if held[id][0] != "done")
        with two.client("alice") as client:
            logs = "\n".join(client.get(f"/jobs/{job}/logs").text for job in jobs)
            found = client.get("/search", params={"collections": "sleeper", "limit": 100}).json()
        # every run finished; one of the killed server's may have finished its algorithm just
        # before the kill, and rightly ran again on the survivor (runs are at least once, their
        # outputs catalogued exactly once)
        taken_over = len([id for id in caught if held[id][0] == "run"])
        assert JOBS * RUNS <= logs.splitlines().count("done") <= JOBS * RUNS + taken_over
        assert len(found["features"]) == JOBS * RUNS  # and was catalogued once
        assert not [s for s, _, _ in final.values() if s != "done"]
    finally:
        one.stop()
        two.stop()

"""The service under many orders: 1,000 orders from 20 concurrent clients of 5 users, none
lost or duplicated, and each user's share of run time while all of them have work waiting.

One user (u1) floods the queue first with all of their orders; the other four start a moment
later. First come, first served would give u1 every slot until their backlog drained; fair
share gives each user with work waiting an equal share from the moment they arrive.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
from tests.live_service import LiveService, nearline
from tests.service.granules import COLLECTION, add_granules

from _common import epoch

USERS = [f"u{index}" for index in range(1, 6)]
CLIENTS_PER_USER = 4
ORDERS_PER_CLIENT = 50  # 20 clients x 50 = 1,000 orders
GRANULES = 30  # add_granules walks east along the equator: 30 stay west of 180
MANIFEST = f"""\
id: nap
version: "1.0"
title: Naps
description: Sleeps a fifth of a second and writes its granule's id; for load tests.
command: [python, run.py]
inputs: [{{name: granules, collection: {COLLECTION}, min: 1, max: 1}}]
outputs: [{{name: done, media_type: text/plain, pattern: "*.txt"}}]
resources: {{cpus: 1, memory: 64MiB, disk: 1MiB, timeout: 60s}}
"""
ALGORITHM = """\
import json, os, pathlib, time
job = json.loads(pathlib.Path(os.environ["NEARLINE_JOB"]).read_text())
time.sleep(0.2)
item = job["inputs"]["granules"][0]["item"]["id"]
(pathlib.Path(job["outputs"]) / "done.txt").write_text(item)
"""


def _client(live: LiveService, user: str, made: list[str], errors: list[str]) -> None:
    with live.client(user) as client:
        for index in range(ORDERS_PER_CLIENT):
            granule = f"granule-{index % GRANULES:03d}"
            response = client.post(
                "/processes/nap/execution",
                json={"inputs": {"granules": {"ids": [granule]}}},
                headers={"Prefer": "respond-async"},
            )
            if response.status_code == 201:
                made.append(response.json()["jobID"])
            else:
                errors.append(f"{user}: {response.status_code} {response.text[:200]}")


def _jobs_of(live: LiveService, user: str) -> list[dict[str, Any]]:
    found, offset = [], 0
    with live.client(user) as client:
        client.timeout = httpx.Timeout(600)  # a thousand jobs listed from a loaded server
        while True:
            page = client.get("/jobs", params={"limit": 1000, "offset": offset}).json()["jobs"]
            found += page
            offset += len(page)
            if len(page) < 1000:
                return found


def _wait_all(live: LiveService, users: list[str], timeout: float) -> None:
    """Until none of ``users``' jobs is left to end, as a client waiting for its orders
    would ask: each user's first job still accepted or running (OGC's job list filter), on a
    kept connection, every 0.5 s. (Listing every job every 2 s, as this did before, cost the
    server about 45 ms a user each time, on the CPUs the runs start on.)"""
    deadline = time.monotonic() + timeout
    waiting = set(users)
    clients = {user: live.client(user) for user in users}
    try:
        while time.monotonic() < deadline:
            for user in sorted(waiting):
                params = {"status": ["accepted", "running"], "limit": 1}
                response = clients[user].get("/jobs", params=params)
                response.raise_for_status()
                if not response.json()["jobs"]:
                    waiting.discard(user)
            if not waiting:
                return
            time.sleep(0.5)
    finally:
        for client in clients.values():
            client.close()
    raise AssertionError(f"not every order ended within {timeout} s")


def _shares(runs: dict[str, list[tuple[float, float]]], window: tuple[float, float]) -> dict:
    """Each user's share of the run time spent inside ``window`` (seconds since epoch)."""
    start, end = window
    spent = {
        user: sum(max(0.0, min(b, end) - max(a, start)) for a, b in intervals)
        for user, intervals in runs.items()
    }
    total = sum(spent.values()) or 1.0
    return {user: seconds / total for user, seconds in spent.items()}


def nap_service(folder: Path, name: str) -> LiveService:
    """A server (not started) on ``folder/name`` with the five users and the nap algorithm
    (u1's, public) deployed."""
    data = folder / name
    shutil.rmtree(data, ignore_errors=True)
    add_granules(data, GRANULES)
    live = LiveService(data)
    for user in USERS:
        live.add_user(user)
    package = folder / "nap"
    package.mkdir(parents=True, exist_ok=True)
    (package / "algorithm.yaml").write_text(MANIFEST)
    (package / "run.py").write_text(ALGORITHM)
    nearline("algorithms", "deploy", str(package), "--user", "u1", "--public", data=data)
    return live


def orders_under_load(
    folder: Path, *, during: Callable[[LiveService, threading.Event], Any] | None = None
) -> dict[str, Any]:
    """Run the load; its figures (and assertion errors if any order was lost or doubled).
    ``during(live, ended)``, if given, runs on a thread of its own from the first order until
    every order has ended (``ended`` is set then); what it returns is ``figures["during"]``,
    and the server's data folder is ``figures["data"]`` until the next load."""
    live = nap_service(folder, "load-data")
    data = live.data
    live.start("--cpus", "2")
    ended = threading.Event()
    watched: list[Any] = []
    watcher = threading.Thread(
        target=lambda: watched.append(during(live, ended)) if during else None, daemon=True
    )
    try:
        made: dict[str, list[str]] = {user: [] for user in USERS}
        errors: list[str] = []
        began = time.time()
        watcher.start()
        threads = [
            threading.Thread(target=_client, args=(live, user, made[user], errors))
            for user in USERS
            for _ in range(CLIENTS_PER_USER)
        ]
        for thread in threads[:CLIENTS_PER_USER]:  # u1 floods the queue first
            thread.start()
        for thread in threads[:CLIENTS_PER_USER]:
            thread.join()
        others_arrive = time.time()
        for thread in threads[CLIENTS_PER_USER:]:
            thread.start()
        for thread in threads[CLIENTS_PER_USER:]:
            thread.join()
        submitted = time.time()
        _wait_all(live, USERS, timeout=3600)
        finished = time.time()
        ended.set()
        watcher.join()
        figures = _account(live, made, errors, (began, others_arrive, submitted, finished))
        return {**figures, "during": watched[0] if watched else None, "data": data}
    finally:
        ended.set()
        live.stop()


def _account(
    live: LiveService,
    made: dict[str, list[str]],
    errors: list[str],
    moments: tuple[float, float, float, float],
) -> dict[str, Any]:
    began, others_arrive, submitted, finished = moments
    listed = {user: _jobs_of(live, user) for user in USERS}
    runs: dict[str, list[tuple[float, float]]] = {}
    statuses: Counter[str] = Counter()
    for user, jobs in listed.items():
        for job in jobs:
            statuses[job["status"]] += 1
            for run in job["nearline:runs"]:
                if run["started"] and run["finished"]:
                    interval = (epoch(run["started"]), epoch(run["finished"]))
                    runs.setdefault(user, []).append(interval)
    lost = sum(len(set(made[u]) - {j["jobID"] for j in listed[u]}) for u in USERS)
    phantom = sum(len({j["jobID"] for j in listed[u]} - set(made[u])) for u in USERS)
    items = sum(_outputs_of(live, user) for user in USERS)
    doubled = phantom + max(0, items - statuses["successful"])
    contended_until = min(max(b for _, b in intervals) for intervals in runs.values())
    shares = _shares(runs, (others_arrive, contended_until))
    return {
        "orders": sum(len(ids) for ids in made.values()),
        "refused": len(errors),
        "errors": errors[:5],
        "listed": sum(len(jobs) for jobs in listed.values()),
        "lost": lost,
        "doubled": doubled,
        "statuses": dict(statuses),
        "submit seconds": submitted - began,
        "total seconds": finished - began,
        # the same span from the service's own record, whatever the waiter's polling
        "last run ended seconds": max(b for ivs in runs.values() for _, b in ivs) - began,
        "contended seconds": contended_until - others_arrive,
        "shares": shares,
        "runs per user": {user: len(intervals) for user, intervals in runs.items()},
    }


def _outputs_of(live: LiveService, user: str) -> int:
    """How many output items ``user`` has in the algorithm's collection (one per run)."""
    count, token = 0, None
    with live.client(user) as client:
        while True:
            params = {"collections": "nap", "limit": 10000, **({"token": token} if token else {})}
            page = client.get("/search", params=params).json()
            count += len(page["features"])
            following = [link for link in page["links"] if link["rel"] == "next"]
            if not following:
                return count
            token = parse_qs(urlparse(following[0]["href"]).query)["token"][0]

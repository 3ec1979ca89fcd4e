"""A thousand small runs: what a 0.2 s run costs beyond its own work, stage by stage, and how
close 1,000 of them come to their ideal, ordered by users and fired by a subscription.

Measured from the outside, with httpx clients that keep their connection, on a `nearline
serve` lending 2 CPUs with the full sandbox (bubblewrap, the run's cgroups, its disk
allotment held) and the nap algorithm of benchmarks/_service_orders.py (1 CPU, 64 MiB, 1 MiB
of disk; sleeps 0.2 s):

(1) a quiet server: orders one at a time, each waited for; every run's stages as the service
    recorded them (``Run.timings``: wall and the service's CPU), and GET /jobs/{id}'s own
    time as the status reaching the client;
(2) the load: 1,000 orders from 20 clients of 5 users (``orders_under_load``), the same
    stages, and GET /jobs/{id} timed by one more client every 0.5 s meanwhile;
(3) a subscription (policy each) and 1,000 new granules committed to the catalogue by another
    connection at 150 a second (``nearline ingest``'s rate on small granules here,
    docs/benchmarks.md), 15 every 0.1 s: all its runs, and the time from a granule's commit
    to its job existing.

The ideal is 1,000 x 0.2 s over 2 slots: 100 s.

    .venv/bin/python benchmarks/small_runs.py [--quiet 30] [--granules 1000] [--update-docs]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))  # tests.live_service: the same live server the tests drive

from tests.live_service import LiveService  # noqa: E402

from _common import (  # noqa: E402
    command_line,
    machine_summary,
    markdown_table,
    now_stamp,
    replace_section,
)
from _service_orders import ALGORITHM, _jobs_of, nap_service, orders_under_load  # noqa: E402
from _stac_searches import percentiles  # noqa: E402
from _subscription_trigger import _granule, _moment, subscribe_each  # noqa: E402
from nearline.algorithms._namespaces import bwrap_argv  # noqa: E402 (as runs are wrapped)
from nearline.archive import SQLiteCatalogue  # noqa: E402

DOCS = PROJECT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- small-runs:begin -->", "<!-- small-runs:end -->"
DOCS_HEADER = "# Benchmarks\n\nEach section is rewritten by its script's `--update-docs`.\n"
NAP = 0.2  # the algorithm's own work, seconds
SLOTS = 2
# the stages a run holds its slot through (the rest, ingest and clean-up, is the service's
# own work after the slot is given back), in the order a run passes them
SLOT_STAGES = [
    ("admission (loop woken to run moved)", ["admit"]),
    ("dispatch (to a station thread)", ["dispatch"]),
    ("staging the inputs", ["stage", "allocate"]),
    ("job files and mounts", ["job files"]),
    ("cgroups made, first process held", ["cgroups", "held"]),
    ("disk allotment made", ["disk"]),
    ("the algorithm's start (its wall - 0.2 s)", ["algorithm"]),
    ("waiting beside it, reaping", ["watch"]),
    ("teardown (outputs back, cgroups and disk gone)", ["teardown"]),
    ("the executor's own", ["executor"]),
    ("outputs hashed and recorded", ["outputs"]),
]
# not in the sum: the wait of a readied run for its CPUs (others run meanwhile), and the
# service's own work after the run gave its CPUs back
BESIDE = [
    ("readied, waiting for its CPUs (others run)", ["ready"]),
    ("ingest of the outputs", ["ingest"]),
    ("clean-up", ["cleanup"]),
]


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def stage_rows(data: Path) -> list[dict[str, tuple[float, float]]]:
    """Every finished run's stages, as the service recorded them (none before they were)."""
    with contextlib.closing(sqlite3.connect(f"file:{data / 'service.db'}?mode=ro", uri=True)) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(runs)")]
        if "timings" not in columns:
            return []
        query = "SELECT timings FROM runs WHERE timings IS NOT NULL ORDER BY started"
        rows = db.execute(query).fetchall()
    return [{k: (w, c) for k, (w, c) in json.loads(text).items()} for (text,) in rows]


def stage_medians(runs: list[dict[str, tuple[float, float]]]) -> dict[str, tuple[float, float]]:
    """{row name: (median wall, median CPU)} in milliseconds, and the slot's overhead."""
    found: dict[str, tuple[float, float]] = {}
    if not runs:
        return found
    for label, names in SLOT_STAGES + BESIDE:
        walls = [sum(run.get(n, (0, 0))[0] for n in names) for run in runs]
        cpus = [sum(run.get(n, (0, 0))[1] for n in names) for run in runs]
        if names == ["algorithm"]:
            walls = [w - NAP for w in walls]
        found[label] = (1000 * statistics.median(walls), 1000 * statistics.median(cpus))
    slot = [
        sum(run.get(n, (0, 0))[0] for _, names in SLOT_STAGES for n in names) - NAP for run in runs
    ]
    found["slot overhead (sum)"] = (1000 * statistics.median(slot), float("nan"))
    return found


def status_probe(live: LiveService, user: str, ended: threading.Event, every: float) -> list:
    """Seconds GET /jobs/{id} took, one of ``user``'s jobs, every ``every`` s until ``ended``."""
    spent: list[float] = []
    with live.client(user) as client:
        job = None
        while job is None and not ended.is_set():
            jobs = client.get("/jobs", params={"limit": 1}).json()["jobs"]
            job = jobs[0]["jobID"] if jobs else None
            ended.wait(every)
        while not ended.is_set():
            began = time.perf_counter()
            client.get(f"/jobs/{job}").raise_for_status()
            spent.append(time.perf_counter() - began)
            ended.wait(every)
    return spent


def quiet(folder: Path, count: int) -> dict[str, Any]:
    """Orders one at a time on an idle server; stage medians and the client's view."""
    live = nap_service(folder, "quiet-data")
    live.start("--cpus", "2")
    polls: list[float] = []
    whole: list[float] = []
    try:
        with live.client("u2") as client:
            for index in range(count + 2):  # the first two warm the server up
                began = time.perf_counter()
                response = client.post(
                    "/processes/nap/execution",
                    json={"inputs": {"granules": {"ids": [f"granule-{index % 30:03d}"]}}},
                    headers={"Prefer": "respond-async"},
                )
                response.raise_for_status()
                job = response.json()["jobID"]
                while True:
                    asked = time.perf_counter()
                    status = client.get(f"/jobs/{job}").json()["status"]
                    if index >= 2:
                        polls.append(time.perf_counter() - asked)
                    if status in ("successful", "failed", "dismissed"):
                        break
                    time.sleep(0.01)
                assert status == "successful", status
                if index >= 2:
                    whole.append(time.perf_counter() - began)
        runs = stage_rows(live.data)[2:] if stage_rows(live.data) else []
    finally:
        live.stop()
    shutil.rmtree(live.data, ignore_errors=True)
    return {"stages": stage_medians(runs), "polls": polls, "whole": whole, "runs": len(runs)}


def floor(folder: Path, count: int) -> dict[str, Any]:
    """The physical limit, measured: the nap's own command under bubblewrap as nearline
    wraps it (the same binds, the same interpreter), ``count`` runs two at a time back to
    back, with no service, no cgroups and no disk: seconds per run and slot."""
    work = folder / "floor"
    (work / "outputs").mkdir(parents=True, exist_ok=True)
    (work / "job.json").write_text(
        json.dumps(
            {"inputs": {"granules": [{"item": {"id": "g"}}]}, "outputs": str(work / "outputs")}
        )
    )
    (work / "run.py").write_text(ALGORITHM)
    python = Path(sys.executable)
    argv = bwrap_argv(
        [str(python), str(work / "run.py")],
        bwrap=shutil.which("bwrap") or "bwrap",
        folder=work,
        binds=[(PROJECT / "src", False), (python.parent.parent, False)],
    )
    env = {"PATH": "/usr/bin:/bin", "NEARLINE_JOB": str(work / "job.json"), "LANG": "C.UTF-8"}
    subprocess.run(argv, env=env, check=True)  # warm
    slots = [count // SLOTS] * SLOTS
    began = time.perf_counter()
    threads = [
        threading.Thread(
            target=lambda n: [subprocess.run(argv, env=env, check=True) for _ in range(n)],
            args=(n,),
        )
        for n in slots
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took = time.perf_counter() - began
    return {"runs": sum(slots), "seconds": took, "per slot run": took * SLOTS / sum(slots)}


def subscribed(folder: Path, granules: int, rate: int = 150) -> dict[str, Any]:
    """A subscription (policy each) fired by ``granules`` new granules, ``rate`` a second
    committed ten times a second through a catalogue connection of this process (not the
    server's); its runs and trigger latency."""
    live = nap_service(folder, "subscription-data")
    live.start("--cpus", "2")
    try:
        sid = subscribe_each(live, "u2", "nap", tag="trigger")
        files = live.data.parent / "subscription-granules"
        shutil.rmtree(files, ignore_errors=True)
        files.mkdir()
        items = [_granule(files, index) for index in range(granules)]
        committed: dict[str, float] = {}
        began = time.time()
        batch = max(1, rate // 10)
        with SQLiteCatalogue(live.data / "catalogue.db") as catalogue:
            for start in range(0, granules, batch):
                catalogue.add_items(items[start : start + batch])
                now = time.time()
                committed.update(
                    {f"{item.collection}/{item.id}": now for item in items[start : start + batch]}
                )
                time.sleep(max(0.0, began + (start + batch) / rate - time.time()))
        runs = _wait_subscription(live, sid, granules, timeout=3600)
        finished = time.time()
        made, statuses = [], {}
        jobs = {job["jobID"]: job for job in _jobs_of(live, "u2")}
        for run in runs:
            statuses[run["status"]] = statuses.get(run["status"], 0) + 1
            job = jobs[run["jobID"]]
            made.append(_moment(job["created"]) - committed[run["granules"][0]])
        granted = [g for run in runs for g in run["granules"]]
        outputs = sum(len(jobs[run["jobID"]]["nearline:runs"]) for run in runs)
        stages = stage_medians(stage_rows(live.data))
    finally:
        live.stop()
    shutil.rmtree(live.data, ignore_errors=True)
    p50, p95 = percentiles(made)
    return {
        "granules": granules,
        "runs": len(runs),
        "distinct granules": len(set(granted)),
        "doubled": len(granted) - len(set(granted)),
        "lost": granules - len(set(granted)),
        "statuses": statuses,
        "run count": outputs,
        "total seconds": finished - began,
        "trigger p50": p50,
        "trigger p95": p95,
        "stages": stages,
    }


def _wait_subscription(live: LiveService, sid: str, count: int, timeout: float) -> list[dict]:
    deadline = time.monotonic() + timeout
    with live.client("u2") as client:
        while time.monotonic() < deadline:
            runs = client.get(f"/subscriptions/{sid}").json()["runs"]
            ended = [r for r in runs if r["status"] in ("successful", "failed", "dismissed")]
            if len(ended) >= count:
                return runs
            time.sleep(1)
    raise AssertionError(f"the subscription's {count} runs did not end within {timeout} s")


def ms(value: float) -> str:
    return "—" if value != value else f"{value:.0f}"


def report(found: dict[str, Any], provenance: str) -> str:
    quiet_, load, sub = found["quiet"], found["load"], found["subscription"]
    labels = [label for label, _ in SLOT_STAGES + BESIDE] + ["slot overhead (sum)"]
    q, ld = quiet_["stages"], load["stages"]
    rows = [
        [label, ms(q[label][0]), ms(q[label][1]), ms(ld[label][0]), ms(ld[label][1])]
        for label in labels
        if label in q and label in ld
    ]
    q50, q95 = percentiles(quiet_["polls"])
    l50, l95 = percentiles(load["polls"]) if load["polls"] else (float("nan"),) * 2
    rows.append(
        ["the job's status reaching the client (GET /jobs/{id})", f"{1000 * q50:.0f}", "—",
         f"{1000 * l50:.0f}", "—"]
    )  # fmt: skip
    total, sub_total = load["total seconds"], sub["total seconds"]
    overhead = total * SLOTS / load["orders"] - NAP
    sub_overhead = sub_total * SLOTS / max(1, sub["runs"]) - NAP
    shares = " / ".join(f"{share:.1%}" for share in load["shares"].values())
    fl = found["floor"]
    floor_total = fl["per slot run"] * 1000 / SLOTS  # its runs, as for 1,000
    totals = [
        [f"floor: the nap's command under bubblewrap alone, {fl['runs']} runs (as for 1,000)",
         "1000", f"{floor_total:.1f}", "100", f"{floor_total / 100:.2f}",
         f"{fl['per slot run'] - NAP:.3f}", "—", "—", "—"],
        ["orders", str(load["orders"]), f"{total:.1f}", "100", f"{total / 100:.2f}",
         f"{overhead:.3f}", str(load["lost"]), str(load["doubled"]), shares],
        [f"subscription, {sub['granules']:,} granules", str(sub["runs"]), f"{sub_total:.1f}",
         "100", f"{sub_total / 100:.2f}", f"{sub_overhead:.3f}", str(sub["lost"]),
         str(sub["doubled"]), "—"],
    ]  # fmt: skip
    return "\n\n".join(
        [
            "## A thousand small runs",
            provenance,
            "Stage by stage, median milliseconds per run as the service records them "
            "(`Run.timings`): wall, and the service's CPU (the stage's thread and the helper "
            "programs it ran; for the algorithm's start, the run's own CPU, its cgroup's). "
            f"Quiet: {quiet_['runs']} orders one at a time, each waited for (POST to "
            f"successful, median {statistics.median(quiet_['whole']):.3f} s); under load: the "
            "1,000 orders below:",
            markdown_table(["stage", "quiet wall", "quiet CPU", "load wall", "load CPU"], rows),
            f"GET /jobs/{{id}} under the load: p50 {1000 * l50:.0f} ms, p95 {1000 * l95:.0f} "
            f"ms (quiet: p50 {1000 * q50:.0f} ms, p95 {1000 * q95:.0f} ms).",
            "1,000 orders of the 0.2 s algorithm from 20 clients of 5 users, 2 CPUs lent "
            "(ideal: 1,000 x 0.2 s / 2 slots = 100 s), beside the floor measured in the same "
            "run: the algorithm's own command wrapped as nearline wraps it (bubblewrap, the "
            "interpreter, its 0.2 s), two at a time back to back, with no service at all "
            f"(orders / floor: {total / floor_total:.2f}):",
            markdown_table(
                [
                    "load",
                    "runs",
                    "wall s",
                    "ideal s",
                    "ratio",
                    "slot overhead s/run",
                    "lost",
                    "doubled",
                    "shares",
                ],
                totals,
            ),
            f"The orders' wall is from the first POST until the waiter (each user's first job "
            f"still accepted or running, asked every 0.5 s) found none left; by the service's "
            f"own record the last run ended {load['last run ended seconds']:.1f} s after the "
            f"first POST.",
            f"The subscription: {sub['granules']:,} granules committed at 150 a second; "
            f"runs {sub['statuses']}; from a granule's commit to its job existing, p50 "
            f"{sub['trigger p50']:.3f} s, p95 {sub['trigger p95']:.3f} s.",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quiet", type=int, default=30, help="orders on the quiet server")
    parser.add_argument("--granules", type=int, default=1000)
    parser.add_argument("--only", choices=["floor", "quiet", "load", "subscription"], default=None)
    parser.add_argument("--floor", type=int, default=200, help="runs measuring the floor")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args(argv)
    folder = args.out or Path(tempfile.mkdtemp(prefix="nearline-small-runs-"))
    folder.mkdir(parents=True, exist_ok=True)
    found: dict[str, Any] = {}
    loads: list[str] = []
    try:
        if args.only in (None, "floor"):
            loads.append(f"floor: {uptime()}")
            found["floor"] = floor(folder, args.floor)
            print("floor", found["floor"], flush=True)
        if args.only in (None, "quiet"):
            loads.append(f"quiet: {uptime()}")
            found["quiet"] = quiet(folder, args.quiet)
            print("quiet", json.dumps(found["quiet"]["stages"]), flush=True)
        if args.only in (None, "load"):
            loads.append(f"load: {uptime()}")
            load = orders_under_load(
                folder, during=lambda live, ended: status_probe(live, "u3", ended, 0.5)
            )
            load["polls"] = load.pop("during") or []
            load["stages"] = stage_medians(stage_rows(load["data"]))
            shutil.rmtree(load["data"], ignore_errors=True)
            found["load"] = load
            print("load", {k: v for k, v in load.items() if k != "polls"}, flush=True)
        if args.only in (None, "subscription"):
            loads.append(f"subscription: {uptime()}")
            found["subscription"] = subscribed(folder, args.granules)
            print("subscription", found["subscription"], flush=True)
        loads.append(f"end: {uptime()}")
    finally:
        if args.out is None:
            shutil.rmtree(folder, ignore_errors=True)
    print("\n".join(loads))
    if args.only is None:
        provenance = (
            f"`{command_line()}` on {now_stamp()}; machine: {machine_summary(PROJECT)}; "
            f"the machine was shared: `uptime` at each part: {'; '.join(loads)}."
        )
        text = report(found, provenance)
        print(text)
        if args.update_docs:
            replace_section(DOCS, BEGIN, END, text, DOCS_HEADER)
    return 0


if __name__ == "__main__":
    sys.exit(main())

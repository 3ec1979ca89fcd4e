"""``nearline demo``'s service part: the Pathfinder chain ordered through the service's API.

A real ``nearline serve`` on 127.0.0.1 (a free port, its own data folder), a demo user, the
synthetic day ingested into the catalogue, the built-in composite ordered with ``Prefer:
respond-async`` and followed station by station, then its results' links and what the run
cost, as a scientist would see them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from nearline.errors import NearlineError
from nearline.units import format_size

COLLECTION = "avhrr-gac"
DAY = "2012-12-12"
WHOLE_DAY = f"{DAY}T00:00:00Z/{DAY}T23:59:59Z"


def _start_server(data: Path, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    """`nearline serve` on a free port of its choosing, once it answers; and that port."""
    from nearline.cli._serve import wait_until_serving
    from nearline.mpirun import MPI_ENV

    env = {**os.environ, **MPI_ENV, "NEARLINE_DATA": str(data)}
    command = [sys.executable, "-m", "nearline", "serve", "--port", "0"]
    with open(log, "ab") as output:
        began = output.tell()
        server = subprocess.Popen(command, env=env, stdout=output, stderr=output)
    return server, wait_until_serving(server, log, since=began, timeout=120)


def _stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _granules(granules: Path, args: argparse.Namespace, console: Any) -> list[Path]:
    """The composite part's day, or a small one made now."""
    from nearline.swath import synthesize_day

    if granules.is_dir() and any(granules.iterdir()):
        return sorted(granules.iterdir())
    with console.status(f"synthesizing {args.orbits} orbits..."):
        return synthesize_day(DAY, args.orbits, granules, lines_per_orbit=args.lines)


def service_demo(out: Path, *, granules: Path, args: argparse.Namespace) -> None:
    from rich.console import Console

    from nearline.archive import SQLiteCatalogue, ingest
    from nearline.db import SQLiteDatabase
    from nearline.identity import UserStore

    console = Console()
    shutil.rmtree(out, ignore_errors=True)
    data = out / "data"
    data.mkdir(parents=True)
    paths = _granules(granules, args, console)
    with SQLiteDatabase(data / "service.db") as database:
        token = UserStore(database).add("demo")
    with SQLiteCatalogue(data / "catalogue.db") as catalogue:
        report = ingest(catalogue, paths, collection=COLLECTION, start_method="fork")
    console.print(
        f"service demo: ingested {len(report.items)} granules "
        f"({format_size(report.bytes)}) into the catalogue collection {COLLECTION}"
    )
    with console.status("starting nearline serve..."):
        server, port = _start_server(data, out / "serve.log")
    try:
        base = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
            job = _order(client, console)
            _show(client, job, console)
    finally:
        _stop(server)
    console.print(f"the service's data folder (catalogue, runs' logs, outputs): {data}")


def _order(client: httpx.Client, console: Any) -> dict[str, Any]:
    """Search the day's granules, order the built-in composite on them, follow the job."""
    found = client.get("/search", params={"collections": COLLECTION, "datetime": WHOLE_DAY})
    if found.status_code != 200:
        raise NearlineError(f"the search was refused: {found.json().get('detail')}")
    found = found.json()
    console.print(
        f"STAC search of {DAY}: {found['numberReturned']} granules on the first page "
        f"(e.g. {found['features'][0]['id']})"
    )
    order = {"inputs": {"granules": {"collections": [COLLECTION], "datetime": WHOLE_DAY}}}
    response = client.post(
        "/processes/pathfinder/execution", json=order, headers={"Prefer": "respond-async"}
    )
    if response.status_code != 201:
        raise NearlineError(f"the order was refused: {response.json().get('detail')}")
    location = response.headers["location"]
    console.print(f"ordered the built-in Pathfinder composite: {location}")
    job = response.json()
    with console.status("") as status:
        while job["status"] in ("accepted", "running"):
            run = job["nearline:runs"][0]
            status.update(f"job {job['status']}: station {run['station']} {run['waiting'] or ''}")
            time.sleep(0.5)
            job = client.get(location).json()
    if job["status"] != "successful":
        logs = client.get(f"{location}/logs").text[-2000:]
        raise NearlineError(f"the demo's order {job['status']}: {job['message']}\n{logs}")
    return job


def _show(client: httpx.Client, job: dict[str, Any], console: Any) -> None:
    usage = job["nearline:usage"]
    (run,) = job["nearline:runs"]
    console.print(
        f"job {job['jobID']} successful: {len(run['inputs'])} granules in one run; "
        f"{usage['wall_seconds']:.1f} s wall, {usage['cpu_seconds']:.1f} s CPU, "
        f"peak memory {format_size(usage['peak_memory'])}, read "
        f"{format_size(usage['bytes_read'])}, wrote {format_size(usage['bytes_written'])}"
    )
    results = client.get(f"/jobs/{job['jobID']}/results").json()
    for output, links in results.items():
        for link in links:
            console.print(f"{output}: {link['title']} ({format_size(link['file:size'])})")
            console.print(f"  {link['href']}", soft_wrap=True)

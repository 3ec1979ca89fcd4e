"""The near-archive service (S4PM-DM's job): how fast the catalogue fills and answers, how fast
granule files are ingested, and what an order costs beyond the algorithm's own work.

Measured in one run, each beside its floor on this machine:
(1) bulk insert of MODIS-like 5-minute granule items through ``SQLiteCatalogue.add_items``,
    against a bare ``executemany`` of the same rows into an unindexed SQLite table;
(2) ``nearline ingest`` of real granule files (time and footprint read from each), against
    only reading and hashing the same files;
(3) search latency over HTTP (one client, keep-alive) of bbox+datetime searches, limit 10,
    at each archive size, against the same searches in-process and an empty request
    (GET /conformance) over the same connection;
(4) an order on an idle server: POST .../execution to the algorithm's first instruction, and
    POST to a successful job, against the same command run by hand on the same files.

    .venv/bin/python benchmarks/service.py [--quick] [--sizes 10000,100000,1000000]
        [--out bench-output/service] [--update-docs]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from _common import (
    command_line,
    fmt,
    machine_summary,
    markdown_table,
    median,
    now_stamp,
    replace_section,
)

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))  # tests.live_service: the same live server the tests drive

from tests.live_service import LiveService, nearline  # noqa: E402

from nearline.archive import SQLiteCatalogue, modis_like_items  # noqa: E402
from nearline.archive.base import Collection  # noqa: E402

DOCS = PROJECT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- service:begin -->", "<!-- service:end -->"
DOCS_HEADER = "# Benchmarks\n\nEach section is rewritten by its script's `--update-docs`.\n"
START = datetime(2020, 1, 1, tzinfo=UTC)
COLLECTION = "MOD06_L2"
BATCH = 10_000
STAMP = "%Y-%m-%dT%H:%M:%SZ"
ALGORITHM = """\
import json, os, sys, time
started = time.time()
job = json.load(open(os.environ["NEARLINE_JOB"]))
total = sum(os.path.getsize(e["path"]) for es in job["inputs"].values() for e in es)
with open(os.path.join(job["outputs"], "sizes.json"), "w") as out:
    json.dump({"started": started, "bytes": total}, out)
"""
MANIFEST = f"""\
id: bench-sizes
version: "1.0"
title: sums its inputs' sizes
command: [python, run.py]
inputs: [{{name: granules, collection: {COLLECTION}, min: 1, max: 100}}]
outputs: [{{name: sizes, media_type: application/json, pattern: "*.json"}}]
resources: {{cpus: 1, memory: 256MiB, disk: 1MiB, timeout: 60s}}
"""


# -- (1) bulk insert -----------------------------------------------------------------------------
def insert_rates(folder: Path, size: int) -> tuple[float, float, Path]:
    """Items/s into a fresh catalogue of ``size`` items, and into a bare table; the catalogue."""
    items = list(modis_like_items(size, collection=COLLECTION, start=START, seed=1))
    path = folder / f"catalogue-{size}.db"
    path.unlink(missing_ok=True)
    with SQLiteCatalogue(path) as catalogue:
        catalogue.put_collection(Collection(id=COLLECTION, title="MODIS-like granules"))
        began = time.perf_counter()
        for first in range(0, size, BATCH):
            catalogue.add_items(items[first : first + BATCH])
        nearline_rate = size / (time.perf_counter() - began)
    rows = [
        (
            item.id,
            item.start.timestamp(),
            item.end.timestamp(),
            orjson.dumps(item.geometry),
            orjson.dumps(item.properties),
        )
        for item in items
    ]
    bare = folder / "bare.db"
    bare.unlink(missing_ok=True)
    with sqlite3.connect(bare, isolation_level=None) as connection:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.execute("CREATE TABLE items (id TEXT, start REAL, end REAL, g BLOB, p BLOB)")
        began = time.perf_counter()
        for first in range(0, size, BATCH):
            connection.execute("BEGIN")
            connection.executemany(
                "INSERT INTO items VALUES (?, ?, ?, ?, ?)", rows[first : first + BATCH]
            )
            connection.execute("COMMIT")
        bare_rate = size / (time.perf_counter() - began)
    bare.unlink()
    return nearline_rate, bare_rate, path


# -- (3) search ----------------------------------------------------------------------------------
def queries(count: int, *, days: float, seed: int = 7) -> list[dict[str, str]]:
    """bbox (10 x 10 degrees) + one-day datetime searches inside the archive's span."""
    pick = random.Random(seed)
    found = []
    for _ in range(count):
        west, south = pick.uniform(-180, 170), pick.uniform(-80, 70)
        day = START + timedelta(days=pick.uniform(0, max(days - 1, 0)))
        found.append(
            {
                "bbox": f"{west:.3f},{south:.3f},{west + 10:.3f},{south + 10:.3f}",
                "datetime": f"{day:{STAMP}}/{day + timedelta(days=1):{STAMP}}",
                "limit": "10",
            }
        )
    return found


def percentiles(seconds: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(seconds)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def timed(call: Callable[[], object], count: int, warmup: int = 20) -> list[float]:
    for _ in range(warmup):
        call()
    spent = []
    for _ in range(count):
        began = time.perf_counter()
        call()
        spent.append(time.perf_counter() - began)
    return spent


def search_latencies(
    live: LiveService, catalogue: Path, size: int, count: int
) -> dict[str, tuple[float, float]]:
    from nearline.archive import parse_search

    days = size * 5 / 60 / 24
    asked = queries(count, days=days)
    with SQLiteCatalogue(catalogue) as local:
        shuffled = iter(asked * 2)
        in_process = timed(
            lambda: local.search(parse_search(next(shuffled), viewer="bench")), count, warmup=0
        )
    with live.client("bench") as client:
        found = [client.get("/search", params=q).json()["numberReturned"] for q in asked[:20]]
        assert sum(found) > 0, "the searches find nothing: the benchmark would measure nothing"
        pending = iter(asked * 2)

        def search() -> None:
            response = client.get("/search", params=next(pending))
            assert response.status_code == 200, response.text

        over_http = timed(search, count)
        empty = timed(lambda: client.get("/conformance"), count)
    return {
        "http": percentiles(over_http),
        "in-process": percentiles(in_process),
        "empty request": percentiles(empty),
    }


# -- (2) ingest ----------------------------------------------------------------------------------
def ingest_rates(folder: Path, files: int, lines: int) -> tuple[float, float]:
    """Files/s of ``nearline ingest`` of ``files`` granules, and of hashing them only."""
    from nearline.swath import synthesize_day

    granules = folder / f"granules-{files}x{lines}"
    if not granules.exists():
        synthesize_day("2012-12-12", files, granules, lines_per_orbit=lines)
    paths = sorted(p for p in granules.iterdir() if p.is_file())
    data = folder / "ingest-data"
    shutil.rmtree(data, ignore_errors=True)
    began = time.perf_counter()
    nearline("ingest", str(granules), "--collection", "avhrr-gac", data=data)
    ingest_rate = len(paths) / (time.perf_counter() - began)
    began = time.perf_counter()
    for path in paths:
        hashlib.sha256(path.read_bytes()).hexdigest()
    hash_rate = len(paths) / (time.perf_counter() - began)
    return ingest_rate, hash_rate


# -- (4) orders ----------------------------------------------------------------------------------
def order_costs(live: LiveService, folder: Path, repeats: int) -> dict[str, float]:
    package = folder / "bench-sizes"
    package.mkdir(exist_ok=True)
    (package / "algorithm.yaml").write_text(MANIFEST)
    (package / "run.py").write_text(ALGORITHM)
    nearline("algorithms", "deploy", str(package), "--user", "bench", data=live.data)
    with live.client("bench") as client:
        item = client.get("/search", params={"limit": "1"}).json()["features"][0]["id"]
    body = {"inputs": {"granules": {"ids": [item]}}}
    to_start, to_done = [], []
    with live.client("bench") as client:
        for _ in range(repeats + 1):  # the first warms up
            began = time.time()
            response = client.post(
                "/processes/bench-sizes/execution", json=body, headers={"Prefer": "respond-async"}
            )
            assert response.status_code == 201, response.text
            status = live.wait_for_job("bench", response.json()["jobID"], poll=0.01)
            done = time.time()
            assert status["status"] == "successful", status
            link = client.get(f"/jobs/{status['jobID']}/results").json()["sizes"][0]["href"]
            to_start.append(client.get(link).json()["started"] - began)
            to_done.append(done - began)
    by_hand = []
    work = folder / "by-hand"
    for _ in range(repeats + 1):
        shutil.rmtree(work, ignore_errors=True)
        (work / "outputs").mkdir(parents=True)
        job = {"inputs": {"granules": [{"path": str(live.data / "catalogue.db")}]}}
        job["outputs"] = str(work / "outputs")
        (work / "job.json").write_text(orjson.dumps(job).decode())
        began = time.time()
        subprocess.run(
            [sys.executable, str(package / "run.py")],
            env={"NEARLINE_JOB": str(work / "job.json")},
            check=True,
        )
        by_hand.append(time.time() - began)
    return {
        "start": median(to_start[1:]),
        "done": median(to_done[1:]),
        "by hand": median(by_hand[1:]),
    }


# -- the run -------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--quick", action="store_true", help="10^3 and 10^4 items, fewer repeats")
    parser.add_argument("--out", default="bench-output/service")
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args()
    sizes = [1000, 10_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    count, repeats = (100, 5) if args.quick else (400, 15)
    out = Path(args.out).absolute()
    out.mkdir(parents=True, exist_ok=True)

    rows_insert, rows_search = [], []
    for size in sizes:
        print(f"{size:,} items: filling the catalogue ...", flush=True)
        ours, bare, catalogue = insert_rates(out, size)
        rows_insert.append([f"{size:,}", f"{ours:,.0f}", f"{bare:,.0f}", f"{ours / bare:.2f}"])
        data = out / f"data-{size}"
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir(parents=True)
        shutil.move(catalogue, data / "catalogue.db")
        live = LiveService(data)
        live.add_user("bench")
        live.start()
        try:
            print(f"{size:,} items: searching ...", flush=True)
            found = search_latencies(live, data / "catalogue.db", size, count)
            rows_search.append(
                [f"{size:,}"]
                + [f"{found[k][0] * 1e3:.2f} / {found[k][1] * 1e3:.2f}" for k in found]
            )
            if size == sizes[0]:
                print("ordering on an idle server ...", flush=True)
                costs = order_costs(live, out, repeats)
        finally:
            live.stop()
        shutil.rmtree(data, ignore_errors=True)

    print("ingesting granule files ...", flush=True)
    small = (60, 200) if args.quick else (300, 200)
    ingest_small, hash_small = ingest_rates(out, *small)
    ingest_full, hash_full = ingest_rates(out, 14, 13000)

    text = "\n\n".join(
        [
            "## Service: catalogue, ingest, search and orders",
            f"`{command_line()}` on {now_stamp()}. Machine: {machine_summary(out)}.",
            "Bulk insert of MODIS-like 5-minute granule items (items/s), batches of "
            f"{BATCH:,}; the floor is a bare `executemany` of the same rows into an unindexed "
            "table (no R*Tree, no JSON checks):",
            markdown_table(["items", "SQLiteCatalogue", "bare executemany", "ratio"], rows_insert),
            f"Search latency, p50 / p95 in ms, of {count} bbox (10°x10°) + one-day searches "
            "with limit 10, one client with keep-alive; in-process is the same search without "
            "HTTP, the empty request is GET /conformance on the same connection:",
            markdown_table(["items", "over HTTP", "in-process", "empty request"], rows_search),
            "`nearline ingest` of granule files (files/s; each file's time and footprint read "
            "by the swath readers, SHA-256 of its bytes), against reading and hashing only:",
            markdown_table(
                ["granules", "nearline ingest", "read + SHA-256 only", "ratio"],
                [
                    [
                        f"{small[0]} x {small[1]} lines",
                        fmt(ingest_small, 0),
                        fmt(hash_small, 0),
                        f"{ingest_small / hash_small:.2f}",
                    ],
                    [
                        "14 x 13,000 lines (whole orbits)",
                        fmt(ingest_full, 1),
                        fmt(hash_full, 1),
                        f"{ingest_full / hash_full:.2f}",
                    ],
                ],
            ),
            f"An order of one granule on an idle server (median of {repeats}; the "
            "algorithm sums its inputs' sizes): seconds from POST .../execution to the "
            "algorithm's first instruction and to a successful job, against the same command "
            "run by hand:",
            markdown_table(
                ["POST to run start", "POST to successful", "by hand", "overhead"],
                [
                    [
                        fmt(costs["start"], 3),
                        fmt(costs["done"], 3),
                        fmt(costs["by hand"], 3),
                        fmt(costs["done"] - costs["by hand"], 3),
                    ]
                ],
            ),
        ]
    )
    print(text)
    if args.update_docs:
        replace_section(DOCS, BEGIN, END, text, DOCS_HEADER)


if __name__ == "__main__":
    main()

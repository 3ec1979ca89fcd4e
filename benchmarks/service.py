"""The near-archive service (S4PM-DM's job): how fast the catalogue fills and answers, how fast
granule files are ingested, and what an order costs beyond the algorithm's own work.

Measured in one run, each beside its floor on this machine:
(1) bulk insert of MODIS-like 5-minute granule items through ``SQLiteCatalogue.add_items``,
    against a bare ``executemany`` of the same rows into an unindexed SQLite table; through
    ``PostgresCatalogue.add_items``; and the peer: pgstac 0.10 on the same PostgreSQL + PostGIS
    server, loaded by pypgstac (COPY) in an environment of its own (benchmarks/_peer_env.py);
(2) ``nearline ingest`` of real granule files (time and footprint read from each), against
    only reading and hashing the same files;
(3) search latency of bbox+datetime searches, limit 10, at each archive size, through
    pystac-client and an httpx client (both keep their connection), on ``nearline serve``
    and ``nearline serve --db postgresql://...`` and the peer's stac-fastapi-pgstac 7.2,
    against the same searches without HTTP (in-process; pgstac's SQL ``search(jsonb)``), and
    GET /conformance on one kept connection against fresh ones (benchmarks/_search_latency.py);
(4) a subscription's trigger: ingest of a granule (by another process) to its job and its run;
(5) 1,000 orders from 20 concurrent clients of 5 users: none lost or run twice, each user's
    share of the run time;
(6) an order on an idle server: POST .../execution to the algorithm's first instruction, and
    POST to a successful job, against the same command run by hand on the same files.

    .venv/bin/python benchmarks/service.py [--quick] [--sizes 10000,100000,1000000]
        [--out bench-output/service] [--no-peer] [--only search] [--update-docs]

``--only search`` fills the catalogues and measures (3) only, and rewrites only the search
part of docs/benchmarks.md's service section (its own markers inside it).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))  # tests.live_service: the same live server the tests drive

from tests.live_service import LiveService, nearline  # noqa: E402
from tests.service.granules import COLLECTION as TEST_COLLECTION  # noqa: E402
from tests.service.granules import add_granules  # noqa: E402

from _common import (  # noqa: E402
    command_line,
    fmt,
    machine_summary,
    markdown_table,
    median,
    now_stamp,
    replace_section,
)
from _pgstac_peer import PgstacPeer, stac_json  # noqa: E402
from _search_latency import PEER, SearchTarget, latencies, pgstac_search, search_text  # noqa: E402
from _search_latency import rows as search_rows  # noqa: E402
from _service_orders import orders_under_load  # noqa: E402
from _stac_searches import BATCH, COLLECTION, START, days_of, fill_sqlite, queries  # noqa: E402
from _subscription_trigger import trigger_latency  # noqa: E402
from nearline.archive import (  # noqa: E402
    SQLiteCatalogue,
    modis_like_items,
)
from nearline.archive._base import Collection  # noqa: E402
from nearline.archive._postgres_catalogue import PostgresCatalogue  # noqa: E402

DOCS = PROJECT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- service:begin -->", "<!-- service:end -->"
SEARCH_BEGIN, SEARCH_END = "<!-- service-search:begin -->", "<!-- service-search:end -->"
DOCS_HEADER = "# Benchmarks\n\nEach section is rewritten by its script's `--update-docs`.\n"
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
description: Writes the total size of its input files and when it started, for timing orders.
command: [python, run.py]
inputs: [{{name: granules, collection: {TEST_COLLECTION}, min: 1, max: 100}}]
outputs: [{{name: sizes, media_type: application/json, pattern: "*.json"}}]
resources: {{cpus: 1, memory: 256MiB, disk: 1MiB, timeout: 60s}}
"""


# -- (1) bulk insert -----------------------------------------------------------------------------
def insert_rates(folder: Path, items: list) -> tuple[float, float, Path]:
    """Items/s into a fresh catalogue, and into a bare table; the catalogue's file."""
    size = len(items)
    path = folder / f"catalogue-{size}.db"
    nearline_rate = fill_sqlite(path, items)
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


# -- (2) ingest ----------------------------------------------------------------------------------
def ingest_rates(folder: Path, files: int, lines: int) -> tuple[float, float]:
    """Files/s of ``nearline ingest`` of ``files`` granules, and of hashing them only."""
    from nearline.swath import synthesize_day

    granules = folder / f"granules-{files}x{lines}"
    if not granules.exists():
        synthesize_day("2012-12-12", files, granules, lines_per_orbit=lines)
    paths = sorted(p for p in granules.iterdir() if p.is_file())
    for path in paths:  # both read from the page cache: the archive phases pushed these out
        path.read_bytes()
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
def order_costs(folder: Path, repeats: int) -> dict[str, float]:
    """Seconds from an order to its run's start and to its end, on an idle server, and the
    same command run by hand."""
    data = folder / "orders-data"
    shutil.rmtree(data, ignore_errors=True)
    (granule,) = add_granules(data, 1)
    live = LiveService(data)
    live.add_user("bench")
    live.start()
    try:
        return _order_costs(live, folder, granule, repeats)
    finally:
        live.stop()
        shutil.rmtree(data, ignore_errors=True)


def _order_costs(live: LiveService, folder: Path, granule: Any, repeats: int) -> dict[str, float]:
    package = folder / "bench-sizes"
    package.mkdir(exist_ok=True)
    (package / "algorithm.yaml").write_text(MANIFEST)
    (package / "run.py").write_text(ALGORITHM)
    nearline("algorithms", "deploy", str(package), "--user", "bench", data=live.data)
    body = {"inputs": {"granules": {"ids": [granule.id]}}}
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
        job = {"inputs": {"granules": [{"path": granule.assets["data"].location}]}}
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
def postgres_rate(url: str, items: list) -> float:
    """Items/s into a fresh PostgresCatalogue (COPY in batches), ANALYZEd afterwards outside
    the time, as the peer's tables are."""
    import psycopg

    with PostgresCatalogue(url) as catalogue:
        catalogue.put_collection(Collection(id=COLLECTION, title="MODIS-like granules"))
        began = time.perf_counter()
        for first in range(0, len(items), BATCH):
            catalogue.add_items(items[first : first + BATCH])
        rate = len(items) / (time.perf_counter() - began)
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE")
    return rate


def served(stack: contextlib.ExitStack, data: Path, db: str | None, catalogue: Any) -> SearchTarget:
    """``nearline serve`` on ``data`` (and PostgreSQL at ``db``), with user bench, until the
    stack closes; to be searched beside ``catalogue``, the one it serves, in-process."""
    from nearline.archive import parse_search, query_values

    live = LiveService(data, db=db)
    live.add_user("bench")
    live.start()
    stack.callback(live.stop)
    stack.enter_context(catalogue)
    return SearchTarget(
        url=live.url,
        headers={"Authorization": f"Bearer {live.tokens['bench']}"},
        # the GET query's text as the service reads it (query_values), then the same search
        in_process=lambda query: catalogue.search(
            parse_search(query_values(query), viewer="bench")
        ),
    )


def one_size(out: Path, size: int, count: int, *, peer: bool) -> dict[str, Any]:
    """Insert and search figures at one archive size: nearline on SQLite and on PostgreSQL,
    and the peer, side by side."""
    print(f"{size:,} items: making them ...", flush=True)
    items = list(modis_like_items(size, collection=COLLECTION, start=START, seed=1))
    print(f"{size:,} items: filling the catalogue ...", flush=True)
    ours, bare, catalogue = insert_rates(out, items)
    figures: dict[str, Any] = {"insert": {"SQLite": ours, "bare": bare}}
    data = out / f"data-{size}"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    shutil.move(catalogue, data / "catalogue.db")
    with contextlib.ExitStack() as stack:
        targets = {
            "nearline, SQLite": served(stack, data, None, SQLiteCatalogue(data / "catalogue.db"))
        }
        if peer:
            print(f"{size:,} items: loading the peer (pgstac) ...", flush=True)
            stac, collection = stac_json(items)
            pgstac = stack.enter_context(PgstacPeer())
            pgstac.start(out)
            figures["insert"]["pgstac"] = pgstac.load(stac, collection)
            del stac
            pgstac.serve()
            figures["versions"] = pgstac.versions()
            print(f"{size:,} items: filling the PostgreSQL catalogue ...", flush=True)
            url = pgstac.cluster.create_database("nearline", extensions=["postgis"])
            figures["insert"]["PostgreSQL"] = postgres_rate(url, items)
            pg_data = out / f"data-{size}-pg"
            shutil.rmtree(pg_data, ignore_errors=True)
            stack.callback(shutil.rmtree, pg_data, ignore_errors=True)
            targets["nearline, PostgreSQL"] = served(stack, pg_data, url, PostgresCatalogue(url))
            peer_search, close = pgstac_search(pgstac.dsn)
            stack.callback(close)
            targets[PEER] = SearchTarget(url=pgstac.url, headers={}, in_process=peer_search)
        del items
        print(f"{size:,} items: searching ...", flush=True)
        asked = queries(count, days=days_of(size))
        figures["search"] = {
            name: latencies(target, asked, count) for name, target in targets.items()
        }
    figures["data"] = data
    return figures


def load_text(load: dict[str, Any]) -> str:
    """The orders-under-load paragraph and table."""
    shares = load["shares"]
    spread = max(shares.values()) / min(shares.values()) - 1
    return "\n\n".join(
        [
            f"{load['orders']:,} orders (one granule each, a 0.2 s algorithm) from 20 "
            "concurrent clients of 5 users on a server lending 2 CPUs: u1 floods the queue "
            "with all of its orders first, the four others arrive after. Every order "
            f"accounted for: {load['listed']:,} jobs listed, {load['lost']} lost, "
            f"{load['doubled']} run twice or phantom, {load['refused']} refused; statuses "
            f"{load['statuses']}; all submitted in {load['submit seconds']:.1f} s, all ended "
            f"after {load['total seconds']:.1f} s. Each user's share of the run time while "
            f"all five had work waiting ({load['contended seconds']:.1f} s; equal is 20%, "
            f"largest over smallest {spread:.0%}):",
            markdown_table(
                list(shares),
                [[f"{share:.1%}" for share in shares.values()]],
            ),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--quick", action="store_true", help="10^3 and 10^4 items, fewer repeats")
    parser.add_argument("--out", default="bench-output/service")
    parser.add_argument("--no-peer", action="store_true", help="skip pgstac (no PostgreSQL)")
    parser.add_argument(
        "--only",
        choices=["search"],
        default=None,
        help="search: fill the catalogues and measure searches only; --update-docs then "
        "rewrites only the search part of the section",
    )
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args(argv)
    sizes = [1000, 10_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    count, repeats = (100, 5) if args.quick else (400, 15)
    out = Path(args.out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    out.chmod(0o755)  # the peer's PostgreSQL runs as nobody inside it
    if args.only == "search" and args.update_docs and SEARCH_BEGIN not in DOCS.read_text():
        parser.error(f"{DOCS} has no {SEARCH_BEGIN}: run the whole benchmark once")

    if args.only is None:
        print("ordering on an idle server ...", flush=True)
        costs = order_costs(out, repeats)
    rows_insert, rows_search, versions = [], [], {}
    for size in sizes:
        figures = one_size(out, size, count, peer=not args.no_peer)
        shutil.rmtree(figures["data"], ignore_errors=True)
        versions = figures.get("versions", versions)
        rates = figures["insert"]
        rows_insert.append(
            [f"{size:,}", f"{rates['SQLite']:,.0f}", f"{rates['bare']:,.0f}"]
            + [f"{rates[k]:,.0f}" if k in rates else "-" for k in ("PostgreSQL", "pgstac")]
            + (
                [f"{rates[k] / rates['pgstac']:.1f}x" for k in ("SQLite", "PostgreSQL")]
                if "pgstac" in rates
                else ["-", "-"]
            )
        )
        rows_search += search_rows(size, figures["search"])
    peer_name = (
        f"pgstac {versions['pgstac']} on PostgreSQL {versions['PostgreSQL']} with PostGIS "
        f"{versions['PostGIS']}, served by stac-fastapi-pgstac {versions['stac-fastapi-pgstac']}"
        if versions
        else "not run (--no-peer)"
    )
    if args.only == "search":
        provenance = (
            f"`{command_line()}` on {now_stamp()}, a run of its own; machine: "
            f"{machine_summary(out)}; peer: {peer_name}"
        )
        search = search_text(rows_search, count, provenance)
        print(search)
        if args.update_docs:
            replace_section(DOCS, SEARCH_BEGIN, SEARCH_END, search, DOCS_HEADER)
        return 0
    search = search_text(rows_search, count, "in the same run")

    print("subscriptions: ingest to run ...", flush=True)
    trigger_folder = out / "trigger"
    shutil.rmtree(trigger_folder, ignore_errors=True)
    trigger_folder.mkdir()
    triggers = trigger_latency(trigger_folder, count=10 if args.quick else 40, gap=0.5)
    print("1,000 orders from 20 clients of 5 users ...", flush=True)
    load = orders_under_load(out)
    shutil.rmtree(load["data"], ignore_errors=True)
    print("ingesting granule files ...", flush=True)
    small = (60, 200) if args.quick else (300, 200)
    ingest_small, hash_small = ingest_rates(out, *small)
    ingest_full, hash_full = ingest_rates(out, 14, 13000)
    text = "\n\n".join(
        [
            "## Service: catalogue, ingest, search and orders",
            f"`{command_line()}` on {now_stamp()}. Machine: {machine_summary(out)}. "
            f"Peer: {peer_name}, default settings, in the same run; pypgstac and "
            "stac-fastapi-pgstac in an environment of their own "
            "(benchmarks/peer-requirements.txt).",
            "Bulk insert of MODIS-like 5-minute granule items (items/s), batches of "
            f"{BATCH:,}: into the SQLite catalogue; its floor, a bare `executemany` of the "
            "same rows into an unindexed table (no R*Tree, no JSON checks); into the "
            "PostgreSQL catalogue (COPY, on the peer's PostgreSQL server); and the peer "
            "loading the same items as STAC JSON with pypgstac's loader (COPY into the "
            "collection's partition):",
            markdown_table(
                [
                    "items",
                    "SQLite",
                    "bare executemany",
                    "PostgreSQL",
                    "pgstac (pypgstac load)",
                    "SQLite vs pgstac",
                    "PostgreSQL vs pgstac",
                ],
                rows_insert,
            ),
            f"{SEARCH_BEGIN}\n{search}\n{SEARCH_END}",
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
            f"Subscriptions (policy each, {10 if args.quick else 40} granules committed one every "
            "0.5 s by another process, as `nearline ingest` does): seconds from the commit to "
            "the subscription's job existing and to its run starting, on an idle server:",
            markdown_table(
                ["ingest to job, p50", "p95", "ingest to run start, p50", "p95"],
                [[fmt(triggers[k], 3) for k in ("job_p50", "job_p95", "run_p50", "run_p95")]],
            ),
            load_text(load),
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
    return 0


if __name__ == "__main__":
    sys.exit(main())

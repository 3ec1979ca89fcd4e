"""Concurrent searches (issue 39): 1, 4 and 16 kept-alive clients against ``nearline serve`` on
a SQLite catalogue and against the peer, stac-fastapi-pgstac on pgstac, each with one worker
process and with as many as there are usable cores, under the same load in one run.

The clients are one ``wrk`` thread (C, benchmarks/_wrk.py) with 1, 4 or 16 connections,
rotating through the service benchmark's 400 bbox (10°x10°) + one-day searches, limit 10
(GET /search, nearline's as a signed-in user); each series follows a warm-up run and is
repeated (medians). Beside each, the floor: the same clients asking GET /conformance, the
empty request, which is what the server's HTTP stack alone can do. One server runs at a time
(the peer first, its PostgreSQL stopped before nearline's catalogue is filled); the client
shares the machine's cores with it.

    .venv/bin/python benchmarks/search_concurrency.py [--items 1000000] [--quick]
        [--seconds 10] [--repeats 3] [--out bench-output/search-concurrency] [--no-peer]
        [--update-docs]

``--quick``: 10^4 items, 3-second runs, each once. At the defaults the measuring itself takes
about 13 minutes (4 server set-ups x 6 series x 32 s), besides filling both catalogues.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))  # tests.live_service: the same live server the tests drive

from tests.live_service import LiveService  # noqa: E402

from _common import (  # noqa: E402
    command_line,
    machine_summary,
    markdown_table,
    median,
    now_stamp,
    replace_section,
    warm_guest_memory,
)
from _pgstac_peer import PgstacPeer, stac_json  # noqa: E402
from _search_latency import PEER  # noqa: E402
from _stac_searches import COLLECTION, START, days_of, fill_sqlite, queries  # noqa: E402
from _wrk import check_wrk, write_paths, wrk, wrk_version  # noqa: E402
from nearline.archive import modis_like_items  # noqa: E402

DOCS = PROJECT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- search-concurrency:begin -->", "<!-- search-concurrency:end -->"
DOCS_HEADER = "# Benchmarks\n\nEach section is rewritten by its script's `--update-docs`.\n"
NEARLINE = "nearline, SQLite"
CONNECTIONS = (1, 4, 16)
SEARCHES = 400
WARMUP = 2  # seconds of wrk before each series
WARM = 2 * 2**30  # bytes of guest memory touched before each server starts (_common)
GOAL_P95 = 0.025  # issue 39: 16 clients at p95 <= 25 ms at 10^6 items
ENDPOINTS = ("search", "conformance")
SHORT = {NEARLINE: "nearline", PEER: "the peer"}


def usable_cores() -> int:
    return len(os.sched_getaffinity(0))


def series(url: str, paths: Path, *, seconds: int, repeats: int, token: str | None) -> dict:
    """{connections: {"rate", "p50", "p95", "p99": medians over ``repeats`` wrk runs, each
    after a warm-up}} for each of :data:`CONNECTIONS`."""
    found = {}
    for connections in CONNECTIONS:
        wrk(url, paths, connections=connections, seconds=WARMUP, token=token)
        runs = [
            wrk(url, paths, connections=connections, seconds=seconds, token=token)
            for _ in range(repeats)
        ]
        found[connections] = {
            key: median([getattr(run, key) for run in runs])
            for key in ("rate", "p50", "p95", "p99")
        }
        print(f"  {connections:>2} clients: {shown(found[connections])}", flush=True)
    return found


def shown(figures: dict[str, float]) -> str:
    return f"{figures['rate']:,.0f}/s, p50/p95/p99 {milliseconds(figures)} ms"


def milliseconds(figures: dict[str, float]) -> str:
    return " / ".join(f"{figures[q] * 1e3:.2f}" for q in ("p50", "p95", "p99"))


def measure(
    name: str,
    serve: Callable[[int], str],
    stop: Callable[[], None],
    paths: dict[str, Path],
    *,
    token: str | None,
    seconds: int,
    repeats: int,
) -> dict[int, dict[str, dict]]:
    """{workers: {endpoint: series}} of one server, served by ``serve(workers)`` (its URL)
    for 1 worker and for the usable cores, one after the other."""
    found = {}
    for workers in sorted({1, usable_cores()}):
        warm_guest_memory(WARM)
        url = serve(workers)
        try:
            with httpx.Client(base_url=url, timeout=60) as client:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                finds(client, paths["search"], headers)
            found[workers] = {}
            for endpoint in ENDPOINTS:
                print(f"{name}, {workers} worker(s), GET /{endpoint}:", flush=True)
                found[workers][endpoint] = series(
                    url, paths[endpoint], seconds=seconds, repeats=repeats, token=token
                )
        finally:
            stop()
    return found


def finds(client: httpx.Client, paths: Path, headers: dict[str, str]) -> None:
    """The first 20 searches of ``paths`` answer, and find items: else the benchmark would
    measure nothing."""
    returned = 0
    for path in paths.read_text().splitlines()[:20]:
        response = client.get(path, headers=headers)
        assert response.status_code == 200, f"GET {path}: {response.text[:500]}"
        returned += response.json()["numberReturned"]
    assert returned > 0, f"the searches find nothing at {client.base_url}"


def peer_figures(out: Path, items: list, paths: dict[str, Path], **timing: int) -> tuple:
    """The peer's figures, and its versions: pgstac loaded with ``items``, settled by VACUUM
    ANALYZE (what autovacuum would do soon after), then stac-fastapi-pgstac served."""
    import psycopg

    with PgstacPeer() as peer:
        print(f"{len(items):,} items: loading the peer (pgstac) ...", flush=True)
        peer.start(out)
        peer.load(*stac_json(items))
        with psycopg.connect(peer.dsn, autocommit=True) as connection:
            connection.execute("VACUUM ANALYZE")
        serve = lambda workers: peer.serve(workers=workers)  # noqa: E731
        figures = measure(PEER, serve, peer.stop_serving, paths, token=None, **timing)
        return figures, peer.versions()


def nearline_figures(out: Path, items: list, paths: dict[str, Path], **timing: int) -> dict:
    """nearline's figures: a SQLite catalogue of ``items`` served by ``nearline serve``."""
    data = out / "data"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    print(f"{len(items):,} items: filling nearline's catalogue ...", flush=True)
    fill_sqlite(data / "catalogue.db", items)
    live = LiveService(data)
    token = live.add_user("bench")

    def serve(workers: int) -> str:
        live.start("--workers", str(workers))
        return live.url

    try:
        return measure(NEARLINE, serve, live.stop, paths, token=token, **timing)
    finally:
        shutil.rmtree(data, ignore_errors=True)


# -- the table -----------------------------------------------------------------------------------
HEADERS = [
    "server",
    "workers",
    "clients",
    "searches/s",
    "search p50 / p95 / p99 (ms)",
    "GET /conformance/s",
    "conformance p50 / p95 / p99 (ms)",
    "peer p95 / this",
    "searches/s, cores / 1 worker",
]


def rows(found: dict[str, dict[int, dict[str, dict]]]) -> list[list[str]]:
    """One row per server, workers and clients."""
    table = []
    cores = usable_cores()
    for server, by_workers in found.items():
        for workers, endpoints in by_workers.items():
            for clients in CONNECTIONS:
                search = endpoints["search"][clients]
                floor = endpoints["conformance"][clients]
                peer = found.get(PEER, {}).get(workers, {}).get("search", {}).get(clients)
                ratio = f"{peer['p95'] / search['p95']:.1f}x" if peer and server != PEER else "-"
                one = by_workers[1]["search"][clients]["rate"]
                growth = f"{search['rate'] / one:.2f}x" if workers == cores > 1 else "-"
                table.append(
                    [
                        server,
                        str(workers),
                        str(clients),
                        f"{search['rate']:,.0f}",
                        milliseconds(search),
                        f"{floor['rate']:,.0f}",
                        milliseconds(floor),
                        ratio,
                        growth,
                    ]
                )
    return table


def findings(found: dict[str, dict[int, dict[str, dict]]], items: int) -> str:
    """What the figures show, in a few sentences made from them."""
    cores, most = usable_cores(), max(CONNECTIONS)
    ours = found[NEARLINE][cores]["search"][most]
    goal = (
        f"{'within' if ours['p95'] <= GOAL_P95 else 'above'} the goal of "
        if items >= 1_000_000
        else "the goal, at 10^6 items: "
    )
    said = [
        f"At {most} clients and {cores} workers nearline answers "
        f"{ours['rate']:,.0f} searches/s at p95 {ours['p95'] * 1e3:.1f} ms ({goal}"
        f"{GOAL_P95 * 1e3:.0f} ms)"
    ]
    if PEER in found:
        theirs = found[PEER][cores]["search"][most]
        said[0] += (
            f"; the peer {theirs['rate']:,.0f}/s at p95 {theirs['p95'] * 1e3:.1f} ms, "
            f"{theirs['p95'] / ours['p95']:.1f}x nearline's"
        )
    if cores > 1:
        growth = []
        for name, by in found.items():
            one, many = (by[n]["search"][most]["rate"] for n in (1, cores))
            growth.append(f"{SHORT[name]}'s from {one:,.0f} to {many:,.0f} ({many / one:.2f}x)")
        said.append(
            f"{cores} workers instead of 1 take {most} clients' searches/s, " + " and ".join(growth)
        )
    floor = found[NEARLINE][cores]["conformance"][most]["rate"]
    said.append(
        f"nearline's searches reach {ours['rate'] / floor:.0%} of its own floor's rate "
        f"({floor:,.0f} GET /conformance/s): the rest is the search itself"
    )
    return ". ".join(said) + (
        ". The client's thread takes its share of the same cores, so the workers never have "
        "all of them, and the floor shows where the HTTP stack alone stops."
    )


def runs(*, seconds: int, repeats: int) -> str:
    if repeats == 1:
        return f"from one run of {seconds} s"
    return f"the median of {repeats} runs of {seconds} s"


def section(
    found: dict,
    items: int,
    versions: dict[str, str] | None,
    out: Path,
    load: float,
    **timing: int,
) -> str:
    """docs/benchmarks.md's section."""
    peer = (
        f"pgstac {versions['pgstac']} on PostgreSQL {versions['PostgreSQL']} with PostGIS "
        f"{versions['PostGIS']} (default settings), served by stac-fastapi-pgstac "
        f"{versions['stac-fastapi-pgstac']} under uvicorn `--workers N`, with the fix "
        "proposed for [Kludex/uvicorn#3149](https://github.com/Kludex/uvicorn/issues/3149) "
        "(the listener made as IPPROTO_TCP: without it, "
        "Nagle's algorithm stays on and each kept-alive answer of N > 1 workers waits ~40 ms "
        "for the client's delayed acknowledgement; benchmarks/_pgstac_peer.py)"
        if versions
        else "not run (--no-peer)"
    )
    return "\n\n".join(
        [
            "## Concurrent searches: 1, 4 and 16 clients against stac-fastapi-pgstac",
            f"`{command_line()}` on {now_stamp()}. Machine: {machine_summary(out)}; load "
            f"average {load:.1f} at the start. Peer: {peer}. Client: {wrk_version()}, one "
            "thread.",
            f"{items:,} MODIS-like items; the clients are kept-alive connections of one wrk "
            f"thread, rotating through {SEARCHES} bbox (10°x10°) + one-day searches, limit 10 "
            "(GET /search; nearline's as a signed-in user), and, beside them, the floor: the "
            "same clients asking GET /conformance, the empty request (what the HTTP stack "
            f"alone can do). Each figure is {runs(**timing)} after a {WARMUP} s warm-up; one "
            "server runs at a time, "
            "and **the client shares the machine's cores with it**. Workers: 1, and as many "
            "as usable cores (nearline `serve --workers N`; the peer under uvicorn "
            "`--workers N`). The last two columns: the peer's search p95 over this server's "
            f"(same workers and clients), and searches/s at the cores' workers over 1.",
            markdown_table(HEADERS, rows(found)),
            findings(found, items),
        ]
    )


# -- the run -------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="10^4 items, 3 s runs, once each")
    parser.add_argument("--seconds", type=int, default=None, help="of each run (default 10)")
    parser.add_argument("--repeats", type=int, default=None, help="runs of each (default 3)")
    parser.add_argument("--out", default="bench-output/search-concurrency")
    parser.add_argument("--no-peer", action="store_true", help="skip pgstac (no PostgreSQL)")
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]  # of the minute before: other work sharing the cores
    check_wrk()
    items = 10_000 if args.quick else args.items
    timing = {
        "seconds": args.seconds or (3 if args.quick else 10),
        "repeats": args.repeats or (1 if args.quick else 3),
    }
    out = Path(args.out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    out.chmod(0o755)  # the peer's PostgreSQL runs as nobody inside it
    asked = queries(SEARCHES, days=days_of(items))
    paths = {
        "search": write_paths(
            out / "searches.txt", [f"/search?{httpx.QueryParams(q)}" for q in asked]
        ),
        "conformance": write_paths(out / "conformance.txt", ["/conformance"]),
    }
    print(f"{items:,} items: making them ...", flush=True)
    made = list(modis_like_items(items, collection=COLLECTION, start=START, seed=1))
    found: dict[str, Any] = {}
    versions = None
    if not args.no_peer:
        found[PEER], versions = peer_figures(out, made, paths, **timing)
    found = {NEARLINE: nearline_figures(out, made, paths, **timing), **found}
    text = section(found, items, versions, out, load, **timing)
    print(text)
    if args.update_docs:
        replace_section(DOCS, BEGIN, END, text, DOCS_HEADER)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A site's time series (issue 39): every granule over one small place (0.01 degrees square),
no time window, paged 100 at a time as the STAC API pages it: numberMatched asked with the
service's ``count_to``, each page's items made STAC JSON, the next page from its token. Over
MODIS-like 5-minute swaths, on SQLite (a catalogue filled here, or one given) and, with
``--postgres``, on PostgreSQL (a throwaway cluster, filled here).

Each site's series is read whole once, untimed and uncounted (so the file is in the page
cache, as on a server in use), then ``--repeats`` times timed, each with the catalogue's kept
counts forgotten: its first page counts afresh. Beside each page, the floor: the same rows
read by one bare SQL query (by collection and id, through the unique index) on the same
database.

    .venv/bin/python benchmarks/site_series.py --items 1000000 [--postgres] [--update-docs]
    .venv/bin/python benchmarks/site_series.py --catalogue catalogue-1e7.db [--update-docs]

``--update-docs`` writes the table into docs/benchmarks.md, in a section of the catalogue's
size (``site-series-1000000``, ``site-series-10000000``).

A catalogue given is opened as the service opens it: one from before this version gains its
place index and counts' column (minutes at 10^7 items); give a copy of a file others use.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "benchmarks"))

from _common import (  # noqa: E402
    command_line,
    machine_summary,
    markdown_table,
    now_stamp,
    replace_section,
)
from _stac_searches import COLLECTION, fill, forget_counts, percentiles  # noqa: E402
from nearline.api._stac import COUNT_TO  # noqa: E402
from nearline.archive import Catalogue, Search, SQLiteCatalogue, item_to_stac  # noqa: E402

DOCS = PROJECT / "docs" / "benchmarks.md"
DOCS_HEADER = "# Benchmarks\n\nEach section is rewritten by its script's `--update-docs`.\n"
BASE = "http://127.0.0.1:8000"
LIMIT = 100
SITES = {  # name: (longitude, latitude) of the place's south-west corner
    "Manaus, 3°S": (-60.02, -3.10),
    "Boulder, 40°N": (-105.27, 40.01),
    "Sodankylä, 67°N": (26.63, 67.37),
}
SIDE = 0.01  # degrees
Floor = Callable[[list[str]], None]  # reads the rows of these item ids by a bare query


@dataclass
class Series:
    """One site's series read once: each page's seconds (catalogue, JSON, floor)."""

    matched: set[int | None]
    items: int
    pages: list[float]
    json: list[float]
    floor: list[float]


def site_search(name: str) -> Search:
    west, south = SITES[name]
    return Search(
        collections=(COLLECTION,),
        bbox=(west, south, west + SIDE, south + SIDE),
        limit=LIMIT,
        count_to=COUNT_TO,
    )


def read_series(catalogue: Catalogue, search: Search, floor: Floor | None, most: int) -> Series:
    """Every page of ``search`` (at most ``most``), timed."""
    series = Series(set(), 0, [], [], [])
    token = None
    while len(series.pages) < most:
        began = time.perf_counter()
        page = catalogue.search(replace(search, token=token))
        paged = time.perf_counter()
        body: dict[str, Any] = {
            "type": "FeatureCollection",
            "features": [item_to_stac(item, BASE) for item in page.items],
            "numberReturned": len(page.items),
        }
        if page.matched is not None:
            body["numberMatched"] = page.matched
        orjson.dumps(body)
        shown = time.perf_counter()
        if floor is not None:
            floor([item.id for item in page.items])
        series.pages.append(paged - began)
        series.json.append(shown - paged)
        series.floor.append(time.perf_counter() - shown)
        series.matched.add(page.matched)
        series.items += len(page.items)
        token = page.next_token
        if token is None:
            break
    return series


def measure(
    label: str, catalogue: Catalogue, floor: Floor, items: int, repeats: int, most: int
) -> list[list[str]]:
    rows = []
    for name in SITES:
        search = site_search(name)
        read_series(catalogue, replace(search, count_to=0), floor, most)  # the page cache
        runs = []
        for _ in range(repeats):
            forget_counts(catalogue)
            runs.append(read_series(catalogue, search, floor, most))
        later = [s for run in runs for s in run.pages[1:]] or [runs[0].pages[0]]
        p50, p95 = percentiles(later)
        floor_p50 = statistics.median(s for run in runs for s in run.floor)
        matched = set().union(*(run.matched for run in runs))
        rows.append(
            [
                label,
                f"{items:,}",
                name,
                " / ".join("left out" if m is None else f"{m:,}" for m in sorted(matched, key=str)),
                f"{runs[0].items:,} in {len(runs[0].pages)}",
                f"{1000 * statistics.median(run.pages[0] for run in runs):.1f}",
                f"{1000 * p50:.1f} / {1000 * p95:.1f}",
                f"{1000 * statistics.median(s for run in runs for s in run.json):.1f}",
                f"{1000 * floor_p50:.2f}",
                f"{p50 / floor_p50:.1f}x",
            ]
        )
        print(" | ".join(rows[-1]), flush=True)
    return rows


@contextmanager
def sqlite_floor(path: Path) -> Iterator[Floor]:
    import sqlite3

    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    def read(ids: list[str]) -> None:
        connection.execute(
            "SELECT * FROM items WHERE collection = (SELECT key FROM collections WHERE id = ?) "
            f"AND id IN ({','.join('?' * len(ids))})",
            [COLLECTION, *ids],
        ).fetchall()

    try:
        yield read
    finally:
        connection.close()


def postgres_rows(path: Path, items: int, repeats: int, most: int) -> list[list[str]]:
    """The same series on PostgreSQL: the SQLite catalogue's items copied into a throwaway
    cluster."""
    import psycopg

    from nearline.archive._base import Collection
    from nearline.archive._postgres_catalogue import PostgresCatalogue
    from nearline.testing.pgcluster import FAST, Cluster

    cluster = Cluster(settings=FAST)
    cluster.start()
    try:
        cluster.create_database("series", extensions=["postgis"])
        url = cluster.url("series")
        with PostgresCatalogue(url) as catalogue, SQLiteCatalogue(path) as source:
            catalogue.put_collection(Collection(COLLECTION))
            print(f"copying {items:,} items into PostgreSQL ...", flush=True)
            after = 0
            while True:
                batch, after = source.changes(after, limit=50_000)
                if not batch:
                    break
                catalogue.add_items(batch)
            with psycopg.connect(url, autocommit=True) as connection:

                def read(ids: list[str]) -> None:
                    connection.execute(
                        "SELECT * FROM items WHERE collection = "
                        "(SELECT key FROM collections WHERE id = %s) AND id = ANY(%s)",
                        (COLLECTION, ids),
                    ).fetchall()

                return measure("PostgreSQL", catalogue, read, items, repeats, most)
    finally:
        cluster.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--catalogue", type=Path, help="an existing SQLite catalogue file")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pages", type=int, default=10**9, help="at most this many a site")
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--out", type=Path, default=PROJECT / "bench-output" / "site-series")
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args(argv)
    path = args.catalogue or fill(args.out / str(args.items), args.items)
    with SQLiteCatalogue(path) as catalogue, sqlite_floor(path) as floor:
        items = catalogue.count(COLLECTION)
        rows = measure("SQLite", catalogue, floor, items, args.repeats, args.pages)
    if args.postgres:
        rows += postgres_rows(path, items, args.repeats, args.pages)
    headers = [
        "catalogue",
        "items",
        "site",
        "numberMatched",
        "items in pages",
        "first page (ms)",
        "next pages p50 / p95 (ms)",
        "STAC JSON p50 (ms)",
        "floor p50 (ms)",
        "p50 / floor",
    ]
    table = markdown_table(headers, rows)
    print(table)
    if args.update_docs:
        text = (
            f"`{command_line()}` on {now_stamp()}; machine: {machine_summary(path.parent)}; "
            f"count_to {COUNT_TO:,}, {args.repeats} timed reads of each series.\n\n{table}\n"
        )
        section = f"site-series-{items}"  # one section a catalogue size: 10^6 and 10^7 both
        replace_section(
            DOCS, f"<!-- {section}:begin -->", f"<!-- {section}:end -->", text, DOCS_HEADER
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

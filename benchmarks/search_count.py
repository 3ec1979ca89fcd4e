"""What numberMatched costs: one page of a search (limit 10) with and without its count
(``count_to``, 10,000 as the service asks), at 10^5 or 10^6 MODIS-like swath items, on SQLite
and on PostgreSQL (a throwaway cluster, as the tests start).

    .venv/bin/python benchmarks/search_count.py --items 100000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "benchmarks"))

from _stac_searches import COLLECTION, START  # noqa: E402
from nearline.archive import Catalogue, Search, SQLiteCatalogue, modis_like_items  # noqa: E402
from nearline.archive._base import Collection  # noqa: E402
from nearline.testing.pgcluster import FAST, Cluster  # noqa: E402

COUNT_TO = 10_000  # as nearline.api._stac asks
DAY = timedelta(days=1)


def searches(items: int) -> dict[str, Search]:
    middle = START + timedelta(minutes=5 * items // 2)
    return {
        "bbox + day (exact)": Search(bbox=(0, 0, 20, 20), start=middle, end=middle + DAY),
        "day, no place (exact)": Search(start=middle, end=middle + DAY),
        "bbox + 30 days (exact)": Search(bbox=(0, 0, 20, 20), start=middle, end=middle + 30 * DAY),
        "30 days, no place (exact, near the cap)": Search(start=middle, end=middle + 30 * DAY),
        "wide bbox + 30 days (exact, near the cap)": Search(
            bbox=(-180, -60, 180, 60), start=middle, end=middle + 30 * DAY
        ),
        "collection, all (past the cap)": Search(collections=(COLLECTION,)),
        "bbox, any time (past the cap)": Search(bbox=(-60, -30, 60, 30)),
    }


def milliseconds(catalogue: Catalogue, search: Search, repeats: int) -> tuple[float, int | None]:
    catalogue.search(search)  # warm
    times, matched = [], None
    for _ in range(repeats):
        began = time.perf_counter()
        matched = catalogue.search(search).matched
        times.append(time.perf_counter() - began)
    return 1000 * statistics.median(times), matched


def measure(name: str, catalogue: Catalogue, items: int, repeats: int) -> None:
    for label, search in searches(items).items():
        without, _ = milliseconds(catalogue, search, repeats)
        counted, matched = milliseconds(catalogue, replace(search, count_to=COUNT_TO), repeats)
        shown = f"{matched:,}" if matched is not None else "left out"
        print(f"| {name} | {items:,} | {label} | {without:.1f} | {counted:.1f} | {shown} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    items = list(modis_like_items(args.items, collection=COLLECTION, start=START, seed=1))
    print("| backend | items | search | page (ms) | page + count (ms) | numberMatched |")
    print("| --- | ---: | --- | ---: | ---: | ---: |")
    with (
        tempfile.TemporaryDirectory() as folder,
        SQLiteCatalogue(Path(folder) / "catalogue.db") as catalogue,
    ):
        catalogue.put_collection(Collection(COLLECTION))
        catalogue.add_items(items)
        measure("SQLite", catalogue, args.items, args.repeats)
    cluster = Cluster(settings=FAST)
    cluster.start()
    try:
        cluster.create_database("count", extensions=["postgis"])
        from nearline.archive._postgres_catalogue import PostgresCatalogue

        with PostgresCatalogue(cluster.url("count")) as catalogue:
            catalogue.put_collection(Collection(COLLECTION))
            for first in range(0, len(items), 50_000):
                catalogue.add_items(items[first : first + 50_000])
            measure("PostgreSQL", catalogue, args.items, args.repeats)
    finally:
        cluster.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What numberMatched costs: one page of a search (limit 10) without its count, with its
count made afresh (the counts the catalogue keeps forgotten before each), and with the count
kept from an earlier page (``count_to`` as the service asks), at 10^5 or 10^6 MODIS-like
swath items, on SQLite and on PostgreSQL (a throwaway cluster, as the tests start).

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

from _stac_searches import COLLECTION, START, forget_counts  # noqa: E402
from nearline.api._stac import COUNT_TO  # noqa: E402
from nearline.archive import Catalogue, Search, SQLiteCatalogue, modis_like_items  # noqa: E402
from nearline.archive._base import Collection  # noqa: E402
from nearline.testing.pgcluster import FAST, Cluster  # noqa: E402

DAY = timedelta(days=1)
SITE = (-105.27, 40.01, -105.26, 40.02)  # 0.01 degrees square at Boulder


def searches(items: int) -> dict[str, Search]:
    middle = START + timedelta(minutes=5 * items // 2)
    return {
        "bbox + day": Search(bbox=(0, 0, 20, 20), start=middle, end=middle + DAY),
        "day, no place": Search(start=middle, end=middle + DAY),
        "bbox + 30 days": Search(bbox=(0, 0, 20, 20), start=middle, end=middle + 30 * DAY),
        "30 days, no place": Search(start=middle, end=middle + 30 * DAY),
        "wide bbox + 30 days": Search(
            bbox=(-180, -60, 180, 60), start=middle, end=middle + 30 * DAY
        ),
        "a site, any time": Search(collections=(COLLECTION,), bbox=SITE),
        "collection, all": Search(collections=(COLLECTION,)),
        "bbox, any time": Search(bbox=(-60, -30, 60, 30)),
    }


def milliseconds(
    catalogue: Catalogue, search: Search, repeats: int, *, afresh: bool = False
) -> tuple[float, int | None]:
    """The median milliseconds of a page of ``search``, and its count; ``afresh``: the
    catalogue's kept counts forgotten before each."""
    catalogue.search(search)  # warm
    times, matched = [], None
    for _ in range(repeats):
        if afresh:
            forget_counts(catalogue)
        began = time.perf_counter()
        matched = catalogue.search(search).matched
        times.append(time.perf_counter() - began)
    return 1000 * statistics.median(times), matched


def measure(name: str, catalogue: Catalogue, items: int, repeats: int) -> None:
    for label, search in searches(items).items():
        without, _ = milliseconds(catalogue, search, repeats)
        counting = replace(search, count_to=COUNT_TO)
        afresh, matched = milliseconds(catalogue, counting, repeats, afresh=True)
        kept, _ = milliseconds(catalogue, counting, repeats)
        shown = f"{matched:,}" if matched is not None else "left out"
        print(
            f"| {name} | {items:,} | {label} | {without:.1f} | {afresh:.1f} | {kept:.1f} "
            f"| {shown} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    items = list(modis_like_items(args.items, collection=COLLECTION, start=START, seed=1))
    print(
        "| backend | items | search | page (ms) | page + count made (ms) "
        "| page + count kept (ms) | numberMatched |"
    )
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
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

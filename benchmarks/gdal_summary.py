"""What a GIS user's first question costs at 10^6 items: ``ogrinfo -so OAPIF:URL mod06``, the
summary of a collection that GDAL's OGC API - Features driver (QGIS's client) gives, with its
feature count. GDAL takes the count from the unfiltered items page's ``numberMatched``; without
it, it walks every page (past 120 s before the service gave it).

Measured in one run, on one `nearline serve` (SQLite, anonymous readers let in):
- ``ogrinfo -so`` as a user runs it (a new process each time, as a shell starts it);
- pystac-client's equivalent: ``Client.open``, the collection, and an ``ItemSearch`` of its
  items page (GET, limit 1), its ``matched()``;
- the floor: the one request that holds the answer, GET .../items?limit=1 on a kept httpx
  connection; and ``ogrinfo --version``, GDAL's own start.

    .venv/bin/python benchmarks/gdal_summary.py [--items 1000000] [--repeats 7]
        [--out bench-output/gdal] [--update-docs]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
from pystac_client import Client, ItemSearch

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
from _stac_searches import COLLECTION, fill, timed  # noqa: E402

DOCS = PROJECT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- gdal-summary:begin -->", "<!-- gdal-summary:end -->"
DOCS_HEADER = "# Benchmarks\n\nEach section is rewritten by its script's `--update-docs`.\n"


def seconds(call: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(median, max) seconds of ``repeats`` calls, after one untimed."""
    spent = timed(call, repeats, warmup=1)
    return statistics.median(spent), max(spent)


def ogrinfo_count(url: str) -> int:
    summary = subprocess.run(
        ["ogrinfo", "-ro", "-so", f"OAPIF:{url}", COLLECTION],
        capture_output=True, text=True, check=True, timeout=600,
    ).stdout  # fmt: skip
    (line,) = [line for line in summary.splitlines() if line.startswith("Feature Count:")]
    return int(line.split(":")[1])


def pystac_count(url: str) -> int:
    """pystac-client's nearest to a summary: the collection, and the count its items page
    gives (a search across collections counts only up to 10,000 candidates)."""
    client = Client.open(url)
    client.get_collection(COLLECTION)
    items = f"{url}/collections/{COLLECTION}/items"
    return ItemSearch(items, method="GET", limit=1, client=client).matched()


def measure(url: str, items: int, repeats: int) -> list[list[str]]:
    for name, count in (("ogrinfo", ogrinfo_count(url)), ("pystac-client", pystac_count(url))):
        if count != items:  # None: no count given
            raise SystemExit(f"{name} counted {count} items, not {items}")
    with httpx.Client(base_url=url, timeout=600) as kept:
        page = f"/collections/{COLLECTION}/items"
        floor = seconds(
            lambda: kept.get(page, params={"limit": 1}).json()["numberMatched"], repeats
        )
    start = ["ogrinfo", "--version"]
    figures = {
        "`ogrinfo -so OAPIF:URL` (GDAL, a new process)": seconds(
            lambda: ogrinfo_count(url), repeats
        ),
        "pystac-client: open, collection, its items (limit 1) `matched()`": seconds(
            lambda: pystac_count(url), repeats
        ),
        "floor: GET .../items?limit=1, kept httpx connection": floor,
        "floor: `ogrinfo --version` (GDAL's start)": seconds(
            lambda: subprocess.run(start, capture_output=True, check=True), repeats
        ),
    }
    ogrinfo = figures["`ogrinfo -so OAPIF:URL` (GDAL, a new process)"][0]
    return [
        [name, f"{median * 1000:.0f}", f"{worst * 1000:.0f}", f"{ogrinfo / median:.1f}"]
        for name, (median, worst) in figures.items()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, default=PROJECT / "bench-output" / "gdal")
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args(argv)
    out = args.out.absolute()
    data = out / "data"
    fill(data, args.items)
    live = LiveService(data)
    live.start("--anonymous-read", COLLECTION)
    try:
        rows = measure(live.url, args.items, args.repeats)
    finally:
        live.stop()
    table = markdown_table(["client", "median (ms)", "max (ms)", "ogrinfo / this"], rows)
    with open("/proc/loadavg") as load:
        loadavg = " ".join(load.read().split()[:3])
    text = (
        f"`ogrinfo -so` of a {args.items:,}-item collection, beside pystac-client and the "
        f"floor (`{command_line()}` on {now_stamp()}, load average {loadavg} at the end; "
        f"machine: {machine_summary(out)}; {args.repeats} runs each after one untimed; "
        "one `nearline serve`, SQLite, `--anonymous-read`). GDAL reads the count from the "
        "unfiltered items page's `numberMatched`, which the catalogue's per-collection count "
        "gives exactly; the target is 2 s.\n\n" + table
    )
    print(text)
    if args.update_docs:
        header = "## GDAL's summary of a collection (OAPIF)"
        replace_section(DOCS, BEGIN, END, f"{header}\n\n{text}", DOCS_HEADER)
    return 0


if __name__ == "__main__":
    sys.exit(main())

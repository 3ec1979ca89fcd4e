"""Ingest from an S3 bucket against ingest of the same granules from a local folder, in the
same run, on a real S3 server (SeaweedFS on 127.0.0.1): `nearline ingest s3://bucket/day/`
against `nearline ingest day/`. Each is timed whole (listing, describing every granule,
hashing every byte, cataloguing) into a fresh catalogue, alternately, medians of --repeats.

    .venv/bin/python benchmarks/s3_ingest.py [--orbits 14] [--lines 2000] [--repeats 5]
                                             [--update-docs]

The issue's target: ingest from the bucket at >= 50% of the local rate.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from _common import fmt, machine_summary, markdown_table, median, now_stamp, replace_section
from nearline.archive import ingest, ingest_bucket, open_catalogue
from nearline.swath import synthesize_day
from nearline.testing.s3server import running_server, server_version

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BEGIN, END = "<!-- s3-ingest:begin -->", "<!-- s3-ingest:end -->"
HEADING = "## Ingest from S3"


def timed(run) -> float:
    with (
        tempfile.TemporaryDirectory(prefix="nearline-bench-") as folder,
        open_catalogue(None, Path(folder) / "catalogue.db") as catalogue,
    ):
        began = time.perf_counter()
        report = run(catalogue)
        seconds = time.perf_counter() - began
    assert report.items, "nothing was ingested"
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--orbits", type=int, default=14, help="granules (default: 14)")
    parser.add_argument("--lines", type=int, default=2000, help="lines an orbit (default: 2000)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each (median)")
    parser.add_argument("--update-docs", action="store_true", help=f"write the table in {DOCS}")
    args = parser.parse_args(argv)
    if args.repeats < 3:
        parser.error("--repeats: at least 3 (the table gives medians)")
    with tempfile.TemporaryDirectory(prefix="nearline-s3-ingest-") as scratch:
        day = Path(scratch) / "day"
        paths = synthesize_day("2012-12-12", args.orbits, day, lines_per_orbit=args.lines)
        size = sum(path.stat().st_size for path in paths)
        with running_server(Path(scratch) / "s3") as server:
            server.make_bucket("bench")
            s3 = server.client()
            for path in paths:
                s3.upload_file(str(path), "bench", f"day/{path.name}")
            options = {"endpoint_url": server.endpoint_url}
            os.environ.update(server.credentials())
            runs = {
                "local folder": lambda c: ingest(c, [day], collection="c", start_method="fork"),
                "S3 bucket": lambda c: ingest_bucket(
                    c, "s3://bench/day/", collection="c", storage_options=options
                ),
            }
            for run in runs.values():  # warm-up: imports, page cache, the server's caches
                timed(run)
            seconds: dict[str, list[float]] = {name: [] for name in runs}
            for _ in range(args.repeats):
                for name, run in runs.items():
                    seconds[name].append(timed(run))
            version = server_version()
    rows, rates = [], {}
    for name, times in seconds.items():
        middle = median(times) or 0.0
        rates[name] = size / middle / 2**20
        rows.append(
            [name, str(len(paths)), f"{size / 2**20:.1f}", fmt(middle), fmt(rates[name], 1)]
        )
    share = rates["S3 bucket"] / rates["local folder"]
    rows[1].append(f"{share:.0%}")
    rows[0].append("100%")
    table = markdown_table(
        ["granules from", "granules", "MiB", "seconds (median)", "MiB/s", "of local"], rows
    )
    note = (
        f"Ingest from an S3 bucket against a local folder, same granules, same run "
        f"(`{' '.join(['.venv/bin/python', 'benchmarks/s3_ingest.py', *(argv or sys.argv[1:])])}`, "
        f"median of {args.repeats}, {now_stamp()}): {args.orbits} AVHRR GAC granules of "
        f"{args.lines} lines (nearline's netCDF-4; from the bucket each object is read by "
        f"one GET, hashed as it streams in and described from memory; the local ingest "
        f"describes and hashes in worker processes, forked). Server: SeaweedFS ({version}) "
        f"on 127.0.0.1. Machine: "
        f"{machine_summary(Path(tempfile.gettempdir()))}. Target: >= 50% of the local rate."
    )
    print(table)
    print(note)
    if args.update_docs:
        replace_section(DOCS, BEGIN, END, f"{HEADING}\n\n{note}\n\n{table}", "# Benchmarks")
    return 0


if __name__ == "__main__":
    sys.exit(main())

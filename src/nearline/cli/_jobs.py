"""``nearline jobs``: the jobs and the stations' queues, read from the service's state."""

from __future__ import annotations

import argparse
from typing import Any

from nearline.cli._options import add_data_option, data_folder


def add_jobs_parser(subparsers: Any) -> None:
    jobs = subparsers.add_parser("jobs")
    add_data_option(jobs)
    jobs.add_argument("--user", default=None, help="only this user's jobs")
    jobs.add_argument("--limit", type=int, default=20, help="how many jobs (default: 20)")
    jobs.set_defaults(func=run_jobs)


def run_jobs(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from nearline.db import database_url, open_database
    from nearline.orders import JobStore, Station

    database = open_database(database_url(args.db), data_folder(args) / "service.db")
    try:
        store = JobStore(database)
        active = [station for station in Station if not station.ended]
        queues = {s: 0 for s in active}
        for run in store.at(*active):
            queues[run.station] += 1
        console = Console()
        console.print("stations: " + ", ".join(f"{s.value} {n}" for s, n in queues.items()))
        table = Table("job", "user", "process", "status", "runs", "progress", "waiting")
        rows = database.query(
            "SELECT id FROM jobs WHERE (? IS NULL OR owner = ?) ORDER BY created DESC LIMIT ?",
            (args.user, args.user, args.limit),
        )
        for row in rows:
            job = store.get(row["id"], viewer=None)
            waiting = next((run.waiting for run in job.runs if run.waiting), "")
            table.add_row(
                job.id[:12],
                job.owner,
                f"{job.process} {job.version}",
                job.status.value,
                str(len(job.runs)),
                f"{job.progress}%",
                waiting,
            )
        console.print(table)
    finally:
        database.close()
    return 0

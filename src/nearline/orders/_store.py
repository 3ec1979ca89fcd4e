"""Jobs and runs, durable: every station change is one committed transaction.

A run moves with :meth:`JobStore.move`, which only succeeds from the station (and the server
holding it) the caller believes the run is at; two threads, two servers sharing one database,
or a restarted service and a stale one can therefore never both advance the same run. The
job's status is recomputed from its runs in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import orjson

from nearline.db import Database
from nearline.errors import DiskQuotaExceeded, JobNotFound
from nearline.monitor import Usage
from nearline.orders._base import InputRef, Job, JobFilter, JobStatus, OutputFile, Run, Station
from nearline.units import format_size

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    process TEXT NOT NULL,
    version TEXT NOT NULL,
    status TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    started TEXT,
    finished TEXT,
    inputs TEXT NOT NULL,
    parameters TEXT NOT NULL,
    message TEXT
);
CREATE INDEX IF NOT EXISTS jobs_by_owner ON jobs (owner, created);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    job TEXT NOT NULL REFERENCES jobs (id),
    idx INTEGER NOT NULL,
    station TEXT NOT NULL,
    inputs TEXT NOT NULL,
    waiting TEXT,
    message TEXT,
    usage TEXT,
    outputs TEXT NOT NULL DEFAULT '[]',
    attempts INTEGER NOT NULL DEFAULT 0,
    started TEXT,
    finished TEXT,
    UNIQUE (job, idx)
);
CREATE INDEX IF NOT EXISTS runs_by_station ON runs (station, job, idx);
"""
GROWN = {  # columns added since the first schema, added to an older service's tables
    "runs": {
        "output_bytes": "INTEGER NOT NULL DEFAULT 0",
        "server": "TEXT",
        "station_since": "TEXT",  # when it reached its station (the metrics' waits)
        "timings": "TEXT",
    },
    "jobs": {"kept": "INTEGER NOT NULL DEFAULT 1"},
}
HOLDING_DISK = ("ingest", "cleanup", "done")  # stations whose runs' outputs are kept
_DISK_USED = (
    "SELECT COALESCE(SUM(runs.output_bytes), 0) AS used FROM runs "
    "JOIN jobs ON jobs.id = runs.job "
    "WHERE jobs.owner = ? AND jobs.kept = 1 AND runs.station IN "
    f"({','.join('?' * len(HOLDING_DISK))})"
)


def now() -> datetime:
    return datetime.now(UTC)


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _loads(text: str) -> Any:
    """A stored JSON column: orjson reads a job listing's thousands of them about five times
    faster than the standard library; Python's own reader takes what orjson refuses (NaN)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _run_from_row(row: Mapping[str, Any]) -> Run:
    return Run(
        id=row["id"],
        job=row["job"],
        index=row["idx"],
        station=Station(row["station"]),
        inputs=tuple(InputRef(**ref) for ref in _loads(row["inputs"])),
        waiting=row["waiting"],
        message=row["message"],
        usage=Usage.from_dict(_loads(row["usage"])) if row["usage"] else None,
        outputs=tuple(OutputFile(**out) for out in _loads(row["outputs"])),
        attempts=row["attempts"],
        started=_time(row["started"]),
        finished=_time(row["finished"]),
        server=row["server"],
        timings={k: (w, c) for k, (w, c) in _loads(row["timings"]).items()}
        if row["timings"]
        else {},
    )


def _chunks(ids: list[str], size: int = 500) -> Iterator[tuple[str, tuple[str, ...]]]:
    """``ids`` a few hundred at a time, each with its ``?,?,...`` for an ``IN (...)``."""
    for start in range(0, len(ids), size):
        chunk = tuple(ids[start : start + size])
        yield ",".join("?" * len(chunk)), chunk


def _job_from_row(row: Mapping[str, Any], runs: tuple[Run, ...]) -> Job:
    return Job(
        id=row["id"],
        owner=row["owner"],
        process=row["process"],
        version=row["version"],
        status=JobStatus(row["status"]),
        created=datetime.fromisoformat(row["created"]),
        updated=datetime.fromisoformat(row["updated"]),
        started=_time(row["started"]),
        finished=_time(row["finished"]),
        inputs=_loads(row["inputs"]),
        parameters=_loads(row["parameters"]),
        message=row["message"],
        runs=runs,
    )


def status_of(runs: Iterable[Run], *, dismissed: bool = False) -> JobStatus:
    """A job's OGC status from its runs' stations."""
    stations = [run.station for run in runs]
    if dismissed or Station.DISMISSED in stations:
        return JobStatus.DISMISSED
    if stations and all(s == Station.DONE for s in stations):
        return JobStatus.SUCCESSFUL
    if stations and all(s.ended for s in stations):
        return JobStatus.FAILED
    if all(s == Station.QUEUED for s in stations):
        return JobStatus.ACCEPTED
    return JobStatus.RUNNING


class JobStore:
    """The service's jobs (OGC jobs, i.e. orders) and their runs."""

    def __init__(self, database: Database) -> None:
        self.database = database
        database.apply(SCHEMA)
        for table, columns in GROWN.items():
            database.add_columns(table, columns)

    # -- orders -----------------------------------------------------------------------------
    def create(self, job: Job) -> None:
        """Record a new job and its runs, all queued, in one transaction."""
        with self.database.transaction() as connection:
            self._insert(connection, job, existing="")

    def create_all(self, jobs: Sequence[Job]) -> list[str]:
        """Record new ``jobs`` in one transaction (a subscription's burst of granules is one
        write); a job whose id exists already is left as it is (another server made it).
        Returns the ids of the jobs recorded now."""
        with self.database.transaction() as connection:
            return [
                job.id
                for job in jobs
                if self._insert(connection, job, existing="ON CONFLICT (id) DO NOTHING")
            ]

    @staticmethod
    def _insert(connection: Any, job: Job, *, existing: str) -> bool:
        """Insert ``job`` and its runs; ``existing`` says what a taken id does (nothing: the
        insert fails). Whether the job was inserted."""
        inserted = connection.execute(
            "INSERT INTO jobs (id, owner, process, version, status, created, updated, "
            "started, finished, inputs, parameters, message) "
            f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) {existing}",
            (
                job.id,
                job.owner,
                job.process,
                job.version,
                job.status.value,
                job.created.isoformat(),
                job.updated.isoformat(),
                job.started.isoformat() if job.started else None,
                job.finished.isoformat() if job.finished else None,
                json.dumps(job.inputs),
                json.dumps(job.parameters),
                job.message,
            ),
        ).rowcount
        if not inserted:
            return False
        connection.executemany(
            "INSERT INTO runs (id, job, idx, station, inputs, waiting, station_since) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    run.id,
                    job.id,
                    run.index,
                    run.station.value,
                    json.dumps([ref.__dict__ for ref in run.inputs]),
                    run.waiting,
                    job.created.isoformat(),
                )
                for run in job.runs
            ],
        )
        return True

    def get(self, job_id: str, *, viewer: str | None) -> Job:
        """Job ``job_id`` if ``viewer`` owns it (None: the service itself, sees all)."""
        rows = self.database.query("SELECT * FROM jobs WHERE id = ?", (job_id,))
        if not rows or (viewer is not None and rows[0]["owner"] != viewer):
            raise JobNotFound(f"no job {job_id}")
        return _job_from_row(rows[0], self.runs_of(job_id))

    def statuses(self, job_ids: Iterable[str]) -> dict[str, JobStatus]:
        """The status of each of ``job_ids`` that exists, in one query a few hundred ids at a
        time (a loop watching a thousand jobs reads them at once, not one by one)."""
        found = {}
        for marks, chunk in _chunks(list(job_ids)):
            rows = self.database.query(f"SELECT id, status FROM jobs WHERE id IN ({marks})", chunk)
            found.update({row["id"]: JobStatus(row["status"]) for row in rows})
        return found

    def list(
        self, *, viewer: str, limit: int = 100, offset: int = 0, only: JobFilter | None = None
    ) -> list[Job]:
        """``viewer``'s jobs, newest first; only those ``only`` keeps (None: all)."""
        only = only or JobFilter()
        where, values = ["owner = ?"], [viewer]
        statuses = [str(status) for status in only.statuses]
        for column, wanted in (("status", statuses), ("process", only.processes)):
            if wanted:
                where.append(f"{column} IN ({','.join('?' * len(wanted))})")
                values += list(wanted)
        rows = self.database.query(
            f"SELECT * FROM jobs WHERE {' AND '.join(where)} "
            "ORDER BY created DESC, id LIMIT ? OFFSET ?",
            (*values, limit, offset),
        )
        runs: dict[str, list[Run]] = {row["id"]: [] for row in rows}
        for marks, chunk in _chunks(list(runs)):  # the page's runs at once, not one job a query
            query = f"SELECT * FROM runs WHERE job IN ({marks}) ORDER BY job, idx"
            for found in self.database.query(query, chunk):
                runs[found["job"]].append(_run_from_row(found))
        return [_job_from_row(row, tuple(runs[row["id"]])) for row in rows]

    def runs_of(self, job_id: str) -> tuple[Run, ...]:
        rows = self.database.query("SELECT * FROM runs WHERE job = ? ORDER BY idx", (job_id,))
        return tuple(_run_from_row(row) for row in rows)

    def run(self, run_id: str) -> Run:
        rows = self.database.query("SELECT * FROM runs WHERE id = ?", (run_id,))
        if not rows:
            raise JobNotFound(f"no run {run_id}")
        return _run_from_row(rows[0])

    # -- the stations ------------------------------------------------------------------------
    def at(self, *stations: Station) -> list[Run]:
        """Runs at any of ``stations``, oldest job first."""
        marks = ",".join("?" * len(stations))
        rows = self.database.query(
            f"SELECT runs.* FROM runs JOIN jobs ON jobs.id = runs.job "
            f"WHERE runs.station IN ({marks}) ORDER BY jobs.created, runs.job, runs.idx",
            tuple(s.value for s in stations),
        )
        return [_run_from_row(row) for row in rows]

    def queued(self, known: Mapping[str, Run]) -> list[Run]:
        """The runs in the queue, in no set order (admission orders them). A run in ``known``
        (the last call's) whose waiting, attempts and server are unchanged is that same run,
        so an admission pass reads in full only the runs new to the queue."""
        rows = self.database.query(
            "SELECT id, waiting, attempts, server FROM runs WHERE station = ?",
            (Station.QUEUED.value,),
        )
        order = [row["id"] for row in rows]
        same = {
            row["id"]
            for row in rows
            if (run := known.get(row["id"])) is not None
            and (run.waiting, run.attempts, run.server)
            == (row["waiting"], row["attempts"], row["server"])
        }
        read = {run_id: known[run_id] for run_id in same}
        for marks, chunk in _chunks([run_id for run_id in order if run_id not in same]):
            query = f"SELECT * FROM runs WHERE id IN ({marks}) AND station = ?"
            for row in self.database.query(query, (*chunk, Station.QUEUED.value)):
                read[row["id"]] = _run_from_row(row)
        return [read[run_id] for run_id in order if run_id in read]  # (moved meanwhile: gone)

    def count_at(self, *stations: Station) -> dict[Station, int]:
        """How many runs (everyone's) are at each of ``stations`` (those with none left out)."""
        marks = ",".join("?" * len(stations))
        rows = self.database.query(
            f"SELECT station, COUNT(*) AS n FROM runs WHERE station IN ({marks}) GROUP BY station",
            tuple(s.value for s in stations),
        )
        return {Station(row["station"]): int(row["n"]) for row in rows}

    def move(self, run: Run, to: Station, **changes: Any) -> Run | None:
        """Move ``run`` from the station it is at, held by the server holding it (as the
        caller knows them) to ``to``, with ``changes`` (waiting, message, usage, outputs,
        attempts, started, finished, server). Returns the moved run, or None if it was no
        longer there (moved by someone else, taken over, or dismissed)."""
        with self.database.transaction() as connection:
            return self._move(connection, run, to, **changes)

    def move_within_quota(
        self, run: Run, to: Station, *, owner: str, quota: int | None, **changes: Any
    ) -> Run | None:
        """:meth:`move` ``run`` with its ``outputs`` (in ``changes``) to a station that keeps
        them, in the same transaction as the check that they fit in ``owner``'s disk
        ``quota`` (None: no bound), so two runs ending at once cannot both slip past it.
        Raises :class:`DiskQuotaExceeded` (and moves nothing) if they do not fit."""
        outputs = changes.get("outputs", run.outputs)
        size = sum(out.size for out in outputs)
        with self.database.transaction() as connection:
            held = self._disk_used(connection, owner)
            if quota is not None and held + size > quota:
                raise DiskQuotaExceeded(
                    f"outputs of {format_size(size)} would exceed {owner}'s disk quota of "
                    f"{format_size(quota)} (held {format_size(held)}); they were not kept"
                )
            return self._move(connection, run, to, **changes)

    def _move(self, connection: Any, run: Run, to: Station, **changes: Any) -> Run | None:
        moved = replace(run, station=to, **changes)
        changed = connection.execute(
            "UPDATE runs SET station = ?, waiting = ?, message = ?, usage = ?, "
            "outputs = ?, output_bytes = ?, attempts = ?, started = ?, finished = ?, "
            "server = ?, timings = ?, "
            "station_since = CASE WHEN station = ? THEN station_since ELSE ? END "
            "WHERE id = ? AND station = ? AND COALESCE(server, '') = ?",
            (
                to.value,
                moved.waiting,
                moved.message,
                json.dumps(moved.usage.to_dict()) if moved.usage else None,
                json.dumps([out.__dict__ for out in moved.outputs]),
                sum(out.size for out in moved.outputs),
                moved.attempts,
                moved.started.isoformat() if moved.started else None,
                moved.finished.isoformat() if moved.finished else None,
                moved.server,
                json.dumps({k: [w, c] for k, (w, c) in moved.timings.items()})
                if moved.timings
                else None,
                to.value,  # staying at its station (taken over, retried): since then still
                now().isoformat(),
                run.id,
                run.station.value,
                run.server or "",
            ),
        ).rowcount
        if not changed:
            return None
        self._refresh_job(connection, run.job)
        return moved

    def disk_used(self, owner: str) -> int:
        """Bytes ``owner``'s kept outputs take (from the moment their run reaches ingest)."""
        rows = self.database.query(_DISK_USED, (owner, *HOLDING_DISK))
        return int(rows[0]["used"])

    @staticmethod
    def _disk_used(connection: Any, owner: str) -> int:
        row = connection.execute(_DISK_USED, (owner, *HOLDING_DISK)).fetchone()
        return int(row["used"])

    def queued_count(self, owner: str) -> int:
        rows = self.database.query(
            "SELECT COUNT(*) AS n FROM runs JOIN jobs ON jobs.id = runs.job "
            "WHERE jobs.owner = ? AND runs.station = ?",
            (owner, Station.QUEUED.value),
        )
        return int(rows[0]["n"])

    def forget_results(self, job_id: str, *, viewer: str, message: str) -> None:
        """Mark a finished job's results deleted: it is dismissed, and no longer counts
        against its owner's disk quota."""
        self.get(job_id, viewer=viewer)
        with self.database.transaction() as connection:
            connection.execute(
                "UPDATE jobs SET kept = 0, status = ?, message = ?, updated = ? WHERE id = ?",
                (JobStatus.DISMISSED.value, message, now().isoformat(), job_id),
            )

    def succeed(self, job_id: str, *, message: str) -> None:
        """Mark a job without runs (one the service answers in-process) successful, unless it
        ended otherwise meanwhile (dismissed)."""
        stamp = now().isoformat()
        with self.database.transaction() as connection:
            connection.execute(
                "UPDATE jobs SET status = ?, message = ?, updated = ?, finished = ? "
                "WHERE id = ? AND status = ?",
                (
                    JobStatus.SUCCESSFUL.value,
                    message,
                    stamp,
                    stamp,
                    job_id,
                    JobStatus.RUNNING.value,
                ),
            )

    def set_waiting(self, run: Run, waiting: str | None) -> None:
        """Say why a queued run waits (shown in GET /jobs/{id}); no station change."""
        self.set_waiting_all([(run, waiting)])

    def set_waiting_all(self, reasons: Iterable[tuple[Run, str | None]]) -> None:
        """Say why each queued run waits, in one transaction for a whole admission pass
        (only the runs whose reason changed are written)."""
        changed = [
            (waiting, run.id, run.station.value)
            for run, waiting in reasons
            if run.waiting != waiting
        ]
        if not changed:
            return
        with self.database.transaction() as connection:
            connection.executemany(
                "UPDATE runs SET waiting = ? WHERE id = ? AND station = ?", changed
            )

    def dismiss(self, job_id: str, *, viewer: str, message: str) -> list[Run]:
        """Mark ``job_id`` dismissed; returns the runs that were not yet ended (to stop)."""
        job = self.get(job_id, viewer=viewer)
        open_runs = [run for run in job.runs if not run.station.ended]
        with self.database.transaction() as connection:
            connection.execute(
                "UPDATE runs SET station = ?, message = ?, finished = ?, station_since = ? "
                "WHERE job = ? AND station NOT IN (?, ?, ?)",
                (
                    Station.DISMISSED.value,
                    message,
                    now().isoformat(),
                    now().isoformat(),
                    job_id,
                    Station.DONE.value,
                    Station.FAILED.value,
                    Station.DISMISSED.value,
                ),
            )
            connection.execute(
                "UPDATE jobs SET status = ?, message = ?, updated = ?, finished = ? WHERE id = ?",
                (JobStatus.DISMISSED.value, message, now().isoformat(), now().isoformat(), job_id),
            )
        return open_runs

    def _refresh_job(self, connection: Any, job_id: str) -> None:
        rows = connection.execute("SELECT * FROM runs WHERE job = ?", (job_id,)).fetchall()
        runs = [_run_from_row(row) for row in rows]
        job = connection.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if job["status"] == JobStatus.DISMISSED.value:
            return
        status = status_of(runs)
        stamp = now().isoformat()
        started = job["started"] or (stamp if status != JobStatus.ACCEPTED else None)
        ended = status in (JobStatus.SUCCESSFUL, JobStatus.FAILED)
        failures = [run.message for run in runs if run.station == Station.FAILED and run.message]
        message = failures[0] if failures else job["message"]
        connection.execute(
            "UPDATE jobs SET status = ?, updated = ?, started = ?, finished = ?, message = ? "
            "WHERE id = ?",
            (status.value, stamp, started, stamp if ended else None, message, job_id),
        )

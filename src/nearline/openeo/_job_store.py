"""openEO batch jobs as the openEO face keeps them, in the service's state database: what a
client created (title, description, process, job options) and the nearline order that runs
it once started. The order is an ordinary nearline job (of the built-in ``openeo`` process):
its status, runs, usage, quota and restart are the orders'; this table holds only what openEO
has and nearline's jobs do not, so a job survives a restart with its draft and its order."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from nearline.db import Database
from nearline.errors import OpenEOError

SCHEMA = """
CREATE TABLE IF NOT EXISTS openeo_jobs (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    title TEXT,
    description TEXT,
    process TEXT NOT NULL,
    options TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    order_id TEXT
);
CREATE INDEX IF NOT EXISTS openeo_jobs_by_owner ON openeo_jobs (owner, created);
"""
COLUMNS = "id, owner, title, description, process, options, created, updated, order_id"


@dataclass(frozen=True)
class BatchJob:
    """One openEO batch job.

    Parameters
    ----------
    id
        Its openEO id.
    owner
        Who created it.
    title, description
        What the client named it.
    process
        The openEO process: ``{"process_graph": ...}`` and whatever else it carried.
    options
        The job options, as limits (``memory``, ``disk`` in bytes, ``timeout`` in s).
    created, updated
        When it was created and last changed.
    order
        The nearline job running it (None: not started).
    """

    id: str
    owner: str
    title: str | None
    description: str | None
    process: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)
    created: datetime = field(default_factory=lambda: datetime.now(UTC))
    updated: datetime = field(default_factory=lambda: datetime.now(UTC))
    order: str | None = None


def job_not_found(job_id: str) -> OpenEOError:
    """openEO's JobNotFound: no such job, or not the caller's (never saying which)."""
    return OpenEOError(f"batch job {job_id!r} does not exist, or is not yours; GET /jobs lists "
                       "yours", status=404, openeo_code="JobNotFound")  # fmt: skip


class BatchJobs:
    """The openEO batch jobs of every user, in the service's state database."""

    def __init__(self, database: Database) -> None:
        self.database = database
        database.apply(SCHEMA)

    def create(self, job: BatchJob) -> None:
        """Record a new job."""
        with self.database.transaction() as connection:
            connection.execute(
                f"INSERT INTO openeo_jobs ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _row(job),
            )

    def get(self, job_id: str, *, owner: str) -> BatchJob:
        """``owner``'s job ``job_id``.

        Raises
        ------
        OpenEOError
            ``JobNotFound`` (404): none of that id is ``owner``'s.
        """
        rows = self.database.query(f"SELECT {COLUMNS} FROM openeo_jobs WHERE id = ? AND owner = ?",
                                   (job_id, owner))  # fmt: skip
        if not rows:
            raise job_not_found(job_id)
        return _job(rows[0])

    def find(self, job_id: str) -> BatchJob:
        """Job ``job_id``, whoever's it is: for a link this service signed, whose signature
        is the permission.

        Raises
        ------
        OpenEOError
            ``JobNotFound`` (404).
        """
        rows = self.database.query(f"SELECT {COLUMNS} FROM openeo_jobs WHERE id = ?", (job_id,))
        if not rows:
            raise job_not_found(job_id)
        return _job(rows[0])

    def list(self, *, owner: str, limit: int, offset: int = 0) -> list[BatchJob]:
        """``owner``'s jobs, newest first."""
        rows = self.database.query(
            f"SELECT {COLUMNS} FROM openeo_jobs WHERE owner = ? ORDER BY created DESC, id "
            "LIMIT ? OFFSET ?", (owner, limit, offset),
        )  # fmt: skip
        return [_job(row) for row in rows]

    def save(self, job: BatchJob) -> BatchJob:
        """Write ``job``'s changed fields (stamped now); the job as saved."""
        saved = replace(job, updated=datetime.now(UTC))
        with self.database.transaction() as connection:
            connection.execute(
                "UPDATE openeo_jobs SET title = ?, description = ?, process = ?, options = ?, "
                "updated = ?, order_id = ? WHERE id = ? AND owner = ?",
                (*_row(saved)[2:6], _row(saved)[7], saved.order, saved.id, saved.owner),
            )
        return saved

    def delete(self, job_id: str, *, owner: str) -> None:
        """Forget ``owner``'s job ``job_id``."""
        with self.database.transaction() as connection:
            connection.execute("DELETE FROM openeo_jobs WHERE id = ? AND owner = ?",
                               (job_id, owner))  # fmt: skip


def _row(job: BatchJob) -> tuple[Any, ...]:
    return (job.id, job.owner, job.title, job.description, json.dumps(job.process),
            json.dumps(job.options), job.created.isoformat(), job.updated.isoformat(),
            job.order)  # fmt: skip


def _job(row: Any) -> BatchJob:
    return BatchJob(
        id=row["id"], owner=row["owner"], title=row["title"], description=row["description"],
        process=json.loads(row["process"]), options=json.loads(row["options"]),
        created=datetime.fromisoformat(row["created"]),
        updated=datetime.fromisoformat(row["updated"]), order=row["order_id"],
    )  # fmt: skip

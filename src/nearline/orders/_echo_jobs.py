"""Jobs of the echo process (nearline.algorithms' echo), answered in-process: no runs, no
stations, no sandbox. Its job is recorded like any other (so /jobs, /jobs/{id} and its
results work as for an order), and what it echoes is kept in the job's parameters.

A job that asks for a ``pause`` is running until that many seconds after it started; it is
settled when it is next read, so no thread waits for it and a restarted service needs no
clean-up.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from nearline.algorithms import ECHO_ID, echo_description, read_echo_order
from nearline.orders._base import Job, JobFilter, JobStatus
from nearline.orders._store import JobStore

# the echoes that may be due
PAUSED = JobFilter(statuses=(JobStatus.RUNNING,), processes=(ECHO_ID,))


class EchoJobs:
    """The echo process's jobs in ``store``."""

    def __init__(self, store: JobStore) -> None:
        self.store = store
        self.version = echo_description()["version"]

    def submit(self, body: Mapping[str, Any], *, owner: str, job_id: str | None = None) -> Job:
        """A job echoing ``body``'s inputs; :class:`InvalidRequest` names what is wrong."""
        order = read_echo_order(body)
        moment = datetime.now(UTC)
        job = Job(
            id=job_id or uuid.uuid4().hex,
            owner=owner,
            process=ECHO_ID,
            version=self.version,
            status=JobStatus.RUNNING if order.pause else JobStatus.SUCCESSFUL,
            created=moment,
            updated=moment,
            started=moment,
            finished=None if order.pause else moment,
            inputs={},  # no data inputs: what it echoes is in its parameters
            parameters=order.to_dict(),
            message="echoing" if order.pause else "echoed",
        )
        self.store.create(job)
        return job

    def settle(self, job: Job) -> Job:
        """``job`` as it is now: a paused echo whose pause is over has succeeded."""
        if job.process != ECHO_ID or job.status != JobStatus.RUNNING or job.runs:
            return job
        pause = timedelta(seconds=float(job.parameters.get("pause", 0)))
        if job.started is not None and datetime.now(UTC) < job.started + pause:
            return job
        self.store.succeed(job.id, message="echoed")
        return self.store.get(job.id, viewer=None)

    def settle_all(self, owner: str, *, page: int = 1000) -> None:
        """Settle every one of ``owner``'s paused echoes whose pause is over."""
        offset = 0
        while True:
            running = self.store.list(viewer=owner, limit=page, offset=offset, only=PAUSED)
            offset += sum(self.settle(job).status == JobStatus.RUNNING for job in running)
            if len(running) < page:
                return

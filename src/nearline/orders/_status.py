"""A job's OGC statusInfo: the fields OGC API - Processes defines and its links. The API's
status document and a subscription's callback both start from it (each adds its own
``nearline:`` fields), so a receiver and a client read the same words for the same job."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from nearline.orders._base import Job, JobStatus

JSON = "application/json"
OGC_REL = "http://www.opengis.net/def/rel/ogc/1.0"


def stamp(moment: datetime) -> str:
    """``moment`` (UTC) as RFC 3339 with a Z."""
    return moment.isoformat().replace("+00:00", "Z")


def status_info(job: Job, *, base: str) -> dict[str, Any]:
    """OGC's statusInfo of ``job``, its links under ``base`` (the service's URL)."""
    href = f"{base}/jobs/{job.id}"
    links = [
        {"rel": "self", "type": JSON, "href": href},
        {"rel": f"{OGC_REL}/logs", "type": "text/plain", "href": f"{href}/logs"},
    ]
    if job.status == JobStatus.SUCCESSFUL:
        links.append({"rel": f"{OGC_REL}/results", "type": JSON, "href": f"{href}/results"})
    stamps = {
        name: stamp(moment)
        for name, moment in (
            ("created", job.created),
            ("started", job.started),
            ("finished", job.finished),
            ("updated", job.updated),
        )
        if moment is not None  # OGC's statusInfo has these as strings: absent, never null
    }
    return {
        "jobID": job.id,
        "processID": job.process,
        "type": "process",
        "status": job.status.value,
        "message": job.message or _stations(job),
        **stamps,
        "progress": job.progress,
        "links": links,
        "nearline:version": job.version,
    }


def _stations(job: Job) -> str:
    """How many of the job's runs are at each station, in words."""
    counts = Counter(run.station.value for run in job.runs)
    return ", ".join(f"{count} {station}" for station, count in sorted(counts.items()))

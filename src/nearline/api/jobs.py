"""OGC API - Processes jobs: status, list, results, logs and dismiss, as plain functions.

A job's status document is OGC's statusInfo plus what a user of S4PM wanted to see: each
run's station, why it waits, what it cost, and how full each station is service-wide.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from nearline.errors import ResultsNotReady
from nearline.orders import Job, JobStatus, Service, Station
from nearline.orders.status import stamp
from nearline.orders.status import status_info as job_status

JSON = "application/json"
Answer = tuple[int, Any, dict[str, str]]


def status_info(service: Service, job: Job, *, base: str) -> dict[str, Any]:
    """OGC's statusInfo with each run's station, wait, cost and the stations' queues."""
    return {
        **job_status(job, base=base),
        "nearline:usage": job.usage.to_dict(),
        "nearline:runs": [
            {
                "index": run.index,
                "station": run.station.value,
                "waiting": run.waiting,
                "message": run.message,
                "attempts": run.attempts,
                "started": stamp(run.started) if run.started else None,
                "finished": stamp(run.finished) if run.finished else None,
                "inputs": [f"{ref.collection}/{ref.item}" for ref in run.inputs],
                "usage": run.usage.to_dict() if run.usage else None,
            }
            for run in job.runs
        ],
        "nearline:stations": station_queues(service),
    }


def station_queues(service: Service) -> dict[str, int]:
    """How many runs (everyone's) wait or work at each station: the S4PM station monitor."""
    active = [s for s in Station if not s.ended]
    counts = Counter(run.station.value for run in service.jobs.at(*active))
    return {station.value: counts.get(station.value, 0) for station in active}


def list_jobs(service: Service, *, user: str, base: str, limit: int, offset: int) -> Answer:
    jobs = service.job_list(viewer=user, limit=limit, offset=offset)
    body = {
        "jobs": [status_info(service, job, base=base) for job in jobs],
        "links": [{"rel": "self", "type": JSON, "href": f"{base}/jobs"}],
    }
    return 200, body, {}


def get_job(service: Service, job_id: str, *, user: str, base: str) -> Answer:
    return 200, status_info(service, service.job(job_id, viewer=user), base=base), {}


def job_results(service: Service, job: Job, *, base: str) -> dict[str, Any]:
    """OGC results: each output name to the links of the files it produced."""
    results: dict[str, list[dict[str, Any]]] = {}
    for item in service.results(job.id, viewer=job.owner):
        asset = item.assets["data"]
        results.setdefault(item.properties["nearline:output"], []).append(
            {
                "href": f"{base}/collections/{item.collection}/items/{item.id}/assets/data",
                "type": asset.media_type,
                "title": asset.title,
                "rel": "enclosure",
                "nearline:item": f"{base}/collections/{item.collection}/items/{item.id}",
                "file:size": asset.size,
            }
        )
    return results


def get_results(service: Service, job_id: str, *, user: str, base: str) -> Answer:
    job = service.job(job_id, viewer=user)
    if job.status != JobStatus.SUCCESSFUL:
        raise ResultsNotReady(
            f"job {job_id} is {job.status.value}; its results come once it is successful"
        )
    return 200, job_results(service, job, base=base), {}


def get_logs(service: Service, job_id: str, *, user: str) -> Answer:
    return 200, service.log_text(job_id, viewer=user), {}


def dismiss(service: Service, job_id: str, *, user: str, base: str) -> Answer:
    return 200, status_info(service, service.dismiss(job_id, viewer=user), base=base), {}

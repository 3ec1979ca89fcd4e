"""OGC API - Processes jobs: status, list, results, logs and dismiss, as plain functions,
and the thin FastAPI router that calls them (build_router).

A job's status document is OGC's statusInfo plus what a user of S4PM wanted to see: each
run's station, why it waits, what it cost, and how full each station is service-wide.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import PlainTextResponse, Response
from pydantic import StringConstraints

from nearline.algorithms import ECHO_ID, NAME_PATTERN
from nearline.api._adapter import ERRORS, User, answer, service_of
from nearline.api._results import one_result, value_results
from nearline.api._stac import base_url
from nearline.errors import NotFound, ResultsNotReady
from nearline.orders import Job, JobFilter, JobStatus, Service, Station, stamp
from nearline.orders import status_info as job_status

JSON = "application/json"
MAX_OFFSET = 2**63 - 1  # the largest whole number the job store (SQLite) can take
Answer = tuple[int, Any, dict[str, str]]


def status_info(
    service: Service, job: Job, *, base: str, stations: dict[str, int] | None = None
) -> dict[str, Any]:
    """OGC's statusInfo with each run's station, wait, cost and the stations' queues
    (``stations``: counted once for a whole listing; by default, now)."""
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
        "nearline:stations": stations if stations is not None else station_queues(service),
    }


def station_queues(service: Service) -> dict[str, int]:
    """How many runs (everyone's) wait or work at each station: the S4PM station monitor."""
    active = [s for s in Station if not s.ended]
    counts = service.jobs.count_at(*active)
    return {station.value: counts.get(station, 0) for station in active}


def list_jobs(
    service: Service, *, user: str, base: str, limit: int, offset: int, only: JobFilter
) -> Answer:
    jobs = service.job_list(viewer=user, limit=limit, offset=offset, only=only)
    stations = station_queues(service)  # once for the page, not once a job
    body = {
        "jobs": [status_info(service, job, base=base, stations=stations) for job in jobs],
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


def results_of(job: Job, *, service: Service, base: str) -> Answer:
    """A successful job's results: the echo's values as its request asked (_results.py), or
    an algorithm's files, each output a list of links."""
    if job.process == ECHO_ID and not job.runs:
        return value_results(job, base=base)
    return 200, job_results(service, job, base=base), {}


def _successful(service: Service, job_id: str, *, user: str) -> Job:
    job = service.job(job_id, viewer=user)
    if job.status != JobStatus.SUCCESSFUL:
        raise ResultsNotReady(
            f"job {job_id} is {job.status.value}; its results come once it is successful"
        )
    return job


def get_results(service: Service, job_id: str, *, user: str, base: str) -> Answer:
    return results_of(_successful(service, job_id, user=user), service=service, base=base)


def get_one_result(service: Service, job_id: str, output: str, *, user: str) -> Answer:
    job = _successful(service, job_id, user=user)
    if job.runs:
        raise NotFound(
            f"job {job_id}'s outputs are files: GET /jobs/{job_id}/results links each download"
        )
    return one_result(job, output)


def get_logs(service: Service, job_id: str, *, user: str) -> Answer:
    return 200, service.log_text(job_id, viewer=user), {}


def dismiss(service: Service, job_id: str, *, user: str, base: str) -> Answer:
    return 200, status_info(service, service.dismiss(job_id, viewer=user), base=base), {}


# a process's id as algorithm.yaml allows it: a filter by anything else is a 400, not an empty list
ProcessId = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]


def build_router() -> APIRouter:
    """The jobs' routes. Each route's ``name`` is the one its OpenAPI operationId has always
    been made from, so moving the adapters beside the handlers changed no id."""
    router = APIRouter(responses=ERRORS)

    @router.get("/jobs", name="list_jobs", tags=["Jobs"], summary="Your jobs, newest first")
    def get_jobs(
        request: Request,
        user: User,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
        status: Annotated[
            list[JobStatus] | None,
            Query(description="Only jobs of these statuses (repeat it for more than one)."),
        ] = None,
        process_id: Annotated[
            list[ProcessId] | None,
            Query(alias="processID", description="Only jobs of these processes."),
        ] = None,
    ) -> Response:
        service, base = service_of(request), base_url(request)
        only = JobFilter(statuses=tuple(status or ()), processes=tuple(process_id or ()))
        return answer(
            list_jobs(service, user=user, base=base, limit=limit, offset=offset, only=only)
        )

    @router.get(
        "/jobs/{job_id}",
        name="get_job",
        tags=["Jobs"],
        summary="A job's status, stations and usage",
    )
    def get_one(job_id: str, request: Request, user: User) -> Response:
        service, base = service_of(request), base_url(request)
        return answer(get_job(service, job_id, user=user, base=base))

    @router.get(
        "/jobs/{job_id}/results",
        name="get_results",
        tags=["Jobs"],
        summary="Links to a job's outputs",
    )
    def get_one_results(job_id: str, request: Request, user: User) -> Response:
        service, base = service_of(request), base_url(request)
        return answer(get_results(service, job_id, user=user, base=base))

    @router.get(
        "/jobs/{job_id}/results/{output_id}",
        name="get_result",
        tags=["Jobs"],
        summary="One output's value (where a result by reference points)",
        responses={200: {"content": {"application/octet-stream": {}, "text/plain": {}}}},
    )
    def get_one_output(job_id: str, output_id: str, request: Request, user: User) -> Response:
        return answer(get_one_result(service_of(request), job_id, output_id, user=user))

    @router.get(
        "/jobs/{job_id}/logs",
        name="get_logs",
        tags=["Jobs"],
        summary="What the runs printed",
        response_class=PlainTextResponse,
    )
    def get_one_logs(job_id: str, request: Request, user: User) -> Response:
        return answer(get_logs(service_of(request), job_id, user=user))

    @router.delete("/jobs/{job_id}", name="dismiss", tags=["Jobs"], summary="Dismiss: stop a job")
    def delete_job(job_id: str, request: Request, user: User) -> Response:
        service, base = service_of(request), base_url(request)
        return answer(dismiss(service, job_id, user=user, base=base))

    return router

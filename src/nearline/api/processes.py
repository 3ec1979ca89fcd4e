"""OGC API - Processes: processes (Part 1), deploy/replace/undeploy (Part 2), as plain
functions of the request's data to (status, body, headers). routes.py adapts them to
FastAPI; nothing here knows the web framework.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from nearline.algorithms import Algorithm, manifest_to_process
from nearline.api.jobs import job_results, status_info
from nearline.orders import JobStatus, Service

JSON = "application/json"
SYNC_WAIT = 20.0  # seconds an execute without `Prefer: respond-async` waits for its result

Answer = tuple[int, Any, dict[str, str]]


def _summary(algorithm: Algorithm, base: str) -> dict[str, Any]:
    process = manifest_to_process(algorithm.manifest)
    summary = {
        key: process[key]
        for key in (
            "id",
            "version",
            "title",
            "description",
            "jobControlOptions",
            "outputTransmission",
        )
        if key in process
    }
    summary["nearline:public"] = algorithm.public
    summary["links"] = [
        {"rel": "self", "type": JSON, "href": f"{base}/processes/{algorithm.id}"},
    ]
    return summary


def list_processes(service: Service, *, user: str, base: str) -> Answer:
    processes = [_summary(a, base) for a in service.algorithms.list(viewer=user)]
    body = {
        "processes": processes,
        "links": [{"rel": "self", "type": JSON, "href": f"{base}/processes"}],
    }
    return 200, body, {}


def describe_process(service: Service, process_id: str, *, user: str, base: str) -> Answer:
    algorithm = service.algorithms.get(process_id, viewer=user)
    body = dict(manifest_to_process(algorithm.manifest))
    body["links"] = [
        {"rel": "self", "type": JSON, "href": f"{base}/processes/{algorithm.id}"},
        {
            "rel": "http://www.opengis.net/def/rel/ogc/1.0/execute",
            "type": JSON,
            "href": f"{base}/processes/{algorithm.id}/execution",
        },
    ]
    body["nearline:owner"] = algorithm.owner if algorithm.owner == user else None
    body["nearline:public"] = algorithm.public
    return 200, body, {}


def execute(
    service: Service,
    process_id: str,
    body: Mapping[str, Any],
    *,
    user: str,
    base: str,
    prefer: str | None,
) -> Answer:
    """Accept an order. ``Prefer: respond-async`` answers 201 at once; otherwise wait up to
    SYNC_WAIT seconds for the result (200 with the results document) and fall back to 201
    if the job is still going."""
    job = service.submit(process_id, body, owner=user)
    location = {"Location": f"{base}/jobs/{job.id}"}
    if "respond-async" not in (prefer or ""):
        deadline = time.monotonic() + SYNC_WAIT
        while time.monotonic() < deadline:
            job = service.job(job.id, viewer=user)
            if job.status == JobStatus.SUCCESSFUL:
                return 200, job_results(service, job, base=base), location
            if job.status in (JobStatus.FAILED, JobStatus.DISMISSED):
                break
            time.sleep(0.1)
    job = service.job(job.id, viewer=user)
    return (
        201,
        status_info(service, job, base=base),
        {**location, "Preference-Applied": "respond-async"},
    )


def deploy(service: Service, package: bytes, *, user: str, public: bool, base: str) -> Answer:
    algorithm = service.algorithms.deploy(package, owner=user, public=public)
    return 201, _summary(algorithm, base), {"Location": f"{base}/processes/{algorithm.id}"}


def replace(service: Service, process_id: str, package: bytes, *, user: str, base: str) -> Answer:
    algorithm = service.algorithms.replace(process_id, package, owner=user)
    return 200, _summary(algorithm, base), {}


def undeploy(service: Service, process_id: str, *, user: str) -> Answer:
    service.algorithms.undeploy(process_id, owner=user)
    return 204, None, {}

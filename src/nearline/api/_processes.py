"""OGC API - Processes: processes (Part 1), deploy/replace/undeploy (Part 2), as plain
functions of the request's data to (status, body, headers), and the thin FastAPI router that
calls them (build_router); the handlers know nothing of the web framework.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from nearline.algorithms import ECHO_ID, Algorithm, echo_description, manifest_to_process
from nearline.api._adapter import ERRORS, OGC_ERROR, Reader, User, answer, service_of
from nearline.api._jobs import results_of, status_info
from nearline.api._stac import base_url
from nearline.errors import ImmutableProcess, TooLarge, UnsupportedMediaType
from nearline.orders import JobStatus, Service

JSON = "application/json"
ZIP = "application/zip"
RESULT_TYPES = {JSON: {}, "multipart/related": {}, "text/plain": {}, "application/octet-stream": {}}
SYNC_WAIT = 20.0  # seconds an execute without `Prefer: respond-async` waits for its result

Answer = tuple[int, Any, dict[str, str]]
SUMMARY = ("id", "version", "title", "description", "jobControlOptions", "outputTransmission")


def _summary(algorithm: Algorithm, base: str, viewer: str | None) -> dict[str, Any]:
    process = manifest_to_process(algorithm.manifest)
    summary = {key: process[key] for key in SUMMARY if key in process}
    summary["mutable"] = _mutable(algorithm, viewer)
    summary["nearline:public"] = algorithm.public
    summary["links"] = [
        {"rel": "self", "type": JSON, "href": f"{base}/processes/{algorithm.id}"},
    ]
    return summary


def _mutable(algorithm: Algorithm, viewer: str | None) -> bool:
    """Part 2's ``mutable``: whether this viewer may replace or undeploy the process (their
    own algorithm), not whether anyone may (another's public one, a built-in: not)."""
    return viewer is not None and algorithm.owner == viewer


def _echo(base: str) -> dict[str, Any]:
    """The echo process's description, with its links (served when the operator turns it on)."""
    body = echo_description()
    body["links"] = _links(ECHO_ID, base)
    body["mutable"] = False
    body["nearline:public"] = True
    return body


def _links(process_id: str, base: str) -> list[dict[str, str]]:
    return [
        {"rel": "self", "type": JSON, "href": f"{base}/processes/{process_id}"},
        {
            "rel": "http://www.opengis.net/def/rel/ogc/1.0/execute",
            "type": JSON,
            "href": f"{base}/processes/{process_id}/execution",
        },
    ]


def list_processes(
    service: Service,
    *,
    user: str | None,
    base: str,
    limit: int | None = None,
    offset: int = 0,
) -> Answer:
    """The processes ``user`` may run: every one, or ``limit`` of them from ``offset`` with a
    ``next`` link while more follow (OGC's ``limit``; without it, all of them, as before)."""
    processes = [_summary(a, base, user) for a in service.algorithms.list(viewer=user)]
    if service.settings.echo:
        echo = _echo(base)
        summary = {key: echo[key] for key in (*SUMMARY, "mutable", "nearline:public")}
        processes.append(summary | {"links": echo["links"][:1]})
    end = len(processes) if limit is None else offset + limit
    links = [{"rel": "self", "type": JSON, "href": f"{base}/processes"}]
    if end < len(processes):
        href = f"{base}/processes?limit={limit}&offset={end}"
        links.append({"rel": "next", "type": JSON, "href": href})
    return 200, {"processes": processes[offset:end], "links": links}, {}


def describe_process(service: Service, process_id: str, *, user: str | None, base: str) -> Answer:
    if process_id == ECHO_ID and service.settings.echo:
        return 200, _echo(base), {}
    algorithm = service.algorithms.get(process_id, viewer=user)
    body = dict(manifest_to_process(algorithm.manifest))
    body["links"] = _links(algorithm.id, base)
    body["mutable"] = _mutable(algorithm, user)
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
    SYNC_WAIT seconds for the result (200 with the results, as the request asked: see
    _jobs.results_of) and fall back to 201 if the job is still going."""
    job = service.submit(process_id, body, owner=user)
    location = {"Location": f"{base}/jobs/{job.id}"}
    if "respond-async" not in (prefer or ""):
        deadline = time.monotonic() + SYNC_WAIT
        while time.monotonic() < deadline:
            job = service.job(job.id, viewer=user)
            if job.status == JobStatus.SUCCESSFUL:
                status, results, headers = results_of(job, service=service, base=base)
                return status, results, {**location, **headers}
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
    return 201, _summary(algorithm, base, user), {"Location": f"{base}/processes/{algorithm.id}"}


def replace(service: Service, process_id: str, package: bytes, *, user: str, base: str) -> Answer:
    _refuse_echo(service, process_id, verb="replace")
    algorithm = service.algorithms.replace(process_id, package, owner=user)
    return 200, _summary(algorithm, base, user), {}


def undeploy(service: Service, process_id: str, *, user: str) -> Answer:
    _refuse_echo(service, process_id, verb="undeploy")
    service.algorithms.undeploy(process_id, owner=user)
    return 204, None, {}


def _refuse_echo(service: Service, process_id: str, *, verb: str) -> None:
    """The echo test process, when on, is the service's own: nobody's to change (403)."""
    if process_id == ECHO_ID and service.settings.echo:
        raise ImmutableProcess(
            f"process {ECHO_ID!r} is the service's test process, not yours to {verb}"
        )


class ExecuteRequest(BaseModel):
    """An OGC execute request: data inputs and parameters, all under ``inputs``."""

    model_config = ConfigDict(extra="allow")
    inputs: dict[str, Any] = Field(default_factory=dict)


async def read_package(request: Request) -> bytes:
    """The uploaded zip, refused past the service's upload limit without reading it all."""
    kind = request.headers.get("content-type", "").split(";")[0].strip()
    if kind != ZIP:
        raise UnsupportedMediaType(
            f"send the algorithm package as {ZIP} (the zip of its folder); got {kind or 'none'}"
            " (OGC application packages, CWL or Docker, are not deployed here: docs/algorithms.md)"
        )
    limit = service_of(request).settings.max_upload
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"the package is {int(declared):,} bytes; the limit is {limit:,}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"the package is over the upload limit of {limit:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


ZIP_BODY = {
    "requestBody": {
        "required": True,
        "content": {ZIP: {"schema": {"type": "string", "format": "binary"}}},
    }
}


def build_router() -> APIRouter:
    """The processes' routes. Each route's ``name`` is the one its OpenAPI operationId has
    always been made from, so moving the adapters beside the handlers changed no id."""
    router = APIRouter(responses=ERRORS)

    @router.get(
        "/processes",
        name="list_processes",
        tags=["Processes"],
        summary="The processes you may run",
    )
    def get_processes(
        request: Request,
        user: Reader,
        limit: Annotated[int | None, Query(ge=1, le=10_000)] = None,
        offset: Annotated[int, Query(ge=0, le=10_000)] = 0,
    ) -> Response:
        service, base = service_of(request), base_url(request)
        return answer(list_processes(service, user=user, base=base, limit=limit, offset=offset))

    @router.get(
        "/processes/{process_id}", name="describe", tags=["Processes"], summary="One process"
    )
    def get_process(process_id: str, request: Request, user: Reader) -> Response:
        service, base = service_of(request), base_url(request)
        return answer(describe_process(service, process_id, user=user, base=base))

    @router.post(
        "/processes/{process_id}/execution",
        name="execute",
        tags=["Processes"],
        summary="Order: run a process on granules from the catalogue",
        status_code=201,
        responses={
            200: {"description": "Results (synchronous)", "content": RESULT_TYPES},
            204: {"description": "Results by reference (synchronous, raw): Link headers"},
        },
    )
    def post_execution(
        process_id: str,
        request: Request,
        user: User,
        body: Annotated[ExecuteRequest, Body()],
        prefer: Annotated[str | None, Header()] = None,
    ) -> Response:
        service, base = service_of(request), base_url(request)
        payload = body.model_dump()
        return answer(execute(service, process_id, payload, user=user, base=base, prefer=prefer))

    @router.post(
        "/processes",
        name="deploy",
        tags=["Processes"],
        summary="Deploy an algorithm package (zip)",
        status_code=201,
        openapi_extra=ZIP_BODY,
        responses={413: OGC_ERROR, 409: OGC_ERROR, 415: OGC_ERROR},
    )
    async def post_process(
        request: Request, user: User, public: Annotated[bool, Query()] = False
    ) -> Response:
        package = await read_package(request)
        service, base = service_of(request), base_url(request)
        result = await run_in_threadpool(
            deploy, service, package, user=user, public=public, base=base
        )
        return answer(result)

    @router.put(
        "/processes/{process_id}",
        name="replace",
        tags=["Processes"],
        summary="Deploy a new version",
        openapi_extra=ZIP_BODY,
        responses={403: OGC_ERROR, 413: OGC_ERROR, 409: OGC_ERROR, 415: OGC_ERROR},
    )
    async def put_process(process_id: str, request: Request, user: User) -> Response:
        package = await read_package(request)
        service, base = service_of(request), base_url(request)
        result = await run_in_threadpool(
            replace, service, process_id, package, user=user, base=base
        )
        return answer(result)

    @router.delete(
        "/processes/{process_id}",
        name="undeploy",
        tags=["Processes"],
        summary="Undeploy",
        status_code=204,
        responses={403: OGC_ERROR},
    )
    def delete_process(process_id: str, request: Request, user: User) -> Response:
        return answer(undeploy(service_of(request), process_id, user=user))

    return router

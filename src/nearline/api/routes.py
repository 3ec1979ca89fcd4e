"""The thin FastAPI adapter for processes, jobs and asset downloads: parse the request, call
a plain handler (processes.py, jobs.py), turn its (status, body, headers) into a response."""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Body, Depends, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, PlainTextResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.background import BackgroundTask

from nearline.api import jobs, processes
from nearline.api.auth import require_user
from nearline.api.stac import base_url
from nearline.archive import fetch, is_local
from nearline.errors import ItemNotFound, NearlineError, ServiceError, TooLarge
from nearline.orders import Service

log = logging.getLogger(__name__)
JSON = "application/json"
ZIP = "application/zip"
MAX_OFFSET = 2**63 - 1  # the largest whole number the job store (SQLite) can take
User = Annotated[str, Depends(require_user)]
OGC_ERROR = {"description": "An OGC exception document (type, title, status, detail)"}
ERRORS: dict[int | str, dict[str, Any]] = {
    400: OGC_ERROR,
    401: OGC_ERROR,
    404: OGC_ERROR,
    500: OGC_ERROR,
}


class ExecuteRequest(BaseModel):
    """An OGC execute request: data inputs and parameters, all under ``inputs``."""

    model_config = ConfigDict(extra="allow")
    inputs: dict[str, Any] = Field(default_factory=dict)


def answer(result: tuple[int, Any, dict[str, str]]) -> Response:
    status, body, headers = result
    if body is None:
        return Response(status_code=status, headers=headers)
    if isinstance(body, str):
        return PlainTextResponse(body, status_code=status, headers=headers)
    return Response(orjson.dumps(body), status_code=status, headers=headers, media_type=JSON)


def service_of(request: Request) -> Service:
    return request.app.state.service


async def read_package(request: Request) -> bytes:
    """The uploaded zip, refused past the service's upload limit without reading it all."""
    kind = request.headers.get("content-type", "").split(";")[0].strip()
    if kind != ZIP:
        raise ServiceError(
            f"send the algorithm package as {ZIP} (the zip of its folder); got {kind or 'none'}",
            status=415,
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


FILE_BODY = {  # an asset's bytes come in the asset's own media type
    "description": "The file's bytes, in the media type its item's asset names",
    "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
}
ZIP_BODY = {
    "requestBody": {
        "required": True,
        "content": {ZIP: {"schema": {"type": "string", "format": "binary"}}},
    }
}


def build_router() -> APIRouter:
    router = APIRouter(responses=ERRORS)

    @router.get("/processes", tags=["Processes"], summary="The processes you may run")
    def list_processes(request: Request, user: User) -> Response:
        base = base_url(request)
        return answer(processes.list_processes(service_of(request), user=user, base=base))

    @router.get("/processes/{process_id}", tags=["Processes"], summary="One process")
    def describe(process_id: str, request: Request, user: User) -> Response:
        service, base = service_of(request), base_url(request)
        return answer(processes.describe_process(service, process_id, user=user, base=base))

    @router.post(
        "/processes/{process_id}/execution",
        tags=["Processes"],
        summary="Order: run a process on granules from the catalogue",
        status_code=201,
        responses={200: {"description": "Results (synchronous)", "content": {JSON: {}}}},
    )
    def execute(
        process_id: str,
        request: Request,
        user: User,
        body: Annotated[ExecuteRequest, Body()],
        prefer: Annotated[str | None, Header()] = None,
    ) -> Response:
        service, base = service_of(request), base_url(request)
        payload = body.model_dump()
        return answer(
            processes.execute(service, process_id, payload, user=user, base=base, prefer=prefer)
        )

    @router.post(
        "/processes",
        tags=["Processes"],
        summary="Deploy an algorithm package (zip)",
        status_code=201,
        openapi_extra=ZIP_BODY,
        responses={413: OGC_ERROR, 409: OGC_ERROR, 415: OGC_ERROR},
    )
    async def deploy(
        request: Request, user: User, public: Annotated[bool, Query()] = False
    ) -> Response:
        package = await read_package(request)
        service, base = service_of(request), base_url(request)
        result = await run_in_threadpool(
            processes.deploy, service, package, user=user, public=public, base=base
        )
        return answer(result)

    @router.put(
        "/processes/{process_id}",
        tags=["Processes"],
        summary="Deploy a new version",
        openapi_extra=ZIP_BODY,
        responses={403: OGC_ERROR, 413: OGC_ERROR, 409: OGC_ERROR, 415: OGC_ERROR},
    )
    async def replace(process_id: str, request: Request, user: User) -> Response:
        package = await read_package(request)
        service, base = service_of(request), base_url(request)
        result = await run_in_threadpool(
            processes.replace, service, process_id, package, user=user, base=base
        )
        return answer(result)

    @router.delete(
        "/processes/{process_id}",
        tags=["Processes"],
        summary="Undeploy",
        status_code=204,
        responses={403: OGC_ERROR},
    )
    def undeploy(process_id: str, request: Request, user: User) -> Response:
        return answer(processes.undeploy(service_of(request), process_id, user=user))

    @router.get(
        "/users/me",
        tags=["Users"],
        summary="Your string: CPUs, memory and disk allotted, and what you use of them",
    )
    def me(request: Request, user: User) -> Response:
        return answer((200, service_of(request).user(user), {}))

    @router.get("/jobs", tags=["Jobs"], summary="Your jobs, newest first")
    def list_jobs(
        request: Request,
        user: User,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    ) -> Response:
        service, base = service_of(request), base_url(request)
        return answer(jobs.list_jobs(service, user=user, base=base, limit=limit, offset=offset))

    @router.get("/jobs/{job_id}", tags=["Jobs"], summary="A job's status, stations and usage")
    def get_job(job_id: str, request: Request, user: User) -> Response:
        service, base = service_of(request), base_url(request)
        return answer(jobs.get_job(service, job_id, user=user, base=base))

    @router.get("/jobs/{job_id}/results", tags=["Jobs"], summary="Links to a job's outputs")
    def get_results(job_id: str, request: Request, user: User) -> Response:
        service, base = service_of(request), base_url(request)
        return answer(jobs.get_results(service, job_id, user=user, base=base))

    @router.get(
        "/jobs/{job_id}/logs",
        tags=["Jobs"],
        summary="What the runs printed",
        response_class=PlainTextResponse,
    )
    def get_logs(job_id: str, request: Request, user: User) -> Response:
        return answer(jobs.get_logs(service_of(request), job_id, user=user))

    @router.delete("/jobs/{job_id}", tags=["Jobs"], summary="Dismiss: stop a job")
    def dismiss(job_id: str, request: Request, user: User) -> Response:
        service, base = service_of(request), base_url(request)
        return answer(jobs.dismiss(service, job_id, user=user, base=base))

    @router.get(
        "/collections/{collection_id}/items/{item_id}/assets/{key}",
        tags=["Data"],
        summary="Download an item's file",
        response_class=FileResponse,
        responses={200: FILE_BODY, 503: OGC_ERROR},
    )
    def download(
        collection_id: str, item_id: str, key: str, request: Request, user: User
    ) -> Response:
        service = service_of(request)
        item = service.catalogue.get_item(collection_id, item_id, viewer=user)
        asset = item.assets.get(key)
        if asset is None:
            raise ItemNotFound(f"item {item_id} has no asset {key!r}")
        if is_local(asset.location):
            path = Path(asset.location)
            if not path.is_file():
                raise ItemNotFound(f"item {item_id}'s file {key!r} is no longer in the archive")
            return FileResponse(path, media_type=asset.media_type, filename=path.name)
        # in a bundle or an object store: restored (verified) to scratch, sent, removed
        scratch = Path(tempfile.mkdtemp(prefix="download-", dir=service.places.scratch))
        try:
            path = fetch(asset, scratch)
        except (OSError, NearlineError) as error:
            shutil.rmtree(scratch, ignore_errors=True)
            log.error("download of %s/%s/%s failed: %s", collection_id, item_id, key, error)
            raise ServiceError(
                f"item {item_id}'s file {key!r} cannot be read from the archive now", status=503
            ) from None
        return FileResponse(
            path,
            media_type=asset.media_type,
            filename=path.name,
            background=BackgroundTask(shutil.rmtree, scratch, ignore_errors=True),
        )

    return router

"""``POST /openeo/1.2/result``: a process graph run synchronously, its saved result the
answer. The graph is checked before anything runs (nearline.openeo), each collection it loads
is found in the catalogue as the signed-in user may see it (another's private collection is
``CollectionNotFound``; a swath collection is not a cube), and it runs in a worker thread of
this server on the files where they lie, reading only the windows it needs and under the
operator's limit on values read (``NEARLINE_COVERAGE_MAX_VALUES``). At most
:data:`CONCURRENT_GRAPHS` run at once; the rest wait their turn.

A graph with ``run_udf`` runs a stranger's code, which never runs in the server: it runs as a
batch job does, an order of the built-in ``openeo`` process in the sandbox (under the user's
string and the fair share, shown among their jobs), awaited here for up to
:data:`UDF_WAIT_SECONDS`; its result is the answer, and the order is dismissed once sent."""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, Response
from starlette.background import BackgroundTask

from nearline import openeo
from nearline.api._adapter import service_of
from nearline.api._auth import viewer
from nearline.api._downloads import BucketObject, asset_file, file_response
from nearline.api._gridded import GRID, max_values, opener
from nearline.api._openeo import openeo_user
from nearline.api._openeo_inputs import BUILTIN, job_inputs
from nearline.api._openeo_jobs import dismiss_order, failure_of
from nearline.api._stac import respond
from nearline.coverage import Layer
from nearline.errors import OpenEOError, OrderError
from nearline.orders import JobStatus, Service

CONCURRENT_GRAPHS = 2  # graphs run at once by one server: each holds its cube in memory
UDF_WAIT_SECONDS = 900  # a synchronous graph with a UDF, run as a job: longer is a batch job's
POLL_SECONDS = 0.2
ENDED = (JobStatus.SUCCESSFUL, JobStatus.FAILED, JobStatus.DISMISSED)
_LIMITER: list[anyio.CapacityLimiter] = []  # made on first use, in the event loop


def graph_stacks(request: Request, graph: dict[str, Any]) -> dict[str, openeo.Stack]:
    """The files of each collection ``graph`` loads, as the request's user may see them (the
    items a batch job of it would read, :func:`job_inputs`), read where they lie.

    Raises
    ------
    OpenEOError
        A collection that does not exist or is another user's (``CollectionNotFound``), is
        not a data cube, or holds no item in a temporal extent (``NoDataAvailable``).
    """
    service = service_of(request)
    inputs = job_inputs(service, graph, user=viewer(request))
    stacks = {}
    for collection, items in inputs.items.items():
        ordered = sorted(items, key=lambda item: item.start)
        layers = tuple(Layer(item.id, item.start, item.end or item.start, opener(service, item))
                       for item in ordered)  # fmt: skip
        stacks[collection] = openeo.Stack(collection, str(ordered[0].properties[GRID]), layers)
    return stacks


async def _body(request: Request) -> Any:
    try:
        return json.loads(await request.body())
    except ValueError:
        raise OpenEOError("the body is not JSON: send {\"process\": {\"process_graph\": ...}}",
                          status=400, openeo_code="BadRequest") from None  # fmt: skip


async def _run_as_job(request: Request, graph: dict[str, Any], user: str) -> Response:
    """``graph`` run in the sandbox as an order of the built-in ``openeo`` process, awaited;
    its first result file the answer, the order dismissed (its files deleted) once sent."""
    service = service_of(request)
    order = await anyio.to_thread.run_sync(
        lambda: job_inputs(service, graph, user=user).order(graph, {})
    )
    job_id = uuid.uuid4().hex
    try:
        service.submit(BUILTIN, order, owner=user, job_id=job_id)
    except OrderError as error:
        raise OpenEOError(f"the graph cannot run: {error}", status=400,
                          openeo_code="ProcessParameterInvalid") from None  # fmt: skip
    try:
        job = await _ended(service, job_id, user)
        if job.status != JobStatus.SUCCESSFUL:
            raise OpenEOError(f"the graph's UDF run failed: {_why(service, job, user)}",
                              status=400, openeo_code="ProcessGraphInvalid")  # fmt: skip
        items = service.results(job_id, viewer=user)
        got = asset_file(service, items[0].collection, items[0].id, "data", user=user)
        if isinstance(got, BucketObject):
            raise OpenEOError("this result lies in a bucket; run the graph as a batch job",
                              status=501, openeo_code="FeatureUnsupported")  # fmt: skip
    except BaseException:
        await anyio.to_thread.run_sync(dismiss_order, service, job_id, user)
        raise
    answer = file_response(got, request)
    answer.background = BackgroundTask(dismiss_order, service, job_id, user)
    return answer


def _why(service: Service, job: Any, user: str) -> str | None:
    """Why a job failed: the error its program logged last (the UDF's own exception and
    line), else the sandbox's reason (a limit met)."""
    entries = openeo.log_entries(service.log_text(job.id, viewer=user), failure=None)
    errors = [entry["message"] for entry in entries if entry["level"] == "error"]
    return errors[-1] if errors else failure_of(job)


async def _ended(service: Service, job_id: str, user: str) -> Any:
    """The job once it has ended, or a refusal after :data:`UDF_WAIT_SECONDS`."""
    with anyio.move_on_after(UDF_WAIT_SECONDS):
        while True:
            job = await anyio.to_thread.run_sync(lambda: service.job(job_id, viewer=user))
            if job.status in ENDED:
                return job
            await anyio.sleep(POLL_SECONDS)
    message = f"the graph's UDF run took over {UDF_WAIT_SECONDS} s; send it as a batch job"
    raise OpenEOError(message, status=400, openeo_code="ProcessGraphComplexity")


def validation_errors(request: Request, body: Any, user: str) -> list[dict[str, str]]:
    """What ``POST /validation`` finds wrong with a process (its graph, and the collections
    it loads as ``user`` may see them): the first refusal found, as openEO's error; none for a
    graph that would run."""
    process = body.get("process", body) if isinstance(body, dict) else None
    graph = process.get("process_graph") if isinstance(process, dict) else None
    declared = process.get("parameters") if isinstance(process, dict) else None
    names = frozenset(p["name"] for p in declared or () if isinstance(p, dict) and "name" in p)
    try:
        if not isinstance(graph, dict) or not graph:
            openeo.process_graph_of(None)  # refused: no graph (ProcessGraphMissing)
        openeo.check_graph(graph, parameters=names)
        job_inputs(service_of(request), graph, user=user)
    except OpenEOError as error:
        return [{"code": error.openeo_code, "message": str(error)}]
    return []


def build_router() -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.post(f"{openeo.PATH}/validation")
    async def validation(request: Request, user: Annotated[str, Depends(openeo_user)]) -> Response:
        body = await _body(request)
        errors = await anyio.to_thread.run_sync(validation_errors, request, body, user)
        return respond({"errors": errors})

    @router.post(f"{openeo.PATH}/result")
    async def result(request: Request, user: Annotated[str, Depends(openeo_user)]) -> Response:
        graph = openeo.process_graph_of(await _body(request))
        if openeo.uses_process(graph, "run_udf"):
            return await _run_as_job(request, graph, user)
        stacks = await anyio.to_thread.run_sync(graph_stacks, request, graph)
        folder = Path(tempfile.mkdtemp(prefix="nearline-openeo-"))
        run = openeo.Run(stacks, folder, max_values())
        if not _LIMITER:
            _LIMITER.append(anyio.CapacityLimiter(CONCURRENT_GRAPHS))
        try:
            saved = await anyio.to_thread.run_sync(openeo.run_graph, graph, run,
                                                   limiter=_LIMITER[0])  # fmt: skip
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        first = saved[0]
        return FileResponse(first.path, media_type=first.media_type, filename=first.path.name,
                            background=BackgroundTask(shutil.rmtree, folder, True))  # fmt: skip

    return router

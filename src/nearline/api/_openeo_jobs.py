"""openEO batch jobs on nearline's own jobs, under ``/openeo/1.2/jobs``: plain handlers of
(service, jobs, user, request data) -> (status, body, headers) and the thin router.

A batch job is created as a draft the openEO face keeps (``created``; nearline.openeo's
:class:`~nearline.openeo.BatchJobs`); starting it orders the built-in ``openeo`` process on
the items its graph loads (found now, as its user sees them), so from then on it is a nearline
job like any order: on the web page and in ``nearline jobs``, held to its user's string and
the sandbox, in the metrics, resumed after a restart. Its status, logs and results are read
back from that order. Another user's job is a 404 (``JobNotFound``), as if it did not exist.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Annotated, Any
from urllib.parse import quote

import orjson
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import RedirectResponse, Response

from nearline import openeo
from nearline.api._adapter import answer, service_of
from nearline.api._downloads import BucketObject, asset_file, file_response
from nearline.api._openeo import bases, openeo_user
from nearline.api._openeo_inputs import BUILTIN, job_inputs
from nearline.errors import JobNotFound, OpenEOError, OrderError
from nearline.orders import Job, JobStatus, Service

Answer = tuple[int, Any, dict[str, str]]
User = Annotated[str, Depends(openeo_user)]
EDITABLE = ("title", "description", "process", "job_options")
MAX_LIST = 1_000


def batch_jobs(request: Request) -> openeo.BatchJobs:
    """The app's store of batch jobs, on the service's state database (made on first use)."""
    state = request.app.state
    if getattr(state, "openeo_jobs", None) is None:
        state.openeo_jobs = openeo.BatchJobs(service_of(request).database)
    return state.openeo_jobs


def result_links(service: Service) -> openeo.ResultLinks:
    return openeo.ResultLinks(service.keys.key("openeo-result-links"))


def order_of(service: Service, job: openeo.BatchJob) -> tuple[Job | None, openeo.Order | None]:
    """The nearline order running ``job`` and what openEO says of it (None: not started)."""
    if job.order is None:
        return None, None
    try:
        order = service.job(job.order, viewer=job.owner)
    except JobNotFound:  # its order's algorithm is gone: it cannot be shown running
        return None, openeo.Order("failed", 100, "its order is gone")
    message = failure_of(order) if order.status == JobStatus.FAILED else order.message
    return order, openeo.Order(order.status.value, order.progress, message,
                               order.usage.to_dict())  # fmt: skip


def failure_of(order: Job) -> str | None:
    """Why a failed order failed: its first failed run's reason, else the order's own."""
    failed = [run.message for run in order.runs if run.message]
    return failed[0] if failed else order.message


def dismiss_order(service: Service, order_id: str, owner: str) -> None:
    """Stop ``owner``'s order and delete its results; one already gone is no matter."""
    with contextlib.suppress(JobNotFound):
        service.dismiss(order_id, viewer=owner)


def create_job(service: Service, jobs: openeo.BatchJobs, body: Any, *, user: str,
               base: str) -> Answer:  # fmt: skip
    """``POST /jobs``: a draft whose graph is checked (its processes and references); the
    collections it loads are found, as its user may see them, when it starts, as openEO's
    create-then-start has it."""
    openeo.process_graph_of(body)
    job = openeo.BatchJob(
        id=uuid.uuid4().hex, owner=user, title=_text(body, "title"),
        description=_text(body, "description"), process=dict(body["process"]),
        options=openeo.job_limits(body.get("job_options")),
    )  # fmt: skip
    jobs.create(job)
    return 201, None, {"Location": f"{base}/jobs/{job.id}", "OpenEO-Identifier": job.id}


def _text(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise OpenEOError(f"{name} must be a string", status=400, openeo_code="BadRequest")
    return value


def list_jobs(service: Service, jobs: openeo.BatchJobs, *, user: str, base: str,
              limit: int) -> Answer:  # fmt: skip
    """``GET /jobs``: the user's jobs, newest first."""
    found = jobs.list(owner=user, limit=limit)
    listed = [openeo.job_document(job, order_of(service, job)[1], full=False) for job in found]
    return 200, {"jobs": listed, "links": [
        {"rel": "self", "type": "application/json", "href": f"{base}/jobs"}]}, {}  # fmt: skip


def get_job(service: Service, jobs: openeo.BatchJobs, job_id: str, *, user: str) -> Answer:
    job = jobs.get(job_id, owner=user)
    return 200, openeo.job_document(job, order_of(service, job)[1], full=True), {}


def update_job(service: Service, jobs: openeo.BatchJobs, job_id: str, body: Any, *,
               user: str) -> Answer:  # fmt: skip
    """``PATCH /jobs/{id}``: a new title, description, process or options, unless the job
    is being computed (``JobLocked``)."""
    job = jobs.get(job_id, owner=user)
    if openeo.openeo_status(order_of(service, job)[1]) in openeo.LOCKED:
        message = f"batch job {job_id} is queued or running: stop it first (DELETE .../results)"
        raise OpenEOError(message, status=400, openeo_code="JobLocked")
    if not isinstance(body, dict):
        raise OpenEOError(f"send an object of the fields to change: any of {', '.join(EDITABLE)}",
                          status=400, openeo_code="BadRequest")  # fmt: skip
    # an empty object is a valid update that changes nothing (openapi.yaml sets no minimum);
    # plan, budget and log_level are openEO's too, and mean nothing here (nothing is billed)
    changes = {key: value for key, value in body.items() if key in EDITABLE}
    fields: dict[str, Any] = {name: _text(changes, name) for name in ("title", "description")
                              if name in changes}  # fmt: skip
    if "process" in changes:
        openeo.process_graph_of(changes)
        fields["process"] = dict(changes["process"])
    if "job_options" in changes:
        fields["options"] = openeo.job_limits(changes["job_options"])
    jobs.save(_replaced(job, fields))
    return 204, None, {}


def _replaced(job: openeo.BatchJob, fields: dict[str, Any]) -> openeo.BatchJob:
    return replace(job, **fields)


def delete_job(service: Service, jobs: openeo.BatchJobs, job_id: str, *, user: str) -> Answer:
    """``DELETE /jobs/{id}``: the job stopped, its results deleted, and forgotten (its order
    stays among nearline's jobs, dismissed)."""
    job = jobs.get(job_id, owner=user)
    _dismiss(service, job)
    jobs.delete(job_id, owner=user)
    return 204, None, {}


def _dismiss(service: Service, job: openeo.BatchJob) -> None:
    if job.order is not None:
        dismiss_order(service, job.order, job.owner)


def start_job(service: Service, jobs: openeo.BatchJobs, job_id: str, *, user: str) -> Answer:
    """``POST /jobs/{id}/results``: order the built-in ``openeo`` process on the items the
    graph loads (a job queued or running already: nothing changes). A job started again
    drops its earlier results first."""
    job = jobs.get(job_id, owner=user)
    if openeo.openeo_status(order_of(service, job)[1]) in openeo.LOCKED:
        return 202, None, {}
    graph = openeo.process_graph_of({"process": job.process})
    order = job_inputs(service, graph, user=user).order(graph, job.options)
    _dismiss(service, job)
    order_id = job.id if job.order is None else uuid.uuid4().hex
    try:
        service.submit(BUILTIN, order, owner=user, job_id=order_id)
    except OrderError as error:
        raise OpenEOError(f"the job cannot start: {error}", status=400,
                          openeo_code="ProcessParameterInvalid") from None  # fmt: skip
    jobs.save(_replaced(job, {"order": order_id}))
    return 202, None, {}


def stop_job(service: Service, jobs: openeo.BatchJobs, job_id: str, *, user: str) -> Answer:
    """``DELETE /jobs/{id}/results``: a queued or running job stopped (``canceled``)."""
    job = jobs.get(job_id, owner=user)
    if openeo.openeo_status(order_of(service, job)[1]) in openeo.LOCKED:
        _dismiss(service, job)
    return 204, None, {}


def job_results(service: Service, jobs: openeo.BatchJobs, job_id: str, *, user: str,
                base: str) -> Answer:  # fmt: skip
    """``GET /jobs/{id}/results``: a STAC item whose assets are signed links to its files."""
    job = jobs.get(job_id, owner=user)
    order, state = order_of(service, job)
    status = openeo.openeo_status(state)
    if status == "error":
        raise OpenEOError(f"batch job {job_id} failed: {state.message if state else ''}; GET "
                          f"/jobs/{job_id}/logs says more", status=424,
                          openeo_code="JobFailed")  # fmt: skip
    if status != "finished" or order is None:
        code = "JobNotStarted" if status == "created" else "JobNotFinished"
        raise OpenEOError(f"batch job {job_id} is {status}: its results come once it is "
                          "finished", status=400, openeo_code=code)  # fmt: skip
    links, now = result_links(service), time.time()
    files = []
    for item in service.results(order.id, viewer=user):
        asset = item.assets["data"]
        name = asset.title or item.id
        href = f"{base}/jobs/{job.id}/results/{quote(name)}?{links.query(job.id, name, now=now)}"
        files.append(openeo.ResultFile(name, asset.media_type, asset.size, href))
    item = openeo.results_item(job, files, base=base, start=order.started, end=order.finished)
    return 200, item, {}


def job_logs(service: Service, jobs: openeo.BatchJobs, job_id: str, *, user: str,
             level: str, base: str) -> Answer:  # fmt: skip
    """``GET /jobs/{id}/logs``: what its program logged, and why it failed if it did."""
    job = jobs.get(job_id, owner=user)
    order, state = order_of(service, job)
    text = service.log_text(order.id, viewer=user) if order is not None else ""
    failure = state.message if state is not None and state.status == "failed" else None
    entries = openeo.log_entries(text, failure=failure)
    rank = ["debug", "info", "warning", "error"]
    least = rank.index(level) if level in rank else 0
    kept = [entry for entry in entries if rank.index(entry["level"]) >= least]
    link = {"rel": "self", "type": "application/json", "href": f"{base}/jobs/{job_id}/logs"}
    return 200, {"level": rank[least], "logs": kept, "links": [link]}, {}


def estimate(service: Service, jobs: openeo.BatchJobs, job_id: str, *, user: str) -> Answer:
    """``GET /jobs/{id}/estimate``: nearline charges nothing; the items it would read."""
    job = jobs.get(job_id, owner=user)
    graph = openeo.process_graph_of({"process": job.process})
    inputs = job_inputs(service, graph, user=user)
    read = sum(item.assets["data"].size or 0 for found in inputs.items.values() for item in found)
    return 200, {"costs": 0, "downloads_included": None, "nearline:items": inputs.count,
                 "nearline:bytes_read_at_most": read}, {}  # fmt: skip


def download(request: Request, service: Service, jobs: openeo.BatchJobs, job_id: str,
             name: str, *, expires: str, signature: str) -> Response:  # fmt: skip
    """A signed result link: the file, with no token needed (the signature is the
    permission), read as its owner would."""
    result_links(service).check(job_id, name, expires=expires, signature=signature,
                                now=time.time())  # fmt: skip
    job = jobs.find(job_id)
    order, _ = order_of(service, job)
    found = [item for item in (service.results(order.id, viewer=job.owner) if order else [])
             if (item.assets["data"].title or item.id) == name]  # fmt: skip
    if not found:
        raise OpenEOError(f"job {job_id} has no result {name!r} now", status=404,
                          openeo_code="NotFound")  # fmt: skip
    item = found[0]
    got = asset_file(service, item.collection, item.id, "data", user=job.owner)
    if isinstance(got, BucketObject):
        if got.link is None:
            raise OpenEOError("this result lies in a bucket that signs no links; download it "
                              "from the service's own asset link", status=501,
                              openeo_code="FeatureUnsupported")  # fmt: skip
        return RedirectResponse(got.link, status_code=307)
    return file_response(got, request)


def build_router() -> APIRouter:
    router = APIRouter(include_in_schema=False)
    path = f"{openeo.PATH}/jobs"

    @router.post(path)
    async def create(request: Request, user: User) -> Response:
        body = await _json(request)
        service, jobs, base = _parts(request)
        return answer(create_job(service, jobs, body, user=user, base=base))

    @router.get(path)
    def listing(request: Request, user: User,
                limit: Annotated[int, Query(ge=1, le=MAX_LIST)] = 100) -> Response:  # fmt: skip
        service, jobs, base = _parts(request)
        return answer(list_jobs(service, jobs, user=user, base=base, limit=limit))

    # the routes of one job that take nothing but its id: (method, below the job, handler)
    for method, below, handler in (
        ("GET", "", get_job),
        ("DELETE", "", delete_job),
        ("POST", "/results", start_job),
        ("DELETE", "/results", stop_job),
        ("GET", "/estimate", estimate),
    ):
        router.add_api_route(f"{path}/{{job_id}}{below}", _by_id(handler), methods=[method])

    @router.patch(f"{path}/{{job_id}}")
    async def patch(job_id: str, request: Request, user: User) -> Response:
        body = await _json(request)
        service, jobs, _ = _parts(request)
        return answer(update_job(service, jobs, job_id, body, user=user))

    @router.get(f"{path}/{{job_id}}/results")
    def results(job_id: str, request: Request, user: User) -> Response:
        service, jobs, base = _parts(request)
        return answer(job_results(service, jobs, job_id, user=user, base=base))

    @router.get(f"{path}/{{job_id}}/results/{{name}}")
    def result_file(job_id: str, name: str, request: Request, expires: str = "",
                    signature: str = "") -> Response:  # fmt: skip
        service, jobs, _ = _parts(request)
        return download(request, service, jobs, job_id, name, expires=expires,
                        signature=signature)  # fmt: skip

    @router.get(f"{path}/{{job_id}}/logs")
    def logs(job_id: str, request: Request, user: User, level: str = "debug") -> Response:
        service, jobs, base = _parts(request)
        return answer(job_logs(service, jobs, job_id, user=user, level=level, base=base))

    @router.get(f"{path}/{{job_id}}/estimate")
    def estimated(job_id: str, request: Request, user: User) -> Response:
        service, jobs, _ = _parts(request)
        return answer(estimate(service, jobs, job_id, user=user))

    return router


def _parts(request: Request) -> tuple[Service, openeo.BatchJobs, str]:
    """What a handler works on: the service, its batch jobs, the openEO face's root URL."""
    return service_of(request), batch_jobs(request), bases(request)[0]


def _by_id(handler: Callable[..., Answer]) -> Callable[..., Response]:
    """The endpoint of a handler of (service, jobs, job id, user)."""

    def endpoint(job_id: str, request: Request, user: User) -> Response:
        service, jobs, _ = _parts(request)
        return answer(handler(service, jobs, job_id, user=user))

    return endpoint


async def _json(request: Request) -> Any:
    """The request's JSON body; anything else is openEO's BadRequest."""
    try:
        return orjson.loads(await request.body())
    except orjson.JSONDecodeError:
        raise OpenEOError("the body must be JSON", status=400, openeo_code="BadRequest") from None

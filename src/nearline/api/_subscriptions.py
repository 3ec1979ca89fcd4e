"""Subscriptions over the web: plain handlers of the request's data to (status, body,
headers), and the thin FastAPI router that calls them (as _processes.py and _jobs.py do). No
standard has subscriptions (STAC has none; OGC API - Processes only calls back when a job
ends), so these are nearline's own, in the style of OGC API - Processes.

    POST   /subscriptions                  make one (201, Location)
    GET    /subscriptions                  yours
    GET    /subscriptions/{id}             one, with its runs and the granules it waits for
    DELETE /subscriptions/{id}             stop it (its jobs stay)
    POST   /subscriptions/{id}/reprocess   run what an older version made with a newer one
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict

from nearline.api._adapter import ERRORS, OGC_ERROR, User, answer, service_of
from nearline.api._stac import base_url
from nearline.errors import InvalidRequest, JobNotFound
from nearline.orders import RunState, Service, Subscription, SubscriptionRun

JSON = "application/json"
Answer = tuple[int, Any, dict[str, str]]


class SubscriptionRequest(BaseModel):
    """A subscription's body as sent: parse_subscription checks it against
    nearline.orders.SUBSCRIPTION, the JSON Schema the OpenAPI document publishes."""

    model_config = ConfigDict(extra="allow")


class ReprocessRequest(BaseModel):
    """A reprocess body as sent (``{"version": ...}``, optional)."""

    model_config = ConfigDict(extra="allow")


def sent(body: BaseModel | None) -> dict[str, Any]:
    """The body's fields as sent, a null the same as a field left out."""
    given = (body.model_extra or {}) if body is not None else {}
    return {key: value for key, value in given.items() if value is not None}


def _run(service: Service, run: SubscriptionRun, *, base: str) -> dict[str, Any]:
    status = run.status or run.state.value
    if run.state == RunState.SUBMITTED:
        try:
            status = service.jobs.get(run.job, viewer=None).status.value
        except JobNotFound:
            status = "gone"
    shown: dict[str, Any] = {
        "jobID": run.job,
        "version": run.version,
        "kind": run.kind.value,
        "status": status,
        "granules": list(run.granules),
        "created": run.created.isoformat().replace("+00:00", "Z"),
    }
    if run.state in (RunState.SUBMITTED, RunState.ENDED):
        shown["href"] = f"{base}/jobs/{run.job}"
    for key, value in (("note", run.note), ("message", run.message), ("callback", run.callback)):
        if value is not None:
            shown[key] = value
    return shown


def document(
    service: Service, subscription: Subscription, *, base: str, detail: bool = True
) -> dict[str, Any]:
    """The subscription; with ``detail``, its runs and the granules it waits for."""
    body = subscription.to_dict()
    href = f"{base}/subscriptions/{subscription.id}"
    body["links"] = [
        {"rel": "self", "type": JSON, "href": href},
        {
            "rel": "http://www.opengis.net/def/rel/ogc/1.0/process",
            "type": JSON,
            "href": f"{base}/processes/{subscription.process}",
        },
    ]
    if detail:
        viewer = subscription.owner
        runs = service.subscriptions.runs(subscription.id, viewer=viewer)
        body["runs"] = [_run(service, run, base=base) for run in runs]
        body["waiting"] = [
            {"granules": [granule.name for granule in group.granules], "until": group.until}
            for group in service.subscriptions.waiting(subscription.id, viewer=viewer)
        ]
    return body


def create(service: Service, body: Any, *, user: str, base: str) -> Answer:
    subscription = service.subscriptions.create(body, owner=user)
    location = f"{base}/subscriptions/{subscription.id}"
    return 201, document(service, subscription, base=base), {"Location": location}


def list_subscriptions(service: Service, *, user: str, base: str) -> Answer:
    found = service.subscriptions.list(viewer=user)
    body = {
        "subscriptions": [document(service, s, base=base, detail=False) for s in found],
        "links": [{"rel": "self", "type": JSON, "href": f"{base}/subscriptions"}],
    }
    return 200, body, {}


def get_subscription(service: Service, id: str, *, user: str, base: str) -> Answer:
    subscription = service.subscriptions.get(id, viewer=user)
    return 200, document(service, subscription, base=base), {}


def delete_subscription(service: Service, id: str, *, user: str) -> Answer:
    service.subscriptions.delete(id, viewer=user)
    return 204, None, {}


def reprocess(
    service: Service, id: str, *, user: str, base: str, version: str | None = None
) -> Answer:
    target, jobs = service.subscriptions.reprocess(id, viewer=user, version=version)
    body = {
        "subscription": id,
        "version": target,
        "jobs": jobs,
        "links": [{"rel": "self", "type": JSON, "href": f"{base}/subscriptions/{id}"}],
    }
    return 202, body, {"Location": f"{base}/subscriptions/{id}"}


def build_router() -> APIRouter:
    router = APIRouter(responses=ERRORS, tags=["Subscriptions"])

    @router.post(
        "/subscriptions",
        summary="Subscribe: run a process on each new granule a search finds",
        status_code=201,
    )
    def post_subscription(
        request: Request, user: User, body: Annotated[SubscriptionRequest, Body()]
    ) -> Response:
        service, base = service_of(request), base_url(request)
        return answer(create(service, sent(body), user=user, base=base))

    @router.get("/subscriptions", summary="Your subscriptions")
    def get_subscriptions(request: Request, user: User) -> Response:
        service, base = service_of(request), base_url(request)
        return answer(list_subscriptions(service, user=user, base=base))

    @router.get(
        "/subscriptions/{subscription_id}",
        summary="A subscription, its jobs and the granules it waits for",
    )
    def get_one(subscription_id: str, request: Request, user: User) -> Response:
        service, base = service_of(request), base_url(request)
        return answer(get_subscription(service, subscription_id, user=user, base=base))

    @router.delete(
        "/subscriptions/{subscription_id}",
        summary="Unsubscribe (its jobs and their results stay)",
        status_code=204,
    )
    def delete_one(subscription_id: str, request: Request, user: User) -> Response:
        return answer(delete_subscription(service_of(request), subscription_id, user=user))

    @router.post(
        "/subscriptions/{subscription_id}/reprocess",
        summary="Run what older versions made for this subscription again, with a newer one",
        status_code=202,
        responses={409: OGC_ERROR},
    )
    def post_reprocess(
        subscription_id: str,
        request: Request,
        user: User,
        body: Annotated[ReprocessRequest | None, Body()] = None,
    ) -> Response:
        service, base = service_of(request), base_url(request)
        given = sent(body)
        unknown = sorted(set(given) - {"version"})
        if unknown:
            raise InvalidRequest(f"unknown field {unknown[0]!r}; a reprocess body has version")
        version = given.get("version")
        return answer(reprocess(service, subscription_id, user=user, base=base, version=version))

    return router

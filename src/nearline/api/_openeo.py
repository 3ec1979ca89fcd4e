"""The openEO API 1.2 face (nearline.openeo's documents) on the service's own app, under
``/openeo/1.2`` with ``/.well-known/openeo`` at the root: discovery, the collections as data
cubes, the predefined processes, the sign-in provider and ``/me``.

Discovery (capabilities, conformance, file formats, UDF runtimes, the provider, the process
list) is public, as openEO has it; the collections keep the catalogue's doors (a token, or an
anonymous reader where the operator lets one in; another user's private collection is a 404,
``CollectionNotFound``); ``/me`` needs a token, in openEO's form (``oidc/PROVIDER/TOKEN``,
``basic//TOKEN``) or bare. Every refusal below these paths is openEO's error document
(:func:`openeo_problem`, which the app's error handlers call), never an OGC one. The routes
stay out of the service's OpenAPI document: openEO's own specification describes them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials

from nearline import logs, openeo
from nearline.api._adapter import service_of
from nearline.api._auth import (
    Credentials,
    check_public,
    public_collections,
    require_reader,
    require_user,
    viewer,
)
from nearline.api._gridded import gridded_or_none
from nearline.api._stac import base_url, respond
from nearline.archive import Collection, collection_to_stac
from nearline.errors import CollectionNotFound, GridError, OpenEOError, Unauthorized
from nearline.grid import get_grid

WELL_KNOWN = "/.well-known/openeo"
Check = Callable[[Request, HTTPAuthorizationCredentials | None], str | None]
# openEO's endpoints this face does not serve yet: a 501 saying so, not a bare 404
NOT_YET = ("process_graphs", "services", "files")


class MergeSlashes:
    """ASGI middleware: repeated slashes in an openEO path read as one, as nginx's
    ``merge_slashes`` has it in front of most back-ends; a client joining a root URL that ends
    in ``/`` with ``/jobs`` (the openEO test suite's helpers do) sends ``//jobs``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and "//" in path and path.startswith(openeo.PATH):
            raw = scope.get("raw_path") or path.encode()
            scope = {**scope, "path": re.sub("/{2,}", "/", path),
                     "raw_path": re.sub(b"/{2,}", b"/", raw)}  # fmt: skip
        await self.app(scope, receive, send)


def is_openeo(path: str) -> bool:
    """Whether ``path`` is the openEO face's (its refusals are openEO's error documents)."""
    return path == WELL_KNOWN or path == openeo.PATH or path.startswith(f"{openeo.PATH}/")


def openeo_problem(status: int, message: str, error: BaseException | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:  # fmt: skip
    """A refusal as openEO's error document, with ``status`` and the code the error (or the
    status) names; the request id is the one the service's log names the request by."""
    code = openeo.error_code(status, error)
    body = openeo.error_document(code, message, request_id=logs.current("request_id"))
    sent = {**(headers or {}), **({"WWW-Authenticate": "Bearer"} if status == 401 else {})}
    return JSONResponse(body, status_code=status, headers=sent or None)


def missing_endpoint(method: str, path: str) -> tuple[int, str]:
    """The status and message of a request for an endpoint the face does not serve: 501
    for openEO's own that come later, 404 for any other."""
    below = path.removeprefix(f"{openeo.PATH}/")
    named = f"{method} {path}"
    if path != below and below.startswith(NOT_YET):
        return 501, (
            f"{named}: not served yet: this back-end runs process graphs synchronously "
            f"(POST {openeo.PATH}/result); {openeo.PATH}/ lists what it serves"
        )
    return 404, f"{named}: no such endpoint; {openeo.PATH}/ lists the ones served"


def _openeo_credentials(credentials: Credentials) -> HTTPAuthorizationCredentials | None:
    """The token inside openEO's bearer form, as the service's checks take it."""
    if credentials is None:
        return None
    token = openeo.access_token(credentials.credentials)
    return HTTPAuthorizationCredentials(scheme=credentials.scheme, credentials=token)


def _signed_in(check: Check, request: Request, credentials: Credentials) -> str | None:
    """``check`` (the service's reader or user check) on the openEO token; a refused token
    is openEO's TokenInvalid (403), a missing one its AuthenticationRequired (401)."""
    try:
        return check(request, _openeo_credentials(credentials))
    except Unauthorized as error:
        status, code = (
            (401, "AuthenticationRequired") if credentials is None else (403, "TokenInvalid")
        )
        raise OpenEOError(str(error), status=status, openeo_code=code) from None


def openeo_reader(request: Request, credentials: Credentials) -> str | None:
    """FastAPI dependency: the reader of the catalogue (None: an anonymous one)."""
    return _signed_in(require_reader, request, credentials)


def openeo_user(request: Request, credentials: Credentials) -> str:
    """FastAPI dependency: the signed-in user."""
    user = _signed_in(require_user, request, credentials)
    assert user is not None
    return user


def bases(request: Request) -> tuple[str, str]:
    """(the openEO face's root URL, the service's root URL)."""
    root = base_url(request)
    return f"{root}{openeo.PATH}", root


def describe(request: Request, collection: Collection) -> dict[str, Any]:
    """``collection``'s openEO document: a data cube if its items name a grid, else a
    collection that says it is none."""
    service = service_of(request)
    base, root = bases(request)
    stac = collection_to_stac(collection, root)
    gridded = gridded_or_none(service, collection, viewer(request))
    if gridded is None:
        return openeo.swath_collection(stac, base, root=root)
    try:
        grid = get_grid(gridded.grid)
    except GridError:  # a grid of a plug-in no longer installed: no cube to describe
        why = (
            f"not a data cube here: {collection.id}'s items name the grid {gridded.grid!r}, "
            "which this service does not know; its operator can install the grid's plug-in"
        )
        return openeo.not_a_cube(stac, base, why=why)
    _, start, end = collection.extent
    return openeo.cube_collection(
        stac, base, grid=grid, bands=gridded.bands, units=gridded.units,
        long_names=gridded.long_names, start=start, end=end,
    )  # fmt: skip


def build_router() -> APIRouter:
    router = APIRouter(include_in_schema=False)
    path = openeo.PATH

    @router.get(WELL_KNOWN)
    def versions(request: Request) -> Response:
        return respond(openeo.well_known(bases(request)[1]))

    @router.get(path)
    @router.get(f"{path}/")
    def capabilities(request: Request) -> Response:
        base, root = bases(request)
        sign_in = service_of(request).settings.oidc is not None
        return respond(openeo.capabilities(base, root, sign_in=sign_in))

    @router.get(f"{path}/conformance")
    def conformance() -> Response:
        return respond(openeo.conformance())

    @router.get(f"{path}/file_formats")
    def file_formats() -> Response:
        return respond(openeo.file_formats())

    @router.get(f"{path}/udf_runtimes")
    def udf_runtimes() -> Response:
        return respond(openeo.udf_runtimes())

    @router.get(f"{path}/service_types")
    def service_types() -> Response:
        return respond(openeo.service_types())

    @router.get(f"{path}/credentials/basic")
    def basic(request: Request) -> Response:
        user, token = openeo.basic_credentials(request.headers.get("authorization"))
        try:
            owner = service_of(request).users.authenticate(token)
        except Unauthorized:
            owner = None
        if owner != user:  # an unknown token, or another user's: the same refusal
            raise OpenEOError(
                "these credentials are not correct: give your nearline user name, and as the "
                "password your token (`nearline users add`, or `nearline tokens create`)",
                status=403, openeo_code="CredentialsInvalid",
            )  # fmt: skip
        return respond({"access_token": token, "user_id": user})

    @router.get(f"{path}/credentials/oidc")
    def providers(request: Request) -> Response:
        return respond(openeo.oidc_providers(service_of(request).settings.oidc))

    @router.get(f"{path}/processes")
    def processes(request: Request) -> Response:
        return respond(openeo.process_list(bases(request)[0]))

    @router.get(f"{path}/me")
    def me(request: Request, user: Annotated[str, Depends(openeo_user)]) -> Response:
        return respond(openeo.me_document(service_of(request).user(user), bases(request)[0]))

    @router.get(f"{path}/collections", dependencies=[Depends(openeo_reader)])
    def collections(request: Request) -> Response:
        base, _ = bases(request)
        found = service_of(request).catalogue.list_collections(viewer=viewer(request))
        shown = set(public_collections(request, [c.id for c in found]))
        return respond({
            "collections": [describe(request, c) for c in found if c.id in shown],
            "links": [
                {"rel": "self", "type": "application/json", "href": f"{base}/collections"},
                {"rel": "root", "type": "application/json", "href": f"{base}/"},
            ],
        })  # fmt: skip

    @router.get(f"{path}/collections/{{collection_id}}", dependencies=[Depends(openeo_reader)])
    def collection(collection_id: str, request: Request) -> Response:
        try:
            check_public(request, collection_id)
            catalogue = service_of(request).catalogue
            found = catalogue.get_collection(collection_id, viewer=viewer(request))
        except CollectionNotFound:
            raise CollectionNotFound(
                f"collection {collection_id!r} does not exist, or is not yours to see; "
                f"GET {openeo.PATH}/collections lists the ones you may load"
            ) from None
        return respond(describe(request, found))

    return router

"""Errors as the client sees them: an OGC exception document (RFC 7807 shape), with the
status the error carries and a message that is safe to show. Nothing else leaks: an
unexpected failure is logged in full and answered with a plain 500."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from nearline.api._openapi import documented_methods
from nearline.api._openeo import is_openeo, missing_endpoint, openeo_problem
from nearline.errors import ServiceError

log = logging.getLogger(__name__)
INVALID = "http://www.opengis.net/def/exceptions/ogcapi-processes-1/1.0/invalid-parameter-value"
# the catalogue's routes (/collections..., /search) are OGC API - Features' (and STAC's, which
# names no types): their refusals carry the requirement of that standard they answer to
FEATURES = "http://www.opengis.net/spec/ogcapi-features-1/1.0/req/core/"
CATALOGUE_TYPES = {
    400: FEATURES + "query-param-invalid",  # a parameter's value it cannot use
    404: FEATURES + "http",  # its status codes: 404, a path parameter names nothing there
}


def problem_type(path: str, status: int, code: str | None) -> str | None:
    """The ``type`` of a refusal of ``path``: OGC API - Features' on the catalogue's routes
    (unless the error names one of that standard already), else the error's own."""
    catalogue = path == "/search" or path.startswith("/collections")
    if catalogue and status in CATALOGUE_TYPES and not (code or "").startswith(FEATURES):
        return CATALOGUE_TYPES[status]
    return code


def problem(
    status: int,
    title: str,
    detail: str,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """The exception document; ``headers`` are the ones the status needs (``Allow`` on a
    405, as RFC 9110 asks; ``WWW-Authenticate`` on a 401 is added here)."""
    sent = {**(headers or {}), **({"WWW-Authenticate": "Bearer"} if status == 401 else {})}
    return JSONResponse(
        {
            "type": code or f"about:blank#{status}",
            "title": title,
            "status": status,
            "detail": detail,
        },
        status_code=status,
        headers=sent or None,
    )


def _titles(status: int) -> str:
    return {
        400: "Bad request",
        401: "Unauthorized",
        403: "Forbidden",
        404: "Not found",
        405: "Method not allowed",
        409: "Conflict",
        413: "Payload too large",
        415: "Unsupported media type",
        500: "Server error",
    }.get(status, "Error")


def install(app: FastAPI) -> None:
    """Map every error a handler can raise to its status."""

    @app.exception_handler(ServiceError)
    async def service_error(request: Request, error: ServiceError) -> JSONResponse:
        if is_openeo(request.url.path):
            return openeo_problem(error.status, str(error), error)
        code = problem_type(request.url.path, error.status, error.code)
        return problem(error.status, _titles(error.status), str(error), code)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        parts = []
        for entry in error.errors()[:3]:
            where = ".".join(str(p) for p in entry.get("loc", ()) if p != "body") or "request"
            parts.append(f"{where}: {entry.get('msg', 'invalid')}")
        if is_openeo(request.url.path):
            return openeo_problem(400, "; ".join(parts) or "invalid request")
        code = problem_type(request.url.path, 400, INVALID)
        return problem(400, "Bad request", "; ".join(parts) or "invalid request", code)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        status, headers = error.status_code, dict(error.headers or {})
        if is_openeo(request.url.path):
            detail = str(error.detail)
            if status == 404:  # no route: an endpoint not served (yet)
                status, detail = missing_endpoint(request.method, request.url.path)
            return openeo_problem(status, detail, headers=headers)
        if status == 405:  # Starlette's Allow names one route's methods, not all of them
            documented = documented_methods(request.app.openapi(), request.scope["path"])
            if documented:
                headers["Allow"] = ", ".join(sorted(documented))
        code = INVALID if status == 400 else None  # stac-fastapi's own refusals of parameters
        code = problem_type(request.url.path, status, code)
        return problem(status, _titles(status), str(error.detail), code, headers=headers)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        if is_openeo(request.url.path):
            return openeo_problem(500, "the service failed; its log says why (by this id)")
        return problem(500, "Server error", "the service failed; its log says why")

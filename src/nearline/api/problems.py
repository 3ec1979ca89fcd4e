"""Errors as the client sees them: an OGC exception document (RFC 7807 shape), with the
status the error carries and a message that is safe to show. Nothing else leaks: an
unexpected failure is logged in full and answered with a plain 500."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from nearline.errors import ServiceError

log = logging.getLogger(__name__)
INVALID = "http://www.opengis.net/def/exceptions/ogcapi-processes-1/1.0/invalid-parameter-value"


def problem(status: int, title: str, detail: str, code: str | None = None) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(
        {
            "type": code or f"about:blank#{status}",
            "title": title,
            "status": status,
            "detail": detail,
        },
        status_code=status,
        headers=headers,
    )


def _titles(status: int) -> str:
    return {
        400: "Bad request",
        401: "Unauthorized",
        404: "Not found",
        409: "Conflict",
        413: "Payload too large",
        500: "Server error",
    }.get(status, "Error")


def install(app: FastAPI) -> None:
    """Map every error a handler can raise to its status."""

    @app.exception_handler(ServiceError)
    async def service_error(request: Request, error: ServiceError) -> JSONResponse:
        return problem(error.status, _titles(error.status), str(error), error.code)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        parts = []
        for entry in error.errors()[:3]:
            where = ".".join(str(p) for p in entry.get("loc", ()) if p != "body") or "request"
            parts.append(f"{where}: {entry.get('msg', 'invalid')}")
        return problem(400, "Bad request", "; ".join(parts) or "invalid request", INVALID)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        return problem(error.status_code, _titles(error.status_code), str(error.detail))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return problem(500, "Server error", "the service failed; its log says why")

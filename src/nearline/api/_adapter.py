"""What every thin FastAPI adapter shares: the service behind the app, the user a request's
token names, the OGC errors every route may answer, and turning a plain handler's
(status, body, headers) into a response."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import orjson
from fastapi import Depends, Request
from fastapi.responses import PlainTextResponse, Response

from nearline.api._auth import require_reader, require_user
from nearline.orders import Service

JSON = "application/json"
User = Annotated[str, Depends(require_user)]
Reader = Annotated[str | None, Depends(require_reader)]  # None: an anonymous reader
OGC_ERROR = {"description": "An OGC exception document (type, title, status, detail)"}
ERRORS: dict[int | str, dict[str, Any]] = {
    400: OGC_ERROR,
    401: OGC_ERROR,
    403: OGC_ERROR,
    404: OGC_ERROR,
    500: OGC_ERROR,
}


@dataclass(frozen=True)
class Raw:
    """A body sent as it is, in its own media type (a process's raw output)."""

    content: bytes
    media_type: str


def answer(result: tuple[int, Any, dict[str, str]]) -> Response:
    status, body, headers = result
    if body is None:
        return Response(status_code=status, headers=headers)
    if isinstance(body, Raw):
        return Response(
            body.content, status_code=status, headers=headers, media_type=body.media_type
        )
    if isinstance(body, str):
        return PlainTextResponse(body, status_code=status, headers=headers)
    return Response(orjson.dumps(body), status_code=status, headers=headers, media_type=JSON)


def service_of(request: Request) -> Service:
    return request.app.state.service

"""The user a token names, as a plain handler and its thin FastAPI router: what they are
allotted (CPUs, memory, disk) and what they use of it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from nearline.api._adapter import ERRORS, User, answer, service_of
from nearline.orders import Service

Answer = tuple[int, Any, dict[str, str]]


def me(service: Service, *, user: str) -> Answer:
    return 200, service.user(user), {}


def build_router() -> APIRouter:
    """The users' route. Its ``name`` is the one its OpenAPI operationId has always been
    made from."""
    router = APIRouter(responses=ERRORS)

    @router.get(
        "/users/me",
        name="me",
        tags=["Users"],
        summary="Your string: CPUs, memory and disk allotted, and what you use of them",
    )
    def get_me(request: Request, user: User) -> Response:
        return answer(me(service_of(request), user=user))

    return router

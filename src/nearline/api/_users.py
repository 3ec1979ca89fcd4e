"""The user a token names, as plain handlers and their thin FastAPI router: what they are
allotted (CPUs, memory, disk) and what they use of it, and the personal tokens they make,
list and revoke themselves (an operator may revoke anyone's). A token's secret is in the
answer that makes it, and nowhere after."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import Response

from nearline.api._adapter import ERRORS, OGC_ERROR, User, answer, service_of
from nearline.errors import Forbidden, InvalidRequest
from nearline.identity import MAX_DAYS, MAX_NAME, TOKEN_NAME_PATTERN
from nearline.orders import Service

Answer = tuple[int, Any, dict[str, str]]
TOKEN_BODY = {  # what make_token takes, so that the document and the service agree
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": MAX_NAME,
                            "pattern": TOKEN_NAME_PATTERN,
                        },
                        "days": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_DAYS},
                    },
                }
            }
        },
    }
}


def me(service: Service, *, user: str) -> Answer:
    return 200, service.user(user), {}


def my_tokens(service: Service, *, user: str) -> Answer:
    return 200, {"tokens": [t.to_json() for t in service.users.tokens.of(user)]}, {}


def make_token(service: Service, body: Any, *, user: str) -> Answer:
    if not isinstance(body, dict) or not isinstance(body.get("name"), str):
        raise InvalidRequest('a token needs a name: {"name": "laptop", "days": 30}')
    days = body.get("days", 90)
    if not isinstance(days, int | float) or isinstance(days, bool):
        raise InvalidRequest("days: a number of days the token lives, at most 366")
    made, secret = service.users.tokens.create(user, body["name"], days=days)
    location = {"Location": f"/users/me/tokens/{made.id}", "Cache-Control": "no-store"}
    return 201, {**made.to_json(), "token": secret}, location


def revoke_token(service: Service, token_id: str, *, user: str, owner: str | None) -> Answer:
    """Revoke ``token_id``: the caller's own (``owner`` = the caller), or, for an operator,
    anyone's (``owner`` None)."""
    if owner is None and not service.users.is_operator(user):
        raise Forbidden("only an operator may revoke another user's tokens")
    service.users.tokens.revoke(token_id, owner=owner)
    return 204, None, {}


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

    @router.get(
        "/users/me/tokens",
        name="my-tokens",
        tags=["Users"],
        summary="Your personal tokens (never their secrets)",
    )
    def get_tokens(request: Request, user: User) -> Response:
        return answer(my_tokens(service_of(request), user=user))

    @router.post(
        "/users/me/tokens",
        name="make-token",
        tags=["Users"],
        status_code=201,
        summary="Make a personal token: its secret is in this answer only",
        openapi_extra=TOKEN_BODY,
    )
    def post_token(request: Request, user: User, body: Annotated[Any, Body()]) -> Response:
        return answer(make_token(service_of(request), body, user=user))

    @router.delete(
        "/users/me/tokens/{token_id}",
        name="revoke-my-token",
        tags=["Users"],
        status_code=204,
        summary="Revoke one of your personal tokens",
    )
    def delete_token(request: Request, token_id: str, user: User) -> Response:
        return answer(revoke_token(service_of(request), token_id, user=user, owner=user))

    @router.delete(
        "/tokens/{token_id}",
        name="revoke-token",
        tags=["Users"],
        status_code=204,
        responses={403: OGC_ERROR},
        summary="Revoke anyone's personal token (operators)",
    )
    def delete_any_token(request: Request, token_id: str, user: User) -> Response:
        return answer(revoke_token(service_of(request), token_id, user=user, owner=None))

    return router

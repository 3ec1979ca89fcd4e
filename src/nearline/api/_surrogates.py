"""A JSON body that escapes half of a UTF-16 pair (``"\\ud800"``) is refused at the door.

JSON's ``\\u`` escapes can name a lone surrogate, and Python's JSON reader keeps it as a
``str`` that no UTF-8 encoder takes: the database, the log or a run's inputs would fail on it
later, as a 500 (schemathesis found one in a search's ids). One check here, for every route,
answers a 400 naming it instead. orjson, which refuses lone surrogates, decides; the body is
only parsed twice when it holds such an escape at all.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from nearline.api._problems import INVALID, problem, problem_type

_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_JSON_TYPES = (b"", b"application/json")  # FastAPI reads a body with no type as JSON too


class RefuseLoneSurrogates:
    """The ASGI middleware: reads a JSON request's body, refuses it if orjson finds a lone
    surrogate, else hands the same messages on."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not _is_json(scope):
            await self.app(scope, receive, send)
            return
        messages, body = [], bytearray()
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if _ESCAPED_SURROGATE.search(body) and _lone_surrogate(bytes(body)):
            detail = (
                "the JSON body escapes a lone UTF-16 surrogate (such as \\ud800), which is not "
                "text; send each character whole (a pair such as \\ud83d\\ude00 is fine)"
            )
            code = problem_type(scope["path"], 400, INVALID)
            await problem(400, "Bad request", detail, code)(scope, receive, send)
            return
        kept = iter(messages)

        async def replay() -> dict:
            return next(kept, None) or await receive()

        await self.app(scope, replay, send)


def _is_json(scope: dict) -> bool:
    kind = dict(scope["headers"]).get(b"content-type", b"").split(b";")[0].strip().lower()
    return kind in _JSON_TYPES or kind.endswith(b"+json")


def _lone_surrogate(body: bytes) -> bool:
    try:
        orjson.loads(body)
    except orjson.JSONDecodeError as error:
        return "surrogate" in str(error)
    return False

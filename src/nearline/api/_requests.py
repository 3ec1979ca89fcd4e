"""Each request, seen from the operator's side: a request id (the client's ``X-Request-ID``
honoured when it is a plain token, else one made, and sent back), its latency in the
service's histogram by route template, and one access line in the log carrying the id, the
user, the job it made or asked about, the status and the bytes of body sent (a range read's
cost, as a web server's access log counts it).

A plain ASGI middleware rather than Starlette's ``BaseHTTPMiddleware``: it adds nothing to a
request's path but a header and a clock, and the fields it binds reach the endpoint's thread
(Starlette runs sync endpoints in a copy of the request's context).
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any

from prometheus_client import Histogram

from nearline import logs

log = logging.getLogger("nearline.access")
HEADER = b"x-request-id"
_GIVEN_ID = re.compile(rb"^[A-Za-z0-9._:-]{1,128}$")  # a client's id, kept if it looks like one
_JOB_IN = re.compile(r"/jobs/([0-9a-f]{32})\b")  # a job's id in a path or a Location


class RequestLog:
    """The ASGI middleware: request id, latency by route, access line."""

    def __init__(self, app: Any, *, latency: Histogram) -> None:
        self.app = app
        self.latency = latency

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(HEADER, b"")
        request_id = given.decode() if _GIVEN_ID.match(given) else uuid.uuid4().hex
        answer: dict[str, Any] = {"status": 500, "location": "", "bytes": 0}

        async def send_with_id(message: dict) -> None:
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
                headers = [(k, v) for k, v in message.get("headers", []) if k != HEADER]
                answer["location"] = dict(headers).get(b"location", b"").decode("latin-1")
                message = {**message, "headers": [*headers, (HEADER, request_id.encode())]}
            elif message["type"] == "http.response.body" and scope["method"] != "HEAD":
                answer["bytes"] += len(message.get("body", b""))  # the server drops HEAD's
            await send(message)

        began = time.perf_counter()
        with logs.bound(request_id=request_id):
            try:
                await self.app(scope, receive, send_with_id)
            finally:
                self._done(scope, answer, time.perf_counter() - began)

    def _done(self, scope: dict, answer: dict[str, Any], seconds: float) -> None:
        route = getattr(scope.get("route"), "path", None) or "unmatched"
        method, status = scope["method"], answer["status"]
        self.latency.labels(method, route, str(status)).observe(seconds)
        found = _JOB_IN.search(answer["location"]) or _JOB_IN.search(scope["path"])
        user = scope.get("state", {}).get("user")
        log.info(
            "%s %s %d %.1f ms %d B",
            method,
            scope["path"],  # never the query string: it may carry what a log must not
            status,
            seconds * 1000,
            answer["bytes"],
            extra={
                "route": route,
                "status": status,
                "seconds": round(seconds, 6),
                "bytes": answer["bytes"],
                **({"user": user} if user else {}),
                **({"job": found.group(1)} if found else {}),
            },
        )

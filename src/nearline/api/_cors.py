"""Cross-origin requests (CORS): which other web pages may call the API from a browser, such
as a STAC Browser served from another host. Off unless the operator names origins
(``nearline serve --cors ORIGIN...``); then:

- a named origin gets ``Access-Control-Allow-Origin`` (its own, with ``Vary: Origin``), the
  headers a client needs exposed (ETag, Content-Range, Link, Location, ...), and its
  preflights approved for the API's methods and headers, ``Authorization`` among them;
- an origin that was not named gets no CORS header at all, and its preflight a 403;
- ``*`` lets every origin read, with ``Access-Control-Allow-Origin: *``.

``Access-Control-Allow-Credentials`` is never sent, to any origin. The API's tokens travel in
the ``Authorization`` header, which a page on another origin may send without credentials
mode once the preflight allows the header; the only cookies the service sets are the
sign-in's (_signin.py), and no other page should ever have them sent for it.

A middleware of our own rather than Starlette's ``CORSMiddleware``: that one sends
``Access-Control-Expose-Headers`` (and ``Allow-Credentials``, when on) to every origin, named
or not, answers an unnamed origin's preflight with the methods and headers it allows, and
with ``*`` and credentials on mirrors any caller's origin with credentials.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from nearline.errors import ConfigError

ANY_ORIGIN = "*"
METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE")
REQUEST_HEADERS = (
    "Accept",
    "Authorization",
    "Content-Type",
    "If-Match",
    "If-None-Match",
    "If-Range",
    "Prefer",  # OGC API - Processes: respond-async
    "Range",
    "X-Request-ID",
)
EXPOSED_HEADERS = (
    "Accept-Ranges",
    "Content-Disposition",
    "Content-Range",
    "ETag",
    "Link",
    "Location",
    "Preference-Applied",
    "Retry-After",
    "WWW-Authenticate",
    "X-Request-ID",
)
MAX_AGE_SECONDS = 600  # how long a browser may keep a preflight's answer
_DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_origin(text: str) -> str:
    """An origin as browsers send it in ``Origin`` (``https://host[:port]``, scheme and host
    lower-case, no default port), from what an operator typed; ``*`` as it is.
    :class:`ConfigError` for anything with a path, a query, a user or another scheme."""
    text = text.strip()
    if text == ANY_ORIGIN:
        return text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (
        parts is None
        or parts.scheme.lower() not in _DEFAULT_PORTS
        or not parts.hostname
        or parts.username is not None
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        raise ConfigError(
            f"--cors takes origins such as https://stac.example.org or http://127.0.0.1:8080 "
            f"(scheme, host and port; no path), or '*' for every origin; got {text!r}"
        )
    scheme, host = parts.scheme.lower(), parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    shown_port = "" if port in (None, _DEFAULT_PORTS[scheme]) else f":{port}"
    return f"{scheme}://{host}{shown_port}"


@dataclass(frozen=True)
class CrossOrigin:
    """The origins whose pages may call the API (``*``: every one)."""

    origins: frozenset[str]

    @classmethod
    def parse(cls, texts: Iterable[str]) -> CrossOrigin:
        """From ``--cors``'s words (each may hold several, comma-separated).

        Parameters
        ----------
        texts
            What the operator typed: origins, or ``*`` alone.
        """
        words = [part for text in texts for part in text.replace(",", " ").split()]
        origins = frozenset(parse_origin(word) for word in words)
        if not origins:
            raise ConfigError("--cors takes one origin or more, or '*'")
        if ANY_ORIGIN in origins and len(origins) > 1:
            raise ConfigError("--cors '*' already lets every origin in: give it alone")
        return cls(origins)

    @property
    def any(self) -> bool:
        """Whether every origin may call (``*``)."""
        return ANY_ORIGIN in self.origins

    def allows(self, origin: str) -> bool:
        """Whether a page from ``origin`` (an ``Origin`` header) may call."""
        return self.any or origin in self.origins

    def describe(self) -> str:
        """One line for the server's start."""
        if self.any:
            return "cors: pages from every origin may call (no credentials)"
        return f"cors: pages from {', '.join(sorted(self.origins))} may call"


def _header(scope: dict, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


class CrossOriginMiddleware:
    """The ASGI middleware: CORS headers for allowed origins, nothing for others."""

    def __init__(self, app: Any, *, allowed: CrossOrigin) -> None:
        self.app = app
        self.allowed = allowed

    def _allow_origin(self, origin: str) -> list[tuple[bytes, bytes]]:
        value = ANY_ORIGIN if self.allowed.any else origin
        return [(b"access-control-allow-origin", value.encode("latin-1"))]

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        origin = _header(scope, b"origin")
        preflight = (
            scope["method"] == "OPTIONS"
            and origin is not None
            and _header(scope, b"access-control-request-method") is not None
        )
        if preflight:
            await self._preflight(origin, send)
            return
        added = [(b"vary", b"Origin")]
        if origin is not None and self.allowed.allows(origin):
            exposed = ", ".join(EXPOSED_HEADERS).encode()
            added += [*self._allow_origin(origin), (b"access-control-expose-headers", exposed)]

        async def send_with_cors(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *added]}
            await send(message)

        await self.app(scope, receive, send_with_cors)

    async def _preflight(self, origin: str, send: Any) -> None:
        """Approve an allowed origin's preflight for the API's methods and headers (the
        browser checks its request against them); refuse another's with a bare 403."""
        headers = [(b"vary", b"Origin"), (b"content-length", b"0")]
        status = 403
        if self.allowed.allows(origin):
            status = 204
            headers += [
                *self._allow_origin(origin),
                (b"access-control-allow-methods", ", ".join(METHODS).encode()),
                (b"access-control-allow-headers", ", ".join(REQUEST_HEADERS).encode()),
                (b"access-control-max-age", str(MAX_AGE_SECONDS).encode()),
            ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

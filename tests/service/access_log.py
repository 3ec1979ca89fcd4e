"""What a live server says it sent: its JSON access lines (``--log-format json``), picked out by
the ``X-Request-ID`` a test's client sent with every request."""

from __future__ import annotations

import json
import time

import httpx

from ..live_service import LiveService


def access_lines(live: LiveService, request_id: str) -> list[dict]:
    """The access lines of every request sent with ``request_id``, once the server has
    logged a last request with that id (so the lines before it are in the log too)."""
    assert live.log is not None
    with live.client() as client:
        client.get("/conformance", headers={"X-Request-ID": request_id})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = [json.loads(line) for line in live.log.read_text().splitlines() if line[:1] == "{"]
        mine = [line for line in lines if line.get("request_id") == request_id and "route" in line]
        if mine and mine[-1].get("route") == "/conformance":
            return mine[:-1]
        time.sleep(0.05)
    raise AssertionError(f"no access line for {request_id} in {live.log}")


def bytes_sent(live: LiveService, request_id: str, path: str) -> tuple[int, int]:
    """(bytes of body the server sent, requests) to the requests with ``request_id`` for
    ``path``, by its access lines."""
    lines = [line for line in access_lines(live, request_id) if path in line["message"]]
    return sum(line["bytes"] for line in lines), len(lines)


def token_headers(live: LiveService, user: str, request_id: str) -> dict[str, str]:
    """The headers a client other than httpx sends: the user's token and a request id."""
    return {"Authorization": f"Bearer {live.tokens[user]}", "X-Request-ID": request_id}


def asset_url(live: LiveService, user: str, collection: str, item: str, key: str) -> str:
    """An asset's href, as the item's STAC gives it to ``user``."""
    with live.client(user) as client:
        response = client.get(f"/collections/{collection}/items/{item}")
    assert response.status_code == 200, response.text
    return response.json()["assets"][key]["href"]


def ranged(live: LiveService, user: str, url: str, **headers: str) -> httpx.Response:
    """GET of ``url`` as ``user`` with ``headers`` (``Range=...``, ``If_Range=...``)."""
    sent = {name.replace("_", "-"): value for name, value in headers.items()}
    with live.client(user) as client:
        return client.get(url, headers=sent)

"""Search latency as users meet it: the same bbox + one-day searches through pystac-client's
``Client.search`` and through an httpx client, each keeping its connection as every HTTP
library does, on ``nearline serve`` (SQLite and PostgreSQL catalogues) and on the peer,
stac-fastapi-pgstac; beside each, the search without HTTP, and GET /conformance on one kept
connection against as many fresh ones (a kept connection that is slower than fresh ones is
waiting for something: Nagle's algorithm against a delayed acknowledgement, issue 21).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from _common import markdown_table
from _stac_searches import percentiles, timed

WAYS = ("pystac-client", "httpx", "in-process", "conformance kept", "conformance fresh")
HEADERS = [
    "items",
    "server",
    "pystac-client search",
    "httpx search",
    "search in-process",
    "GET /conformance, kept",
    "GET /conformance, fresh",
    "peer p95 / this, pystac-client",
    "peer p95 / this, httpx",
]
PEER = "stac-fastapi-pgstac"
CONNECTIONS = 50  # GET /conformance on one kept connection, and on this many fresh ones


@dataclass(frozen=True)
class SearchTarget:
    """A server to search, and its search without HTTP (None: not measured)."""

    url: str
    headers: dict[str, str]
    in_process: Callable[[dict[str, str]], object] | None


def latencies(target: SearchTarget, asked: list[dict[str, str]], count: int) -> dict[str, Any]:
    """p50, p95 (seconds) of each way of asking ``target``: ``count`` searches each, and
    GET /conformance on kept and fresh connections."""
    found = {
        "pystac-client": pystac_client_latencies(target, asked, count),
        "httpx": httpx_latencies(target, asked, count),
    }
    if target.in_process is not None:
        pending = iter(asked * 2)
        in_process = target.in_process
        found["in-process"] = percentiles(timed(lambda: in_process(next(pending)), count))
    found["conformance kept"] = conformance_latencies(target.url, kept=True)
    found["conformance fresh"] = conformance_latencies(target.url, kept=False)
    return found


def pystac_client_latencies(
    target: SearchTarget, asked: list[dict[str, str]], count: int
) -> tuple[float, float]:
    """p50, p95 of ``count`` searches through pystac-client as a user's script makes them:
    ``Client.open`` once, then ``search(...)`` (its default method, POST) and the first page's
    items read as pystac Items; its requests session keeps the connection."""
    from pystac_client import Client

    client = Client.open(target.url, headers=target.headers)

    def search(query: dict[str, str]) -> int:
        limit = int(query["limit"])
        found = client.search(
            bbox=query["bbox"], datetime=query["datetime"], limit=limit, max_items=limit
        )
        return len(list(found.items()))

    assert sum(search(q) for q in asked[:20]) > 0, "pystac-client finds nothing"
    pending = iter(asked * 2)
    return percentiles(timed(lambda: search(next(pending)), count))


def httpx_latencies(
    target: SearchTarget, asked: list[dict[str, str]], count: int
) -> tuple[float, float]:
    """p50, p95 of ``count`` GET /search from one httpx client, which keeps its connection."""
    with httpx.Client(base_url=target.url, headers=target.headers, timeout=60) as client:
        returned = [client.get("/search", params=q).json()["numberReturned"] for q in asked[:20]]
        assert sum(returned) > 0, "the searches find nothing: the benchmark would measure nothing"
        pending = iter(asked * 2)

        def search() -> None:
            response = client.get("/search", params=next(pending))
            assert response.status_code == 200, response.text

        return percentiles(timed(search, count))


def conformance_latencies(url: str, *, kept: bool) -> tuple[float, float]:
    """p50, p95 of GET /conformance :data:`CONNECTIONS` times on one kept connection, or on a
    fresh connection each (the client keeps none)."""
    limits = httpx.Limits() if kept else httpx.Limits(max_keepalive_connections=0)
    ports = set()
    with httpx.Client(base_url=url, timeout=60, limits=limits) as client:

        def ask() -> None:
            with client.stream("GET", "/conformance") as response:  # its socket still open
                ports.add(response.extensions["network_stream"].get_extra_info("client_addr"))
                assert response.status_code == 200, response.read()
                response.read()

        spent = timed(ask, CONNECTIONS, warmup=5)
    assert len(ports) == (1 if kept else CONNECTIONS + 5), f"{len(ports)} connections"
    return percentiles(spent)


def pgstac_search(dsn: str) -> tuple[Callable[[dict[str, str]], object], Callable[[], None]]:
    """pgstac's own SQL ``search(jsonb)`` on one connection, and what closes it: the peer's
    search without its HTTP layer, as a catalogue kept in pgstac's schema would call it."""
    import psycopg

    connection = psycopg.connect(dsn, autocommit=True)
    connection.execute("SET search_path TO pgstac, public")

    def search(query: dict[str, str]) -> int:
        body = {
            "bbox": [float(v) for v in query["bbox"].split(",")],
            "datetime": query["datetime"],
            "limit": int(query["limit"]),
        }
        found = connection.execute("SELECT search(%s::jsonb)", (orjson.dumps(body).decode(),))
        return len(found.fetchone()[0]["features"])

    return search, connection.close


def milliseconds(p50_p95: tuple[float, float]) -> str:
    """'p50 / p95' in ms."""
    return f"{p50_p95[0] * 1e3:.2f} / {p50_p95[1] * 1e3:.2f}"


def rows(size: int, found: dict[str, dict[str, tuple[float, float]]]) -> list[list[str]]:
    """The table's rows for one archive size: one per server."""
    peer = found.get(PEER)
    table = []
    for server, ways in found.items():
        row = [f"{size:,}", server]
        row += [milliseconds(ways[w]) if w in ways else "-" for w in WAYS]
        for client in ("pystac-client", "httpx"):
            ratio = peer[client][1] / ways[client][1] if peer and server != PEER else None
            row.append(f"{ratio:.1f}x" if ratio else "-")
        table.append(row)
    return table


def search_text(rows: list[list[str]], count: int, provenance: str) -> str:
    """The search paragraph and table, for docs/benchmarks.md."""
    return "\n\n".join(
        [
            f"Search latency, p50 / p95 in ms ({provenance}), of {count} bbox (10°x10°) + "
            "one-day searches with limit 10 on each server, as users make them: through "
            "pystac-client (`Client.open` once, then `search(...)`, its default POST, and the "
            "first page's items read as pystac Items) and through an httpx client (GET "
            "/search); both keep their connection, as every HTTP library does. Beside them, "
            "the same search without HTTP (nearline's catalogue in-process; for the peer, "
            "pgstac's own SQL `search(jsonb)` on one connection), and the empty request, GET "
            f"/conformance, {CONNECTIONS} times on one kept connection and {CONNECTIONS} times "
            "on fresh ones (a kept connection slower than fresh ones would be waiting for "
            "Nagle's algorithm). The last two columns: the peer's p95 over this server's.",
            markdown_table(HEADERS, rows),
        ]
    )

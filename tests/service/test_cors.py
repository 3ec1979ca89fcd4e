"""CORS from the outside, as a page on another origin (or an attacker forging its headers)
would try it: raw requests with an Origin header against live servers started with
`--cors ORIGIN...`, with `--cors '*'` (from $NEARLINE_CORS) and without the option.

STAC Browser itself, in Chromium, is tests/web/test_stac_browser.py."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from nearline.api import CrossOrigin
from nearline.errors import ConfigError

from ..live_service import LiveService, nearline
from .conftest import serving

NAMED = "https://browser.example.org"
ALSO_NAMED = "http://127.0.0.1:9999"
STRANGERS = (
    "https://evil.example",
    "http://browser.example.org",  # the named host, another scheme
    "https://browser.example.org:8443",  # another port
    "https://browser.example.org.evil.example",  # the name as a prefix
    "null",  # a sandboxed frame, a file:// page
)
PREFLIGHT = {"Access-Control-Request-Method": "POST"}
ASKED_HEADERS = {"Access-Control-Request-Headers": "authorization, content-type"}


def cors_headers(response: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.startswith("access-control-")}


def listed(value: str) -> set[str]:
    return {part.strip().lower() for part in value.split(",")}


@pytest.fixture(scope="module")
def named(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    folder = tmp_path_factory.mktemp("cors-named")
    with serving(folder, extra=("--cors", NAMED, f"{ALSO_NAMED}/")) as service:
        yield service


@pytest.fixture(scope="module")
def anyone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    """A public catalogue whose server read '*' from $NEARLINE_CORS (set only while it starts)."""
    folder = tmp_path_factory.mktemp("cors-any")
    environment = pytest.MonkeyPatch()
    environment.setenv("NEARLINE_CORS", "*")
    try:
        with serving(folder, lambda _: environment.undo(), ("--anonymous-read", "all")) as service:
            yield service
    finally:
        environment.undo()


# -- named origins ---------------------------------------------------------------------------
def test_a_named_origin_reads_and_sees_the_headers_a_client_needs(named: LiveService) -> None:
    assert f"cors: pages from {ALSO_NAMED}, {NAMED} may call" in named.log.read_text()
    with named.client("alice") as alice:
        for origin in (NAMED, ALSO_NAMED):
            found = alice.get("/search", params={"limit": 2}, headers={"Origin": origin})
            assert found.status_code == 200
            assert len(found.json()["features"]) == 2
            assert found.headers["access-control-allow-origin"] == origin
            assert "origin" in listed(found.headers["vary"])
            exposed = listed(found.headers["access-control-expose-headers"])
            assert {"etag", "content-range", "link", "location", "x-request-id"} <= exposed
            assert "access-control-allow-credentials" not in found.headers


def test_a_named_origins_preflight_is_approved_with_authorization(named: LiveService) -> None:
    with httpx.Client(base_url=named.url, timeout=60) as client:
        asked = client.options("/search", headers={"Origin": NAMED, **PREFLIGHT, **ASKED_HEADERS})
    assert asked.status_code == 204
    headers = cors_headers(asked)
    assert headers["access-control-allow-origin"] == NAMED
    assert {"get", "post", "put", "delete"} <= listed(headers["access-control-allow-methods"])
    assert {"authorization", "content-type", "range"} <= listed(
        headers["access-control-allow-headers"]
    )
    assert int(headers["access-control-max-age"]) > 0
    assert "access-control-allow-credentials" not in headers


def test_an_error_reaches_a_named_origins_page(named: LiveService) -> None:
    """A page must be able to read a 401 to ask its user for a token."""
    with httpx.Client(base_url=named.url, timeout=60) as client:
        refused = client.get("/collections", headers={"Origin": NAMED})
    assert refused.status_code == 401
    assert refused.json()["status"] == 401
    assert refused.headers["access-control-allow-origin"] == NAMED


# -- origins not named -----------------------------------------------------------------------
@pytest.mark.parametrize("origin", STRANGERS)
def test_an_origin_not_named_gets_no_cors_header(named: LiveService, origin: str) -> None:
    with named.client("alice") as alice:
        found = alice.get("/collections", headers={"Origin": origin, "Cookie": "a=b"})
    assert found.status_code == 200  # served as to any client: only a browser holds it back
    assert found.json()["collections"] != []
    assert cors_headers(found) == {}


@pytest.mark.parametrize("origin", STRANGERS)
def test_a_preflight_from_an_origin_not_named_is_refused(named: LiveService, origin: str) -> None:
    with httpx.Client(base_url=named.url, timeout=60) as client:
        for path in ("/search", "/processes", "/signin/session"):
            asked = client.options(path, headers={"Origin": origin, **PREFLIGHT, **ASKED_HEADERS})
            assert asked.status_code == 403
            assert cors_headers(asked) == {}
            assert asked.content == b""


# -- every origin: '*' -----------------------------------------------------------------------
def test_any_origin_reads_a_public_catalogue_without_credentials(anyone: LiveService) -> None:
    assert "cors: pages from every origin may call (no credentials)" in anyone.log.read_text()
    with httpx.Client(base_url=anyone.url, timeout=60) as client:
        for origin in ("https://stac.example.net", "http://localhost:8080"):
            found = client.get(
                "/search", params={"limit": 3}, headers={"Origin": origin, "Cookie": "a=b"}
            )
            assert found.status_code == 200
            assert found.json()["numberReturned"] == 3
            assert found.headers["access-control-allow-origin"] == "*"
            assert "access-control-allow-credentials" not in found.headers


def test_any_origins_preflight_never_allows_credentials(anyone: LiveService) -> None:
    with httpx.Client(base_url=anyone.url, timeout=60) as client:
        asked = client.options(
            "/collections",
            headers={"Origin": "https://stac.example.net", "Cookie": "a=b", **PREFLIGHT},
        )
    assert asked.status_code == 204
    headers = cors_headers(asked)
    assert headers["access-control-allow-origin"] == "*"
    assert "authorization" in listed(headers["access-control-allow-headers"])
    assert "access-control-allow-credentials" not in headers


def test_any_origin_still_needs_a_token_to_write(anyone: LiveService) -> None:
    origin = {"Origin": "https://stac.example.net"}
    with httpx.Client(base_url=anyone.url, timeout=60) as client:
        deploy = client.post("/processes", content=b"PK", headers=origin)
        order = client.post("/processes/pathfinder-composite/execution", json={}, headers=origin)
        jobs = client.get("/jobs", headers=origin)
    assert [deploy.status_code, order.status_code, jobs.status_code] == [401, 401, 401]
    assert deploy.headers["access-control-allow-origin"] == "*"


# -- without the option ----------------------------------------------------------------------
def test_without_the_option_no_cors_header_is_sent(live: LiveService) -> None:
    with live.client("alice") as alice:
        found = alice.get("/collections", headers={"Origin": NAMED})
        asked = alice.options("/search", headers={"Origin": NAMED, **PREFLIGHT, **ASKED_HEADERS})
    assert found.status_code == 200
    assert cors_headers(found) == {}
    assert asked.status_code == 405
    assert cors_headers(asked) == {}


# -- what an operator types ------------------------------------------------------------------
def test_origins_are_read_as_browsers_send_them() -> None:
    typed = ["HTTPS://Browser.Example.org:443/", "http://127.0.0.1:9999,http://[::1]:80"]
    assert CrossOrigin.parse(typed).origins == {
        "https://browser.example.org",
        "http://127.0.0.1:9999",
        "http://[::1]",
    }
    assert CrossOrigin.parse(["*"]).any


@pytest.mark.parametrize(
    "typed",
    [
        "https://browser.example.org/stac/",
        "browser.example.org",
        "ftp://browser.example.org",
        "https://user@browser.example.org",
        "https://browser.example.org?x=1",
        "null",
        "http://host:99999",
    ],
)
def test_what_is_no_origin_is_refused(typed: str) -> None:
    with pytest.raises(ConfigError, match="--cors takes origins such as"):
        CrossOrigin.parse([typed])


def test_a_star_beside_origins_is_refused() -> None:
    with pytest.raises(ConfigError, match="give it alone"):
        CrossOrigin.parse(["*", NAMED])


def test_a_bad_origin_stops_the_server_in_one_line(tmp_path) -> None:
    done = nearline("serve", "--port", "0", "--cors", "https://a.example/stac", data=tmp_path,
                    check=False)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "nearline: error: --cors takes origins such as https://stac.example.org or "
        "http://127.0.0.1:8080 (scheme, host and port; no path), or '*' for every origin; "
        "got 'https://a.example/stac'"
    ]

"""The API takes the provider's access tokens, never its ID or refresh tokens (issue 38).

With the documented settings (``audience`` left to ``client_id``) an ID token issued to the
web client names the API's audience, so signature, issuer, audience and times alone let it
through: it signed in, listed jobs, and even traded itself for a year-long personal token.
Each route below, with a real Keycloak's ID token or refresh token as the bearer, is a 401;
the access token of the same grant is the control.
"""

from __future__ import annotations

import httpx
import pytest

from .conftest import server_log

# the routes a stolen or mistaken token might be tried on: (method, path, JSON body)
ROUTES = [
    ("GET", "/users/me", None),
    ("POST", "/users/me/tokens", {"name": "a year", "days": 366}),
    ("GET", "/users/me/tokens", None),
    ("GET", "/jobs", None),
    ("POST", "/processes/echo/execution", {"inputs": {"string": "x"}}),
    ("GET", "/collections/granules/items/any/assets/data", None),
    ("GET", "/subscriptions", None),
    ("POST", "/subscriptions", {"process": "echo"}),
]


@pytest.fixture(scope="module")
def web_grant(provider) -> dict:
    """ada's tokens from the web client `nearline` (whose client id is the API's audience)."""
    return provider.password_token("ada", "nearline")


def call(live, method: str, path: str, body, token: str) -> httpx.Response:
    return httpx.request(
        method, f"{live.url}{path}", json=body, timeout=60,
        headers={"Authorization": f"Bearer {token}"},
    )  # fmt: skip


def test_the_grants_access_token_is_taken(signin_live, web_grant):
    answer = call(signin_live, "GET", "/users/me", None, web_grant["access_token"])
    assert (answer.status_code, answer.json()["name"]) == (200, "ada")


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_an_id_token_is_no_access_token(signin_live, web_grant, method, path, body):
    answer = call(signin_live, method, path, body, web_grant["id_token"])
    assert answer.status_code == 401, answer.text
    assert "access token" in answer.json()["detail"]
    assert "'ID'" in answer.json()["detail"]  # Keycloak's typ claim, named


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_a_refresh_token_is_no_access_token(signin_live, web_grant, method, path, body):
    answer = call(signin_live, method, path, body, web_grant["refresh_token"])
    assert answer.status_code == 401, answer.text


def test_no_personal_token_was_made_from_either(signin_live, web_grant):
    listed = call(signin_live, "GET", "/users/me/tokens", None, web_grant["access_token"])
    assert listed.status_code == 200
    assert [t for t in listed.json()["tokens"] if t["name"] == "a year"] == []
    assert "Traceback" not in server_log(signin_live)

"""Signing in as openEO's basic authentication has it (``GET /credentials/basic``), through
the openEO Python client: the user's name and, as the password, their own nearline token;
anything else is refused as openEO says, and a token is never good for another user."""

from __future__ import annotations

import base64

import httpx
import openeo
import pytest
from openeo.rest import OpenEoApiError

from ..live_service import LiveService
from ..tiles.gridded import PUBLIC


def test_basic_sign_in_with_the_users_token(live: LiveService) -> None:
    connection = openeo.connect(live.url)
    connection.authenticate_basic("alice", live.tokens["alice"])
    assert connection.describe_account()["user_id"] == "alice"
    assert PUBLIC in connection.list_collection_ids()


@pytest.mark.parametrize(
    ("user", "password"),
    [("alice", "nl_not-a-token"), ("alice", "bob's"), ("nobody", "alice's")],
    ids=["unknown-token", "another-users-token", "unknown-user"],
)
def test_wrong_credentials_are_refused_alike(live: LiveService, user: str, password: str) -> None:
    token = {"bob's": live.tokens["bob"], "alice's": live.tokens["alice"]}.get(password, password)
    connection = openeo.connect(live.url)
    with pytest.raises(OpenEoApiError) as refused:
        connection.authenticate_basic(user, token)
    assert refused.value.http_status_code == 403
    assert refused.value.code == "CredentialsInvalid"
    assert token not in refused.value.message


@pytest.mark.parametrize(
    ("header", "status", "code"),
    [
        (None, 401, "AuthenticationRequired"),
        ("Bearer something", 403, "AuthenticationSchemeInvalid"),
        ("Basic " + base64.b64encode(b"no-colon").decode(), 403, "CredentialsInvalid"),
        ("Basic %%%not-base64", 403, "CredentialsInvalid"),
    ],
    ids=["none", "bearer", "no-colon", "not-base64"],
)
def test_malformed_basic_requests_are_openeo_errors(
    live: LiveService, header: str | None, status: int, code: str
) -> None:
    headers = {"Authorization": header} if header else {}
    answer = httpx.get(f"{live.url}/openeo/1.2/credentials/basic", headers=headers)
    assert answer.status_code == status
    assert answer.json()["code"] == code

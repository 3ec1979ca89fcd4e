"""openEO clients sign in as they do everywhere: the openEO Python client reads the provider
from /openeo/1.2/credentials/oidc and runs the device flow against the suite's Keycloak (a
person approving it in their browser, played by flows.device_approve); the provider's access
token then arrives as ``oidc/PROVIDER/TOKEN`` and names the person."""

from __future__ import annotations

import re
import threading

import openeo
import pytest
from openeo.rest import OpenEoApiError

from ..live_service import LiveService
from .conftest import Provider
from .flows import device_approve


def test_the_provider_is_listed_with_its_device_flow_client(
    signin_live: LiveService, provider: Provider
) -> None:
    providers = openeo.connect(signin_live.url).list_auth_providers()
    assert sorted(provider["type"] for provider in providers) == ["basic", "oidc"]
    listed = [provider for provider in providers if provider["type"] == "oidc"]
    assert listed[0]["id"] == "nearline"  # the realm's name
    assert listed[0]["issuer"] == provider.issuer
    assert listed[0]["scopes"] == ["openid", "email", "profile"]
    (client,) = listed[0]["default_clients"]
    assert client["id"] == "nearline-cli"
    assert "urn:ietf:params:oauth:grant-type:device_code" in client["grant_types"]


def test_the_openeo_client_signs_in_by_the_device_flow(signin_live: LiveService) -> None:
    approvals: list[threading.Thread] = []

    def display(message: str, **_: object) -> None:
        """The client's instructions: a person opens the address and approves."""
        found = re.search(r"Visit (\S+) to authenticate", message)
        if found and not approvals:
            approvals.append(threading.Thread(target=device_approve, args=(found[1], "ada")))
            approvals[0].start()

    connection = openeo.connect(signin_live.url)
    connection.authenticate_oidc_device(max_poll_time=120, display=display)
    approvals[0].join(timeout=120)
    assert connection.auth.bearer.startswith("oidc/nearline/")
    assert connection.describe_account()["user_id"] == "ada"


def test_a_token_of_a_provider_the_service_does_not_trust_is_token_invalid(
    signin_live: LiveService, provider: Provider
) -> None:
    foreign = provider.password_token("ada", issuer=provider.elsewhere)["access_token"]
    connection = openeo.connect(signin_live.url)
    connection.authenticate_bearer_token(f"oidc/nearline/{foreign}")
    with pytest.raises(OpenEoApiError) as refused:
        connection.describe_account()
    assert (refused.value.http_status_code, refused.value.code) == (403, "TokenInvalid")

"""A real OpenID Connect provider for the sign-in tests: one Keycloak for this folder
(``nearline.testing.keycloak``), with two realms made through its admin REST API, and a live
`nearline serve --oidc` that trusts the first.

- realm ``nearline``: the web page's confidential client ``nearline`` (code + PKCE), the
  public ``nearline-cli`` (device grant, code + PKCE on loopback), and ``other-app`` whose
  tokens are not for nearline (wrong audience). It signs with an RSA key the tests hold, so a
  test can make a token the provider's own key set vouches for, wrong in one claim alone.
  People: ada (group nearline-users), olga (nearline-operators), dave (a verified address at
  science.example, no group), eve (elsewhere, group outsiders: refused).
- realm ``elsewhere``: a provider the live service does not trust (wrong issuer), with its own
  ada and its own olga (in a group named nearline-operators too: a partner issuer's group, which
  makes no operator where only the first realm's does).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from nearline.testing.keycloak import Keycloak, ProviderMissing, launcher, realm_document

from ..live_service import LiveService
from ..service.conftest import serving

PASSWORD = "correct horse battery staple"
WEB_SECRET = "nearline-web-secret-for-tests"
LOOPBACK = ["http://127.0.0.1*"]


def person(name: str, email: str, groups: list[str]) -> dict:
    return {
        "username": name,
        "enabled": True,
        "email": email,
        "emailVerified": True,
        "firstName": name.title(),
        "lastName": "Tester",
        "groups": groups,
        "credentials": [{"type": "password", "value": PASSWORD, "temporary": False}],
    }


def clients() -> list[dict]:
    return [
        {
            "clientId": "nearline",
            "publicClient": False,
            "secret": WEB_SECRET,
            "standardFlowEnabled": True,
            "directAccessGrantsEnabled": True,
            "redirectUris": LOOPBACK,
            "attributes": {
                "pkce.code.challenge.method": "S256",
                "post.logout.redirect.uris": "http://127.0.0.1*",
            },
            "nearline.audience": True,
        },
        {
            "clientId": "nearline-cli",
            "publicClient": True,
            "standardFlowEnabled": True,
            "directAccessGrantsEnabled": True,
            "redirectUris": LOOPBACK,
            "attributes": {
                "pkce.code.challenge.method": "S256",
                "oauth2.device.authorization.grant.enabled": "true",
            },
            "nearline.audience": True,
        },
        {
            "clientId": "other-app",
            "publicClient": True,
            "directAccessGrantsEnabled": True,
            "redirectUris": LOOPBACK,
        },
    ]


def pem_of(key: rsa.RSAPrivateKey) -> str:
    """The private key as Keycloak's RSA key provider takes it (PKCS#8 PEM)."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


@dataclass
class Provider:
    keycloak: Keycloak
    issuer: str
    elsewhere: str
    private_key: rsa.RSAPrivateKey
    settings: Path

    def password_token(
        self, user: str, client: str = "nearline-cli", *, issuer: str | None = None
    ) -> dict:
        """The provider's tokens for ``user`` (the password grant: quick, for API tests)."""
        form = {
            "grant_type": "password",
            "client_id": client,
            "username": user,
            "password": PASSWORD,
            "scope": "openid email profile",
        }
        if client == "nearline":
            form["client_secret"] = WEB_SECRET
        answer = httpx.post(f"{issuer or self.issuer}/protocol/openid-connect/token", data=form)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def add_people(self, *people: dict, realm: str = "nearline") -> None:
        """Add ``people`` (:func:`person`) to ``realm`` through the admin REST API: fresh
        identities for a test of first sign-ins."""
        with self.keycloak.admin() as admin:
            for someone in people:
                admin.post(f"/{realm}/users", json=someone).raise_for_status()


@pytest.fixture(scope="package")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    """Keycloak with the two realms, and nearline's settings file for it: started once for
    this folder's tests and stopped after its last (not kept, with its gigabyte of heap and
    its busy threads, beside the rest of the worker's session)."""
    try:
        launcher()
    except ProviderMissing as error:
        pytest.fail(f"the sign-in tests need a real OpenID Connect provider: {error}", False)
    folder = tmp_path_factory.mktemp("keycloak")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = pem_of(key)
    running = os.environ.get("NEARLINE_TEST_KEYCLOAK")  # a URL: one started by hand
    with Keycloak.running_at(running, folder) if running else Keycloak(folder) as keycloak:
        (folder / "started-in").write_text(f"{keycloak.started_in:.1f}\n")
        people = [
            person("ada", "ada@science.example", ["nearline-users"]),
            person("olga", "olga@science.example", ["nearline-operators"]),
            person("dave", "dave@science.example", []),
            person("eve", "eve@elsewhere.example", ["outsiders"]),
        ]
        groups = ("nearline-users", "nearline-operators", "outsiders")
        issuer = keycloak.add_realm(
            realm_document(
                "nearline", clients=clients(), users=people, groups=groups,
                audience="nearline", private_key=pem,
            )
        )  # fmt: skip
        elsewhere = keycloak.add_realm(
            realm_document(
                "elsewhere", clients=clients(), users=people[:2], groups=groups,
                audience="nearline",
            )
        )  # fmt: skip
        settings = folder / "oidc.yaml"
        settings.write_text(
            yaml.safe_dump(
                {
                    "issuer": issuer,
                    "client_id": "nearline",
                    "client_secret_env": "OIDC_TEST_CLIENT_SECRET",
                    "cli_client_id": "nearline-cli",
                    "admit": {
                        "email_domains": ["science.example"],
                        "groups": ["nearline-users"],
                        "operator_groups": {issuer: ["nearline-operators"]},
                    },
                    "leeway": 1,
                }
            )
        )
        os.environ["OIDC_TEST_CLIENT_SECRET"] = WEB_SECRET  # the served process inherits it
        yield Provider(keycloak, issuer, elsewhere, key, settings)


@pytest.fixture(scope="package")
def signin_live(
    tmp_path_factory: pytest.TempPathFactory, provider: Provider
) -> Iterator[LiveService]:
    """A live service that signs people in through the suite's Keycloak."""
    with serving(tmp_path_factory.mktemp("oidc"), extra=["--oidc", str(provider.settings)]) as s:
        yield s


@pytest.fixture(scope="package")
def kid(provider: Provider) -> str:
    """The key id under which the realm publishes the tests' key."""
    from .flows import kid_of

    return kid_of(provider)


def server_log(live: LiveService) -> str:
    assert live.log is not None
    return live.log.read_text(errors="replace")

"""Which verified tokens the API takes as access tokens, for providers that mark them in
different ways (docs/service.md, "Access tokens, not ID tokens"): the shapes of Keycloak's,
RFC 9068's, Okta's custom authorization servers', Auth0's and Entra ID's tokens (their
headers and the claims that tell the kinds apart). Keycloak's own are tested end to end in
tests/oidc/."""

from __future__ import annotations

import pytest

from nearline.identity._kinds import not_an_access_token, not_an_id_token
from nearline.identity._settings import ACCESS_TOKEN_TYPES

JWT = {"alg": "RS256", "typ": "JWT", "kid": "k"}
BARE = {"alg": "RS256", "kid": "k"}  # Okta's custom authorization servers set no typ
ACCESS = {
    "Keycloak": (JWT, {"typ": "Bearer", "scope": "openid email"}),
    "RFC 9068": ({**JWT, "typ": "at+jwt"}, {"scope": "openid", "client_id": "c"}),
    "RFC 9068, media type": ({**JWT, "typ": "application/at+jwt"}, {"scope": "openid"}),
    "Okta custom server": (BARE, {"scp": ["openid", "email"], "cid": "c", "ver": 1}),
    "Auth0 default profile": (JWT, {"scope": "openid read:jobs", "azp": "c"}),
    "Entra ID v2": (JWT, {"scp": "User.Read", "ver": "2.0", "azp": "c"}),
}
NOT_ACCESS = {
    "Keycloak ID token": (JWT, {"typ": "ID", "nonce": "n", "at_hash": "h"}),
    "Keycloak refresh token": (JWT, {"typ": "Refresh", "scope": "openid"}),
    "Keycloak ID token of a password grant": (JWT, {"typ": "ID", "at_hash": "h"}),
    "Okta ID token": (BARE, {"at_hash": "h", "amr": ["pwd"], "idp": "x", "ver": 1}),
    "Auth0 ID token without nonce": (JWT, {"nickname": "ada", "sid": "s"}),
    "Entra ID token": (JWT, {"nonce": "n", "ver": "2.0", "tid": "t"}),
    "an ID token with a scope beside its nonce": (JWT, {"nonce": "n", "scope": "openid"}),
    "an OpenID logout token": ({**JWT, "typ": "logout+jwt"}, {"events": {}}),
    "Okta org server": ({**BARE, "typ": "application/okta-internal-at+jwt"}, {"scp": ["x"]}),
}


@pytest.mark.parametrize("kind", list(ACCESS))
def test_an_access_token_is_taken(kind):
    header, claims = ACCESS[kind]
    assert not_an_access_token(header, claims, ACCESS_TOKEN_TYPES) is None


@pytest.mark.parametrize("kind", list(NOT_ACCESS))
def test_anything_else_is_refused_with_a_reason(kind):
    header, claims = NOT_ACCESS[kind]
    reason = not_an_access_token(header, claims, ACCESS_TOKEN_TYPES)
    assert reason is not None
    assert "send an access token" in reason


def test_an_operators_own_mark_is_taken_in_the_claim_or_the_header():
    marks = (*ACCESS_TOKEN_TYPES, "access")
    assert not_an_access_token(JWT, {"typ": "access"}, marks) is None
    assert not_an_access_token({**JWT, "typ": "access"}, {}, marks) is None
    assert not_an_access_token(JWT, {"typ": "access"}, ACCESS_TOKEN_TYPES) is not None


def test_the_sign_in_takes_an_id_token_and_nothing_else():
    assert not_an_id_token(JWT, {"typ": "ID", "nonce": "n"}, ACCESS_TOKEN_TYPES) is None
    assert not_an_id_token(BARE, {"nonce": "n"}, ACCESS_TOKEN_TYPES) is None  # unmarked
    assert not_an_id_token(JWT, {"typ": "Bearer"}, ACCESS_TOKEN_TYPES) is not None
    assert not_an_id_token({**JWT, "typ": "at+jwt"}, {}, ACCESS_TOKEN_TYPES) is not None

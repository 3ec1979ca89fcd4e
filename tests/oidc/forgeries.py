"""Forged tokens that name the realm's own RSA key are 401s, never 500s (issue 38).

The algorithm a token is checked with is its key's own (the JWK's ``alg``), never the one the
token's header asks for: ES256 and ES384 naming the RSA key once reached PyJWT with the bare
RSA key and failed with a ``TypeError`` (a 500, two tracebacks a request, the connection
dropped). Each forgery here is refused with a 401 and leaves no traceback in the server's log.
"""

from __future__ import annotations

import base64
import json

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from .conftest import server_log
from .flows import b64, claims_for, forge, hs256_with_public_key, unsigned


def ec_forgery(provider, kid: str, alg: str, curve: ec.EllipticCurve) -> str:
    """Signed with a key of the attacker's own, under the realm's RSA key id."""
    return forge(claims_for(provider, "x"), ec.generate_private_key(curve), kid, alg=alg)


def header_of(header: object, body: dict) -> str:
    return f"{b64(json.dumps(header).encode())}.{b64(json.dumps(body).encode())}.c2ln"


FORGERIES = {
    "ES256 naming the RSA key": lambda p, kid: ec_forgery(p, kid, "ES256", ec.SECP256R1()),
    "ES384 naming the RSA key": lambda p, kid: ec_forgery(p, kid, "ES384", ec.SECP384R1()),
    "HS256 keyed with the public key": lambda p, kid: hs256_with_public_key(
        claims_for(p, "x"), p, kid
    ),
    "alg none": lambda p, kid: unsigned(claims_for(p, "x"), kid),
    # the realm's own private key, but PS256 where the key is published for RS256
    "PS256 with the RS256 key": lambda p, kid: forge(
        claims_for(p, "x"), p.private_key, kid, alg="PS256"
    ),
    "a kid that does not exist": lambda p, kid: forge(
        claims_for(p, "x"), p.private_key, "no-such-key"
    ),
    "a kid that is a number": lambda p, kid: header_of(
        {"alg": "RS256", "kid": 7}, claims_for(p, "x")
    ),
    "a header that is a list": lambda p, kid: header_of(["RS256"], claims_for(p, "x")),
    "a header that is not JSON": lambda p, kid: (
        base64.urlsafe_b64encode(b"{alg").decode().rstrip("=") + ".e30.c2ln"
    ),
    "a header that is not base64": lambda p, kid: "%%%.e30.c2ln",
}


def test_the_realms_own_key_signs_the_control(signin_live, provider, kid):
    token = forge(claims_for(provider, "forgeries-control"), provider.private_key, kid)
    answer = httpx.get(
        f"{signin_live.url}/users/me", headers={"Authorization": f"Bearer {token}"}, timeout=60
    )
    assert answer.status_code == 200


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_a_forgery_is_a_401_and_no_traceback(signin_live, provider, kid, forgery):
    token = FORGERIES[forgery](provider, kid)
    before = len(server_log(signin_live))
    for path in ("/users/me", "/jobs"):
        answer = httpx.get(
            f"{signin_live.url}{path}", headers={"Authorization": f"Bearer {token}"}, timeout=60
        )
        assert answer.status_code == 401, answer.text
        assert answer.json()["detail"]
    assert "Traceback" not in server_log(signin_live)[before:]

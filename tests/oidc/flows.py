"""A person's browser steps through Keycloak's own pages, played with httpx (the Chromium test
plays them in a real browser): read the login form, post the password, follow what the
provider answers."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from html import unescape
from urllib.parse import urljoin

import httpx
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ..live_service import LiveService
from .conftest import PASSWORD, Provider

FORM = re.compile(r'<form[^>]*id="kc-form-login"[^>]*action="([^"]+)"', re.S)
ANY_FORM = re.compile(r'<form[^>]*action="([^"]+)"', re.S)


def new_browser(**kwargs) -> httpx.Client:
    """An httpx client that keeps cookies as a browser does. Keycloak marks its cookies
    Secure; a browser still sends them to a loopback address over plain HTTP (a secure
    context), so this one drops the mark as each answer arrives."""
    client = httpx.Client(timeout=60, **kwargs)

    def loopback(response: httpx.Response) -> None:
        for cookie in client.cookies.jar:
            cookie.secure = False

    client.event_hooks["response"] = [loopback]
    return client


def login_form(page: httpx.Response) -> str:
    """The URL Keycloak's login page posts to."""
    found = FORM.search(page.text) or ANY_FORM.search(page.text)
    assert found, f"no login form on Keycloak's page ({page.status_code}): {page.text[:500]}"
    return urljoin(str(page.url), unescape(found.group(1)))


def pass_login(browser: httpx.Client, page: httpx.Response, user: str) -> httpx.Response:
    """Post ``user``'s password to the login page ``page``; Keycloak's answer."""
    return browser.post(
        login_form(page), data={"username": user, "password": PASSWORD, "credentialId": ""}
    )


def web_signin(
    live: LiveService, user: str, back: str = "/app/#search"
) -> tuple[httpx.Client, str]:
    """Start the web page's sign-in and pass Keycloak's login as ``user``; the browser and the
    callback URL Keycloak sends it to (not yet followed)."""
    browser = new_browser()
    started = browser.get(f"{live.url}/signin", params={"return": back})
    assert started.status_code == 303, started.text
    page = browser.get(started.headers["location"], follow_redirects=True)
    answer = pass_login(browser, page, user)
    assert answer.status_code == 302, answer.text[:500]
    callback = answer.headers["location"]
    assert callback.startswith(f"{live.url}/signin/callback?"), callback
    return browser, callback


def finish_signin(browser: httpx.Client, callback: str) -> dict:
    """Follow the callback and take the page's token, as the page's script does."""
    landed = browser.get(callback)
    assert landed.status_code == 303, landed.text
    root = callback.split("/signin/")[0]
    session = browser.post(f"{root}/signin/session")
    assert session.status_code == 200, session.text
    return session.json()


def device_approve(uri: str, user: str) -> str:
    """Open the device flow's verification address as ``user``'s browser would, sign in, and
    grant; the text of the provider's last page."""
    with new_browser(follow_redirects=True) as browser:
        page = pass_login(browser, browser.get(uri), user)
        if 'name="accept"' in page.text:  # the consent screen the device grant shows
            page = browser.post(login_form(page), data={"accept": "Yes"})
        return page.text


# -- tokens made by hand, signed with the realm's own key or with others ---------------------
def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def kid_of(provider: Provider) -> str:
    """The key id under which the realm publishes the tests' key."""
    numbers = provider.private_key.public_key().public_numbers()
    keys = httpx.get(f"{provider.issuer}/protocol/openid-connect/certs").json()["keys"]
    for key in keys:
        if (
            key.get("kty") == "RSA"
            and jwt.algorithms.RSAAlgorithm.from_jwk(json.dumps(key)).public_numbers() == numbers
        ):  # type: ignore[union-attr]
            return key["kid"]
    raise AssertionError("the realm does not publish the tests' key")


def claims_for(provider: Provider, subject: str, **changes: object) -> dict:
    now = int(time.time())
    claims = {
        "iss": provider.issuer,
        "sub": subject,
        "aud": "nearline",
        "iat": now,
        "exp": now + 300,
        "preferred_username": "forged",
        "groups": ["nearline-users"],
        "typ": "Bearer",  # an access token, as Keycloak marks one
    }
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


def forge(claims: dict, key: rsa.RSAPrivateKey, kid: str, *, alg: str = "RS256") -> str:
    return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid})


def unsigned(claims: dict, kid: str) -> str:
    header = b64(json.dumps({"alg": "none", "typ": "JWT", "kid": kid}).encode())
    return f"{header}.{b64(json.dumps(claims).encode())}."


def hs256_with_public_key(claims: dict, provider: Provider, kid: str) -> str:
    """HS256 keyed with the provider's public key (PEM): the key confusion attack."""
    public = provider.private_key.public_key().public_bytes(
        serialization.Encoding.PEM,
        serialization.PublicFormat.SubjectPublicKeyInfo,
    )
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    body = b64(json.dumps(claims).encode())
    signature = hmac.new(public, f"{header}.{body}".encode(), hashlib.sha256).digest()
    return f"{header}.{body}.{b64(signature)}"

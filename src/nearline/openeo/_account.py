"""Who is asking, as openEO clients say it: the bearer token's openEO form, the OpenID
Connect provider a client signs in with (``GET /credentials/oidc``), and the signed-in user's
document (``GET /me``).

openEO clients send ``Authorization: Bearer oidc/PROVIDER/ACCESS_TOKEN`` after an OpenID
Connect sign-in and ``Bearer basic//TOKEN`` after a basic one; the token inside is what the
service checks, as it checks any bearer token. A bare token (one of nearline's own, as
``authenticate_bearer_token`` sends it) is taken as it is. ``authenticate_basic(user,
password)`` works with the user's own token as the password: nearline keeps no passwords, and
the token is what its bearer form would carry anyway.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any
from urllib.parse import urlsplit

from nearline.errors import OpenEOError
from nearline.identity import OidcSettings

DEVICE_GRANTS = [
    "urn:ietf:params:oauth:grant-type:device_code+pkce",
    "urn:ietf:params:oauth:grant-type:device_code",
    "refresh_token",
]
_OPENEO_TOKEN = re.compile(r"^(?:oidc/[^/]+|basic/)/(?P<token>.+)$")
_NOT_WORD = re.compile(r"\W+")


def basic_credentials(header: str | None) -> tuple[str, str]:
    """The user name and password of an HTTP Basic ``Authorization`` header (openEO's
    ``GET /credentials/basic``: nearline takes the user's own token as the password).

    Parameters
    ----------
    header
        The request's ``Authorization`` header, if any.

    Raises
    ------
    OpenEOError
        No header (``AuthenticationRequired``, 401), another scheme
        (``AuthenticationSchemeInvalid``, 403), or one that is not base64 of ``user:password``
        (``CredentialsInvalid``, 403).
    """
    if not header:
        raise OpenEOError("send your user name and token as HTTP Basic credentials",
                          status=401, openeo_code="AuthenticationRequired")  # fmt: skip
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        raise OpenEOError(f"/credentials/basic takes HTTP Basic credentials, not {scheme[:20]!r}",
                          status=403, openeo_code="AuthenticationSchemeInvalid")  # fmt: skip
    try:
        user, colon, password = base64.b64decode(encoded, validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        colon = ""
    if not colon or not user or not password:
        raise OpenEOError("these credentials are not base64 of user:password",
                          status=403, openeo_code="CredentialsInvalid")  # fmt: skip
    return user, password


def access_token(bearer: str) -> str:
    """The token inside an openEO bearer token (``oidc/PROVIDER/TOKEN``, ``basic//TOKEN``);
    any other token as it is.

    Parameters
    ----------
    bearer
        What followed ``Bearer `` in the ``Authorization`` header.
    """
    found = _OPENEO_TOKEN.match(bearer)
    return found["token"] if found else bearer


def provider_id(issuer: str) -> str:
    """A short id for the provider, as openEO asks (``[\\w]{1,20}``): a Keycloak realm's
    name, else the issuer's last path segment, else its host's first label."""
    parts = urlsplit(issuer)
    segment = parts.path.rstrip("/").rpartition("/")[2] or (parts.hostname or "").split(".")[0]
    return _NOT_WORD.sub("_", segment)[:20] or "oidc"


def oidc_providers(settings: OidcSettings | None) -> dict[str, Any]:
    """The body of ``GET /credentials/oidc``: the provider the service signs people in with,
    and its public client for the device flow (an empty list when the operator connected
    none: clients then sign in with nearline's own tokens).

    Parameters
    ----------
    settings
        The operator's sign-in settings (``nearline serve --oidc``), or None.
    """
    if settings is None:
        return {"providers": []}
    host = urlsplit(settings.issuer).hostname or settings.issuer
    return {
        "providers": [
            {
                "id": provider_id(settings.issuer),
                "issuer": settings.issuer,
                "title": f"Sign in through {host}",
                "scopes": settings.scopes.split(),
                "default_clients": [{"id": settings.login_client_id, "grant_types": DEVICE_GRANTS}],
            }
        ]
    }


def me_document(user: dict[str, Any], base: str) -> dict[str, Any]:
    """The body of ``GET /me`` from the service's own account of a user (``Service.user``):
    the name, and the disk their kept outputs may take and have left, where bounded.

    Parameters
    ----------
    user
        ``{"name", "quota": {"disk", ...}, "usage": {"disk", ...}}``.
    base
        The openEO face's root URL.
    """
    quota = user["quota"].get("disk")
    document: dict[str, Any] = {
        "user_id": user["name"],
        "name": user["name"],
        "links": [{"rel": "self", "type": "application/json", "href": f"{base}/me"}],
    }
    if quota is not None:
        used = int(user["usage"].get("disk") or 0)
        document["storage"] = {"quota": int(quota), "free": max(0, int(quota) - used)}
    return document

"""Signing in through an OpenID Connect provider: the provider's discovery document and
keys, and checking its tokens (the settings and the admission policy: _settings.py).

Tokens are checked with PyJWT (the most used JWT library for Python, kept by the jpadilla/
PyJWT project, with ``PyJWKClient`` for the provider's key set): the signature against the
issuer's published key the token's ``kid`` names (cached; fetched again, at most every few
seconds, when a token names a key id not yet seen, as after the provider rotates its keys),
with that key's own algorithm alone (its JWK's ``alg``, else the one its ``kty`` and ``crv``
imply; never the one the token's header asks for, so ``alg: none``, HS256 keyed with the
public key, ES256 naming an RSA key and PS256 against an RS256 key are all refused), the
issuer among the allowed ones, the audience, ``exp``, ``nbf`` and ``iat``, and the kind of
token (_kinds.py): the API takes access tokens only, the web page's sign-in ID tokens only.
Whatever fails in checking a token is a 401 with a short reason, never a 500.

Nothing here logs a token, a code or a secret: errors name the rule that failed, never the
value.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import secrets
import threading
import time
from typing import Any

import httpx
import jwt

from nearline.errors import ConfigError, ServiceError, Unauthorized
from nearline.identity._kinds import not_an_access_token, not_an_id_token
from nearline.identity._settings import OidcSettings

log = logging.getLogger(__name__)

ASYMMETRIC = {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}
DISCOVERY = "/.well-known/openid-configuration"
HTTP_TIMEOUT = 10.0
DISCOVERY_TTL = 3600.0  # seconds a discovery document is kept
REFETCH_AFTER = 5.0  # an unknown kid fetches the key set again, at most this often (seconds):
# a rotated key is taken within seconds, and forged kids cannot make the service hammer the provider


def pkce_pair() -> tuple[str, str]:
    """A PKCE verifier and its S256 challenge (RFC 7636): the web page's sign-in and
    ``nearline login`` each prove with it that they are who began the flow."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class ProviderUnreachable(ServiceError):
    """The sign-in provider did not answer: 503, the operator's to fix."""

    status = 503
    code = "provider-unreachable"


def discover(issuer: str) -> dict[str, Any]:
    """The provider's discovery document, checked to be the issuer's own."""
    try:
        answer = httpx.get(issuer.rstrip("/") + DISCOVERY, timeout=HTTP_TIMEOUT)
        answer.raise_for_status()
        document = answer.json()
    except (httpx.HTTPError, ValueError) as error:
        raise ProviderUnreachable(
            f"the sign-in provider's discovery document at {issuer}{DISCOVERY} could not be "
            f"read ({type(error).__name__}); check `issuer:` (nearline doctor oidc)"
        ) from None
    if document.get("issuer") != issuer:
        raise ProviderUnreachable(
            f"the discovery document at {issuer}{DISCOVERY} names another issuer"
        )
    return document


class Provider:
    """One issuer: its discovery document and key set, fetched on first use and kept."""

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer
        self._document: dict[str, Any] | None = None
        self._fetched = 0.0
        self._keys: jwt.PyJWKClient | None = None
        self._lock = threading.Lock()

    @property
    def document(self) -> dict[str, Any]:
        with self._lock:
            if self._document is None or time.monotonic() - self._fetched > DISCOVERY_TTL:
                self._document = discover(self.issuer)
                self._fetched = time.monotonic()
                self._keys = jwt.PyJWKClient(
                    self._document["jwks_uri"], cache_keys=True, lifespan=DISCOVERY_TTL,
                    timeout=int(HTTP_TIMEOUT), cooldown_duration=REFETCH_AFTER,
                )  # fmt: skip
            return self._document

    def endpoint(self, name: str) -> str | None:
        return self.document.get(name)

    @property
    def algorithms(self) -> list[str]:
        announced = self.document.get("id_token_signing_alg_values_supported") or ["RS256"]
        return sorted(ASYMMETRIC.intersection(announced))

    def signing_key(self, token: str) -> jwt.PyJWK:
        """The published key the token's ``kid`` names, bound to its own algorithm (the key
        set is fetched again once when the kid is unknown)."""
        self.document  # noqa: B018 (fetches the key set's address)
        assert self._keys is not None
        try:
            return self._keys.get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError:
            raise ProviderUnreachable(f"the keys of {self.issuer} could not be read") from None
        except (jwt.PyJWTError, ValueError, TypeError, KeyError):
            raise Unauthorized("the token was not signed with one of its issuer's keys") from None


class Verifier:
    """Checks the provider's tokens against the operator's settings: access tokens for the
    API (:meth:`access_claims`), ID tokens for the web page's sign-in (:meth:`id_claims`).

    Parameters
    ----------
    settings
        The operator's settings.
    """

    def __init__(self, settings: OidcSettings) -> None:
        self.settings = settings
        self.providers = {issuer: Provider(issuer) for issuer in settings.accepted_issuers}

    @property
    def home(self) -> Provider:
        """The provider the web page and ``nearline login`` sign in with."""
        return self.providers[self.settings.issuer]

    def access_claims(self, token: str) -> dict[str, Any]:
        """The verified claims of an access token sent as a bearer token; :class:`Unauthorized`
        naming what failed (an ID token, a refresh token, a forgery...).

        Parameters
        ----------
        token
            The bearer token, as the caller sent it.
        """
        header, claims = self._verified(token, audience=self.settings.expected_audience)
        reason = not_an_access_token(header, claims, self.settings.access_token_types)
        if reason:
            raise Unauthorized(reason)
        return claims

    def id_claims(self, token: str) -> dict[str, Any]:
        """The verified claims of the ID token the provider's token endpoint gave the web
        page's sign-in (issued to ``client_id``); :class:`Unauthorized` naming what failed.

        Parameters
        ----------
        token
            The ``id_token`` of the token endpoint's answer.
        """
        header, claims = self._verified(token, audience=self.settings.client_id)
        reason = not_an_id_token(header, claims, self.settings.access_token_types)
        if reason:
            raise Unauthorized(reason)
        return claims

    def _verified(self, token: str, *, audience: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """(header, claims) of ``token`` whatever its kind; any failure is an Unauthorized
        with a short reason (a malformed token makes PyJWT and cryptography raise more than
        InvalidTokenError: none of it may become a 500)."""
        try:
            return self._checked(token, audience)
        except (Unauthorized, ProviderUnreachable):
            raise
        except Exception as error:  # whatever a hostile token provokes is a 401
            log.info("a bearer token was refused: %s", type(error).__name__)
            raise Unauthorized(f"the token was refused: {type(error).__name__}") from None

    def _checked(self, token: str, audience: str) -> tuple[dict[str, Any], dict[str, Any]]:
        try:
            header = jwt.get_unverified_header(token)
            issuer = jwt.decode(token, options={"verify_signature": False}).get("iss")
        except jwt.InvalidTokenError:
            raise Unauthorized("the bearer token is neither nearline's nor a JWT") from None
        provider = self.providers.get(issuer) if isinstance(issuer, str) else None
        if provider is None:
            raise Unauthorized("the token's issuer is not one this service accepts")
        if header.get("alg") not in provider.algorithms:
            raise Unauthorized(
                f"the token's algorithm is not one its issuer signs with ({provider.algorithms})"
            )
        key = provider.signing_key(token)
        if key.algorithm_name not in ASYMMETRIC or header["alg"] != key.algorithm_name:
            raise Unauthorized("the token's algorithm is not the one its key signs with")
        try:
            claims = jwt.decode(
                token, key, algorithms=[key.algorithm_name], issuer=issuer, audience=audience,
                leeway=self.settings.leeway, options={"require": ["exp", "iat", "iss", "sub"]},
            )  # fmt: skip
        except jwt.ExpiredSignatureError:
            raise Unauthorized("the token has expired: sign in again") from None
        except jwt.ImmatureSignatureError:
            raise Unauthorized("the token is not valid yet (nbf or iat in the future)") from None
        except jwt.InvalidAudienceError:
            raise Unauthorized("the token was issued for another audience") from None
        except jwt.MissingRequiredClaimError as error:
            if error.claim == "aud":
                raise Unauthorized("the token names no audience: not issued for this") from None
            raise Unauthorized(f"the token lacks its {error.claim!r} claim") from None
        except jwt.InvalidIssuerError:
            raise Unauthorized("the token's issuer is not one this service accepts") from None
        except jwt.InvalidTokenError as error:
            raise Unauthorized(f"the token was refused: {type(error).__name__}") from None
        return header, claims

    def admit(self, claims: dict[str, Any]) -> tuple[str, str, str, bool]:
        """(issuer, subject, a name to suggest, operator) for verified ``claims`` the policy
        admits; :class:`Forbidden` naming the rule otherwise.

        Parameters
        ----------
        claims
            A verified token's claims.
        """
        operator = self.settings.admit.check(claims)
        wanted = str(
            claims.get("preferred_username")
            or str(claims.get("email") or "").partition("@")[0]
            or "user"
        )
        return claims["iss"], str(claims["sub"]), wanted, operator


def _client_known(token_endpoint: str, client_id: str, secret: str | None) -> bool:
    """Whether the provider knows ``client_id`` (and its secret): a made-up code is refused
    as ``invalid_grant`` for a registered client and ``invalid_client`` for any other
    (RFC 6749, 5.2)."""
    form = {"grant_type": "authorization_code", "code": "nearline-doctor-probe",
            "redirect_uri": "http://127.0.0.1/doctor", "client_id": client_id}  # fmt: skip
    auth = (client_id, secret) if secret else None
    answer = httpx.post(token_endpoint, data=form, auth=auth, timeout=HTTP_TIMEOUT)
    try:
        error = answer.json().get("error")
    except ValueError:
        error = None
    return error not in ("invalid_client", "unauthorized_client") and answer.status_code != 401


def check_provider(settings: OidcSettings) -> str:
    """What ``nearline doctor oidc`` proves of the configured provider: its discovery document
    is reachable and its own, its key set holds signing keys, and it knows the clients;
    :class:`ConfigError` naming what is wrong otherwise.

    Parameters
    ----------
    settings
        The operator's settings (``nearline serve --oidc FILE``).
    """
    document = discover(settings.issuer)
    try:
        keys = jwt.PyJWKSet.from_dict(httpx.get(document["jwks_uri"], timeout=10).json())
    except (httpx.HTTPError, ValueError, KeyError, jwt.PyJWTError) as error:
        raise ConfigError(f"the key set of {settings.issuer}: {error}") from None
    signing = [k for k in keys.keys if k.public_key_use in (None, "sig")]
    if not signing:
        raise ConfigError(f"{settings.issuer} publishes no signing key")
    clients = {settings.client_id: settings.client_secret, settings.login_client_id: None}
    if settings.login_client_id == settings.client_id:
        clients = {settings.client_id: settings.client_secret}
    for client, secret in clients.items():
        if not _client_known(document["token_endpoint"], client, secret):
            raise ConfigError(
                f"{settings.issuer} does not know the client {client!r} (or its secret): "
                "register it with the provider"
            )
    device = "with" if document.get("device_authorization_endpoint") else "without"
    return (
        f"{settings.issuer}: discovery document, {len(signing)} signing key(s), clients "
        f"{', '.join(clients)} registered; {device} a device flow for `nearline login`"
    )

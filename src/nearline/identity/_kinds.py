"""Which kind of token a verified JWT is: an access token, which the API takes, or an ID
token, which only the web page's sign-in takes (from the provider's token endpoint, never
from a caller).

Both are signed by the same issuer with the same keys, and with the documented settings
(``audience`` left to ``client_id``) an ID token issued to the web client names the API's
audience too; a caller that sends an ID token as a bearer must still be refused, or a
short-lived proof of a sign-in becomes an API credential. The rule, in order:

1. a ``typ`` *claim* (Keycloak's: ``Bearer``, ``ID``, ``Refresh``, ``Logout``...) decides:
   one of ``access_token_types`` is an access token, anything else is not;
2. else the JOSE *header's* ``typ`` (RFC 9068: ``at+jwt``) decides: one of
   ``access_token_types`` is an access token; ``JWT`` or none says nothing; any other is not;
3. else, a provider that marks neither: a token carrying a claim only ID tokens carry
   (``nonce``, ``at_hash``, ``c_hash``; OpenID Connect Core 1.0, 2 and 3.3.2.11) is not an
   access token, and one with neither ``scope`` (RFC 9068, 2.2.3) nor ``scp`` (Okta, Entra
   ID) is not either: an ID token never carries a scope.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

NEUTRAL_HEADER_TYPES = {"", "jwt", "application/jwt"}
ID_TOKEN_ONLY = ("nonce", "at_hash", "c_hash")
SCOPE_CLAIMS = ("scope", "scp")
ID_TYPE = "id"  # Keycloak's typ claim on an ID token


def _marked(value: Any, marks: Iterable[str]) -> bool:
    return str(value).lower() in {mark.lower() for mark in marks}


def not_an_access_token(
    header: dict[str, Any], claims: dict[str, Any], marks: Iterable[str]
) -> str | None:
    """Why a verified token is not an access token (a reason to show); None if it is one.

    Parameters
    ----------
    header
        The token's JOSE header.
    claims
        Its verified claims.
    marks
        The ``typ`` values (header or claim) that mark an access token.
    """
    marks = tuple(marks)
    if "typ" in claims:
        if _marked(claims["typ"], marks):
            return None
        return f"the token's typ claim says {str(claims['typ'])[:20]!r}: send an access token"
    header_typ = str(header.get("typ") or "")
    if _marked(header_typ, marks):
        return None
    if header_typ.lower() not in NEUTRAL_HEADER_TYPES:
        return f"the token's header says typ {header_typ[:40]!r}: send an access token"
    if any(claim in claims for claim in ID_TOKEN_ONLY):
        return "the token carries an ID token's claims (nonce, at_hash): send an access token"
    if not any(claim in claims for claim in SCOPE_CLAIMS):
        return (
            "the token is not marked as an access token (no typ, no scope): send an access "
            "token, or name its typ in access_token_types"
        )
    return None


def not_an_id_token(
    header: dict[str, Any], claims: dict[str, Any], marks: Iterable[str]
) -> str | None:
    """Why a verified token the provider's token endpoint gave as ``id_token`` is not one; None
    if it is (``header``, ``claims`` and ``marks`` as :func:`not_an_access_token` takes them)."""
    if "typ" in claims and str(claims["typ"]).lower() != ID_TYPE:
        return "the provider's id_token is not an ID token (its typ claim): sign in again"
    if _marked(header.get("typ") or "", marks):
        return "the provider's id_token is an access token (its header's typ): sign in again"
    return None

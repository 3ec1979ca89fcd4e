"""The web page's sign-in through the operator's OpenID Connect provider: the authorization
code flow with PKCE (RFC 7636), ``state`` and ``nonce``.

1. ``GET /signin?return=/app/#search`` keeps a fresh state, nonce and PKCE verifier for ten
   minutes, binds the state to this browser (an HttpOnly cookie) and sends it to the
   provider's login page.
2. ``GET /signin/callback?code=...&state=...`` takes that state once (a replayed or forged
   callback is a 400), checks the cookie holds the same, trades the code and verifier for
   tokens at the provider, checks the ID token (signature, issuer, audience, expiry, nonce),
   applies the operator's policy, and makes a personal token for this sign-in (named
   "web sign-in", living ``session_hours``). It hands the page that token through a one-use,
   one-minute HttpOnly cookie and sends the browser back to ``return`` (only a page of
   nearline's own, under /app/).
3. The page's ``POST /signin/session`` trades the cookie for the token (the token never is in
   a URL, so in no history or log); ``POST /signout`` revokes it and names the provider's end
   of session.

``GET /signin/config`` tells ``nearline login`` which provider and client to use. With no
provider configured, all of these are 404.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlencode

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from nearline.api._adapter import User, service_of
from nearline.api._auth import Credentials
from nearline.api._stac import base_url
from nearline.errors import InvalidRequest, NotFound, Unauthorized
from nearline.identity import Handoffs, pkce_pair
from nearline.orders import Service

STATE_COOKIE = "nearline-signin"
HANDOFF_COOKIE = "nearline-handoff"
PENDING_SECONDS = 600
HANDOFF_SECONDS = 60
HOME = "/app/"


class SignInNotConfigured(NotFound):
    code = "not-found"


@dataclass(frozen=True)
class Pending:
    nonce: str
    verifier: str
    back_to: str
    made: float


def own_page(back_to: str | None) -> str:
    """``back_to`` if it is one of nearline's pages (a path under /app/); a return URL to
    anywhere else is refused, never followed."""
    back_to = back_to or HOME
    if not back_to.startswith(HOME) or "\\" in back_to or any(c < " " for c in back_to):
        raise InvalidRequest("return: only a page of this service under /app/ may be returned to")
    return back_to


def configured(service: Service) -> Any:
    if service.verifier is None:
        raise SignInNotConfigured("this service signs in with API tokens only (no provider)")
    return service.verifier


def trade_code(service: Service, code: str, verifier: str, redirect_uri: str) -> dict[str, Any]:
    """The provider's tokens for an authorization code (the code is good once)."""
    signin = configured(service)
    settings = signin.settings
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
        "client_id": settings.client_id,
    }
    auth = (settings.client_id, settings.client_secret) if settings.client_secret else None
    answer = httpx.post(signin.home.endpoint("token_endpoint"), data=form, auth=auth, timeout=30)
    if answer.status_code != 200:
        raise InvalidRequest(
            "the provider refused the sign-in's code (used before, expired, or not this "
            "client's): sign in again"
        )
    return answer.json()


def build_router(sessions: Handoffs, handoffs: Handoffs) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/signin/config")
    def config(request: Request) -> Response:
        settings = configured(service_of(request)).settings
        return JSONResponse(
            {
                "issuer": settings.issuer,
                "client_id": settings.login_client_id,
                "scopes": settings.scopes,
                "audience": settings.expected_audience,
            }
        )

    @router.get("/signin")
    def start(request: Request) -> Response:
        signin = configured(service_of(request))
        back_to = own_page(request.query_params.get("return"))
        state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        verifier, challenge = pkce_pair()
        sessions.put(state, asdict(Pending(nonce, verifier, back_to, time.time())))
        query = urlencode(
            {
                "response_type": "code",
                "client_id": signin.settings.client_id,
                "redirect_uri": f"{base_url(request)}/signin/callback",
                "scope": signin.settings.scopes,
                "state": state,
                "nonce": nonce,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            }
        )
        reply = RedirectResponse(
            f"{signin.home.endpoint('authorization_endpoint')}?{query}", status_code=303
        )
        reply.set_cookie(
            STATE_COOKIE, state, max_age=PENDING_SECONDS, path="/signin",
            httponly=True, samesite="lax", secure=request.url.scheme == "https",
        )  # fmt: skip
        return reply

    @router.get("/signin/callback")
    def callback(request: Request) -> Response:
        service = service_of(request)
        signin = configured(service)
        state = request.query_params.get("state") or ""
        code = request.query_params.get("code") or ""
        if request.query_params.get("error"):
            raise InvalidRequest("the provider did not sign you in: go back and try again")
        kept = sessions.take(state) if state else None
        pending = Pending(**kept) if kept is not None else None
        if pending is None or not secrets.compare_digest(
            request.cookies.get(STATE_COOKIE, ""), state
        ):
            raise InvalidRequest(
                "this sign-in's state is missing, used, expired or not this browser's: "
                "sign in again from the page"
            )
        if not code:
            raise InvalidRequest("the provider sent no authorization code: sign in again")
        tokens = trade_code(service, code, pending.verifier, f"{base_url(request)}/signin/callback")
        claims = signin.id_claims(tokens.get("id_token") or "")
        if not secrets.compare_digest(str(claims.get("nonce", "")), pending.nonce):
            raise Unauthorized("the ID token's nonce is not this sign-in's: sign in again")
        user = service.sign_in(claims)
        hours = signin.settings.session_hours
        made, secret = service.users.tokens.create(user, "web sign-in", days=hours / 24)
        handoff = secrets.token_urlsafe(32)
        handoffs.put(handoff, [secret, made.id, user])
        reply = RedirectResponse(f"{base_url(request)}{pending.back_to}", status_code=303)
        reply.delete_cookie(STATE_COOKIE, path="/signin")
        reply.set_cookie(
            HANDOFF_COOKIE, handoff, max_age=HANDOFF_SECONDS, path="/signin/session",
            httponly=True, samesite="strict", secure=request.url.scheme == "https",
        )  # fmt: skip
        return reply

    @router.post("/signin/session")
    def session(request: Request) -> Response:
        configured(service_of(request))
        found = handoffs.take(request.cookies.get(HANDOFF_COOKIE, "") or "-")
        if found is None:
            raise SignInNotConfigured("no sign-in is waiting for this browser")
        secret, token_id, user = found
        reply = JSONResponse(
            {"token": secret, "id": token_id, "user": user},
            headers={"Cache-Control": "no-store"},
        )
        reply.delete_cookie(HANDOFF_COOKIE, path="/signin/session")
        return reply

    @router.post("/signout")
    def sign_out(request: Request, user: User, credentials: Credentials) -> Response:
        service = service_of(request)
        if credentials is not None:
            service.users.tokens.revoke_secret(credentials.credentials, owner=user)
        end = None
        if service.verifier is not None:
            end = service.verifier.home.endpoint("end_session_endpoint")
            if end:
                back = urlencode(
                    {
                        "client_id": service.verifier.settings.client_id,
                        "post_logout_redirect_uri": f"{base_url(request)}{HOME}",
                    }
                )
                end = f"{end}?{back}"
        return JSONResponse({"signed_out": user, "end_session": end})

    return router


def install(app: Any, service: Service) -> None:
    """The sign-in's routes; what a sign-in keeps between its requests is in the service's
    database, so any worker process may answer each of them."""
    sessions = Handoffs(service.database, "pending", PENDING_SECONDS)
    handoffs = Handoffs(service.database, "handoff", HANDOFF_SECONDS)
    app.include_router(build_router(sessions, handoffs))

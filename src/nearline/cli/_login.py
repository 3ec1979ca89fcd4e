"""``nearline login``, ``nearline token`` and ``nearline tokens``: signing in from a terminal or
a remote notebook through the service's OpenID Connect provider, and the personal tokens
a user keeps.

``login`` asks the service which provider and client to use (``GET /signin/config``), then
uses the device authorization grant (RFC 8628) where the provider offers it, as openEO's
client does: it prints an address and a code to open on any device. Otherwise (or with
``--flow code``) the authorization code flow with PKCE through a redirect to a loopback
port on this machine (RFC 8252), as ``gcloud auth login`` does. The provider's tokens are
kept, readable by this user alone, in ``$NEARLINE_LOGIN`` or ``~/.config/nearline/login.json``;
``nearline token`` prints a valid access token, refreshing it when it is about to expire:

    token = subprocess.check_output(["nearline", "token"], text=True).strip()
    catalog = pystac_client.Client.open(URL, headers={"Authorization": f"Bearer {token}"})
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nearline.durable import publish, temporary_path
from nearline.errors import ConfigError

if TYPE_CHECKING:
    from http.server import HTTPServer
    from types import ModuleType

    import httpx

# nearline.identity (for PKCE) is imported by the two flows that use it, and httpx by
# _httpx() alone, when a request is about to be made: `nearline token --help` needs neither

DEFAULT_URL = "http://127.0.0.1:8000"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
EARLY = 30.0  # refresh an access token this many seconds before it expires
LOOPBACK_WAIT = 300.0


def _httpx() -> ModuleType:
    """httpx, imported on first use: the one place this module imports it."""
    import httpx

    return httpx


def login_file() -> Path:
    if named := os.environ.get("NEARLINE_LOGIN"):
        return Path(named)
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "nearline" / "login.json"


def service_url(args: argparse.Namespace) -> str:
    return (args.url or os.environ.get("NEARLINE_URL") or DEFAULT_URL).rstrip("/")


def _json(answer: httpx.Response, what: str) -> dict[str, Any]:
    if answer.status_code not in (200, 201):
        try:
            said = answer.json()
            why = said.get("error_description") or said.get("detail") or said.get("error")
        except ValueError:
            why = answer.reason_phrase
        raise ConfigError(f"{what}: {answer.status_code} {why}")
    return answer.json()


def provider_of(url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The service's sign-in settings and its provider's discovery document."""
    httpx = _httpx()

    try:
        config = _json(httpx.get(f"{url}/signin/config", timeout=30), f"{url}/signin/config")
        issuer = config["issuer"]
        document = _json(
            httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=30),
            f"the discovery document of {issuer}",
        )
    except httpx.HTTPError as error:
        raise ConfigError(f"{url} or its sign-in provider did not answer: {error}") from None
    if document.get("issuer") != issuer:
        raise ConfigError(f"the discovery document of {issuer} names another issuer")
    return config, document


def device_flow(config: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """RFC 8628, with PKCE as well (Keycloak asks for it from a client that requires it)."""
    httpx = _httpx()

    from nearline.identity import pkce_pair

    verifier, challenge = pkce_pair()
    started = _json(
        httpx.post(
            document["device_authorization_endpoint"],
            data={
                "client_id": config["client_id"],
                "scope": config["scopes"],
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            },
            timeout=30,
        ),
        "the provider's device authorization endpoint",
    )
    where = started.get("verification_uri_complete") or started["verification_uri"]
    print(f"To sign in, open {where}", flush=True)
    print(f"and check that it shows the code {started['user_code']}", flush=True)
    interval = float(started.get("interval", 5))
    deadline = time.monotonic() + float(started.get("expires_in", 600))
    while time.monotonic() < deadline:
        time.sleep(interval)
        answer = httpx.post(
            document["token_endpoint"],
            data={
                "grant_type": DEVICE_GRANT,
                "device_code": started["device_code"],
                "client_id": config["client_id"],
                "code_verifier": verifier,
            },
            timeout=30,
        )
        if answer.status_code == 200:
            return answer.json()
        error = answer.json().get("error")
        if error == "slow_down":
            interval += 5
        elif error != "authorization_pending":
            raise ConfigError(f"the provider ended the sign-in: {error}")
    raise ConfigError("the sign-in was not completed in time: run `nearline login` again")


def _loopback() -> HTTPServer:
    """The loopback end of the code flow: a server on a free port of 127.0.0.1 that takes one
    redirect and says so to the browser; its handler class keeps the query as ``received``.
    (http.server is imported here: `nearline token`, run once a request by scripts, needs
    none of it.)"""
    from http.server import BaseHTTPRequestHandler, HTTPServer
    from urllib.parse import parse_qs, urlparse

    class Redirect(BaseHTTPRequestHandler):
        received: dict[str, str] | None = None

        def do_GET(self) -> None:
            query = parse_qs(urlparse(self.path).query)
            type(self).received = {key: values[0] for key, values in query.items()}
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.end_headers()
            self.wfile.write(b"nearline: signed in; you may close this tab.\n")

        def log_message(self, *args: Any) -> None:  # the query holds the code: never logged
            pass

    return HTTPServer(("127.0.0.1", 0), Redirect)


def code_flow(config: dict[str, Any], document: dict[str, Any], *, browser: bool) -> dict:
    import secrets
    import webbrowser
    from urllib.parse import urlencode

    httpx = _httpx()

    from nearline.identity import pkce_pair

    server = _loopback()
    handler = server.RequestHandlerClass
    server.timeout = 1
    redirect_uri = f"http://127.0.0.1:{server.server_address[1]}/callback"
    state = secrets.token_urlsafe(32)
    verifier, challenge = pkce_pair()
    query = urlencode(
        {
            "response_type": "code",
            "client_id": config["client_id"],
            "redirect_uri": redirect_uri,
            "scope": config["scopes"],
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
    )
    where = f"{document['authorization_endpoint']}?{query}"
    print(f"To sign in, open {where}", flush=True)
    if browser:
        webbrowser.open(where)
    deadline = time.monotonic() + LOOPBACK_WAIT
    with server:
        while handler.received is None and time.monotonic() < deadline:
            server.handle_request()
    received = handler.received or {}
    if not secrets.compare_digest(received.get("state", ""), state):
        raise ConfigError("the sign-in came back without this login's state: try again")
    if "code" not in received:
        raise ConfigError(f"the provider did not sign you in: {received.get('error', 'no code')}")
    form = {
        "grant_type": "authorization_code",
        "code": received["code"],
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
        "client_id": config["client_id"],
    }
    return _json(httpx.post(document["token_endpoint"], data=form, timeout=30), "the code")


def save(url: str, config: dict, document: dict, tokens: dict[str, Any]) -> None:
    kept = {
        "url": url,
        "issuer": config["issuer"],
        "client_id": config["client_id"],
        "token_endpoint": document["token_endpoint"],
        "access_token": tokens["access_token"],
        "refresh_token": tokens.get("refresh_token"),
        "expires_at": time.time() + float(tokens.get("expires_in", 300)),
    }
    path = login_file()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = temporary_path(path)
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as stream:  # this user's alone from its first byte
        json.dump(kept, stream)
    publish(partial, path)


def access_token() -> str:
    """A valid access token of the kept sign-in, refreshed first when it is about to expire."""
    path = login_file()
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        raise ConfigError("not signed in: run `nearline login` first") from None
    if kept["expires_at"] - EARLY > time.time():
        return kept["access_token"]
    if not kept.get("refresh_token"):
        raise ConfigError("the sign-in has expired: run `nearline login` again")
    httpx = _httpx()

    answer = httpx.post(
        kept["token_endpoint"],
        data={
            "grant_type": "refresh_token",
            "refresh_token": kept["refresh_token"],
            "client_id": kept["client_id"],
        },
        timeout=30,
    )
    if answer.status_code != 200:
        raise ConfigError("the sign-in could not be renewed: run `nearline login` again")
    tokens = answer.json()
    config = {"issuer": kept["issuer"], "client_id": kept["client_id"]}
    tokens.setdefault("refresh_token", kept["refresh_token"])
    save(kept["url"], config, {"token_endpoint": kept["token_endpoint"]}, tokens)
    return tokens["access_token"]


def run_login(args: argparse.Namespace) -> int:
    httpx = _httpx()

    url = service_url(args)
    config, document = provider_of(url)
    if args.flow == "device" and not document.get("device_authorization_endpoint"):
        raise ConfigError(f"{config['issuer']} offers no device flow: use --flow code")
    use_device = args.flow != "code" and bool(document.get("device_authorization_endpoint"))
    if use_device:
        tokens = device_flow(config, document)
    else:
        tokens = code_flow(config, document, browser=not args.no_browser)
    save(url, config, document, tokens)
    name = _json(
        httpx.get(f"{url}/users/me", headers=_bearer(tokens["access_token"]), timeout=30),
        "the service refused the sign-in",
    )["name"]
    print(f"signed in to {url} as {name}", flush=True)
    return 0


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def run_token(args: argparse.Namespace) -> int:
    print(access_token())
    return 0


def run_tokens(args: argparse.Namespace) -> int:
    """Personal tokens, through the service's API as the signed-in user."""
    httpx = _httpx()

    token = os.environ.get("NEARLINE_TOKEN") or access_token()
    url = service_url(args)
    if args.url is None and not os.environ.get("NEARLINE_URL") and login_file().exists():
        url = json.loads(login_file().read_text())["url"]
    with httpx.Client(base_url=url, headers=_bearer(token), timeout=30) as api:
        if args.action == "create":
            body = {"name": args.name, "days": args.days}
            made = _json(api.post("/users/me/tokens", json=body), "the service")
            print(made["token"])
            print(f"token {made['id']} ({made['name']}), until {made['expires']}", file=sys.stderr)
        elif args.action == "list":
            for t in _json(api.get("/users/me/tokens"), "the service")["tokens"]:
                state = f"revoked {t['revoked']}" if t["revoked"] else f"until {t['expires']}"
                print(f"{t['id']}  {t['name']}  {state}")
        else:
            gone = api.delete(f"/users/me/tokens/{args.id}")
            if gone.status_code != 204:
                raise ConfigError(f"token {args.id}: {gone.json().get('detail', gone.status_code)}")
            print(f"revoked {args.id}")
    return 0


def add_login_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``login [--url URL] [--flow auto|device|code]`` to ``subparsers``."""
    login = subparsers.add_parser(
        "login",
        description="Sign in to a nearline service through its OpenID Connect provider: the "
        "device flow where the provider offers it, else the code flow with PKCE through a "
        "loopback redirect. The tokens are kept for `nearline token` and `nearline tokens`.",
    )
    login.add_argument(
        "--url", default=None, help=f"the service (default: $NEARLINE_URL or {DEFAULT_URL})"
    )
    login.add_argument(
        "--flow", choices=("auto", "device", "code"), default="auto",
        help="device: a code to enter on any device; code: a browser on this machine, "
        "redirected to a loopback port; auto (default): device where the provider offers it",
    )  # fmt: skip
    login.add_argument("--no-browser", action="store_true", help="print the address only")
    login.set_defaults(func=run_login)
    return login


def add_token_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``token`` to ``subparsers``."""
    token = subparsers.add_parser("token")
    token.set_defaults(func=run_token)
    return token


def add_tokens_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``tokens [--url URL] {create,list,revoke}`` to ``subparsers``."""
    tokens = subparsers.add_parser("tokens")
    tokens.add_argument("--url", default=None, help="the service (default: the one signed in to)")
    actions = tokens.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="make a token and print it (shown once)")
    create.add_argument("name")
    create.add_argument("--days", type=float, default=90, help="how long it lives (at most 366)")
    actions.add_parser("list", help="your tokens (never their secrets)")
    actions.add_parser("revoke", help="revoke one of your tokens").add_argument("id")
    tokens.set_defaults(func=run_tokens)
    return tokens

"""Signing in through a real OpenID Connect provider (Keycloak), as people and attackers do:
the API with the provider's tokens, the operator's policy, the web page's code flow with PKCE
(played with httpx here, in Chromium at the end), `nearline login`, and personal tokens.

Every test of the sign-in is collected here: one Keycloak a session serves them all. `make
test` hands out whole files (pytest-xdist's ``--dist loadfile``) and each worker that takes a
file of this folder starts a Keycloak of its own (a gigabyte of heap), so the tests kept in
sibling modules (issue 38's: token kinds, forgeries, racing first sign-ins, operators per
issuer) are imported below rather than named ``test_*.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import httpx
import jwt
import pystac_client
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from playwright.sync_api import expect

from ..live_service import nearline
from ..service.conftest import deploy
from ..web.conftest import snap
from .conftest import PASSWORD, WEB_SECRET, pem_of, server_log
from .first_signin_race import (  # noqa: F401 (collected here: one file, one Keycloak)
    race_live,
    test_eight_new_people_whose_names_collide_sign_in_at_once,
    test_sixteen_first_requests_of_one_person_make_one_user,
)
from .flows import (
    claims_for,
    device_approve,
    finish_signin,
    forge,
    hs256_with_public_key,
    kid_of,
    new_browser,
    pass_login,
    unsigned,
    web_signin,
)
from .forgeries import (  # noqa: F401
    test_a_forgery_is_a_401_and_no_traceback,
    test_the_realms_own_key_signs_the_control,
)
from .operator_issuers import (  # noqa: F401
    test_a_partner_issuers_group_makes_no_operator,
    test_an_issuer_not_trusted_is_refused_by_name,
    test_operators_of_each_issuer_named_are_that_issuers,
    test_the_old_shape_is_refused_with_the_new_one_named,
    two_issuers,
)
from .token_kinds import (  # noqa: F401
    test_a_refresh_token_is_no_access_token,
    test_an_id_token_is_no_access_token,
    test_no_personal_token_was_made_from_either,
    test_the_grants_access_token_is_taken,
    web_grant,
)

# The first test starts Keycloak (19 s on an idle machine, minutes on two busy cores)
pytestmark = pytest.mark.timeout(900)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def me(live, token: str) -> httpx.Response:
    return httpx.get(f"{live.url}/users/me", headers=bearer(token), timeout=60)


def assert_not_logged(live, *secrets: str) -> None:
    log = server_log(live)
    for secret in (*secrets, WEB_SECRET, PASSWORD):
        assert secret
        assert secret not in log


# -- the API takes the provider's access tokens ---------------------------------------------
def test_pystac_client_searches_with_a_provider_token(signin_live, provider):
    token = provider.password_token("ada")["access_token"]
    client = pystac_client.Client.open(f"{signin_live.url}/", headers=bearer(token))
    items = list(client.search(max_items=20).items())
    assert len(items) == 12  # the served granules, seen by a user made at first sign-in
    answer = me(signin_live, token)
    assert answer.status_code == 200
    assert answer.json()["name"] == "ada"
    assert answer.json()["quota"] == {"cpus": None, "memory": None, "disk": None}
    assert_not_logged(signin_live, token)


def test_a_person_is_keyed_by_issuer_and_subject_not_by_name(signin_live, provider):
    """ada of another realm (another issuer) is not ada; and the same ada's next token is."""
    first = me(signin_live, provider.password_token("ada")["access_token"]).json()["name"]
    again = me(signin_live, provider.password_token("ada", "nearline")["access_token"])
    assert again.json()["name"] == first == "ada"
    elsewhere = provider.password_token("ada", issuer=provider.elsewhere)["access_token"]
    refused = me(signin_live, elsewhere)
    assert refused.status_code == 401
    assert "issuer" in refused.json()["detail"]


def test_the_policy_admits_by_domain_or_group_and_names_its_rule_to_others(signin_live, provider):
    dave = me(signin_live, provider.password_token("dave")["access_token"])
    assert (dave.status_code, dave.json()["name"]) == (200, "dave")  # science.example
    eve_token = provider.password_token("eve")["access_token"]
    eve = me(signin_live, eve_token)
    assert eve.status_code == 403
    detail = eve.json()["detail"]
    assert "science.example" in detail
    assert "nearline-users" in detail
    assert_not_logged(signin_live, eve_token)


# -- attacks on the bearer token ---------------------------------------------------------------
def test_a_token_made_with_the_realms_own_key_is_accepted(signin_live, provider, kid):
    """The control for the attacks below: each changes one thing of this token."""
    token = forge(claims_for(provider, "forged-subject"), provider.private_key, kid)
    assert me(signin_live, token).status_code == 200


ATTACKS = {
    "signed with another key": lambda p, kid: forge(
        claims_for(p, "x"), rsa.generate_private_key(public_exponent=65537, key_size=2048), kid
    ),
    "alg none": lambda p, kid: unsigned(claims_for(p, "x"), kid),
    "HS256 keyed with the public key": lambda p, kid: hs256_with_public_key(
        claims_for(p, "x"), p, kid
    ),
    "wrong issuer": lambda p, kid: forge(claims_for(p, "x", iss=p.elsewhere), p.private_key, kid),
    "wrong audience": lambda p, kid: forge(claims_for(p, "x", aud="other-app"), p.private_key, kid),
    "expired": lambda p, kid: forge(
        claims_for(p, "x", iat=int(time.time()) - 900, exp=int(time.time()) - 600),
        p.private_key,
        kid,
    ),
    "not yet valid": lambda p, kid: forge(
        claims_for(p, "x", nbf=int(time.time()) + 600), p.private_key, kid
    ),
    "issued in the future": lambda p, kid: forge(
        claims_for(p, "x", iat=int(time.time()) + 600, exp=int(time.time()) + 900),
        p.private_key,
        kid,
    ),
}
WORDS = {
    "signed with another key": "signature",
    "alg none": "algorithm",
    "HS256 keyed with the public key": "algorithm",
    "wrong issuer": "issuer",
    "wrong audience": "audience",
    "expired": "expired",
    "not yet valid": "not valid yet",
    "issued in the future": "not valid yet",
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_forged_token_is_refused(signin_live, provider, kid, attack):
    token = ATTACKS[attack](provider, kid)
    answer = me(signin_live, token)
    assert answer.status_code == 401
    assert WORDS[attack] in answer.json()["detail"].lower()
    assert_not_logged(signin_live, token)


def test_the_provider_tokens_of_another_client_are_for_another_audience(signin_live, provider):
    token = provider.password_token("ada", "other-app")["access_token"]
    answer = me(signin_live, token)
    assert answer.status_code == 401
    assert "audience" in answer.json()["detail"]


# -- the web page's code flow, played with httpx -------------------------------------------------
def test_the_code_flow_signs_in_and_a_replayed_code_is_refused(signin_live):
    browser, callback = web_signin(signin_live, "ada")
    other, fresh = web_signin(signin_live, "ada")  # a second sign-in, its state still live
    with closing(browser), closing(other):
        session = finish_signin(browser, callback)
        assert session["user"] == "ada"
        assert me(signin_live, session["token"]).json()["name"] == "ada"
        again = browser.get(callback)  # the same callback, its cookie put back
        assert again.status_code == 400
        state = fresh.split("state=")[1].split("&")[0]
        old_code = callback.split("code=")[1].split("&")[0]
        replay = other.get(
            f"{signin_live.url}/signin/callback", params={"state": state, "code": old_code}
        )
        assert replay.status_code == 400
        assert "code" in replay.json()["detail"]
        assert other.post(f"{signin_live.url}/signin/session").status_code == 404
    assert_not_logged(signin_live, session["token"], old_code)


def test_a_missing_or_mismatched_state_is_refused(signin_live):
    browser, callback = web_signin(signin_live, "ada")
    other, elsewhere = web_signin(signin_live, "ada")
    with closing(browser), closing(other):
        code = callback.split("code=")[1].split("&")[0]
        missing = browser.get(f"{signin_live.url}/signin/callback", params={"code": code})
        assert missing.status_code == 400
        assert "state" in missing.json()["detail"]
        stranger = httpx.get(callback)  # the right state, not from the browser that began it
        assert stranger.status_code == 400
        other_state = elsewhere.split("state=")[1].split("&")[0]
        mixed = browser.get(
            f"{signin_live.url}/signin/callback", params={"code": code, "state": other_state}
        )
        assert mixed.status_code == 400
        assert browser.post(f"{signin_live.url}/signin/session").status_code == 404
    assert_not_logged(signin_live, code)


@pytest.mark.parametrize(
    "elsewhere",
    ["https://evil.example/", "//evil.example/app/", "/api", "@evil.example/app/", "/app\\@x"],
)
def test_a_return_url_pointing_elsewhere_is_refused(signin_live, elsewhere):
    answer = httpx.get(f"{signin_live.url}/signin", params={"return": elsewhere})
    assert answer.status_code == 400
    assert "/app/" in answer.json()["detail"]
    assert "location" not in answer.headers


# -- personal tokens -------------------------------------------------------------------------
def make_token(live, token: str, name: str, days: float = 30) -> dict:
    made = httpx.post(
        f"{live.url}/users/me/tokens", json={"name": name, "days": days}, headers=bearer(token)
    )
    assert made.status_code == 201, made.text
    return made.json()


def test_personal_tokens_are_made_listed_and_revoked_by_their_owner(signin_live, provider):
    ada = provider.password_token("ada")["access_token"]
    made = make_token(signin_live, ada, "laptop")
    assert made["token"].startswith("nl_")
    assert made["name"] == "laptop"
    assert me(signin_live, made["token"]).json()["name"] == "ada"
    listed = httpx.get(f"{signin_live.url}/users/me/tokens", headers=bearer(ada)).json()
    mine = {t["id"]: t for t in listed["tokens"]}
    assert made["id"] in mine
    assert "token" not in mine[made["id"]]
    gone = httpx.delete(f"{signin_live.url}/users/me/tokens/{made['id']}", headers=bearer(ada))
    assert gone.status_code == 204
    revoked = me(signin_live, made["token"])
    assert revoked.status_code == 401
    assert_not_logged(signin_live, made["token"], ada)


def test_another_users_token_id_is_not_found(signin_live, provider):
    ada = provider.password_token("ada")["access_token"]
    dave = provider.password_token("dave")["access_token"]
    adas = make_token(signin_live, ada, "notebook")
    for method in ("delete",):
        answer = httpx.request(
            method, f"{signin_live.url}/users/me/tokens/{adas['id']}", headers=bearer(dave)
        )
        assert answer.status_code == 404
    assert me(signin_live, adas["token"]).status_code == 200  # still ada's, still good


def test_an_operator_revokes_anyones_token_and_no_one_else_may(signin_live, provider):
    ada = provider.password_token("ada")["access_token"]
    adas = make_token(signin_live, ada, "shared by mistake")
    dave = provider.password_token("dave")["access_token"]
    refused = httpx.delete(f"{signin_live.url}/tokens/{adas['id']}", headers=bearer(dave))
    assert refused.status_code == 403
    olga = provider.password_token("olga")["access_token"]  # a group claim made her operator
    revoked = httpx.delete(f"{signin_live.url}/tokens/{adas['id']}", headers=bearer(olga))
    assert revoked.status_code == 204
    assert me(signin_live, adas["token"]).status_code == 401


def test_the_tokens_of_nearline_users_add_keep_working(signin_live):
    answer = me(signin_live, signin_live.tokens["alice"])
    assert (answer.status_code, answer.json()["name"]) == (200, "alice")
    made = make_token(signin_live, signin_live.tokens["alice"], "script")
    assert me(signin_live, made["token"]).json()["name"] == "alice"


# -- nearline login, and the CLI's personal tokens -------------------------------------------
def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nearline", *args], env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def start_login(live, tmp_path: Path, *flow: str) -> tuple[subprocess.Popen[str], str, dict]:
    """`nearline login` in its own process; it, the address it asks the user to open, and
    its environment."""
    env = {**os.environ, "NEARLINE_LOGIN": str(tmp_path / "login.json"), "NEARLINE_URL": live.url}
    process = subprocess.Popen(
        [sys.executable, "-m", "nearline", "login", "--no-browser", *flow],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("To sign in, open "), line + process.stderr.read()
    return process, line.removeprefix("To sign in, open ").strip(), env


def test_nearline_login_by_the_device_flow_keeps_a_token_for_scripts(
    signin_live, provider, tmp_path
):
    process, address, env = start_login(signin_live, tmp_path)
    assert "/device" in address  # Keycloak offers the device flow: `login` chose it
    final_page = device_approve(address, "ada")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert f"signed in to {signin_live.url} as ada" in out
    assert "success" in final_page.lower()
    assert (tmp_path / "login.json").stat().st_mode & 0o777 == 0o600
    token = cli(env, "token").stdout.strip()
    catalog = pystac_client.Client.open(f"{signin_live.url}/", headers=bearer(token))
    assert len(list(catalog.search(max_items=20).items())) == 12
    made = cli(env, "tokens", "create", "from the terminal", "--days", "7")
    assert made.returncode == 0, made.stderr
    secret = made.stdout.strip()
    assert me(signin_live, secret).json()["name"] == "ada"
    token_id = made.stderr.split()[1]
    listed = cli(env, "tokens", "list").stdout
    assert f"{token_id}  from the terminal  until" in listed
    assert secret not in listed
    assert cli(env, "tokens", "revoke", token_id).returncode == 0
    assert me(signin_live, secret).status_code == 401
    assert_not_logged(signin_live, token, secret)


def test_nearline_login_by_code_and_pkce_through_a_loopback_redirect(signin_live, tmp_path):
    process, address, env = start_login(signin_live, tmp_path, "--flow", "code")
    assert "code_challenge_method=S256" in address
    with new_browser() as browser:
        answer = pass_login(browser, browser.get(address, follow_redirects=True), "dave")
        assert answer.status_code == 302
        back = answer.headers["location"]
        assert back.startswith("http://127.0.0.1:")
        assert "/callback?" in back
        assert browser.get(back).status_code == 200  # the CLI's loopback end
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "as dave" in out
    token = cli(env, "token").stdout.strip()
    assert me(signin_live, token).json()["name"] == "dave"


def test_doctor_checks_the_configured_provider(signin_live, provider):
    env = {
        **os.environ,
        "NEARLINE_OIDC": str(provider.settings),
        "OIDC_TEST_CLIENT_SECRET": WEB_SECRET,
    }
    found = cli(env, "doctor", "oidc")
    assert found.returncode == 0, found.stdout + found.stderr
    assert "1 signing key(s)" in found.stdout  # the realm signs with the tests' key alone
    assert "nearline, nearline-cli registered" in found.stdout
    assert "with a device flow" in found.stdout
    wrong = provider.settings.with_name("wrong-client.yaml")
    wrong.write_text(
        provider.settings.read_text().replace("client_id: nearline\n", "client_id: nobody\n")
    )
    refused = cli({**env, "NEARLINE_OIDC": str(wrong)}, "doctor", "oidc")
    assert refused.returncode == 1
    assert "does not know the client 'nobody'" in refused.stdout


# -- the web page in Chromium ------------------------------------------------------------------
def test_the_web_page_signs_in_through_keycloak_then_searches_orders_and_signs_out(
    signin_live, page, screens
):
    page.goto(f"{signin_live.url}/app/#search")
    page.click("#signin-oidc")
    page.wait_for_selector("#kc-form-login")  # the provider's own login page
    assert page.url.startswith(f"{signin_live.url.rsplit(':', 1)[0]}:")
    snap(page, screens, "keycloak-login")
    page.fill("#username", "ada")
    page.fill("#password", PASSWORD)
    page.click("#kc-login")
    expect(page.locator("#who-name")).to_have_text("Signed in as ada")
    expect(page.locator("#view-search")).to_be_visible()
    token = page.evaluate("sessionStorage.getItem('nearline-token')")
    assert token.startswith("nl_")
    assert "code=" not in page.url
    assert token not in page.url
    snap(page, screens, "signed-in")

    for side, value in zip(("west", "south", "east", "north"), (-180, -10, -100, 10), strict=True):
        page.fill(f"#bbox-{side}", str(value))
    page.click("#search-form button[type=submit]")
    expect(page.locator("#search-summary")).to_contain_text("Items 1 to 8")

    signin_live.tokens["ada-in-the-browser"] = token
    deploy(signin_live, "ada-in-the-browser", "sizes")
    page.click("#nav a[data-view=processes]")
    page.locator("#process-list tbody tr", has_text="granule-sizes").click()
    page.click("#process button.order")
    page.locator("#order-form button[type=submit]").click()
    expect(page.locator("#job-status")).to_have_text("successful", timeout=90_000)
    job_id = page.url.rsplit("#jobs/", 1)[1]
    job = httpx.get(f"{signin_live.url}/jobs/{job_id}", headers=bearer(token)).json()
    assert job["status"] == "successful"
    assert len(job["nearline:runs"]) == 2  # 8 granules, at most 4 a run

    page.click("#nav a[data-view=me]")
    page.fill("#token-name", "made in the browser")
    page.fill("#token-days", "7")
    page.click("#token-form button[type=submit]")
    secret = page.locator("#token-secret").text_content()
    assert me(signin_live, secret).json()["name"] == "ada"
    row = page.locator("#token-table tbody tr", has_text="made in the browser")
    expect(row).to_contain_text("active")
    snap(page, screens, "personal-tokens")
    row.locator("button.revoke").click()
    expect(row).to_contain_text("revoked")
    assert me(signin_live, secret).status_code == 401

    page.click("#sign-out")
    page.wait_for_selector("#kc-logout")  # the provider asks before it ends its session
    page.click("#kc-logout")
    expect(page.locator("#view-signin")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('nearline-token')") is None
    assert me(signin_live, token).status_code == 401  # the sign-in's token is revoked
    assert_not_logged(signin_live, token, secret)


def test_the_operator_lists_and_revokes_tokens_from_the_command_line(signin_live):
    made = make_token(signin_live, signin_live.tokens["bob"], "bob's notebook")
    listed = nearline("users", "tokens", "bob", data=signin_live.data).stdout
    assert f"{made['id']}\tbob\tbob's notebook\tactive" in listed
    assert made["token"] not in listed
    revoked = nearline("users", "revoke-token", made["id"], data=signin_live.data)
    assert f"revoked bob's token {made['id']}" in revoked.stdout
    assert me(signin_live, made["token"]).status_code == 401
    unknown = nearline("users", "revoke-token", "tok_nothing", data=signin_live.data, check=False)
    assert unknown.returncode == 2
    assert "there is no token 'tok_nothing'" in unknown.stderr


def test_a_rotated_key_is_fetched_when_a_token_names_it(signin_live, provider):
    """The service has cached the realm's key set; the realm then signs with a new key (a new
    kid), and the first token under it makes the service fetch the key set again."""
    assert me(signin_live, provider.password_token("ada")["access_token"]).status_code == 200
    time.sleep(6)  # the service fetches a key set again at most every 5 s
    pem = pem_of(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    realm = provider.issuer.rsplit("/", 1)[1]
    with provider.keycloak.admin() as admin:
        realm_id = admin.get(f"/{realm}").json()["id"]
        added = admin.post(
            f"/{realm}/components",
            json={
                "name": "rotated-rsa",
                "providerId": "rsa",
                "providerType": "org.keycloak.keys.KeyProvider",
                "parentId": realm_id,
                "config": {"privateKey": [pem], "priority": ["2000"], "algorithm": ["RS256"]},
            },
        )
        assert added.status_code == 201, added.text
    try:
        token = provider.password_token("ada")["access_token"]
        assert jwt.get_unverified_header(token)["kid"] != kid_of(provider)  # signed anew
        answer = me(signin_live, token)
        assert answer.status_code == 200, answer.text
        assert answer.json()["name"] == "ada"
    finally:
        with provider.keycloak.admin() as admin:
            admin.delete(added.headers["location"].split("/admin/realms", 1)[1])

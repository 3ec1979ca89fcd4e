"""First sign-ins that arrive together, through a live service and the suite's Keycloak, on
SQLite files and on PostgreSQL (issue 38): sixteen requests with one new person's token, and
eight new people at once whose usernames all come down to one nearline name. Every request is
a 200, one identity makes exactly one user, the colliding names get suffixes, and no user is
left without an identity (the probe saw 409s, 500s of a UNIQUE constraint, and orphans)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

import httpx
import pytest

from nearline.db import open_database

from ..live_service import LiveService
from ..service.conftest import serving
from .conftest import person, server_log


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def race_live(request, provider, signin_live, tmp_path_factory) -> Iterator[LiveService]:
    """The package's live service (SQLite), or one like it keeping its state in PostgreSQL."""
    if request.param == "sqlite":
        yield signin_live
        return
    url = request.getfixturevalue("postgres_server").new_database("oidc")
    folder = tmp_path_factory.mktemp("oidc-postgres")
    with serving(folder, extra=["--oidc", str(provider.settings)], db=url) as service:
        yield service


def at_once(live: LiveService, tokens: list[str]) -> list[httpx.Response]:
    """GET /users/me with each token, every request released at the same moment."""
    start = Barrier(len(tokens))

    def ask(token: str) -> httpx.Response:
        start.wait()
        return httpx.get(
            f"{live.url}/users/me", headers={"Authorization": f"Bearer {token}"}, timeout=120
        )

    with ThreadPoolExecutor(len(tokens)) as pool:
        return list(pool.map(ask, tokens))


def state(live: LiveService) -> tuple[dict[str, str], set[str]]:
    """({identity's subject: user}, users made by sign-ins) in the live service's database."""
    with open_database(live.db, live.data / "service.db") as database:
        identities = {
            row["subject"]: row["name"]
            for row in database.query("SELECT subject, name FROM identities")
        }
        signed = {
            row["name"] for row in database.query("SELECT name FROM users WHERE token_hash IS NULL")
        }
    return identities, signed


def subject_of(provider, username: str) -> str:
    with provider.keycloak.admin() as admin:
        found = admin.get("/nearline/users", params={"username": username, "exact": "true"})
        return found.json()[0]["id"]


def test_sixteen_first_requests_of_one_person_make_one_user(race_live, provider):
    name = f"solo{secrets.token_hex(3)}"
    provider.add_people(person(name, f"{name}@science.example", []))
    token = provider.password_token(name)["access_token"]
    answers = at_once(race_live, [token] * 16)
    assert [a.status_code for a in answers] == [200] * 16, [a.text for a in answers]
    assert {a.json()["name"] for a in answers} == {name}
    identities, signed = state(race_live)
    assert identities[subject_of(provider, name)] == name
    assert list(identities.values()).count(name) == 1
    assert signed <= set(identities.values())  # no user without an identity
    assert "Traceback" not in server_log(race_live)


def test_eight_new_people_whose_names_collide_sign_in_at_once(race_live, provider):
    tag = f"r{secrets.token_hex(3)}"
    # Keycloak keeps each username apart; nearline's naming makes every one `{tag}-x`
    usernames = [f"{tag}{middle}x" for middle in (".", "-", "@", "..", ".@", "@.", "@@", "...")]
    provider.add_people(
        *(person(u, f"{tag}{i}@science.example", []) for i, u in enumerate(usernames))
    )
    tokens = [provider.password_token(u)["access_token"] for u in usernames]
    answers = at_once(race_live, tokens * 2)  # two requests each, sixteen at once
    assert [a.status_code for a in answers] == [200] * 16, [a.text for a in answers]
    names = [a.json()["name"] for a in answers]
    assert names[:8] == names[8:]  # each person's two requests: one user
    assert sorted(names[:8]) == sorted([f"{tag}-x", *(f"{tag}-x-{n}" for n in range(2, 9))])
    identities, signed = state(race_live)
    subjects = [subject_of(provider, u) for u in usernames]
    assert [identities[s] for s in subjects] == names[:8]
    assert signed <= set(identities.values())  # no user without an identity
    assert "Traceback" not in server_log(race_live)

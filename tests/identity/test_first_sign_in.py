"""A person's first sign-in is one write transaction, on SQLite files and on PostgreSQL
(issue 38): threads racing through ``UserStore.signed_in`` with one new identity make one
user, and new identities whose wished-for names collide each get a name of their own; no
409, no unique violation, no user without an identity."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from threading import Barrier

import pytest

from nearline.db import Database, PostgresDatabase, SQLiteDatabase
from nearline.errors import Unauthorized
from nearline.identity import UserStore

ISSUER = "https://id.example.org/realms/science"
THREADS = 16


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        opened: Database = SQLiteDatabase(tmp_path / "service.db")
    else:
        opened = PostgresDatabase(request.getfixturevalue("postgres_server").new_database("ids"))
    with opened:
        yield opened


def race(calls: list) -> list:
    """Run ``calls`` at once, each from its own thread, released together."""
    start = Barrier(len(calls))

    def run(call):
        start.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def orphans(database: Database) -> list[str]:
    """Users made by a sign-in (no token of their own) that no identity names."""
    return [
        row["name"]
        for row in database.query(
            "SELECT name FROM users WHERE token_hash IS NULL "
            "AND name NOT IN (SELECT name FROM identities)"
        )
    ]


def test_one_new_identity_racing_makes_one_user(database):
    users = UserStore(database)
    names = race([lambda: users.signed_in(ISSUER, "sub-1", wanted="ada", operator=False)] * THREADS)
    assert names == ["ada"] * THREADS
    assert [u.name for u in users.list()] == ["ada"]
    identities = database.query("SELECT issuer, subject, name FROM identities")
    assert [(r["issuer"], r["subject"], r["name"]) for r in identities] == [
        (ISSUER, "sub-1", "ada")
    ]
    assert orphans(database) == []


def test_new_identities_whose_names_collide_each_get_their_own(database):
    users = UserStore(database)
    users.add("kim")  # a user `nearline users add` made holds the name already
    wished = ["Kim", "kim", "kim.", "KIM", "kim@", "-kim", "kim!", "kim_"]
    names = race(
        [
            lambda i=i, w=w: users.signed_in(ISSUER, f"sub-{i}", wanted=w, operator=False)
            for i, w in enumerate(wished)
        ]
    )
    assert sorted(names) == sorted(["kim-2", "kim-3", "kim-4", "kim-5", "kim-6", "kim-7",
                                    "kim-8", "kim-9"])  # fmt: skip
    assert len(set(names)) == len(wished)
    rows = database.query("SELECT subject, name FROM identities")
    assert {row["subject"]: row["name"] for row in rows} == {
        f"sub-{i}": name for i, name in enumerate(names)
    }
    assert orphans(database) == []
    again = race([lambda i=i: users.signed_in(ISSUER, f"sub-{i}", wanted="x", operator=False)
                  for i in range(len(wished))])  # fmt: skip
    assert again == names


def test_the_role_follows_each_sign_in_and_a_revoked_user_stays_out(database):
    users = UserStore(database)
    name = users.signed_in(ISSUER, "sub-olga", wanted="olga", operator=True)
    assert users.is_operator(name)
    race([lambda: users.signed_in(ISSUER, "sub-olga", wanted="olga", operator=False)] * 4)
    assert not users.is_operator(name)
    users.revoke(name)
    with pytest.raises(Unauthorized, match="revoked by the operator"):
        users.signed_in(ISSUER, "sub-olga", wanted="olga", operator=False)

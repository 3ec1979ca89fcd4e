"""A sign-in's values kept between its requests, in the database every worker process of
`nearline serve --workers` shares: put by one process's store, taken by another's, once,
never past their time, and unreadable from the database alone."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from nearline.db import Database, PostgresDatabase, SQLiteDatabase
from nearline.identity import Handoffs


@pytest.fixture(params=["sqlite", "postgresql"])
def two(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Database, Database]]:
    """Two connections to one database, as two worker processes hold."""
    if request.param == "sqlite":
        opened = (SQLiteDatabase(tmp_path / "state.db"), SQLiteDatabase(tmp_path / "state.db"))
    else:
        url = request.getfixturevalue("postgres_server").new_database("handoffs")
        opened = (PostgresDatabase(url), PostgresDatabase(url))
    yield opened
    for database in opened:
        database.close()


def test_a_value_put_by_one_worker_is_taken_by_another_once(two) -> None:
    here, there = (Handoffs(database, "pending", 600) for database in two)
    value = {"nonce": "n-1", "verifier": "v" * 43, "back_to": "/app/", "made": 1.5}
    here.put("state-1", value)
    with ThreadPoolExecutor(8) as pool:  # eight callbacks with one state at once
        taken = list(pool.map(lambda _: there.take("state-1"), range(8)))
    assert [found for found in taken if found is not None] == [value]
    assert here.take("state-1") is None


def test_a_value_is_kept_only_for_its_kind_its_key_and_its_time(two) -> None:
    here = Handoffs(two[0], "handoff", 0.3)
    other_kind = Handoffs(two[1], "pending", 600)
    here.put("cookie", ["nl_secret", "tok_1", "alice"])
    assert other_kind.take("cookie") is None
    assert here.take("cookie-") is None
    time.sleep(0.4)
    assert here.take("cookie") is None  # expired: gone for good


def test_the_database_alone_holds_no_secret(two) -> None:
    here = Handoffs(two[0], "handoff", 60)
    here.put("cookie-value", ["nl_very-secret-token", "tok_1", "alice"])
    rows = two[1].query("SELECT key_hash, sealed FROM signin_handoffs")
    assert len(rows) == 1
    stored = bytes(rows[0]["sealed"]) + rows[0]["key_hash"].encode()
    assert b"nl_very-secret-token" not in stored
    assert b"cookie-value" not in stored
    kept = Handoffs(two[1], "handoff", 60).take("cookie-value")
    assert kept == ["nl_very-secret-token", "tok_1", "alice"]

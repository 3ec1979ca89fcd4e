"""The service's stores on both backends: the shared conformance suite on SQLite files and on
a real PostgreSQL server."""

from __future__ import annotations

from pathlib import Path

import pytest

from nearline.db import Database, PostgresDatabase, SQLiteDatabase
from nearline.testing.stores import StoreTests

from ..postgres_server import PostgresServer


class TestSQLiteStores(StoreTests):
    def make_database(self, tmp_path: Path) -> Database:
        return SQLiteDatabase(tmp_path / "service.db")


@pytest.fixture(autouse=True, scope="class")
def _server(request: pytest.FixtureRequest) -> None:
    if request.cls is TestPostgresStores:
        request.cls.server = request.getfixturevalue("postgres_server")


class TestPostgresStores(StoreTests):
    server: PostgresServer

    def make_database(self, tmp_path: Path) -> Database:
        return PostgresDatabase(self.server.new_database("stores"))

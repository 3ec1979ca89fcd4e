"""`nearline db migrate` and the --db setting: PostgreSQL set up once, idempotently; a wrong
URL or an unreachable server named in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from nearline.db import PostgresDatabase, database_url
from nearline.errors import ConfigError

from .postgres_server import PostgresServer

TABLES = {
    "collections", "items", "catalogue_position", "users", "jobs", "runs", "processes",
    "versions", "subscriptions", "subscription_runs", "servers",
}  # fmt: skip


def migrate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nearline", "db", "migrate", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_migrate_sets_up_every_table_and_can_run_again(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    url = postgres_server.new_database("migrate")
    for _ in range(2):
        done = migrate("--db", url, "--data", str(tmp_path / "data"))
        assert done.returncode == 0, done.stderr
        assert done.stdout.count("up to date in postgresql://") == 3
    with psycopg.connect(url) as connection:
        tables = {row[0] for row in connection.execute("SELECT tablename FROM pg_tables")}
        kinds = dict(
            connection.execute(
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_name = 'runs' AND column_name IN ('output_bytes', 'attempts')"
            ).fetchall()
        )
    assert tables >= TABLES
    assert kinds == {"output_bytes": "bigint", "attempts": "bigint"}
    assert not (tmp_path / "data" / "service.db").exists()  # nothing went to SQLite


def test_without_a_database_migrate_sets_up_the_sqlite_files(tmp_path: Path) -> None:
    done = migrate("--data", str(tmp_path / "data"))
    assert done.returncode == 0, done.stderr
    names = {"catalogue.db", "service.db", "algorithms.db"}
    assert names <= {path.name for path in (tmp_path / "data").iterdir()}


def test_a_database_url_must_be_postgresql(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="PostgreSQL URL"):
        database_url("sqlite:///tmp/x.db")
    monkeypatch.setenv("NEARLINE_DB", "postgresql://db.example.org/nearline")
    assert database_url() == "postgresql://db.example.org/nearline"
    assert database_url("postgres://other/x") == "postgres://other/x"  # the argument first


def test_an_unreachable_server_is_named_without_its_password() -> None:
    with pytest.raises(ConfigError, match=r"127\.0\.0\.1:9/x") as raised:
        PostgresDatabase("postgresql://someone:secret@127.0.0.1:9/x", timeout=1)
    assert "secret" not in str(raised.value)
    done = migrate("--db", "mysql://x")
    assert done.returncode == 2
    assert done.stderr.startswith("nearline: error: --db: expected a PostgreSQL URL")

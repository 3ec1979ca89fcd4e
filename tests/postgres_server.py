"""A real PostgreSQL server for the tests, started once a session: a throwaway cluster
(``initdb``, Debian's PostgreSQL and PostGIS; as root it runs as ``nobody``), with a template
database holding PostGIS from which each test's database is copied in milliseconds.

Missing binaries fail the tests that need them, loudly, with the line that installs them
(``nearline doctor``'s): the PostgreSQL tests are part of ``make test``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from nearline.doctor import capabilities
from nearline.testing.pgcluster import FAST, Cluster, missing

TEMPLATE = "nearline_template"


@dataclass
class PostgresServer:
    """The session's server; :meth:`new_database` gives each user a database of its own."""

    cluster: Cluster
    counter: itertools.count = field(default_factory=itertools.count)

    def new_database(self, prefix: str = "test") -> str:
        """A new database with PostGIS; its URL."""
        import psycopg

        name = f"{prefix}_{next(self.counter)}"
        with psycopg.connect(self.cluster.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}" TEMPLATE {TEMPLATE}')
        return self.cluster.url(name)

    def drop_database(self, url: str) -> None:
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.cluster.url(), autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def install_line() -> str:
    """How to install PostgreSQL with PostGIS, as nearline doctor says it."""
    (postgis,) = capabilities(["postgis"])
    return postgis.install_command


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole session (fsync off: it is thrown away)."""
    absent = missing()
    if absent is not None:
        pytest.fail(
            f"the PostgreSQL tests need a PostgreSQL server with PostGIS: {absent}.\n"
            f"install it: {install_line()}\n(`nearline doctor postgis` checks it end to end)",
            pytrace=False,
        )
    cluster = Cluster(settings={**FAST, "max_connections": "300"})
    cluster.start()
    try:
        cluster.create_database(TEMPLATE, extensions=["postgis"])
        yield PostgresServer(cluster)
    finally:
        cluster.close()

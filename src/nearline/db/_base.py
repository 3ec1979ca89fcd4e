"""The service's state database, whichever it is: a SQLite file per store under the data
folder (the embedded default), or one PostgreSQL database that several servers share.

The stores (users, jobs, algorithm versions, subscriptions) write portable SQL: ``?``
placeholders, standard types (``TEXT``, ``INTEGER``, ``REAL``), ``ON CONFLICT``; each backend
makes it its own. What they rely on, and each backend keeps true:

- ``transaction()`` is the one way to write, and write transactions never interleave: each
  sees everything committed before it began and commits or rolls back as a whole (SQLite's
  ``BEGIN IMMEDIATE``; PostgreSQL holds the database's write lock for the transaction);
- ``query()`` in a thread that is inside ``transaction()`` reads through that transaction;
- rows are read by column name (``row["id"]``) or position (``row[0]``).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from nearline.closing import Closing
from nearline.errors import ConfigError

Parameters = Sequence[Any] | Mapping[str, Any]
SCHEMES = ("postgresql://", "postgres://")


class Database(Closing, ABC):
    """A database the service's stores keep their tables in."""

    #: what a violated UNIQUE or PRIMARY KEY constraint raises
    integrity_error: type[Exception] = Exception

    @abstractmethod
    def apply(self, schema: str) -> None:
        """Create what ``schema`` creates (``IF NOT EXISTS`` statements; one transaction)."""

    @abstractmethod
    def add_columns(self, table: str, columns: Mapping[str, str]) -> None:
        """Add the ``columns`` (name: SQL type) that ``table`` lacks: a store's schema grows
        without losing what an older service wrote."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Any]:
        """A write transaction on a connection (``execute``, ``executemany``): committed on
        leaving, rolled back on an error; no other write transaction runs meanwhile."""

    @abstractmethod
    def query(self, sql: str, parameters: Parameters = ()) -> list[Any]:
        """The rows ``sql`` reads."""

    def close(self) -> None:
        """Release connections."""


def database_url(db: str | None = None) -> str | None:
    """The state database's URL: ``db`` (``--db``), else $NEARLINE_DB; None: SQLite files
    under the data folder. Refuses anything but a PostgreSQL URL."""
    url = db or os.environ.get("NEARLINE_DB") or None
    if url is not None and not url.startswith(SCHEMES):
        raise ConfigError(
            f"--db: expected a PostgreSQL URL such as postgresql://user@host:5432/nearline, "
            f"got {url!r} (leave it out to keep SQLite files under --data)"
        )
    return url

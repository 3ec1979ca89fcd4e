"""A SQLite file shared by the threads of a service (its catalogue, users, jobs), safely.

Each thread gets its own connection (SQLite connections must not be shared between threads
that write), WAL lets readers go on while one writes, and ``transaction()`` is the one way to
write: BEGIN IMMEDIATE, so two writers never interleave a read-modify-write.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nearline.db._base import Database


class SQLiteDatabase(Database):
    """A SQLite file opened per thread; each store applies its own schema."""

    integrity_error = sqlite3.IntegrityError

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def apply(self, schema: str) -> None:
        """Create what ``schema`` creates (``IF NOT EXISTS`` statements; its own transaction)."""
        self.connection().executescript(f"BEGIN IMMEDIATE;\n{schema}\nCOMMIT;")

    def add_columns(self, table: str, columns: dict[str, str]) -> None:
        """Add the ``columns`` (name: SQL type) that ``table`` lacks: a store's schema grows
        without losing what an older service wrote."""
        present = {
            d[0] for d in self.connection().execute(f"SELECT * FROM {table} LIMIT 0").description
        }
        with self.transaction() as connection:
            for name, kind in columns.items():
                if name not in present:
                    connection.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")

    def connection(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(
                self.path, timeout=30, isolation_level=None, check_same_thread=False
            )
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute("PRAGMA foreign_keys=ON")
            self._local.connection = connection
            with self._lock:
                self._connections.append(connection)
        return connection

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: committed on leaving, rolled back on an error."""
        connection = self.connection()
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    def query(self, sql: str, parameters: tuple | dict = ()) -> list[sqlite3.Row]:
        return self.connection().execute(sql, parameters).fetchall()

    def close(self) -> None:
        with self._lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()
        self._local = threading.local()

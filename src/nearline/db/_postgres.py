"""The service's state in PostgreSQL, shared by every server pointed at it (``--db``).

The stores' portable SQL runs as written: ``?`` placeholders become psycopg's (parameters are
bound client-side, as SQLite binds them, so ``? IS NULL`` needs no cast), ``INTEGER`` columns
become ``BIGINT`` (sizes in bytes pass 2^31) and ``REAL`` ``DOUBLE PRECISION``. A write
transaction first takes the database's one write lock (a transaction-scoped advisory lock), so
write transactions run one at a time across every server, as SQLite's ``BEGIN IMMEDIATE``
makes them run on one machine: a read-modify-write inside one never interleaves with
another's. Connections come from a pool; a thread inside a transaction reads through it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from nearline.db._base import Database, Parameters
from nearline.errors import ConfigError

WRITE_LOCK = 0x6E6C_7374_6174  # the state's write lock: pg_advisory_xact_lock(WRITE_LOCK)
TYPES = {"INTEGER": "BIGINT", "REAL": "DOUBLE PRECISION", "BLOB": "BYTEA"}
_TYPE = re.compile(r"\b(INTEGER|REAL|BLOB)\b", re.IGNORECASE)
_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|::|\?|:[A-Za-z_]\w*")


def redacted(url: str) -> str:
    """``url`` without its password, fit for a message or a log."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def ddl(schema: str) -> str:
    """SQLite-style column types as PostgreSQL's."""
    return _TYPE.sub(lambda match: TYPES[match.group(1).upper()], schema)


@lru_cache(maxsize=4096)
def translate(sql: str, named: bool = False) -> str:
    """``?`` (or, ``named``, ``:name``) placeholders as psycopg's outside quoted strings and
    identifiers, and every ``%`` escaped (psycopg reads placeholders inside quotes too)."""

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "?":
            return "%s"
        if token.startswith(":") and token != "::" and named:
            return f"%({token[1:]})s"
        return token

    return _TOKEN.sub(replace, sql.replace("%", "%%"))


class Row(tuple):
    """A row read by column name or by position, as ``sqlite3.Row`` is."""

    names: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self.names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self.names)


def _row_factory(cursor: Any) -> Any:
    names = {column.name: i for i, column in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> Row:
        row = Row(values)
        row.names = names
        return row

    return make


class Connection:
    """A pooled connection as the stores use one: ``execute`` and ``executemany`` with
    ``?`` placeholders, returning the cursor."""

    def __init__(self, connection: psycopg.Connection) -> None:
        self.connection = connection

    def execute(self, sql: str, parameters: Parameters = ()) -> Any:
        cursor = self.connection.cursor()
        if parameters:
            cursor.execute(translate(sql, isinstance(parameters, Mapping)), parameters)
        else:
            cursor.execute(sql)
        return cursor

    def executemany(self, sql: str, rows: Sequence[Parameters]) -> Any:
        cursor = self.connection.cursor()
        rows = list(rows)
        if rows:
            cursor.executemany(translate(sql, isinstance(rows[0], Mapping)), rows)
        return cursor


class PostgresDatabase(Database):
    """The PostgreSQL database at ``url``; ``pool_size`` connections at most, shared by the
    stores and by the catalogue kept in the same database (:meth:`connection`)."""

    integrity_error = psycopg.IntegrityError

    def __init__(self, url: str, *, pool_size: int = 24, timeout: float = 30) -> None:
        self.url = url
        self._local = threading.local()
        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={
                "autocommit": True,
                "cursor_factory": psycopg.ClientCursor,
                "row_factory": _row_factory,
            },
            open=False,
            name="nearline-state",
            timeout=timeout,
        )
        self.pool.open()
        try:
            self.pool.wait(timeout=timeout)
        except PoolTimeout:
            self.pool.close()
            raise ConfigError(
                f"cannot connect to PostgreSQL at {redacted(url)} within {timeout:g} s: is the "
                "server running and the URL right (postgresql://USER[:PASSWORD]@HOST:PORT/DB)?"
            ) from None

    def apply(self, schema: str) -> None:
        with self.transaction() as connection:
            connection.execute(ddl(schema))

    def add_columns(self, table: str, columns: Mapping[str, str]) -> None:
        with self.transaction() as connection:
            for name, kind in columns.items():
                connection.execute(
                    f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {name} {ddl(kind)}"
                )

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        current = getattr(self._local, "connection", None)
        if current is not None:  # nested: part of the transaction already open
            yield current
            return
        with self.pool.connection() as connection, connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            self._local.connection = Connection(connection)
            try:
                yield self._local.connection
            finally:
                self._local.connection = None

    def query(self, sql: str, parameters: Parameters = ()) -> list[Any]:
        current = getattr(self._local, "connection", None)
        if current is not None:
            return current.execute(sql, parameters).fetchall()
        with self.pool.connection() as connection:
            return Connection(connection).execute(sql, parameters).fetchall()

    @contextmanager
    def connection(self, *, row_factory: Any) -> Iterator[psycopg.Connection]:
        """A connection of the pool in psycopg's own terms, for code that writes PostgreSQL's
        SQL (the catalogue): ``%s`` placeholders bound by the server, rows made by
        ``row_factory``; the stores' terms come back when it returns to the pool."""
        with self.pool.connection() as connection:
            connection.cursor_factory = psycopg.Cursor
            connection.row_factory = row_factory
            try:
                yield connection
            finally:
                connection.cursor_factory = psycopg.ClientCursor
                connection.row_factory = _row_factory

    def close(self) -> None:
        self.pool.close()

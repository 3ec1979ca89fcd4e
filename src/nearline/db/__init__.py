"""The service's state database: the :class:`Database` contract (_base.py), a SQLite file under
the data folder (the embedded default) or one PostgreSQL database that several servers share,
chosen by URL (:func:`open_database`).

``PostgresDatabase`` and ``redacted`` are loaded on first use, so that what only SQLite needs
never imports psycopg.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nearline.db._base import Database, Parameters, database_url
from nearline.db._sqlite import SQLiteDatabase

if TYPE_CHECKING:
    from nearline.db._postgres import PostgresDatabase, redacted

__all__ = [
    "Database",
    "Parameters",
    "PostgresDatabase",
    "SQLiteDatabase",
    "database_url",
    "open_database",
    "redacted",
]
_POSTGRES = ("PostgresDatabase", "redacted")


def __getattr__(name: str) -> Any:
    if name in _POSTGRES:
        return getattr(import_module("nearline.db._postgres"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_database(url: str | None, path: Path) -> Database:
    """The PostgreSQL database at ``url``, or (None) the SQLite file ``path``."""
    if url is None:
        return SQLiteDatabase(path)
    from nearline.db._postgres import PostgresDatabase

    return PostgresDatabase(url)

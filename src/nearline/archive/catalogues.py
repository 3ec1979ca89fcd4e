"""Which catalogue a service keeps: the SQLite file under its data folder (the embedded
default), or the PostgreSQL database that several servers share."""

from __future__ import annotations

from pathlib import Path

from nearline.archive.base import Catalogue
from nearline.db import Database


def open_catalogue(url: str | None, path: Path, *, database: Database | None = None) -> Catalogue:
    """The catalogue in the PostgreSQL database at ``url`` (tables created if missing), or
    (None) in the SQLite file ``path``. ``database``: the state database opened on the same
    ``url``, whose connection pool the PostgreSQL catalogue then shares."""
    if url is None:
        from nearline.archive.sqlite_catalogue import SQLiteCatalogue

        return SQLiteCatalogue(path)
    from nearline.archive.postgres_catalogue import PostgresCatalogue
    from nearline.db import PostgresDatabase

    return PostgresCatalogue(database if isinstance(database, PostgresDatabase) else url)

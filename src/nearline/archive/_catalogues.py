"""Which catalogue a service keeps: the SQLite file under its data folder (the embedded
default), or the PostgreSQL database that several servers share."""

from __future__ import annotations

from pathlib import Path

from nearline.archive._base import Catalogue
from nearline.db import Database


def open_catalogue(url: str | None, path: Path, *, database: Database | None = None) -> Catalogue:
    """The service's catalogue: PostgreSQL to share one between servers, else SQLite.

    Parameters
    ----------
    url
        A ``postgresql://`` URL (the tables are created if missing), or None for SQLite.
    path
        The SQLite file, created if missing; unused with ``url``.
    database
        The state database opened on the same ``url``, whose connection pool the PostgreSQL
        catalogue then shares (one pool per database); unused with SQLite.

    Returns
    -------
    Catalogue
        Open; ``close`` it, or use it in a ``with`` block.
    """
    if url is None:
        from nearline.archive._sqlite_catalogue import SQLiteCatalogue

        return SQLiteCatalogue(path)
    from nearline.archive._postgres_catalogue import PostgresCatalogue
    from nearline.db import PostgresDatabase

    return PostgresCatalogue(database if isinstance(database, PostgresDatabase) else url)

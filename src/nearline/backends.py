"""Which database a service keeps its state in, by URL: PostgreSQL's, shared by several
servers, or (no URL) a SQLite file under the data folder. The contract is database.py's."""

from __future__ import annotations

from pathlib import Path

from nearline.database import Database


def open_database(url: str | None, path: Path) -> Database:
    """The PostgreSQL database at ``url``, or (None) the SQLite file ``path``."""
    if url is None:
        from nearline.sqlite import Database as SQLiteDatabase

        return SQLiteDatabase(path)
    from nearline.postgres import PostgresDatabase

    return PostgresDatabase(url)

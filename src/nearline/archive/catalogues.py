"""Which catalogue a service keeps: the SQLite file under its data folder (the embedded
default), or the PostgreSQL database that several servers share."""

from __future__ import annotations

from pathlib import Path

from nearline.archive.base import Catalogue


def open_catalogue(url: str | None, path: Path) -> Catalogue:
    """The catalogue in the PostgreSQL database at ``url`` (tables created if missing), or
    (None) in the SQLite file ``path``."""
    if url is None:
        from nearline.archive.sqlite import SQLiteCatalogue

        return SQLiteCatalogue(path)
    from nearline.archive.postgres import PostgresCatalogue

    return PostgresCatalogue(url)

"""Which catalogue a service keeps: the SQLite file under its data folder (the embedded
default), or the PostgreSQL database that several servers share."""

from __future__ import annotations

from pathlib import Path

from nearline.archive.base import Catalogue


def open_catalogue(url: str | None, path: Path) -> Catalogue:
    """The service's catalogue: PostgreSQL to share one between servers, else SQLite.

    Parameters
    ----------
    url
        A ``postgresql://`` URL (the tables are created if missing), or None for SQLite.
    path
        The SQLite file, created if missing; unused with ``url``.

    Returns
    -------
    Catalogue
        Open; ``close`` it, or use it in a ``with`` block.
    """
    if url is None:
        from nearline.archive.sqlite import SQLiteCatalogue

        return SQLiteCatalogue(path)
    from nearline.archive.postgres import PostgresCatalogue

    return PostgresCatalogue(url)

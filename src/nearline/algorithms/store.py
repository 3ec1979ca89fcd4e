"""The versions table: who owns each process id, and each version's state.

``processes`` maps an id to its first owner, for good: ids are global. ``versions`` holds one
row per (id, version), unique, in state *testing* (claimed by a deploy, the claimant's
host:pid in ``deployer``), *live* (``serial`` orders promotions: the highest is the default)
or *retired*. Every change is one write transaction of the service's database (SQLite's
``BEGIN IMMEDIATE``, or PostgreSQL's write lock: nearline/db/_base.py), so two deploys of one
id cannot both win, on one server or several; threads share a store freely.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nearline.db import Database, Parameters
from nearline.errors import Conflict, DuplicatedProcess

SCHEMA = """
CREATE TABLE IF NOT EXISTS processes (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS versions (
    id TEXT NOT NULL REFERENCES processes (id),
    version TEXT NOT NULL,
    owner TEXT NOT NULL,
    public INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('testing', 'live', 'retired')),
    package TEXT NOT NULL,
    python TEXT NOT NULL,
    manifest TEXT NOT NULL,
    deployed TEXT NOT NULL,
    serial INTEGER,
    deployer TEXT,
    PRIMARY KEY (id, version)
);
CREATE INDEX IF NOT EXISTS versions_live ON versions (state, id, serial);
"""


class VersionStore:
    """Processes and their versions, in ``database`` (the SQLite file algorithms.db, or the
    service's PostgreSQL database)."""

    def __init__(self, database: Database) -> None:
        self.database = database
        database.apply(SCHEMA)

    @contextmanager
    def connect(self, *, write: bool = False) -> Iterator[Any]:
        """A connection; with ``write``, inside one write transaction."""
        if write:
            with self.database.transaction() as db:
                yield db
        else:
            yield _Reader(self.database)

    # -- reading ----------------------------------------------------------------------------
    def live(self, id: str | None = None, version: str | None = None) -> list[Any]:
        """Live versions (of ``id``, or that one ``version``), by id, newest first."""
        query, args = "SELECT * FROM versions WHERE state = 'live'", []
        if id is not None:
            query, args = query + " AND id = ?", [*args, id]
        if version is not None:
            query, args = query + " AND version = ?", [*args, version]
        with self.connect() as db:
            return db.execute(query + " ORDER BY id, serial DESC", args).fetchall()

    def owner(self, id: str) -> str | None:
        with self.connect() as db:
            row = db.execute("SELECT owner FROM processes WHERE id = ?", (id,)).fetchone()
        return None if row is None else row["owner"]

    def states(self, id: str, version: str | None = None) -> set[str]:
        """The states of ``id``'s versions (or of that one ``version``)."""
        query, args = "SELECT state FROM versions WHERE id = ?", [id]
        if version is not None:
            query, args = query + " AND version = ?", [*args, version]
        with self.connect() as db:
            return {row["state"] for row in db.execute(query, args)}

    def stale(self) -> list[tuple[str, str]]:
        """(id, version) of versions left testing by deploys that died on this host."""
        with self.connect() as db:
            rows = db.execute("SELECT id, version, deployer FROM versions WHERE state = 'testing'")
            return [(row["id"], row["version"]) for row in rows if not alive(row["deployer"])]

    # -- changing ---------------------------------------------------------------------------
    def claim(
        self,
        id: str,
        version: str,
        *,
        owner: str,
        public: bool,
        replacing: bool,
        package: Path,
        manifest: str,
    ) -> None:
        """Record ``id`` ``version`` as testing for ``owner``, or raise :class:`Conflict`."""
        with self.connect(write=True) as db:
            row = db.execute("SELECT owner FROM processes WHERE id = ?", (id,)).fetchone()
            if row is not None and row["owner"] != owner:
                raise DuplicatedProcess(
                    f"the process id {id!r} is not available; choose another id"
                )
            states = {r[0] for r in db.execute("SELECT state FROM versions WHERE id = ?", (id,))}
            if not replacing and states & {"live", "testing"}:
                raise DuplicatedProcess(
                    f"process {id!r} exists already; deploy a new version of it with replace "
                    f"(PUT /processes/{id}, or `nearline algorithms deploy --replace`)"
                )
            same = db.execute(
                "SELECT state, deployer FROM versions WHERE id = ? AND version = ?", (id, version)
            ).fetchone()
            if same is not None and same["state"] == "testing" and not alive(same["deployer"]):
                db.execute("DELETE FROM versions WHERE id = ? AND version = ?", (id, version))
            elif same is not None:
                raise Conflict(
                    f"version {version!r} of process {id!r} exists already ({same['state']}); "
                    "give the package a new version"
                )
            now = datetime.now(UTC).isoformat()
            try:
                if row is None:
                    db.execute("INSERT INTO processes VALUES (?, ?, ?)", (id, owner, now))
                db.execute(
                    "INSERT INTO versions (id, version, owner, public, state, package, python, "
                    "manifest, deployed, deployer) VALUES (?, ?, ?, ?, 'testing', ?, '', ?, ?, ?)",
                    (id, version, owner, int(public), str(package), manifest, now, me()),
                )
            except self.database.integrity_error:
                raise Conflict(f"process {id!r} version {version!r} is being deployed") from None

    def promote(self, id: str, version: str, *, python: str, deployed: datetime) -> None:
        """Make a tested version live and the newest; :class:`Conflict` if it was retired
        meanwhile (its process undeployed while it was tested)."""
        with self.connect(write=True) as db:
            (serial,) = db.execute(
                "SELECT COALESCE(MAX(serial), 0) + 1 FROM versions WHERE id = ?", (id,)
            ).fetchone()
            promoted = db.execute(
                "UPDATE versions SET state = 'live', serial = ?, python = ?, deployed = ?, "
                "deployer = NULL WHERE id = ? AND version = ? AND state = 'testing'",
                (serial, python, deployed.isoformat(), id, version),
            )
            if promoted.rowcount != 1:
                raise Conflict(f"process {id!r} was undeployed while it was tested")

    def discard(self, id: str, version: str) -> None:
        """Forget a version never promoted, and the id too if nothing else of it is left."""
        with self.connect(write=True) as db:
            db.execute(
                "DELETE FROM versions WHERE id = ? AND version = ? AND serial IS NULL",
                (id, version),
            )
            if db.execute("SELECT 1 FROM versions WHERE id = ?", (id,)).fetchone() is None:
                db.execute("DELETE FROM processes WHERE id = ?", (id,))

    def retire(self, id: str) -> None:
        """Retire every version of ``id``, those being tested too."""
        with self.connect(write=True) as db:
            db.execute(
                "UPDATE versions SET state = 'retired' WHERE id = ? AND state != 'retired'", (id,)
            )


class _Reader:
    """Reads through ``Database.query``, answering as a cursor does."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def execute(self, sql: str, parameters: Parameters = ()) -> _Rows:
        return _Rows(self.database.query(sql, parameters))


class _Rows(list):
    def fetchone(self) -> Any:
        return self[0] if self else None

    def fetchall(self) -> list[Any]:
        return list(self)


def me() -> str:
    """This process, as a version's ``deployer``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def alive(deployer: str | None) -> bool:
    """Whether the deploy that claimed a version may still be at work."""
    if not deployer:
        return False
    host, _, pid = deployer.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine's: it cannot be checked from here
    return pid_alive(int(pid))


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

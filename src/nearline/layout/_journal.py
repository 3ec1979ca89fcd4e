"""The migrator's journal: where each closed set is in its migration, durable across crashes.

A SQLite file in the source root (``.nearline-migrate.sqlite``); every state change is one
committed transaction, so after a ``kill -9`` the migrator restarts each unfinished set
from the last state it reached:

    started ──► copied ──► verified ──► done
       │           │           │
       └───────────┴───────────┴──► failed ──► started (retried on the next run)

``started``: the archive may hold a partial bundle (it is rewritten, under the same name).
``copied``: the bundle is published and its manifest is in the journal; it is read back.
``verified``: it matched; its manifest is on the archive; the source may be partly removed.
``done``: the source is removed (or kept, if the migrator was told to keep it).
A ``done`` set whose marker comes back with different members starts again.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from nearline.closing import Closing
from nearline.errors import MigrationError
from nearline.layout._manifest import BundleKind, Manifest

JOURNAL = ".nearline-migrate.sqlite"
LOCK = ".nearline-migrate.lock"


class State(StrEnum):
    STARTED = "started"
    COPIED = "copied"
    VERIFIED = "verified"
    DONE = "done"
    FAILED = "failed"


UNFINISHED = (State.STARTED, State.COPIED, State.VERIFIED)
_NEXT: dict[State | None, set[State]] = {
    None: {State.STARTED},
    State.STARTED: {State.STARTED, State.COPIED, State.FAILED},
    State.COPIED: {State.STARTED, State.VERIFIED, State.FAILED},
    State.VERIFIED: {State.DONE, State.FAILED},
    State.DONE: {State.STARTED},
    State.FAILED: {State.STARTED},
}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sets (
    step INTEGER NOT NULL,
    file TEXT NOT NULL,
    folder TEXT NOT NULL,
    state TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    bundle TEXT NOT NULL,
    manifest TEXT,
    error TEXT,
    updated REAL NOT NULL,
    PRIMARY KEY (step, file)
)
"""


@dataclass(frozen=True)
class Record:
    """One set's row: its state, the marker it came from and, once copied, its manifest."""

    step: int
    file: str
    folder: str  # the step folder, relative to the source root
    state: State
    fingerprint: str
    bundle: BundleKind
    manifest: Manifest | None
    error: str | None


class Journal(Closing):
    """The journal of the source tree ``root``; holds an exclusive lock while open, so that
    two migrators never work on the same source at once."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.path = self.root / JOURNAL
        self._guard = threading.RLock()  # the migrator records from two threads
        try:
            self._lock = os.open(self.root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise MigrationError(
                f"cannot create the migrator's lock file in {self.root}: {error}; the migrator "
                "keeps its journal in the source root, so it needs write access there"
            ) from None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock)
            raise MigrationError(
                f"another migrator is running on {self.root} (it holds {self.root / LOCK}); "
                "stop it first, or migrate a different source"
            ) from None
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute(_SCHEMA)
        except sqlite3.Error as error:
            os.close(self._lock)
            raise MigrationError(
                f"cannot open the migration journal {self.path}: {error}; if it is corrupt, "
                "move it aside and run again: sets still in the source are archived again, "
                "their bundles rewritten under the same names, not duplicated"
            ) from None

    def get(self, step: int, file: str) -> Record | None:
        rows = self._query(
            "SELECT step, file, folder, state, fingerprint, bundle, manifest, error FROM sets "
            "WHERE step = ? AND file = ?",
            (step, file),
        )
        return self._record(rows[0]) if rows else None

    def records(self, *states: State) -> list[Record]:
        """Every set's record (in the given states, if any), oldest step first."""
        rows = self._query(
            "SELECT step, file, folder, state, fingerprint, bundle, manifest, error FROM sets "
            "ORDER BY step, file"
        )
        records = [self._record(row) for row in rows]
        return [r for r in records if not states or r.state in states]

    def _record(self, row: tuple) -> Record:  # type: ignore[type-arg]
        step, file, folder, state, fingerprint, bundle, manifest, error = row
        where = f"the journal {self.path}, set (step {step}, file {file!r})"
        return Record(
            step,
            file,
            folder,
            State(state),
            fingerprint,
            BundleKind(bundle),
            None if manifest is None else Manifest.from_json(manifest, where=where),
            error,
        )

    def _move(self, step: int, file: str, state: State) -> Record | None:
        record = self.get(step, file)
        current = None if record is None else record.state
        if state not in _NEXT[current]:
            raise MigrationError(
                f"the journal {self.path} has set (step {step}, file {file!r}) {current}, "
                f"which cannot become {state}; this is a bug in nearline, please report it"
            )
        return record

    def begin(
        self, step: int, file: str, *, folder: str, fingerprint: str, bundle: BundleKind
    ) -> None:
        self._move(step, file, State.STARTED)
        self._query(
            "INSERT OR REPLACE INTO sets VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, ?)",
            (step, file, folder, State.STARTED.value, fingerprint, bundle.value, time.time()),
        )

    def copied(self, step: int, file: str, manifest: Manifest) -> None:
        self._move(step, file, State.COPIED)
        self._set(step, file, State.COPIED, manifest=manifest.to_json())

    def verified(self, step: int, file: str) -> None:
        self._move(step, file, State.VERIFIED)
        self._set(step, file, State.VERIFIED)

    def done(self, step: int, file: str) -> None:
        self._move(step, file, State.DONE)
        self._set(step, file, State.DONE)

    def failed(self, step: int, file: str, error: str) -> None:
        self._move(step, file, State.FAILED)
        self._set(step, file, State.FAILED, error=error)

    def _set(self, step: int, file: str, state: State, **columns: str) -> None:
        assignments = "".join(f", {name} = ?" for name in columns)
        self._query(
            f"UPDATE sets SET state = ?, updated = ?{assignments} WHERE step = ? AND file = ?",
            (state.value, time.time(), *columns.values(), step, file),
        )

    def _query(self, sql: str, parameters: tuple = ()) -> list[tuple]:  # type: ignore[type-arg]
        """Run one statement (a transaction of its own) under the lock; its rows."""
        with self._guard:
            return self._db.execute(sql, parameters).fetchall()

    def close(self) -> None:
        if self._lock >= 0:
            self._db.close()
            os.close(self._lock)  # closing the descriptor releases the lock
            self._lock = -1

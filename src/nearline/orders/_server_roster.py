"""The servers sharing one state, and which of them are gone.

Several ``nearline serve`` processes (on several hosts) may share one PostgreSQL database: a
run is held by the server that started it (``runs.server``), and only a server that is gone
has its runs taken over. Each server has a row here and beats: it adds one to its ``beat``
every few seconds. Another server judges it gone when its row has disappeared (it stopped
cleanly), when it ran on this host and its process is no longer there, or when its beat has
not changed for a lease's length of the judge's own clock (no clocks are compared between
hosts).
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass

import psutil

from nearline.db import Database

log = logging.getLogger(__name__)
SCHEMA = """
CREATE TABLE IF NOT EXISTS servers (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    born REAL NOT NULL,
    started TEXT NOT NULL,
    beat INTEGER NOT NULL DEFAULT 0
);
"""
LEASE = 30.0  # seconds without a beat after which a server on another host is gone


@dataclass(frozen=True)
class Server:
    id: str
    host: str
    pid: int
    born: float  # its process's start time, as the kernel gives it (tells reused pids apart)
    beat: int


def _born(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


class Servers:
    """This server's row in ``database``, its beat, and its view of the others."""

    def __init__(self, database: Database, *, lease: float = LEASE) -> None:
        self.database = database
        self.lease = lease
        self.me = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._seen: dict[str, tuple[int, float]] = {}  # id: (beat, when it was first seen)
        database.apply(SCHEMA)

    def register(self) -> str:
        """Add this server; its id."""
        with self.database.transaction() as connection:
            connection.execute(
                "INSERT INTO servers (id, host, pid, born, started) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO NOTHING",
                (
                    self.me,
                    socket.gethostname(),
                    os.getpid(),
                    _born(os.getpid()) or 0.0,
                    time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                ),
            )
        return self.me

    def beat(self) -> None:
        """Say this server is alive (registering again if another judged it gone)."""
        with self.database.transaction() as connection:
            changed = connection.execute(
                "UPDATE servers SET beat = beat + 1 WHERE id = ?", (self.me,)
            ).rowcount
        if not changed:
            log.warning("server %s was judged gone by another; registering again", self.me)
            self.register()

    def others(self) -> list[Server]:
        return [
            Server(row["id"], row["host"], int(row["pid"]), float(row["born"]), int(row["beat"]))
            for row in self.database.query("SELECT * FROM servers WHERE id != ?", (self.me,))
        ]

    def alive(self, *, now: float | None = None) -> set[str]:
        """The ids of the servers this one believes alive (itself included)."""
        now = time.monotonic() if now is None else now
        found = {self.me}
        here = socket.gethostname()
        for server in self.others():
            if server.host == here:
                born = _born(server.pid)
                if born is not None and abs(born - server.born) < 1.0:
                    found.add(server.id)
                continue
            beat, since = self._seen.get(server.id, (server.beat, now))
            if beat != server.beat:
                beat, since = server.beat, now
            self._seen[server.id] = (beat, since)
            if now - since < self.lease:
                found.add(server.id)
        return found

    def forget(self, ids: set[str]) -> None:
        """Remove the rows of servers found gone, once their runs were taken over."""
        with self.database.transaction() as connection:
            for id in sorted(ids - {self.me}):
                connection.execute("DELETE FROM servers WHERE id = ?", (id,))
        for id in ids:
            self._seen.pop(id, None)

    def leave(self) -> None:
        """This server stops: its row goes, so others take its runs over at once."""
        with self.database.transaction() as connection:
            connection.execute("DELETE FROM servers WHERE id = ?", (self.me,))

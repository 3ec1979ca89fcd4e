"""Users and their API tokens.

A token is 32 random bytes shown once, when it is made; the service keeps only its SHA-256
(tokens are random, so a plain hash is as good as a slow one and keeps every request's check
a single indexed lookup). Revoking a user's token makes every request with it a 401.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nearline.db import Database
from nearline.errors import Conflict, InvalidRequest, NotFound, Unauthorized
from nearline.orders._admission import Allotment

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    name TEXT PRIMARY KEY,
    token_hash TEXT UNIQUE,
    created TEXT NOT NULL,
    revoked TEXT
);
"""
STRING = {"disk": "INTEGER", "cpus": "REAL", "memory": "INTEGER"}  # a user's string, NULL: none
TOKEN_PREFIX = "nl_"
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class User:
    name: str
    created: datetime
    revoked: datetime | None
    allotment: Allotment = field(default_factory=Allotment)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class UserStore:
    """Who may use the service (``nearline users add|revoke|token|list``)."""

    def __init__(self, database: Database) -> None:
        self.database = database
        database.apply(SCHEMA)
        database.add_columns("users", STRING)

    def add(self, name: str, allotment: Allotment | None = None) -> str:
        """Create user ``name`` with their string (``allotment``: CPUs, memory and disk; None
        or a None field: no bound); returns their token (shown once, never stored)."""
        if not _NAME.match(name):
            raise InvalidRequest(
                f"user name {name!r}: use 1-64 lowercase letters, digits, '-' or '_', "
                "starting with a letter"
            )
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with self.database.transaction() as connection:
            if connection.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
                raise Conflict(
                    f"user {name} exists; `nearline users token {name}` gives them a new token"
                )
            connection.execute(
                "INSERT INTO users (name, token_hash, created) VALUES (?, ?, ?)",
                (name, _hash(token), datetime.now(UTC).isoformat()),
            )
        if allotment is not None:
            self.set_allotment(name, allotment)
        return token

    def set_allotment(self, name: str, allotment: Allotment) -> None:
        """Give ``name`` this string (it applies to runs not yet started)."""
        with self.database.transaction() as connection:
            changed = connection.execute(
                "UPDATE users SET cpus = ?, memory = ?, disk = ? WHERE name = ?",
                (allotment.cpus, allotment.memory, allotment.disk, name),
            ).rowcount
        if not changed:
            raise NotFound(f"no user {name}; `nearline users add {name}` creates them")

    def allotment(self, name: str) -> Allotment:
        """``name``'s string (no bounds for an unknown user: the service's own runs)."""
        rows = self.database.query("SELECT cpus, memory, disk FROM users WHERE name = ?", (name,))
        return _allotment(rows[0]) if rows else Allotment()

    def new_token(self, name: str) -> str:
        """A fresh token for ``name``; the old one stops working."""
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with self.database.transaction() as connection:
            changed = connection.execute(
                "UPDATE users SET token_hash = ?, revoked = NULL WHERE name = ?",
                (_hash(token), name),
            ).rowcount
        if not changed:
            raise NotFound(f"no user {name}; `nearline users add {name}` creates them")
        return token

    def revoke(self, name: str) -> None:
        """Make ``name``'s token useless (their jobs and results stay)."""
        with self.database.transaction() as connection:
            changed = connection.execute(
                "UPDATE users SET token_hash = NULL, revoked = ? WHERE name = ?",
                (datetime.now(UTC).isoformat(), name),
            ).rowcount
        if not changed:
            raise NotFound(f"no user {name}")

    def authenticate(self, token: str | None) -> str:
        """The user a bearer token belongs to; Unauthorized if none (or revoked)."""
        if not token or not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            raise Unauthorized("a valid API token is required: Authorization: Bearer TOKEN")
        rows = self.database.query("SELECT name FROM users WHERE token_hash = ?", (_hash(token),))
        if not rows:
            raise Unauthorized("this API token is unknown or was revoked")
        return rows[0]["name"]

    def list(self) -> list[User]:
        return [
            User(
                row["name"],
                datetime.fromisoformat(row["created"]),
                datetime.fromisoformat(row["revoked"]) if row["revoked"] else None,
                _allotment(row),
            )
            for row in self.database.query("SELECT * FROM users ORDER BY name")
        ]


def _allotment(row: Any) -> Allotment:
    return Allotment(cpus=row["cpus"], memory=row["memory"], disk=row["disk"])

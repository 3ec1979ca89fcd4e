"""Users and their API tokens.

A token is 32 random bytes shown once, when it is made; the service keeps only its SHA-256
(tokens are random, so a plain hash is as good as a slow one and keeps every request's check
a single indexed lookup). Revoking a user's token makes every request with it a 401. Beside the
token ``nearline users add`` prints, a user may hold personal tokens (identity/_tokens.py), and a
user who signs in through an OpenID Connect provider is found by the provider's issuer and
``sub``, never by an e-mail address (which a provider may let someone else take later).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nearline.db import Database
from nearline.errors import Conflict, InvalidRequest, NotFound, Unauthorized
from nearline.identity._tokens import TOKEN_PREFIX, PersonalTokens, new_secret, token_hash

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    name TEXT PRIMARY KEY,
    token_hash TEXT UNIQUE,
    created TEXT NOT NULL,
    revoked TEXT
);
CREATE TABLE IF NOT EXISTS identities (
    issuer TEXT NOT NULL,
    subject TEXT NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (issuer, subject)
);
"""
STRING = {"disk": "INTEGER", "cpus": "REAL", "memory": "INTEGER"}  # a user's string, NULL: none
ROLE = {"operator": "INTEGER"}  # 1: may revoke anyone's personal tokens (set at each sign-in)
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class Allotment:
    """A user's string: CPUs and memory their runs may hold at once, and bytes their kept
    outputs may take (None: no bound). It is kept on the user's row; orders' admission
    (quotas, fair share) is what reads it."""

    cpus: float | None = None
    memory: int | None = None
    disk: int | None = None


@dataclass(frozen=True)
class User:
    name: str
    created: datetime
    revoked: datetime | None
    allotment: Allotment = field(default_factory=Allotment)


def _check_name(name: str) -> None:
    if not _NAME.match(name):
        raise InvalidRequest(
            f"user name {name!r}: use 1-64 lowercase letters, digits, '-' or '_', "
            "starting with a letter"
        )


class UserStore:
    """Who may use the service (``nearline users add|revoke|token|list``)."""

    def __init__(self, database: Database) -> None:
        self.database = database
        database.apply(SCHEMA)
        database.add_columns("users", {**STRING, **ROLE})
        self.tokens = PersonalTokens(database)

    def add(self, name: str, allotment: Allotment | None = None) -> str:
        """Create user ``name`` with their string (``allotment``: CPUs, memory and disk; None
        or a None field: no bound); returns their token (shown once, never stored)."""
        _check_name(name)
        token = new_secret()
        self._insert(name, token_hash(token))
        if allotment is not None:
            self.set_allotment(name, allotment)
        return token

    def _insert(self, name: str, hashed: str | None) -> None:
        with self.database.transaction() as connection:
            if connection.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
                raise Conflict(
                    f"user {name} exists; `nearline users token {name}` gives them a new token"
                )
            connection.execute(
                "INSERT INTO users (name, token_hash, created) VALUES (?, ?, ?)",
                (name, hashed, datetime.now(UTC).isoformat()),
            )

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
        token = new_secret()
        with self.database.transaction() as connection:
            changed = connection.execute(
                "UPDATE users SET token_hash = ?, revoked = NULL WHERE name = ?",
                (token_hash(token), name),
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
        """The user a bearer token belongs to (the one `nearline users add` printed, or a live
        personal token); Unauthorized if none (or revoked, or expired)."""
        if not token or not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            raise Unauthorized("a valid API token is required: Authorization: Bearer TOKEN")
        rows = self.database.query(
            "SELECT name FROM users WHERE token_hash = ? AND revoked IS NULL", (token_hash(token),)
        )
        if rows:
            return rows[0]["name"]
        if (owner := self.tokens.owner_of(token)) and not self._revoked(owner):
            return owner
        raise Unauthorized("this API token is unknown, expired or was revoked")

    def _revoked(self, name: str) -> bool:
        rows = self.database.query("SELECT revoked FROM users WHERE name = ?", (name,))
        return not rows or rows[0]["revoked"] is not None

    def is_operator(self, name: str) -> bool:
        rows = self.database.query("SELECT operator FROM users WHERE name = ?", (name,))
        return bool(rows and rows[0]["operator"])

    def signed_in(self, issuer: str, subject: str, *, wanted: str, operator: bool) -> str:
        """The user that (``issuer``, ``subject``) signs in as: made on first sign-in (named
        after ``wanted``, made unique; no bounds, as `nearline users add` gives), with the
        operator role the provider's groups give now. A revoked user stays refused.

        A person's first requests often arrive together (a page loading, a notebook's
        threads), so the first sign-in is one write transaction: look the identity up again,
        choose a free name, add the user and the identity, and commit them together, or
        nothing. The state database's contract makes write transactions never interleave
        (SQLite's ``BEGIN IMMEDIATE``; on PostgreSQL the database's advisory write lock, taken
        before the transaction's first read), so the second of two racing first sign-ins
        finds the identity the first made and signs in as that user: no retry, no unique
        violation, no user without an identity. A known identity is read without the write
        lock; only a change of role writes.

        Parameters
        ----------
        issuer
            The token's issuer.
        subject
            Its ``sub``: who the person is at that issuer.
        wanted
            The name to give a new user (their ``preferred_username``), made unique.
        operator
            Whether the provider's groups make them an operator now.
        """
        rows = self.database.query(
            "SELECT users.name AS name, users.revoked AS revoked, users.operator AS operator "
            "FROM identities JOIN users ON users.name = identities.name "
            "WHERE identities.issuer = ? AND identities.subject = ?",
            (issuer, subject),
        )
        if not rows or bool(rows[0]["operator"]) != operator:
            rows = self._sign_in_once(issuer, subject, wanted=wanted, operator=operator)
        if rows[0]["revoked"] is not None:
            raise Unauthorized(f"user {rows[0]['name']} was revoked by the operator")
        return rows[0]["name"]

    def _sign_in_once(self, issuer: str, subject: str, *, wanted: str, operator: bool) -> Any:
        """Make (or find, if another request just made them) the identity's user and set
        their role, in one write transaction; their row (name, revoked, operator)."""
        with self.database.transaction() as connection:
            found = connection.execute(
                "SELECT name FROM identities WHERE issuer = ? AND subject = ?", (issuer, subject)
            ).fetchone()
            name = found["name"] if found else _free_name(connection, wanted)
            if found is None:
                connection.execute(
                    "INSERT INTO identities (issuer, subject, name) VALUES (?, ?, ?)",
                    (issuer, subject, name),
                )
            if connection.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
                # the provider's groups say at each sign-in whether they are an operator
                connection.execute(
                    "UPDATE users SET operator = ? WHERE name = ?", (int(operator), name)
                )
            else:
                connection.execute(
                    "INSERT INTO users (name, token_hash, created, operator) VALUES (?, ?, ?, ?)",
                    (name, None, datetime.now(UTC).isoformat(), int(operator)),
                )
            return connection.execute(
                "SELECT name, revoked, operator FROM users WHERE name = ?", (name,)
            ).fetchall()

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


def _free_name(connection: Any, wanted: str) -> str:
    """A user name after ``wanted`` that no user has, read through ``connection`` (inside the
    write transaction that takes it)."""
    base = re.sub(r"[^a-z0-9_-]+", "-", wanted.lower()).strip("-_")[:56]
    base = base if base[:1].isalpha() else f"u-{base}".rstrip("-")
    taken = {row["name"] for row in connection.execute("SELECT name FROM users").fetchall()}
    name, suffix = base, 1
    while name in taken:
        suffix += 1
        name = f"{base}-{suffix}"
    return name


def _allotment(row: Any) -> Allotment:
    return Allotment(cpus=row["cpus"], memory=row["memory"], disk=row["disk"])

"""Personal access tokens: the ones users make, name, list and revoke themselves
(``/users/me/tokens``, the web page, ``nearline tokens``), and the ones a web sign-in mints.

A token is ``nl_`` and 32 random bytes, shown once when it is made; the service keeps only its
SHA-256, as it does for the token ``nearline users add`` prints (a random token needs no slow
hash). Each has an id that is not secret (it names the token in lists and in ``DELETE``), a
name, an expiry and, once revoked, the time it was. Another user's token id is a 404, never a
403: whether it exists is theirs to know.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from nearline.db import Database
from nearline.errors import InvalidRequest, NotFound

SCHEMA = """
CREATE TABLE IF NOT EXISTS personal_tokens (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created TEXT NOT NULL,
    expires TEXT NOT NULL,
    revoked TEXT
);
CREATE INDEX IF NOT EXISTS personal_tokens_owner ON personal_tokens (owner);
"""
TOKEN_PREFIX = "nl_"
MAX_DAYS = 366  # the longest a personal token may live
DEFAULT_DAYS = 90
MAX_NAME = 100
# a token's name: no control character, and something besides white space (the OpenAPI
# document's schema says the same, so what it allows is what create() takes)
TOKEN_NAME_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class TokenNotFound(NotFound):
    code = "not-found"


@dataclass(frozen=True)
class PersonalToken:
    """What a token's owner may see of it again: everything but the token itself."""

    id: str
    owner: str
    name: str
    created: datetime
    expires: datetime
    revoked: datetime | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "created": self.created.isoformat(),
            "expires": self.expires.isoformat(),
            "revoked": self.revoked.isoformat() if self.revoked else None,
        }


class PersonalTokens:
    """The personal tokens of every user, in the service's state database."""

    def __init__(self, database: Database) -> None:
        self.database = database
        database.apply(SCHEMA)

    def create(
        self, owner: str, name: str, *, days: float = DEFAULT_DAYS
    ) -> tuple[PersonalToken, str]:
        """A new token of ``owner`` named ``name`` living ``days``; it and its secret (shown
        once, never stored)."""
        try:
            name.encode()
        except UnicodeEncodeError:  # a lone surrogate: JSON allows it, the database does not
            name = ""
        if len(name) > MAX_NAME or not re.fullmatch(TOKEN_NAME_PATTERN, name):
            raise InvalidRequest(
                f"token name: 1 to {MAX_NAME} characters, not only white space, no control "
                "characters, please"
            )
        name = name.strip()
        if not 0 < days <= MAX_DAYS:
            raise InvalidRequest(f"token expiry: between 0 and {MAX_DAYS} days, got {days:g}")
        now = datetime.now(UTC)
        token = PersonalToken(
            "tok_" + secrets.token_hex(8), owner, name, now, now + timedelta(days=days), None
        )
        secret = new_secret()
        with self.database.transaction() as connection:
            connection.execute(
                "INSERT INTO personal_tokens (id, owner, name, token_hash, created, expires) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (token.id, owner, name, token_hash(secret), now.isoformat(),
                 token.expires.isoformat()),
            )  # fmt: skip
        return token, secret

    def owner_of(self, secret: str) -> str | None:
        """Whose live (not revoked, not expired) token ``secret`` is; None if nobody's."""
        rows = self.database.query(
            "SELECT owner, expires FROM personal_tokens WHERE token_hash = ? AND revoked IS NULL",
            (token_hash(secret),),
        )
        if not rows or datetime.fromisoformat(rows[0]["expires"]) <= datetime.now(UTC):
            return None
        return rows[0]["owner"]

    def of(self, owner: str | None = None) -> list[PersonalToken]:
        """``owner``'s tokens (everyone's with None), newest first."""
        where, parameters = ("WHERE owner = ?", (owner,)) if owner else ("", ())
        rows = self.database.query(
            f"SELECT * FROM personal_tokens {where} ORDER BY created DESC, id", parameters
        )
        return [_token(row) for row in rows]

    def get(self, token_id: str, *, owner: str | None) -> PersonalToken:
        """Token ``token_id``, if ``owner``'s (anyone's with None: an operator asks)."""
        rows = self.database.query("SELECT * FROM personal_tokens WHERE id = ?", (token_id,))
        if not rows or (owner is not None and rows[0]["owner"] != owner):
            whose = "you have no token" if owner is not None else "there is no token"
            raise TokenNotFound(f"{whose} {token_id!r}")
        return _token(rows[0])

    def revoke(self, token_id: str, *, owner: str | None) -> PersonalToken:
        """Revoke token ``token_id`` of ``owner`` (anyone's with None); it at once stops
        working. Revoking a revoked token is no error."""
        self.get(token_id, owner=owner)
        with self.database.transaction() as connection:
            connection.execute(
                "UPDATE personal_tokens SET revoked = ? WHERE id = ? AND revoked IS NULL",
                (datetime.now(UTC).isoformat(), token_id),
            )
        return self.get(token_id, owner=owner)

    def revoke_secret(self, secret: str, *, owner: str) -> bool:
        """Revoke ``owner``'s token whose secret is ``secret`` (signing out); whether it was
        one."""
        with self.database.transaction() as connection:
            changed = connection.execute(
                "UPDATE personal_tokens SET revoked = ? "
                "WHERE token_hash = ? AND owner = ? AND revoked IS NULL",
                (datetime.now(UTC).isoformat(), token_hash(secret), owner),
            ).rowcount
        return bool(changed)


def _token(row: Any) -> PersonalToken:
    return PersonalToken(
        id=row["id"],
        owner=row["owner"],
        name=row["name"],
        created=datetime.fromisoformat(row["created"]),
        expires=datetime.fromisoformat(row["expires"]),
        revoked=datetime.fromisoformat(row["revoked"]) if row["revoked"] else None,
    )

"""A sign-in's short-lived values (the pending flow's nonce and PKCE verifier, the fresh
token handed to the browser), kept in the service's database so that every worker process of
`nearline serve --workers` sees them: the provider's callback and the page's next request
may land on another process than the one that started the sign-in.

Each value is sealed with a key derived from the random name it is kept under (the state the
provider sends back, the cookie only the browser holds), and the row is keyed by that name's
SHA-256: the database alone gives nobody a verifier or a token. ``take`` deletes the row as
it reads it, so a value is used at most once, whichever process asks first.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from nearline.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS signin_handoffs (
    key_hash TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    sealed BLOB NOT NULL,
    expires REAL NOT NULL
);
"""
NONCE_BYTES = 12  # AES-GCM's


def _key_hash(kind: str, key: str) -> str:
    return hashlib.sha256(f"{kind}\0{key}".encode()).hexdigest()


def _cipher(kind: str, key: str) -> AESGCM:
    """A key of its own for each value, from its name; the name is 32 random bytes."""
    return AESGCM(hashlib.sha256(f"nearline sign-in seal\0{kind}\0{key}".encode()).digest())


class Handoffs:
    """Values of one ``kind`` kept ``seconds`` in ``database`` and taken at most once."""

    def __init__(self, database: Database, kind: str, seconds: float) -> None:
        self.database = database
        self.kind = kind
        self.seconds = seconds
        database.apply(SCHEMA)

    def put(self, key: str, value: Any) -> None:
        """Keep ``value`` (JSON) under ``key`` for ``seconds``; expired rows go meanwhile."""
        nonce = os.urandom(NONCE_BYTES)
        sealed = nonce + _cipher(self.kind, key).encrypt(nonce, json.dumps(value).encode(), None)
        now = time.time()
        with self.database.transaction() as connection:
            connection.execute("DELETE FROM signin_handoffs WHERE expires < ?", (now,))
            connection.execute(
                "INSERT INTO signin_handoffs (key_hash, kind, sealed, expires) VALUES (?, ?, ?, ?)",
                (_key_hash(self.kind, key), self.kind, sealed, now + self.seconds),
            )

    def take(self, key: str) -> Any | None:
        """The value kept under ``key``, once; None if there is none, it expired or was
        taken."""
        with self.database.transaction() as connection:
            row = connection.execute(
                "DELETE FROM signin_handoffs WHERE key_hash = ? RETURNING sealed, expires",
                (_key_hash(self.kind, key),),
            ).fetchone()
        if row is None or row[1] <= time.time():
            return None
        sealed = bytes(row[0])
        opened = _cipher(self.kind, key).decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], None)
        return json.loads(opened)

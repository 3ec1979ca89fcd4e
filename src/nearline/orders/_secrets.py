"""The service's own secret keys, kept in its state database.

A key is made once, on first use, and kept where the service keeps its state: so it outlives
restarts, and every server sharing one PostgreSQL database signs and checks with the same key
(the first server to ask makes it; the insert of any other loses the race and reads it).
"""

from __future__ import annotations

import secrets

from nearline.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS service_keys (
    name TEXT PRIMARY KEY,
    secret TEXT NOT NULL
);
"""
KEY_BYTES = 32


class ServiceKeys:
    """Named random keys, made on first use and never changed."""

    def __init__(self, database: Database) -> None:
        self.database = database
        database.apply(SCHEMA)

    def key(self, name: str) -> bytes:
        """The key ``name`` (32 random bytes), made now if there is none yet."""
        with self.database.transaction() as connection:
            connection.execute(
                "INSERT INTO service_keys (name, secret) VALUES (?, ?) "
                "ON CONFLICT (name) DO NOTHING",
                (name, secrets.token_hex(KEY_BYTES)),
            )
        rows = self.database.query("SELECT secret FROM service_keys WHERE name = ?", (name,))
        return bytes.fromhex(rows[0]["secret"])

"""The openEO face's tests run on the tiles' live service (tests/tiles/conftest.py: the
public composite-8km of two days and alice's private collection, catalogued by ingest, beside
the 12 swath test granules), through the openEO Python client."""

from __future__ import annotations

import openeo
import pytest

from ..live_service import LiveService
from ..tiles.conftest import composite, live

__all__ = ["alice", "composite", "connect", "live"]  # the tiles' fixtures, used here too


def connect(live: LiveService, user: str | None = None) -> openeo.Connection:
    """The openEO client connected as a user does, to the service's root URL (it finds the
    openEO face through /.well-known/openeo), signed in with ``user``'s token in openEO's
    basic form, or anonymous."""
    connection = openeo.connect(live.url)
    if user is not None:
        connection.authenticate_bearer_token(f"basic//{live.tokens[user]}")
    return connection


@pytest.fixture(scope="module")
def alice(live: LiveService) -> openeo.Connection:
    return connect(live, "alice")

"""A live service holding gridded collections of composites (tests/tiles/gridded.py: the public
composite-8km of two days, alice's private collection) beside the 12 swath test granules, for
the openEO face's tests through the openEO Python client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openeo
import pytest

from ..live_service import LiveService
from ..service.composites import made_composite
from ..tiles.gridded import serving_composites


@pytest.fixture(scope="module")
def composite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return made_composite(tmp_path_factory)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, composite: Path) -> Iterator[LiveService]:
    with serving_composites(tmp_path_factory.mktemp("openeo-served"), composite) as service:
        yield service


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

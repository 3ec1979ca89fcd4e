"""The tiles' tests' composite (made once a session) and live server (one a module)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ..live_service import LiveService
from ..service.composites import made_composite
from .gridded import serving_composites


@pytest.fixture(scope="module")
def composite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return made_composite(tmp_path_factory)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, composite: Path) -> Iterator[LiveService]:
    with serving_composites(tmp_path_factory.mktemp("tiles-served"), composite) as service:
        yield service

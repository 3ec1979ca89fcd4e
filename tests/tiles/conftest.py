"""The tiles' tests' composite (made once a session) and live server (one a module)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ..live_service import LiveService
from ..service.composites import made_composite
from ..service.conftest import serving
from .gridded import catalogue_composites, next_day


@pytest.fixture(scope="module")
def composite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return made_composite(tmp_path_factory)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, composite: Path) -> Iterator[LiveService]:
    folder = tmp_path_factory.mktemp("tiles-served")
    second = next_day(composite, folder)
    with serving(folder, lambda s: catalogue_composites(s.data, composite, second)) as service:
        yield service

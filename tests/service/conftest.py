"""A live service per test module: real server, real users (alice, bob), test granules."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from ..live_service import LiveService
from .granules import add_granules

PACKAGES = Path(__file__).parent / "packages"


def zip_folder(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


def deploy(live: LiveService, user: str, package: str | Path, *, public: bool = False) -> dict:
    folder = PACKAGES / package if isinstance(package, str) else package
    with live.client(user) as client:
        response = client.post(
            "/processes",
            content=zip_folder(folder),
            headers={"Content-Type": "application/zip"},
            params={"public": "true"} if public else None,
            timeout=600,
        )
    assert response.status_code == 201, response.text
    return response.json()


@contextmanager
def serving(
    folder: Path,
    prepare: Callable[[LiveService], None] | None = None,
    extra: Sequence[str] = (),
    db: str | None = None,
) -> Iterator[LiveService]:
    """A live service on ``folder``/data: the 12 test granules, users alice and bob, 2 CPUs,
    4 MiB uploads, and ``extra`` options of `nearline serve`; with ``db`` (a PostgreSQL URL)
    its state is kept there. ``prepare`` runs once it answers. Stopped on leaving."""
    data = folder / "data"
    service = LiveService(data, db=db)
    add_granules(data, 12)
    service.add_user("alice")
    service.add_user("bob")
    service.start("--cpus", "2", "--max-upload", "4MiB", *extra)
    try:
        if prepare is not None:
            prepare(service)
        yield service
    finally:
        service.stop()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module naming ``BACKENDS = ("sqlite", "postgresql")`` runs its tests once against a
    server on each (one server per backend and module)."""
    backends = getattr(metafunc.module, "BACKENDS", None)
    if backends and "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", backends, indirect=True, scope="module")


@pytest.fixture(scope="module")
def backend(request: pytest.FixtureRequest) -> str:
    """Where the module's server keeps its state: sqlite (the default) or postgresql."""
    return getattr(request, "param", "sqlite")


@pytest.fixture(scope="module")
def state_db(request: pytest.FixtureRequest, backend: str) -> str | None:
    """A new PostgreSQL database for the module's server (None: SQLite files)."""
    if backend == "sqlite":
        return None
    return request.getfixturevalue("postgres_server").new_database("service")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, state_db: str | None) -> Iterator[LiveService]:
    with serving(tmp_path_factory.mktemp("service"), db=state_db) as service:
        yield service


@pytest.fixture(scope="module")
def alices_processes(live: LiveService) -> dict[str, dict]:
    """alice's private granule-sizes and sleeper, deployed through the API."""
    return {name: deploy(live, "alice", name) for name in ("sizes", "sleeper")}

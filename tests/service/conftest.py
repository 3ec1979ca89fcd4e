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
) -> Iterator[LiveService]:
    """A live service on ``folder``/data: the 12 test granules, users alice and bob, 2 CPUs,
    4 MiB uploads, and ``extra`` options of `nearline serve`; ``prepare`` runs once it
    answers. Stopped on leaving."""
    data = folder / "data"
    service = LiveService(data)
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


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    with serving(tmp_path_factory.mktemp("service")) as service:
        yield service


@pytest.fixture(scope="module")
def alices_processes(live: LiveService) -> dict[str, dict]:
    """alice's private granule-sizes and sleeper, deployed through the API."""
    return {name: deploy(live, "alice", name) for name in ("sizes", "sleeper")}

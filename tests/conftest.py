"""Shared test settings: MPI launched for real, and no global configuration leaking."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from nearline.mpirun import MPI_ENV

from .chromium_browser import browser, page, screens  # noqa: F401 - one Chromium a session
from .postgres_server import postgres_server  # noqa: F401 - a session fixture for every test
from .s3_server import s3_bucket, s3_server  # noqa: F401 - a session fixture for every test
from .slowest_first import order

# speed lives in benchmarks, not in tests: on a shared 2-core machine a stall of seconds
# would fail hypothesis's timing checks (a draw "too slow", an example past its deadline)
settings.register_profile("nearline", suppress_health_check=[HealthCheck.too_slow], deadline=None)
settings.load_profile("nearline")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slowest files first, so that none is left to run alone at the end (slowest_first)."""
    order(items)


@pytest.fixture(autouse=True)
def _clean_nearline_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts without NEARLINE_* or AWS settings from the developer's shell or
    ~/.aws: a test that needs credentials passes them itself."""
    for name in list(os.environ):
        if name.startswith(("NEARLINE_", "AWS_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)


def mpiexec(
    program: Path,
    *args: str,
    ranks: int,
    timeout: float = 120,
    recovery: bool = False,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``program`` on ``ranks`` real MPI ranks (oversubscribed) and return its outcome."""
    launcher = Path(sys.executable).parent / "mpiexec"
    command = [str(launcher), "-n", str(ranks)]
    if recovery:  # keep the other ranks alive when one dies, so they can report it
        command.append("--enable-recovery")
    command += [sys.executable, str(program), *args]
    full_env = {**os.environ, **MPI_ENV, **(env or {})}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=full_env, check=False
    )

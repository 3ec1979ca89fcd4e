"""A real `nearline serve` on 127.0.0.1 for the service's tests, with real users.

The server runs as its own process (as an operator starts it), so tests can kill it with
SIGKILL and start it again on the same data folder, and clients talk to it over real HTTP.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from nearline.cli._serve import wait_until_serving
from nearline.errors import NearlineError
from nearline.mpirun import MPI_ENV

# How long a server may take to answer at start: a guard against one that never will, not a
# limit. Quiet, it answers in 1-2 s; beside stress-ng and two other suites (load 12) one took
# more than 60 s just to import.
START_GUARD = 300.0


def database_of(data: Path) -> str | None:
    """The PostgreSQL URL a test service on ``data`` keeps its state in (None: SQLite files),
    as :class:`LiveService` wrote it beside the folder."""
    marker = data.parent / f"{data.name}.db-url"
    return marker.read_text().strip() if marker.exists() else None


def state_env(data: Path) -> dict[str, str]:
    """The environment `nearline` commands need to find the service's state."""
    url = database_of(data)
    return {"NEARLINE_DATA": str(data), **({"NEARLINE_DB": url} if url else {})}


def nearline(*args: str, data: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the `nearline` command as a user would, on the service's data folder (and its
    PostgreSQL database, if it has one)."""
    command = [sys.executable, "-m", "nearline", *args]
    env = {**os.environ, **MPI_ENV, **state_env(data)}
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    if check and result.returncode != 0:
        said = f"{result.stderr}{result.stdout}"
        raise AssertionError(f"nearline {' '.join(args)} exited {result.returncode}:\n{said}")
    return result


@dataclass
class LiveService:
    data: Path
    port: int = 0  # 0 until the first start, which lets the server pick a free one
    process: subprocess.Popen | None = None
    tokens: dict[str, str] = field(default_factory=dict)
    log: Path | None = None
    db: str | None = None  # a PostgreSQL URL: the state lives there (`nearline serve --db`)

    def __post_init__(self) -> None:
        if self.db is not None:
            self.data.mkdir(parents=True, exist_ok=True)
            (self.data.parent / f"{self.data.name}.db-url").write_text(self.db)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(
        self, *extra: str, timeout: float = START_GUARD, preexec: Callable[[], None] | None = None
    ) -> None:
        """Start the server with ``extra`` options and wait until it answers; ``preexec``
        runs in the server's process before it execs (system calls only)."""
        self.log = self.data.parent / f"{self.data.name}-server.log"
        env = {**os.environ, **MPI_ENV, **state_env(self.data)}
        command = [sys.executable, "-m", "nearline", "serve", "--port", str(self.port), *extra]
        with open(self.log, "ab") as log:
            began = log.tell()
            self.process = subprocess.Popen(
                command, env=env, stdout=log, stderr=log, preexec_fn=preexec
            )
        try:
            self.port = wait_until_serving(self.process, self.log, since=began, timeout=timeout)
        except NearlineError as error:
            raise AssertionError(f"{error}:\n{self.log.read_text()[-3000:]}") from None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def kill(self) -> None:
        """SIGKILL, as a crash would: no clean-up runs."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()
        self.process = None

    def add_user(self, name: str) -> str:
        token = nearline("users", "add", name, data=self.data).stdout.strip()
        self.tokens[name] = token
        return token

    def client(self, user: str | None = None, **kwargs) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens[user]}"} if user else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, **kwargs)

    def wait_for_job(
        self, user: str, job_id: str, *, timeout: float = 300, poll: float = 0.2
    ) -> dict:
        """Poll GET /jobs/{id} until the job has ended; its final status document."""
        deadline = time.monotonic() + timeout
        with self.client(user) as client:
            while time.monotonic() < deadline:
                status = client.get(f"/jobs/{job_id}").json()
                if status["status"] in ("successful", "failed", "dismissed"):
                    return status
                time.sleep(poll)
        raise AssertionError(f"job {job_id} did not end in {timeout} s: {status}")

"""A real Prometheus (Debian's ``prometheus``) on 127.0.0.1 for the tests: it scrapes the
targets it is given every second and answers PromQL through its HTTP API."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

CONFIG = """\
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: nearline
    static_configs:
      - targets: [{targets}]
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Prometheus:
    """A started Prometheus: :meth:`query` asks it PromQL."""

    def __init__(self, url: str) -> None:
        self.url = url

    def query(self, promql: str) -> list[dict]:
        """The instant vector ``promql`` evaluates to now (its ``result`` list)."""
        answer = httpx.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=10)
        answer.raise_for_status()
        body = answer.json()
        assert body["status"] == "success", body
        return body["data"]["result"]

    def value(self, promql: str, *, equal: float, timeout: float = 30) -> float | None:
        """The single value ``promql`` gives once it is ``equal`` (scrapes come each second),
        or the last one seen after ``timeout`` seconds (None: no value at all)."""
        deadline = time.monotonic() + timeout
        seen = None
        while time.monotonic() < deadline:
            result = self.query(promql)
            seen = float(result[0]["value"][1]) if result else None
            if seen == equal:
                return seen
            time.sleep(0.5)
        return seen


@contextmanager
def prometheus(folder: Path, targets: list[str]) -> Iterator[Prometheus]:
    """Prometheus scraping ``targets`` (HOST:PORT, path /metrics) each second, its data in
    ``folder``; stopped on leaving."""
    binary = shutil.which("prometheus")
    assert binary, "Debian's prometheus is missing: scripts/system-packages installs it"
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "prometheus.yml"
    config.write_text(CONFIG.format(targets=", ".join(f'"{t}"' for t in targets)))
    address = f"127.0.0.1:{free_port()}"
    log = folder / "prometheus.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={folder / 'tsdb'}",
                f"--web.listen-address={address}",
            ],
            stdout=output,
            stderr=output,
        )
    try:
        _wait_ready(f"http://{address}", process, log)
        yield Prometheus(f"http://{address}")
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_ready(url: str, process: subprocess.Popen, log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"prometheus stopped at start:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"prometheus was not ready in {timeout} s:\n{log.read_text()[-3000:]}")

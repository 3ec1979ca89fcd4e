"""Kept-alive HTTP clients that cost little CPU: Debian's ``wrk`` (C, one thread, many
connections) driven by _wrk_paths.lua, which rotates through a file of paths and reports
from its done hook as one JSON line.

    check_wrk()                              # exits in one line if wrk is not installed
    load = wrk(url, paths_file, connections=16, seconds=10, token=token)
    load.rate, load.p95                      # requests/s, seconds

A run in which any request failed (an answer of 400 or more, a socket error, a timeout)
raises :class:`WrkError` with wrk's own report.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "_wrk_paths.lua"
ERRORS = ("connect", "read", "write", "status", "timeout")
TIMEOUT = 30  # seconds a request may take before wrk counts it as timed out (its default: 2)


class WrkError(RuntimeError):
    """wrk failed, or some of its requests did."""


@dataclass(frozen=True)
class Load:
    """What one wrk run saw: requests completed in ``seconds``, and their latency
    percentiles (seconds)."""

    requests: int
    seconds: float
    p50: float
    p95: float
    p99: float

    @property
    def rate(self) -> float:
        """Requests per second."""
        return self.requests / self.seconds


def check_wrk() -> None:
    """Exit with scripts/system-packages' one line (the apt-get that installs it) when wrk is
    missing."""
    check = [str(HERE.parent / "scripts" / "system-packages"), "--check", "wrk"]
    done = subprocess.run(check, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(done.stderr.strip())


def wrk_version() -> str:
    """'wrk debian/4.1.0-3+b2', as ``wrk --version`` says (and exits 1)."""
    said = subprocess.run(["wrk", "--version"], capture_output=True, text=True).stdout
    return said.split(" [")[0].strip() or "wrk"


def write_paths(path: Path, paths: list[str]) -> Path:
    """``paths`` (each beginning with /) one a line in ``path``, for :func:`wrk`."""
    path.write_text("".join(f"{p}\n" for p in paths))
    return path


def wrk(url: str, paths: Path, *, connections: int, seconds: int, token: str | None = None) -> Load:
    """``connections`` kept-alive connections from one wrk thread, for ``seconds``, asking
    ``url`` for the paths in ``paths`` in turn (with ``token`` as a bearer token)."""
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", f"--timeout={TIMEOUT}s"]
    command += ["-s", str(SCRIPT), url, "--", str(paths), *([token] if token else [])]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 2 * TIMEOUT)
    said = f"{' '.join(command[:-1] if token else command)}:\n{done.stdout}{done.stderr}"
    reports = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not reports:
        raise WrkError(f"wrk failed (exit {done.returncode}) {said}")
    report = json.loads(reports[-1])
    failed = {kind: report[kind] for kind in ERRORS if report[kind]}
    refused = re.search(r"Non-2xx or 3xx responses: (\d+)", done.stdout)
    if failed or refused or not report["requests"]:
        raise WrkError(f"requests failed ({failed or 'none completed'}) in {said}")
    return Load(
        requests=report["requests"],
        seconds=report["seconds"],
        **{q: report[q] / 1e6 for q in ("p50", "p95", "p99")},
    )

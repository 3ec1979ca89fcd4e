"""`nearline serve --workers N`: N processes answer on one listening socket, so that searches
and downloads use every core (one Python process answers on one).

The first process, the primary, is the whole service: it runs the dispatcher, the
subscriptions' watch and the metrics' address. The others, fronts, answer requests only; they
are this same command started again with the socket, and two pipes, handed down:

- the *wake* pipe: a front that takes an order (or a dismissal) writes a byte, and the
  primary's dispatcher looks at the queue at once, as it does for its own orders;
- the *life* pipe: each front reads it, and when the primary goes (even under ``kill -9``)
  the read ends and the front stops serving.

Everything a request leaves for the next one is in the database (sign-ins included:
nearline.identity.Handoffs), so any process may answer any request. The request histograms
are shared through prometheus_client's multiprocess mode. Uvicorn's own ``--workers`` runs
identical processes, which would each start a dispatcher: hence this module.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

# in a front's environment: its descriptors "LISTENER,WAKE,LIFE" and the primary's pid
FRONT = "NEARLINE_SERVE_FRONT"
METRICS_DIR = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's own name for it
STOP_SECONDS = 10.0
PR_SET_PDEATHSIG = 1  # linux/prctl.h
log = logging.getLogger(__name__)


def default_workers() -> int:
    """$NEARLINE_WORKERS, else the cores this process may use."""
    text = os.environ.get("NEARLINE_WORKERS", "")
    if text.strip():
        return int(text) if text.strip().isdigit() else 0  # 0: refused by check_workers
    return len(os.sched_getaffinity(0))


def check_workers(count: int) -> int:
    from nearline.errors import ConfigError

    if not 1 <= count <= 256:
        raise ConfigError(f"--workers: expected 1 to 256 processes, got {count}")
    return count


def share_metrics() -> Path:
    """Before prometheus_client is imported: a fresh folder its processes share values in."""
    folder = Path(tempfile.mkdtemp(prefix="nearline-metrics-"))
    os.environ[METRICS_DIR] = str(folder)
    return folder


def _die_with(primary: int) -> None:
    """SIGKILL this front the moment its primary dies (``kill -9`` included), so that the
    port is free at once for a restart; a primary that stops cleanly closes the life pipe
    first, and each front finishes its open requests."""
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != primary:  # the primary died before the prctl
        os._exit(1)


class FrontLink:
    """What a front was handed: the socket, and its ends of the two pipes."""

    def __init__(self, text: str) -> None:
        listener, wake, life = (int(part) for part in text.split(","))
        self.listener = socket.socket(fileno=listener)
        self.wake_fd = wake
        self.life_fd = life

    @classmethod
    def of_environment(cls) -> FrontLink | None:
        text = os.environ.pop(FRONT, None)  # not passed on to runs or subprocesses
        if not text:
            return None
        *fds, primary = text.split(",")
        _die_with(int(primary))
        return cls(",".join(fds))

    def wake(self) -> None:
        with contextlib.suppress(BlockingIOError, BrokenPipeError):  # a full pipe: awake
            os.write(self.wake_fd, b"!")

    def on_primary_gone(self, stop: Callable[[], None]) -> None:
        """Call ``stop`` when the primary is gone (its end of the life pipe closes)."""

        def watch() -> None:
            with contextlib.suppress(OSError):
                while os.read(self.life_fd, 1):
                    pass
            stop()

        threading.Thread(target=watch, name="nearline-front-life", daemon=True).start()


class Fronts:
    """The primary's fronts: started with its socket, stopped (and waited for) on close."""

    def __init__(
        self, listener: socket.socket, argv: list[str], count: int, wake: Callable[[], None]
    ) -> None:
        self._wake_read, wake_write = os.pipe()
        life_read, self._life_write = os.pipe()
        os.set_blocking(wake_write, False)
        fds = (listener.fileno(), wake_write, life_read)
        env = {**os.environ, FRONT: ",".join(map(str, (*fds, os.getpid())))}
        command = [sys.executable, "-m", "nearline", *argv]
        self.processes = [
            subprocess.Popen(command, env=env, pass_fds=fds) for _ in range(count - 1)
        ]
        os.close(wake_write)
        os.close(life_read)
        threading.Thread(
            target=self._relay, args=(wake,), name="nearline-front-wakes", daemon=True
        ).start()

    def _relay(self, wake: Callable[[], None]) -> None:
        with contextlib.suppress(OSError):
            while os.read(self._wake_read, 4096):
                wake()

    def gone(self) -> list[int]:
        """Exit codes of fronts that stopped by themselves."""
        return [code for process in self.processes if (code := process.poll()) is not None]

    def close(self) -> None:
        """Close the life pipe (each front stops after its open requests) and wait."""
        os.close(self._life_write)
        deadline = time.monotonic() + STOP_SECONDS
        for process in self.processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("front %d did not stop in %g s: killed", process.pid, STOP_SECONDS)
                process.kill()
                process.wait()

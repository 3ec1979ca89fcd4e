"""`nearline serve --workers N`: N processes answer on one port, so that searches and downloads
use every core (one Python process answers on one).

The first process, the primary, is the whole service: it runs the dispatcher, the
subscriptions' watch and the metrics' address. The others, fronts, answer requests only; they
are this same command started again with the port and two pipes handed down. Each process
listens on a socket of its own bound with SO_REUSEPORT, so that the kernel spreads new
connections evenly over them: on one shared socket, the process that wakes first accepts a
burst of kept-alive connections all alone (16 of 16, measured), and they stay with it.

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
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

# in a front's environment: its pipes' descriptors, the port and the primary's pid
FRONT = "NEARLINE_SERVE_FRONT"
METRICS_DIR = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's own name for it
STOP_SECONDS = 10.0
START_SECONDS = 300.0  # a guard against a front that never listens (a busy machine: minutes)
READY = b"R"
PR_SET_PDEATHSIG = 1  # linux/prctl.h
log = logging.getLogger(__name__)


def default_workers() -> int:
    """$NEARLINE_WORKERS, else the cores this process may use."""
    from nearline.errors import ConfigError

    text = os.environ.get("NEARLINE_WORKERS", "").strip()
    if not text:
        return len(os.sched_getaffinity(0))
    if not text.isdigit():
        raise ConfigError(f"NEARLINE_WORKERS: expected a number of processes, got {text!r}")
    return int(text)


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
    """What a front was handed: the primary's port, and its ends of the two pipes."""

    def __init__(self, text: str) -> None:
        wake, life, self.port = (int(part) for part in text.split(","))
        self.wake_fd = wake
        self.life_fd = life

    @classmethod
    def of_environment(cls) -> FrontLink | None:
        text = os.environ.pop(FRONT, None)  # not passed on to runs or subprocesses
        if not text:
            return None
        *handed, primary = text.split(",")
        _die_with(int(primary))
        return cls(",".join(handed))

    def ready(self) -> None:
        """Tell the primary this front listens (its socket is bound: connections queue)."""
        os.write(self.wake_fd, READY)

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
    """The primary's fronts: started, waited for until each listens, stopped on close."""

    def __init__(self, port: int, argv: list[str], count: int, wake: Callable[[], None]) -> None:
        self._wake_read, wake_write = os.pipe()
        life_read, self._life_write = os.pipe()
        os.set_blocking(wake_write, False)
        handed = (wake_write, life_read)
        env = {**os.environ, FRONT: ",".join(map(str, (*handed, port, os.getpid())))}
        command = [sys.executable, "-m", "nearline", *argv]
        self.processes = [
            subprocess.Popen(command, env=env, pass_fds=handed) for _ in range(count - 1)
        ]
        os.close(wake_write)
        os.close(life_read)
        self._ready = threading.Semaphore(0)
        threading.Thread(
            target=self._relay, args=(wake,), name="nearline-front-wakes", daemon=True
        ).start()

    def _relay(self, wake: Callable[[], None]) -> None:
        with contextlib.suppress(OSError):
            while read := os.read(self._wake_read, 4096):
                for _ in range(read.count(READY)):
                    self._ready.release()
                wake()

    def wait_ready(self, timeout: float = START_SECONDS) -> None:
        """Until every front listens; :class:`ConfigError` if one stopped or stayed silent."""
        from nearline.errors import ConfigError

        deadline = time.monotonic() + timeout
        waiting = len(self.processes)
        while waiting:
            if self._ready.acquire(timeout=0.1):
                waiting -= 1
                continue
            stopped = [p.pid for p in self.processes if p.poll() is not None]
            if stopped or time.monotonic() > deadline:
                why = f"stopped (pid {stopped[0]})" if stopped else f"silent for {timeout:g} s"
                raise ConfigError(f"--workers: a worker process {why} before it listened")

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

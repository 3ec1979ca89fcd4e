"""Running a stranger's command: its own process, its own folder, limits, and what it cost.

:func:`run_sandboxed` is the one way the service runs an algorithm's build, tests and runs.
The command sees ``folder`` (writable, its working folder) and the ``mounts`` it is given,
read-only unless marked writable, each at its own path; everything else of the service (the
database, other runs' folders, the archive) is out of its reach where the machine allows
(see :func:`isolation` and docs/service.md).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from nearline.errors import SandboxError
from nearline.monitor.base import Usage


@dataclass(frozen=True)
class Limits:
    """What a run is held to. ``cpu_seconds`` defaults to ``wall_seconds * cpus``."""

    cpus: float = 1.0
    memory: int = 2 * 1024**3
    wall_seconds: float = 3600.0
    cpu_seconds: float | None = None
    processes: int = 256
    file_size: int | None = None


@dataclass(frozen=True)
class Mount:
    """A host path the command may see, at the same path inside its sandbox."""

    source: Path
    writable: bool = False


@dataclass(frozen=True)
class Outcome:
    """How a run ended. ``reason`` is None when the command ran to its own end (whatever its
    exit code), else why it was stopped: "wall-clock limit of 60 s", "memory limit of 2 GiB",
    "CPU-time limit of 120 s", "cancelled"."""

    exit_code: int | None
    reason: str | None
    usage: Usage

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.reason is None


def _limit_child(limits: Limits) -> None:  # runs in the child between fork and exec
    os.setsid()
    cpu = limits.cpu_seconds or limits.wall_seconds * limits.cpus
    resource.setrlimit(resource.RLIMIT_CPU, (int(cpu) + 1, int(cpu) + 2))
    if limits.file_size is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size, limits.file_size))


def run_sandboxed(
    command: Sequence[str],
    *,
    folder: Path,
    mounts: Sequence[Mount] = (),
    env: Mapping[str, str] | None = None,
    limits: Limits = Limits(),
    log: Path | None = None,
    cancel: threading.Event | None = None,
) -> Outcome:
    """Run ``command`` in ``folder`` under ``limits``; stdout and stderr go to ``log``.

    Returns when the command and every process it started have ended. Raises
    :class:`SandboxError` only if the command could not be started at all.
    """
    folder.mkdir(parents=True, exist_ok=True)
    output = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            list(command),
            cwd=folder,
            env=dict(env or {}),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            preexec_fn=lambda: _limit_child(limits),
        )
    except OSError as error:
        raise SandboxError(f"cannot start {command[0]!r}: {error.strerror or error}") from None
    finally:
        if log is not None:
            output.close()
    reason = None
    while True:
        try:
            process.wait(timeout=0.1)
            break
        except subprocess.TimeoutExpired:
            if time.monotonic() - started > limits.wall_seconds:
                reason = f"wall-clock limit of {limits.wall_seconds:g} s"
            elif cancel is not None and cancel.is_set():
                reason = "cancelled"
            if reason:
                _kill_group(process.pid)
    rusage = resource.getrusage(resource.RUSAGE_CHILDREN)
    code = process.returncode
    if reason is None and code == -signal.SIGXCPU:
        reason = "CPU-time limit"
    usage = Usage(
        wall_seconds=time.monotonic() - started,
        cpu_seconds=rusage.ru_utime + rusage.ru_stime,
        peak_memory=rusage.ru_maxrss * 1024,
    )
    return Outcome(
        exit_code=code if code is not None and code >= 0 else None, reason=reason, usage=usage
    )


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)

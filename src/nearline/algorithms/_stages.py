"""Where a run's time goes: wall and CPU seconds of each stage of its way through the service
(admission, staging, the sandbox's set-up, the algorithm, teardown, ingest...), so a small
run's cost beyond its own work can be measured where it is spent and watched in production.

CPU is the service's own: the CPU time of the thread doing the stage, plus that of the helper
programs it waited for there (``mkfs.ext4``, ``mount``...). The algorithm's own CPU is its
``Usage``; a stage's CPU therefore never counts another run's work, even under load.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

_helpers = threading.local()  # CPU seconds of helper programs this thread waited for


def run_helper(argv: Sequence[str], *, timeout: float = 120) -> None:
    """Run a helper program to its end, as ``subprocess.run(check=True)``, counting its CPU
    time (its rusage, from ``wait4``) to this thread's stage; raises CalledProcessError (with
    its output) if it fails. Helpers print little: their output waits in the pipe."""
    process = subprocess.Popen(
        list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    killer = threading.Timer(timeout, process.kill)
    killer.start()
    try:
        _, status, usage = os.wait4(process.pid, 0)
    finally:
        killer.cancel()
    process.returncode = os.waitstatus_to_exitcode(status)
    _helpers.seconds = getattr(_helpers, "seconds", 0.0) + usage.ru_utime + usage.ru_stime
    output = process.stdout.read() if process.stdout is not None else b""
    if process.stdout is not None:
        process.stdout.close()
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, list(argv), output)


def thread_cpu() -> float:
    """CPU seconds of this thread, and of the helper programs it ran."""
    return time.thread_time() + getattr(_helpers, "seconds", 0.0)


@dataclass
class StageClock:
    """Wall and CPU seconds of a run's stages, in the order they happened: ``{name: (wall,
    cpu)}``; a stage timed twice adds up.

    Parameters
    ----------
    stages
        The stages timed so far, in order: name to (wall seconds, CPU seconds).
    """

    stages: dict[str, tuple[float, float]] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the block as stage ``name``, whether it ends or raises.

        Parameters
        ----------
        name
            The stage's name (``admit``, ``disk``, ``algorithm`` ...).
        """
        wall, cpu = time.monotonic(), thread_cpu()
        try:
            yield
        finally:
            self.add(name, time.monotonic() - wall, thread_cpu() - cpu)

    def add(self, name: str, wall: float, cpu: float = 0.0) -> None:
        before = self.stages.get(name, (0.0, 0.0))
        self.stages[name] = (before[0] + wall, before[1] + cpu)

    def merge(self, other: Mapping[str, tuple[float, float]]) -> None:
        """Add another clock's stages (the executor's, measured where the run ran).

        Parameters
        ----------
        other
            Name to (wall seconds, CPU seconds), as :attr:`stages` holds them.
        """
        for name, (wall, cpu) in other.items():
            self.add(name, wall, cpu)

    def as_dict(self) -> dict[str, list[float]]:
        """``{name: [wall, cpu]}`` rounded to microseconds, as the job store keeps it."""
        return {name: [round(w, 6), round(c, 6)] for name, (w, c) in self.stages.items()}

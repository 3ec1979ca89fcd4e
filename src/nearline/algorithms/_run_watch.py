"""Watching a run until its first process ends: limits checked at every sample, the whole
tree stopped the moment one is broken, and the reason said in words.

The wait is on a pidfd, so a run that ends is noticed at once (a short run pays no polling
delay); meanwhile the tree is sampled at doubling intervals up to every 0.2 s, from 10 ms
after the start where a sample is what holds the run (no memory or pids cgroup, or a disk
allotment only sampled), and from 50 ms where the kernel holds its memory, processes and disk:
there a sample is a backstop and a measurement, and each costs a small run's service a few
ms of CPU (a 0.3 s run gets two or three).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time

from nearline.algorithms._cgroups import RunGroup
from nearline.algorithms._disk import Space
from nearline.algorithms._limits import Limits
from nearline.monitor import TreeMeter, Usage, descendants

FIRST_POLL = 0.01  # seconds, where samples hold the run
FIRST_POLL_HELD = 0.05  # where the kernel does
POLL = 0.2


class Watch:
    """One run's watcher. ``overhead`` is how many processes the namespace wrapper adds to
    the tree (they do not count against the run's process limit); ``space`` is what its disk
    allotment is counted over, if it has one."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        *,
        limits: Limits,
        group: RunGroup | None,
        meter: TreeMeter,
        cancel: threading.Event | None,
        started: float,
        overhead: int,
        space: Space | None = None,
    ) -> None:
        self.process = process
        self.limits = limits
        self.group = group
        self.meter = meter
        self.cancel = cancel
        self.deadline = started + limits.wall_seconds
        self.overhead = overhead
        self.space = space

    def until_exit(self) -> str | None:
        """Wait until the run's first process has exited (it is left unreaped); returns why
        the run was stopped, or None if it ended by itself."""
        reason = None
        interval = FIRST_POLL_HELD if self._kernel_holds() else FIRST_POLL
        pidfd = os.pidfd_open(self.process.pid)
        try:
            while True:
                timeout = interval if reason else min(interval, self.deadline - time.monotonic())
                if select.select([pidfd], [], [], max(timeout, 0))[0]:
                    return reason
                interval = min(interval * 2, POLL)
                if reason is None:
                    reason = self._broken()
                    if reason is not None:
                        self.stop()
        finally:
            os.close(pidfd)

    def _kernel_holds(self) -> bool:
        """Whether the kernel, not sampling, holds the run's memory, processes and disk."""
        held = self.group is not None and {"memory", "pids"} <= set(self.group.folders)
        return held and (self.space is None or self.space.kind == "filesystem")

    def _broken(self) -> str | None:
        limits, group = self.limits, self.group
        if self.cancel is not None and self.cancel.is_set():
            return "cancelled"
        if time.monotonic() >= self.deadline:
            return limits.wall_broken()
        if group is not None and group.memory_limit_hit():
            return limits.memory_broken()
        if group is not None and group.process_limit_hit():
            return limits.processes_broken()
        now = self.meter.sample()
        cpu = group.cpu_seconds() if group is not None else None
        if (now.cpu_seconds if cpu is None else cpu) >= limits.cpu_limit:
            return limits.cpu_broken()
        if (group is None or "memory" not in group.folders) and now.memory > limits.memory:
            return limits.memory_broken()
        if (group is None or "pids" not in group.folders) and (
            now.processes - self.overhead > limits.processes
        ):
            return limits.processes_broken()
        if self.space is not None and self.space.over():
            return limits.disk_broken()
        return None

    def stop(self) -> None:
        """SIGKILL the whole run: its first process (whose death takes a PID namespace with
        it), every descendant found, its session, and everything in its cgroups."""
        root = self.process.pid
        below = descendants(root)
        for pid in (root, *below):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(root, signal.SIGKILL)
        if self.group is not None:
            self.group.kill()

    def reason_after_exit(self, code: int, usage: Usage) -> str | None:
        """Why a run that ended by itself was in fact ended by a limit: the kernel's memory
        or process limit, or a signal an rlimit sends (``code`` is 128 + N after signal N)."""
        limits, group = self.limits, self.group
        if group is not None and group.memory_limit_hit():
            return limits.memory_broken()
        if group is not None and group.process_limit_hit():
            return limits.processes_broken()
        killed = code - 128 if code > 128 else None
        if killed == signal.SIGXCPU or (
            killed == signal.SIGKILL and usage.cpu_seconds >= limits.cpu_limit
        ):
            return limits.cpu_broken()
        if killed == signal.SIGXFSZ and limits.largest_file is not None:
            return limits.file_size_broken()
        return None

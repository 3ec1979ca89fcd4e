"""Measuring one run while it runs: its process tree, read from /proc.

A process's counters in /proc (CPU ticks in ``stat``, ``rchar``/``wchar`` in ``io``) include
those of the children it has reaped, so what a whole tree has used so far is the sum over its
processes that are still alive, the root included. Read the root once more after it has
exited but before it is reaped (a zombie keeps its counters) and that last reading holds
everything reaped into it. Memory is different: resident memory is a now-figure, so the peak
is the largest sum seen at a sample. (``wait4``'s ``ru_maxrss`` is no help: it keeps the
high-water mark of the forked service from before the exec.)
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from nearline.monitor._base import Usage

PROC = Path("/proc")
_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Sample:
    """The tree at one moment: how many processes, their resident memory together (bytes),
    and CPU seconds and bytes read and written so far."""

    processes: int = 0
    memory: int = 0
    cpu_seconds: float = 0.0
    bytes_read: int = 0
    bytes_written: int = 0


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (not ``root`` itself), found through the kernel's
    per-thread ``children`` lists. A process that left the tree (its parent exited and it
    was re-parented to init) is no longer found: give :class:`TreeMeter` the members of a
    cgroup or a PID namespace where that matters."""
    found: list[int] = []
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            threads = list((PROC / str(pid) / "task").iterdir())
        except (FileNotFoundError, ProcessLookupError):
            continue
        for thread in threads:
            try:
                children = (thread / "children").read_text().split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            for child in map(int, children):
                found.append(child)
                todo.append(child)
    return found


def read_process(pid: int) -> Sample | None:
    """One process's figures (its reaped children's CPU and I/O included); None once it
    has been reaped."""
    base = PROC / str(pid)
    try:
        stat = (base / "stat").read_text()
        statm = (base / "statm").read_text().split()
        io = dict(
            line.split(": ", 1) for line in (base / "io").read_text().splitlines() if ": " in line
        )
    except (FileNotFoundError, ProcessLookupError):
        return None
    # the fields after the command name, which may itself hold spaces and parentheses
    fields = stat[stat.rindex(")") + 2 :].split()
    ticks = sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return Sample(
        processes=1,
        memory=int(statm[1]) * _PAGE,
        cpu_seconds=ticks / _TICK,
        bytes_read=int(io.get("rchar", 0)),
        bytes_written=int(io.get("wchar", 0)),
    )


class TreeMeter:
    """Samples one run's processes and keeps what the run as a whole has used.

    ``root`` is the process the run was started as; ``members``, if given, lists the run's
    other processes (a cgroup's ``cgroup.procs``, which also holds processes that left the
    tree); without it they are found as descendants of ``root``. Call :meth:`sample` while the
    run runs and once after the root has exited, before reaping it; then :meth:`usage`.
    """

    def __init__(self, root: int, *, members: Callable[[], Iterable[int]] | None = None) -> None:
        self.root = root
        self._members = members or (lambda: descendants(root))
        self._peak_memory = 0
        self._cpu_seconds = 0.0
        self._bytes_read = 0
        self._bytes_written = 0

    def sample(self) -> Sample:
        """Read every process of the run now; returns the tree's totals at this moment."""
        pids = {self.root, *self._members()}
        total = Sample()
        for pid in pids:
            one = read_process(pid)
            if one is not None:
                total = Sample(
                    processes=total.processes + 1,
                    memory=total.memory + one.memory,
                    cpu_seconds=total.cpu_seconds + one.cpu_seconds,
                    bytes_read=total.bytes_read + one.bytes_read,
                    bytes_written=total.bytes_written + one.bytes_written,
                )
        # a child that has exited but is not yet reaped drops out of the sum for a moment:
        # the counters only grow, so the largest total seen is the truest
        self._peak_memory = max(self._peak_memory, total.memory)
        self._cpu_seconds = max(self._cpu_seconds, total.cpu_seconds)
        self._bytes_read = max(self._bytes_read, total.bytes_read)
        self._bytes_written = max(self._bytes_written, total.bytes_written)
        return total

    def usage(
        self,
        *,
        wall_seconds: float,
        rusage: resource.struct_rusage | None = None,
        cpu_seconds: float | None = None,
        peak_memory: int | None = None,
    ) -> Usage:
        """What the run used. ``rusage`` is the root's, from ``wait4`` (its CPU time counts
        every process reaped below it). ``cpu_seconds`` and ``peak_memory``, when the kernel
        keeps them for the run (a cgroup's accounting), win over sampling: a sample can miss
        a short peak."""
        cpu = self._cpu_seconds
        if rusage is not None:
            cpu = max(cpu, rusage.ru_utime + rusage.ru_stime)
        return Usage(
            wall_seconds=wall_seconds,
            cpu_seconds=cpu if cpu_seconds is None else cpu_seconds,
            peak_memory=self._peak_memory if peak_memory is None else peak_memory,
            bytes_read=self._bytes_read,
            bytes_written=self._bytes_written,
        )

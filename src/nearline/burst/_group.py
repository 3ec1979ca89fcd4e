"""The I/O servers of one run agreeing on what is complete, so one of them marks it.

A file set (step, file group) is spread over servers: per-rank files of different ranks go
to different servers. After each collective flush every server shares what it published and
what failed; server 0 then writes the ``.complete`` markers the migrator waits for.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol


class ServerGroup(Protocol):
    size: int

    def allgather(self, value: Any) -> list[Any]: ...


class ThreadGroup:
    """I/O threads of one process: a barrier and a shared list."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._values: list[Any] = [None] * size
        self._gathered = threading.Barrier(size)
        self._read = threading.Barrier(size)

    def member(self, index: int) -> _ThreadMember:
        return _ThreadMember(self, index)


class _ThreadMember:
    def __init__(self, group: ThreadGroup, index: int) -> None:
        self.group = group
        self.index = index
        self.size = group.size

    def allgather(self, value: Any) -> list[Any]:
        group = self.group
        group._values[self.index] = value
        group._gathered.wait()
        values = list(group._values)
        group._read.wait()  # nobody overwrites a value before everyone has read it
        return values


class MPIGroup:
    """I/O ranks: an allgather on their own communicator."""

    def __init__(self, comm: Any) -> None:
        self.comm = comm
        self.size = comm.size

    def allgather(self, value: Any) -> list[Any]:
        return self.comm.allgather(value)

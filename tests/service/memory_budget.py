"""A memory budget for a test's server: a cgroup v1 memory group the test makes under its own,
with a limit, that `nearline serve` is born in (so its runs' groups nest inside it), as an
operator would start the service inside a budget (systemd's MemoryMax=, a batch job's
allocation)."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from nearline.algorithms._cgroups import hierarchies

from ..live_service import START_GUARD, LiveService


@dataclass(frozen=True)
class Budget:
    """A memory group with a limit, and what the kernel counted in it."""

    folder: Path
    limit: int

    def read(self, name: str) -> int:
        return int((self.folder / name).read_text())

    def oom_control(self) -> dict[str, int]:
        pairs = (
            line.split() for line in (self.folder / "memory.oom_control").read_text().split("\n")
        )
        return {pair[0]: int(pair[1]) for pair in pairs if len(pair) == 2}


def own_memory_group() -> Path:
    """This process's cgroup v1 memory group; fails (never skips) where there is none to
    make groups in, as the sandbox's tests do."""
    for hierarchy in hierarchies():
        memory = hierarchy.version == 1 and "memory" in hierarchy.controllers
        if memory and os.access(hierarchy.own, os.W_OK):
            return hierarchy.own
    pytest.fail("these tests need root and a cgroup v1 memory hierarchy (see docs/sandbox.md)")


@contextmanager
def memory_budget(limit: int) -> Iterator[Budget]:
    """A new memory group of ``limit`` bytes under this process's own; on leaving, whatever
    is still in it (or in a group below it) is killed and the groups removed."""
    folder = own_memory_group() / f"budget-{os.getpid()}-{secrets.token_hex(4)}"
    folder.mkdir()
    try:
        (folder / "memory.limit_in_bytes").write_text(str(limit))
        with contextlib.suppress(OSError):  # where swap is on, the budget holds swap too
            (folder / "memory.memsw.limit_in_bytes").write_text(str(limit))
        yield Budget(folder, limit)
    finally:
        _remove(folder)


def _remove(folder: Path) -> None:
    groups = sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
    deadline = time.monotonic() + 10
    for group in [*groups, folder]:
        while group.exists():
            try:
                for pid in (group / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
                group.rmdir()
            except FileNotFoundError:  # removed meanwhile (by the server, stopping)
                pass
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


@dataclass
class BudgetedService(LiveService):
    """A :class:`LiveService` whose server process joins ``budget`` before it execs, so all it
    holds and every run it starts is charged there."""

    budget: Budget | None = None

    def start(self, *extra: str, timeout: float = START_GUARD, preexec: None = None) -> None:
        assert self.budget is not None
        procs = os.fsencode(self.budget.folder / "cgroup.procs")

        def join() -> None:  # between fork and exec: system calls only
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

        super().start(*extra, timeout=timeout, preexec=join)

"""One run's control groups: limits the kernel holds the whole run to (memory, processes,
CPU share), its exact CPU time, and a kill that reaches every process it started, even one
that left its session and its parent.

Each run gets a cgroup named ``nearline-<service pid>-<service start>-<token>`` under the
service's own cgroup (from /proc/self/cgroup) in every hierarchy that has a controller it
uses; the name lets :func:`cleanup_stale` tell the leftovers of a service that was killed
from the groups of a service that still runs. cgroup v1 (one hierarchy per controller, or
co-mounted ones) and v2 (the unified hierarchy) are read the same way through a small table
of file names.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import re
import secrets
import signal
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

# the roles a run uses; "cpuacct" is the CPU-time accounting (v1 cpuacct, v2 cpu.stat)
ROLES = ("memory", "pids", "cpu", "cpuacct")
PREFIX = "nearline-"
_NAME = re.compile(rf"^{PREFIX}(\d+)-(\d+)-[0-9a-f]+$")
_PERIOD_US = 100_000


@dataclass(frozen=True)
class Hierarchy:
    """A mounted cgroup hierarchy: its version, its controllers, the cgroup this process is
    in there (a folder under the mount); and the mount itself (None: not known), which only
    says how far up the own cgroup's ancestors can be read."""

    version: int
    controllers: frozenset[str]
    own: Path
    mount: Path | None = field(default=None, compare=False)


def hierarchies(proc: Path = Path("/proc/self")) -> list[Hierarchy]:
    """The cgroup hierarchies mounted here, each with this process's own cgroup in it."""
    own = {}  # controller set (v1) or "" (v2) -> path relative to the hierarchy's root
    for line in (proc / "cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        own[names] = path
    found: list[Hierarchy] = []
    seen: set[str] = set()
    for line in (proc / "mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        fields, (fstype, _source, options) = before.split(), after.split()[:3]
        root, mount = fields[3], Path(fields[4].replace("\\040", " "))
        if fstype == "cgroup2" and "" in own:
            own_v2 = _inside(mount, root, own[""])
            found.append(Hierarchy(2, _v2_controllers(mount), own_v2, mount))
        elif fstype == "cgroup":
            offered = set(options.split(","))
            key = next((k for k in own if k and set(k.split(",")) <= offered), None)
            if key is not None and key not in seen:
                seen.add(key)  # a hierarchy mounted twice is one hierarchy
                controllers = frozenset(n for n in key.split(",") if not n.startswith("name="))
                found.append(Hierarchy(1, controllers, _inside(mount, root, own[key]), mount))
    return found


def _inside(mount: Path, root: str, path: str) -> Path:
    """Where cgroup ``path`` (relative to the hierarchy's root) is under a mount of
    ``root``."""
    relative = os.path.relpath(path, root) if path.startswith(root) else path.lstrip("/")
    return mount if relative == "." else mount / relative.lstrip("/")


def _v2_controllers(mount: Path) -> frozenset[str]:
    try:
        return frozenset((mount / "cgroup.controllers").read_text().split())
    except OSError:
        return frozenset()


def usable(found: Iterable[Hierarchy] | None = None) -> dict[str, Hierarchy]:
    """For each role a run can use, the hierarchy that serves it here: one whose controller
    is there and whose own cgroup this process may create groups in. v1 comes first; on v2 a
    controller must already be enabled in the own cgroup's ``cgroup.subtree_control`` (the
    service's cgroup delegates it), and CPU accounting (``cpu.stat``) needs no controller."""
    chosen: dict[str, Hierarchy] = {}
    listed = list(hierarchies() if found is None else found)
    for hierarchy in sorted(listed, key=lambda h: h.version):
        if not os.access(hierarchy.own, os.W_OK):
            continue
        if hierarchy.version == 1:
            offered = set(hierarchy.controllers)
        else:
            offered = _subtree(hierarchy.own) | {"cpuacct"}
        for role in ROLES:
            if role in offered:
                chosen.setdefault(role, hierarchy)
    return chosen


def _subtree(own: Path) -> set[str]:
    try:
        return set((own / "cgroup.subtree_control").read_text().split())
    except OSError:
        return set()


def service_stamp(pid: int | str = "self") -> str | None:
    """``<pid>-<start time>`` of a process (its start in clock ticks since boot tells a
    reused pid apart); None if there is no such process."""
    if pid == "self":
        return _own_stamp(os.getpid())  # a forked child asks again under its own pid
    return _stamp(pid)


@functools.cache
def _own_stamp(pid: int) -> str | None:
    return _stamp(pid)


def _stamp(pid: int | str) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    start = stat[stat.rindex(")") + 2 :].split()[19]
    return f"{pid}-{start}"


class RunGroup:
    """The cgroups of one run, one folder per hierarchy it uses.

    Made by :meth:`create` with the limits set; the run's first process joins by writing to
    every :attr:`procs_files` (before it execs, so nothing escapes being counted); then
    :meth:`members`, the figures and :meth:`kill`; :meth:`remove` at the end.
    """

    def __init__(self, folders: Mapping[str, tuple[int, Path]]) -> None:
        self.folders = dict(folders)  # role -> (version, folder)

    @classmethod
    def create(
        cls,
        roles: Mapping[str, Hierarchy],
        *,
        memory: int | None,
        processes: int | None,
        cpus: float | None,
    ) -> RunGroup:
        stamp = service_stamp()
        name = f"{PREFIX}{stamp}-{secrets.token_hex(4)}"
        group = cls({role: (h.version, h.own / name) for role, h in roles.items()})
        try:
            for folder in group.distinct():
                folder.mkdir()
            group._limit(memory=memory, processes=processes, cpus=cpus)
        except OSError:
            group.remove()
            raise
        return group

    def distinct(self) -> list[Path]:
        return sorted({folder for _, folder in self.folders.values()})

    def _file(self, role: str, v1: str, v2: str) -> Path | None:
        """The file of ``role``'s group by its v1 or v2 name; None if the run has no such
        group."""
        if role not in self.folders:
            return None
        version, folder = self.folders[role]
        return folder / (v1 if version == 1 else v2)

    def _limit(self, *, memory: int | None, processes: int | None, cpus: float | None) -> None:
        if memory is not None and "memory" in self.folders:
            version, folder = self.folders["memory"]
            if version == 1:
                (folder / "memory.limit_in_bytes").write_text(str(memory))
                # where swap is on, the run must not page out past its limit
                with contextlib.suppress(OSError):
                    (folder / "memory.memsw.limit_in_bytes").write_text(str(memory))
            else:
                (folder / "memory.max").write_text(str(memory))
                with contextlib.suppress(OSError):
                    (folder / "memory.swap.max").write_text("0")
        if processes is not None and (path := self._file("pids", "pids.max", "pids.max")):
            path.write_text(str(processes))
        if cpus is not None and "cpu" in self.folders:
            quota = max(1000, int(cpus * _PERIOD_US))
            version, folder = self.folders["cpu"]
            if version == 1:
                (folder / "cpu.cfs_period_us").write_text(str(_PERIOD_US))
                (folder / "cpu.cfs_quota_us").write_text(str(quota))
            else:
                (folder / "cpu.max").write_text(f"{quota} {_PERIOD_US}")

    @property
    def procs_files(self) -> tuple[bytes, ...]:
        return tuple(bytes(folder / "cgroup.procs") for folder in self.distinct())

    def members(self) -> list[int]:
        """Every process of the run now (from the pids group if there is one)."""
        role = "pids" if "pids" in self.folders else next(iter(self.folders))
        return _read_pids(self.folders[role][1])

    def cpu_seconds(self) -> float | None:
        """CPU time of every process the run ever had, exactly (None without accounting)."""
        if "cpuacct" not in self.folders:
            return None
        version, folder = self.folders["cpuacct"]
        try:
            if version == 1:
                return int((folder / "cpuacct.usage").read_text()) / 1e9
            return _keyed(folder / "cpu.stat").get("usage_usec", 0) / 1e6
        except OSError:
            return None

    def memory_peak(self) -> int | None:
        """The most memory the group was charged at once (page cache included)."""
        path = self._file("memory", "memory.max_usage_in_bytes", "memory.peak")
        try:
            return int(path.read_text()) if path else None
        except (OSError, ValueError):
            return None

    def memory_limit_hit(self) -> bool:
        """True once the kernel killed a process of the run for the run's memory limit."""
        path = self._file("memory", "memory.oom_control", "memory.events")
        return path is not None and _keyed(path).get("oom_kill", 0) > 0

    def process_limit_hit(self) -> bool:
        """True once a fork or clone failed for the run's process limit."""
        path = self._file("pids", "pids.events", "pids.events")
        return path is not None and _keyed(path).get("max", 0) > 0

    def kill(self, *, patience: float = 5.0) -> None:
        """SIGKILL every process of the run until none is left (v2: ``cgroup.kill``)."""
        for version, folder in self.folders.values():
            if version == 2 and (folder / "cgroup.kill").exists():
                with contextlib.suppress(OSError):
                    (folder / "cgroup.kill").write_text("1")
        deadline = time.monotonic() + patience
        while (pids := self.members()) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)

    def remove(self, *, patience: float = 2.0) -> None:
        """Remove the run's folders (a group empties a moment after its last process dies)."""
        for folder in self.distinct():
            _rmdir(folder, patience=patience)


def _rmdir(folder: Path, *, patience: float) -> None:
    deadline = time.monotonic() + patience
    while True:
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as error:
            if error.errno != errno.EBUSY or time.monotonic() > deadline:
                log.warning("cannot remove the run's cgroup %s: %s", folder, error)
                return
            time.sleep(0.01)


def _read_pids(folder: Path) -> list[int]:
    try:
        return [int(pid) for pid in (folder / "cgroup.procs").read_text().split()]
    except (FileNotFoundError, ProcessLookupError):
        return []


def _keyed(path: Path) -> dict[str, int]:
    """A flat-keyed cgroup file ("key value" lines) as a dict."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    pairs = (line.split() for line in lines)
    return {pair[0]: int(pair[1]) for pair in pairs if len(pair) == 2 and pair[1].isdigit()}


# -- memory: the budget the service runs in, and what its runs hold ---------------------------
_NO_LIMIT = 2**62  # v1 says "no limit" as PAGE_COUNTER_MAX pages: 9223372036854771712 bytes


@dataclass(frozen=True)
class MemoryBudget:
    """The tightest memory limit over a cgroup and its ancestors: the group that sets it, the
    limit in bytes, and what that group holds now that the kernel cannot reclaim at once (its
    usage less its inactive file cache: the working set, as kubelet and cAdvisor count it).

    Parameters
    ----------
    folder
        The cgroup that sets the limit.
    limit
        The limit, in bytes.
    used
        What the group holds now that the kernel cannot reclaim at once, in bytes.
    """

    folder: Path
    limit: int
    used: int

    @property
    def free(self) -> int:
        return max(0, self.limit - self.used)


def memory_budget(found: Iterable[Hierarchy] | None = None) -> MemoryBudget | None:
    """The memory budget this process runs in: the smallest limit set on its own memory
    cgroup or on an ancestor that holds it (v1 ``memory.limit_in_bytes``, v2 ``memory.max``),
    up to the hierarchy's mount; None where no limit is set (or none can be read)."""
    tightest: MemoryBudget | None = None
    for hierarchy in hierarchies() if found is None else found:
        if hierarchy.version == 1 and "memory" not in hierarchy.controllers:
            continue
        for folder in _ancestry(hierarchy):
            limit = _memory_limit(hierarchy.version, folder)
            if limit is not None and (tightest is None or limit < tightest.limit):
                tightest = MemoryBudget(folder, limit, working_set(hierarchy.version, folder))
    return tightest


def _ancestry(hierarchy: Hierarchy) -> Iterable[Path]:
    """The own cgroup, then each ancestor whose limit covers it, up to the mount (v1: not past
    a group with ``memory.use_hierarchy`` 0, which does not count its children)."""
    folder = hierarchy.own
    yield folder
    mount = hierarchy.mount
    while mount is not None and mount in folder.parents:
        folder = folder.parent
        if hierarchy.version == 1 and _text(folder / "memory.use_hierarchy") == "0":
            return
        yield folder


def _memory_limit(version: int, folder: Path) -> int | None:
    text = _text(folder / ("memory.limit_in_bytes" if version == 1 else "memory.max"))
    if text is None or not text.isdigit():  # v2 "max", or no such file
        return None
    limit = int(text)
    return limit if limit < _NO_LIMIT else None


def working_set(version: int, folder: Path) -> int:
    """What the group ``folder`` holds now, less the file cache the kernel reclaims first
    (0 if the group is gone)."""
    usage = _text(folder / ("memory.usage_in_bytes" if version == 1 else "memory.current"))
    if usage is None or not usage.isdigit():
        return 0
    stat = _keyed(folder / "memory.stat")
    inactive = stat.get("total_inactive_file" if version == 1 else "inactive_file", 0)
    return max(0, int(usage) - inactive)


def runs_memory(roles: Mapping[str, Hierarchy]) -> int | None:
    """What this service's run groups hold now, together (their working sets); None where
    runs get no memory group."""
    hierarchy = roles.get("memory")
    if hierarchy is None:
        return None
    mine = f"{PREFIX}{service_stamp()}-"
    try:
        groups = [p for p in hierarchy.own.iterdir() if p.name.startswith(mine)]
    except OSError:
        return None
    return sum(working_set(hierarchy.version, group) for group in groups)


def _text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def cleanup_stale(roles: Mapping[str, Hierarchy]) -> list[Path]:
    """Kill and remove the run groups of services that no longer run (a service killed
    with kill -9 leaves its runs' groups behind); returns the folders removed. Groups of a
    service that still runs, this one or another, are left alone."""
    removed = []
    for own in sorted({(h.version, h.own) for h in roles.values()}):
        version, parent = own
        try:
            children = [p for p in parent.iterdir() if p.is_dir() and _NAME.match(p.name)]
        except OSError:
            continue
        for folder in children:
            pid, start = _NAME.match(folder.name).groups()
            if service_stamp(int(pid)) == f"{pid}-{start}":
                continue
            RunGroup({"pids": (version, folder)}).kill()
            _rmdir(folder, patience=2.0)
            if not folder.exists():
                removed.append(folder)
    return removed

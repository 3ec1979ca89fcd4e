"""Running a stranger's command: its own processes, its own folder, limits, and what it cost.

:func:`run_sandboxed` is the one way the service runs an algorithm's build, tests and runs.
The command sees ``folder`` (writable, its working folder) and the ``mounts`` it is given,
read-only unless marked writable, each at its own path; everything else of the service (the
database, other runs' folders, the archive) is out of its reach where the machine allows.
:func:`isolation` says what this machine enforces; docs/sandbox.md says exactly what each
level means and where it is weaker.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import resource
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nearline.algorithms import _cgroups, _disk, _namespaces
from nearline.algorithms._cgroups import MemoryBudget
from nearline.algorithms._cpu_gate import Turn
from nearline.algorithms._disk import FileSystemSpace, Space
from nearline.algorithms._disk_pool import DiskPool
from nearline.algorithms._furnish import furnish_into
from nearline.algorithms._launch import OOM_SCORE_ADJ, Held, hold
from nearline.algorithms._limits import Limits
from nearline.algorithms._run_watch import Watch
from nearline.algorithms._stages import StageClock
from nearline.errors import SandboxError
from nearline.monitor import TreeMeter, Usage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Mount:
    """A host path the command may see, at the same path inside its sandbox.

    Parameters
    ----------
    source
        The host path; it must exist, and cannot be ``/``.
    writable
        Whether the run may write to it (default: read-only).
    """

    source: Path
    writable: bool = False


@dataclass(frozen=True)
class Outcome:
    """How a run ended, and what it used.

    Parameters
    ----------
    exit_code
        The command's exit status as a shell reports it (128 + N after signal N); None when
        the sandbox stopped the run.
    reason
        None when the command ran to its own end, else why the sandbox stopped it, in
        words: "wall-clock limit of 60 s", "memory limit of 2 GiB exceeded", "CPU-time
        limit of 120 s", "process limit of 64 reached", "file-size limit of 1 GiB
        exceeded", "disk limit of 20 MiB exceeded", "cancelled"; or "killed by the kernel:
        memory ran out around the run ..." when the OOM killer took it though it stayed
        under its own limit.
    usage
        CPU time, memory peak, disk and I/O the run used.
    """

    exit_code: int | None
    reason: str | None
    usage: Usage

    @property
    def ok(self) -> bool:
        """Whether the command ran to its end and exited 0."""
        return self.exit_code == 0 and self.reason is None


@dataclass(frozen=True)
class Isolation:
    """What a run is held by on this machine ([`isolation`][nearline.algorithms.isolation]
    finds it).

    Parameters
    ----------
    namespaces
        "bwrap" (own file system, network, PIDs and user), "unshare" (own network, PIDs and
        user; the host's files) or "none".
    cgroups
        "v1", "v2", "v1+v2" or "none".
    controllers
        The cgroup controllers in use (memory, pids, cpu, cpuacct).
    root
        Whether the service runs as root.
    disk
        How a run's disk allotment is held: "filesystem" (a file system of its own, the
        kernel refuses a write past it) or "sampled" (its folder's size, checked at each
        sample).
    """

    namespaces: str
    cgroups: str
    controllers: tuple[str, ...] = ()
    root: bool = False
    disk: str = "sampled"

    @property
    def weaknesses(self) -> tuple[str, ...]:
        """What is not enforced at this level, in words (empty: everything is)."""
        weak = []
        if self.namespaces == "none":
            weak += [
                "no network namespace: the run can open sockets, to the service too",
                "no private file system: the run reads and writes what the service's user can",
            ]
            if "pids" not in self.controllers:
                weak.append("a process that leaves the run's session and parent can outlive it")
        elif self.namespaces == "unshare":
            weak.append("no private file system: the run sees the host's files")
        if "memory" not in self.controllers:
            weak.append("memory is held per process (RLIMIT_DATA) and for the run only by sampling")
        if "pids" not in self.controllers:
            weak.append(
                "no kernel process limit binds root (sampling only)"
                if self.root
                else "the process limit (RLIMIT_NPROC) counts all the service user's processes"
            )
        if "cpu" not in self.controllers:
            weak.append("the CPU share (cpus) is not enforced, only CPU time")
        if "cpuacct" not in self.controllers:
            weak.append("CPU time is summed from /proc and wait4, not by the kernel")
        if self.disk != "filesystem":
            weak.append(
                "the disk allotment is sampled: a fast writer overshoots it between samples"
            )
        return tuple(weak)

    def to_dict(self) -> dict[str, Any]:
        """The fields and the weaknesses, as JSON values (for ``nearline doctor`` and the
        landing page)."""
        return {
            **asdict(self),
            "controllers": list(self.controllers),
            "weaknesses": [*self.weaknesses],
        }


def isolation() -> Isolation:
    """What this machine enforces for a run, found by trying.

    Returns
    -------
    Isolation
        The strongest namespaces that work here and the cgroup controllers this process may
        create groups in; its ``weaknesses`` say what is not enforced.
    """
    namespaces = "none"
    if (bwrap := shutil.which("bwrap")) and _namespaces.probe_bwrap(bwrap)[0]:
        namespaces = "bwrap"
    elif (unshare := shutil.which("unshare")) and _namespaces.probe_unshare(unshare):
        namespaces = "unshare"
    roles = _roles()
    versions = sorted({hierarchy.version for hierarchy in roles.values()})
    # a file system of the run's own only where the run sees no other (bubblewrap's view)
    own_disk = namespaces == "bwrap" and _disk.filesystem_works()
    return Isolation(
        namespaces=namespaces,
        cgroups="+".join(f"v{v}" for v in versions) or "none",
        controllers=tuple(role for role in _cgroups.ROLES if role in roles),
        root=os.geteuid() == 0,
        disk="filesystem" if own_disk else "sampled",
    )


def cleanup_stale() -> list[Path]:
    """Kill and remove what runs of a killed service left behind; call it when one starts.

    Returns
    -------
    list[pathlib.Path]
        The cgroups (with any process still in them, killed) and run disks' mounts removed.
    """
    removed = _cgroups.cleanup_stale(_roles()) + _disk.cleanup_stale()
    if removed:
        log.warning("removed %d run groups left by a service that was killed", len(removed))
    return removed


def memory_budget() -> MemoryBudget | None:
    """The memory budget the service runs in.

    Returns
    -------
    MemoryBudget or None
        The smallest limit on the service's own memory cgroup or an ancestor's, with what
        that group holds now; None where there is none (or no cgroups).
    """
    try:
        return _cgroups.memory_budget(_mounted())
    except OSError as error:
        log.debug("no cgroups: %s", error)
        return None


def runs_memory() -> int | None:
    """What this service's sandboxed runs hold in memory now, together.

    Returns
    -------
    int or None
        Bytes: the sum of their memory groups' working sets; None where runs get no memory
        group, so it cannot be known.
    """
    return _cgroups.runs_memory(_roles())


@functools.cache
def _mounted() -> tuple[_cgroups.Hierarchy, ...]:
    """The cgroup hierarchies mounted here, read once a process: parsing /proc's mount table
    cost each admission pass more than the rest of its memory reading."""
    return tuple(_cgroups.hierarchies())


@functools.cache
def _roles() -> dict[str, _cgroups.Hierarchy]:
    """The cgroup hierarchies runs use, found once a process (as bubblewrap's probe is):
    finding them reads /proc and tries each, which every run and admission pass would
    otherwise pay for."""
    try:
        return _cgroups.usable(_mounted())
    except OSError as error:
        log.debug("no cgroups: %s", error)
        return {}


@functools.cache
def _warn_once(level: Isolation) -> None:
    """Say once per service (and level) what its runs are not held to."""
    if level.weaknesses:
        log.warning(
            "runs are isolated by namespaces=%s cgroups=%s only: %s",
            level.namespaces,
            level.cgroups,
            "; ".join(level.weaknesses),
        )


def run_sandboxed(
    command: Sequence[str],
    *,
    folder: Path,
    mounts: Sequence[Mount] = (),
    env: Mapping[str, str] | None = None,
    limits: Limits = Limits(),  # noqa: B008 (frozen: one shared default is safe)
    log: Path | None = None,
    cancel: threading.Event | None = None,
    enforce: Isolation | None = None,
    keep: Sequence[str] | None = None,
    clock: StageClock | None = None,
    turn: Callable[[], Turn | None] | None = None,
    furnish: Mapping[str, Path] | None = None,
    disks: DiskPool | None = None,
) -> Outcome:
    """Run a command in a folder under limits, isolated as well as this machine allows.

    Returns when the command and every process it started have ended. docs/sandbox.md says
    what each isolation level holds.

    Parameters
    ----------
    command
        The program and its arguments; a program named by a relative path is in ``folder``.
    folder
        The working folder (created if missing): the only place the run may write, with
        its ``tmp``.
    mounts
        Host paths the run may see besides.
    env
        The run's whole environment (nothing is inherited).
    limits
        What the run is held to.
    log
        Where stdout and stderr go (None: discarded).
    cancel
        Setting it stops the run.
    enforce
        A weaker level than the machine's best ([`isolation`][nearline.algorithms.isolation]),
        for tests and comparisons.
    keep
        Where the run's disk is a file system of its own: the entries of its folder copied
        back after a run that succeeded (None: all); a run that did not succeed leaves
        nothing of what it wrote.
    clock
        Told the wall and CPU seconds of each stage: ``cgroups``, ``disk`` (making the run's
        disk), ``algorithm`` (its processes, from start to end: the run's own CPU),
        ``watch`` (the rest of the wait: the service's CPU), ``teardown``, and ``ready``
        (waiting for its ``turn``, its sandbox made).
    turn
        Called once its sandbox is made: waits for the run's turn at the CPUs' gate
        (:meth:`CpuGate.acquire`) and returns it, or None if the run was cancelled meanwhile
        (None: it starts at once). Its CPUs go back the moment its first process has ended.
    furnish
        Folders copied (links as links) into the run's folder at these relative places as it
        starts: into its disk if it has one, which is sized for them so they take nothing of
        its allotment, and never first into ``folder`` (nearline's kernels: _kernels.py).
    disks
        Where the run's disk is taken from and goes back to for the next run
        ([`keep_run_disks`][nearline.algorithms.keep_run_disks]; None: made and removed).

    Returns
    -------
    Outcome
        How it ended and what it used.

    Raises
    ------
    SandboxError
        The command could not be started at all (no such program, a mount that does not
        exist).
    """
    level = enforce or isolation()
    _warn_once(level)
    folder = Path(folder).absolute()
    folder.mkdir(parents=True, exist_ok=True)
    environment = dict(env or {})
    binds = _binds(mounts)
    _check_command(command, folder=folder, env=environment)
    clock = clock if clock is not None else StageClock()
    with clock.stage("cgroups"):
        group = _group(level, limits)
    space = None
    try:
        with clock.stage("disk"):
            space = _space(
                level, limits, folder=folder, binds=binds, log=log, furnish=furnish, disks=disks
            )
        argv = _wrap(command, level=level, folder=folder, binds=binds, limits=limits, space=space)
        with clock.stage("held"):
            held = _hold(argv, folder=folder, env=environment, log=log, level=level,
                         limits=limits, group=group)  # fmt: skip
        with held:
            with clock.stage("ready"):
                taken = turn() if turn is not None else None
            if turn is not None and taken is None:
                return Outcome(exit_code=None, reason="cancelled", usage=Usage())
            try:
                with clock.stage("watch"):
                    outcome = _run(held, limits=limits, log_path=log, cancel=cancel,
                                   level=level, group=group, space=space, turn=taken)  # fmt: skip
            finally:
                if taken is not None:
                    taken.release()
        _split_algorithm(clock, outcome.usage)
        with clock.stage("teardown"):
            if space is not None and outcome.ok:
                space.bring_back(keep)
        return outcome
    finally:
        with clock.stage("teardown"):
            if group is not None:
                group.kill()
                group.remove()
            if space is not None:
                space.close()


def _split_algorithm(clock: StageClock, usage: Usage) -> None:
    """Of the wait for the run, its processes' own life (and CPU) is the algorithm's stage;
    the rest stays the watcher's."""
    wall, cpu = clock.stages.get("watch", (0.0, 0.0))
    clock.stages["watch"] = (max(0.0, wall - usage.wall_seconds), cpu)
    clock.add("algorithm", usage.wall_seconds, usage.cpu_seconds)


def _binds(mounts: Sequence[Mount]) -> list[tuple[Path, bool]]:
    binds = []
    for mount in mounts:
        path = Path(mount.source).absolute()
        if path == Path("/"):
            raise SandboxError("a run cannot be given the whole file system: mount folders")
        if not path.exists():
            raise SandboxError(f"cannot mount {path} into the run: it does not exist")
        binds.append((path, mount.writable))
    return binds


def _check_command(command: Sequence[str], *, folder: Path, env: Mapping[str, str]) -> None:
    if not command:
        raise SandboxError("no command to run: give the program and its arguments")
    program = command[0]
    if "/" in program:
        found = folder / program if not program.startswith("/") else Path(program)
        ok = os.access(found, os.X_OK) and found.is_file()
    else:
        ok = shutil.which(program, path=env.get("PATH", os.defpath)) is not None
    if not ok:
        raise SandboxError(
            f"cannot start {program!r}: no such program (the run's PATH is "
            f"{env.get('PATH', os.defpath)!r}); name it by its full path or install it"
        )


def _space(
    level: Isolation,
    limits: Limits,
    *,
    folder: Path,
    binds: list[tuple[Path, bool]],
    log: Path | None,
    furnish: Mapping[str, Path] | None = None,
    disks: DiskPool | None = None,
) -> Space | None:
    """What the run's disk allotment is held by: a file system of its own, or its folder and
    writable mounts sampled; None without a disk limit. ``furnish`` is copied in either way."""
    furnish = furnish or {}
    writable = [path for path, writable in binds if writable]
    if limits.disk is not None and level.disk == "filesystem":
        try:
            return FileSystemSpace.make(
                folder, limit=limits.disk, log=log, also=writable, furnish=furnish, pool=disks
            )
        except (OSError, subprocess.SubprocessError) as error:
            raise SandboxError(f"cannot make the run's disk: {error}") from None
    furnish_into(folder, furnish)  # no disk of its own: into its folder
    if limits.disk is None:
        return None
    return Space([folder, *writable], limit=limits.disk, log=log)


def _wrap(
    command: Sequence[str],
    *,
    level: Isolation,
    folder: Path,
    binds: list[tuple[Path, bool]],
    limits: Limits,
    space: Space | None,
) -> list[str]:
    tool = shutil.which({"bwrap": "bwrap", "unshare": "unshare"}.get(level.namespaces, "-"))
    if level.namespaces == "none":
        return list(command)
    if tool is None:
        raise SandboxError(f"{level.namespaces} is not installed: run scripts/system-packages")
    if level.namespaces == "unshare":
        return _namespaces.unshare_argv(command, unshare=tool)
    disable = _namespaces.probe_bwrap(tool)[1]
    own = space.shown() if isinstance(space, FileSystemSpace) else None
    sized = limits.disk is not None and _namespaces.bwrap_sizes_tmpfs(tool)
    return _namespaces.bwrap_argv(
        command, bwrap=tool, folder=folder, binds=binds, disable_userns=disable, disk=own,
        tmp_size=limits.disk if sized else None,
    )  # fmt: skip


def _group(level: Isolation, limits: Limits) -> _cgroups.RunGroup | None:
    if not level.controllers:
        return None
    roles = {role: h for role, h in _roles().items() if role in level.controllers}
    if not roles:
        return None
    overhead = _namespaces.WRAPPER_PROCESSES[level.namespaces]
    try:
        return _cgroups.RunGroup.create(
            roles, memory=limits.memory, processes=limits.processes + overhead, cpus=limits.cpus
        )
    except OSError as error:
        raise SandboxError(f"cannot make the run's cgroup: {error}") from None


def _rlimits(limits: Limits, level: Isolation) -> list[tuple[int, int]]:
    """(resource, value) pairs every process of the run starts with."""
    cpu = math.ceil(limits.cpu_limit)
    chosen = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_CPU, cpu)]
    if limits.largest_file is not None:
        chosen.append((resource.RLIMIT_FSIZE, limits.largest_file))
    if "memory" not in level.controllers:
        # RLIMIT_DATA (heap and private maps) rather than RLIMIT_AS: numba/LLVM and the JVM
        # reserve far more address space than they ever touch
        chosen.append((resource.RLIMIT_DATA, limits.memory))
    if "pids" not in level.controllers and os.geteuid() != 0:
        mine = sum(1 for p in Path("/proc").iterdir() if p.name.isdigit() and _owned(p))
        chosen.append((resource.RLIMIT_NPROC, mine + limits.processes))
    return chosen


def _owned(path: Path) -> bool:
    with contextlib.suppress(OSError):
        return path.stat().st_uid == os.geteuid()
    return False


# the kernel charges a run's memory in pages, and in batches of up to 64 of them: a run that
# met its own limit peaks within that of it
_CHARGE_SLACK = 1024**2


def _under_own_limit(group: _cgroups.RunGroup | None, usage: Usage, limits: Limits) -> bool:
    """Whether a run the OOM killer stopped had stayed under its own memory limit: memory ran
    out around it (in the service's memory budget, or on the machine), and it was chosen as
    the victim (its oom_score_adj)."""
    if group is None or "memory" not in group.folders:
        return False
    return usage.peak_memory < limits.memory - _CHARGE_SLACK


def _hold(
    argv: list[str],
    *,
    folder: Path,
    env: dict[str, str],
    log: Path | None,
    level: Isolation,
    limits: Limits,
    group: _cgroups.RunGroup | None,
) -> Held:
    """The run's first process, held in its cgroups and limits until its turn."""
    output = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115
    procs = group.procs_files if group is not None else ()
    try:
        return hold(
            argv, cwd=folder, env=env, output=output, procs_files=procs,
            rlimits=_rlimits(limits, level),
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as error:
        raise SandboxError(f"cannot start {argv[0]!r}: {error}") from None
    finally:
        if log is not None:
            output.close()


def _run(
    held: Held,
    *,
    limits: Limits,
    log_path: Path | None,
    cancel: threading.Event | None,
    level: Isolation,
    group: _cgroups.RunGroup | None,
    space: Space | None,
    turn: Turn | None = None,
) -> Outcome:
    started = time.monotonic()
    try:
        held.start()
    except OSError as error:  # the held shell is gone (killed from outside)
        raise SandboxError(f"the run's first process ended before it started: {error}") from None
    process = held.process
    meter = TreeMeter(process.pid, members=group.members if group is not None else None)
    watch = Watch(
        process,
        limits=limits,
        group=group,
        meter=meter,
        cancel=cancel,
        started=started,
        overhead=_namespaces.WRAPPER_PROCESSES[level.namespaces],
        space=space,
    )
    reason = watch.until_exit()
    if turn is not None:  # its PID namespace is gone with its first process: CPUs free
        turn.release()
    meter.sample()  # the root is a zombie now: its counters hold all it reaped
    _, status, rusage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    usage = meter.usage(
        wall_seconds=wall,
        rusage=rusage,
        cpu_seconds=group.cpu_seconds() if group is not None else None,
        peak_memory=group.memory_peak() if group is not None else None,
    )
    code = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    reason = reason or watch.reason_after_exit(code, usage)
    if reason == limits.memory_broken() and _under_own_limit(group, usage, limits):
        reason = limits.memory_ran_out(usage.peak_memory)
    # what is left of the run dies before its disk is counted and its log gets a last line:
    # a process still running could write after either
    if group is not None:
        group.kill()
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # what is left of its session
    if reason is None and space is not None and space.over(exact=True):
        reason = limits.disk_broken()  # at its end, exactly: past it, nothing is kept
    if reason is not None and log_path is not None:
        with open(log_path, "a") as text:
            text.write(f"\nnearline: the run was stopped: {reason}\n")
    return Outcome(exit_code=None if reason else code, reason=reason, usage=usage)


__all__ = [
    "OOM_SCORE_ADJ",
    "Isolation",
    "Limits",
    "MemoryBudget",
    "Mount",
    "Outcome",
    "cleanup_stale",
    "isolation",
    "memory_budget",
    "run_sandboxed",
    "runs_memory",
]

"""Starting a run's first process without forking the service.

A ``preexec_fn`` would make :mod:`subprocess` fork the whole service (its page tables, every
thread's state) to run Python between fork and exec: 10-50 ms for a service of a few hundred
MB, on the CPU a small run is waiting for. Instead the run starts as a held shell, spawned by
``vfork`` like any plain command: it waits for one line on its stdin before anything else. The
service meanwhile puts the held process into the run's cgroups and sets its rlimits and
``oom_score_adj`` from outside (``cgroup.procs``, ``prlimit``, ``/proc/PID``), then sends the
line. Only then does the shell exec the command, through util-linux's ``setpriv`` so that it
dies with the service (``PR_SET_PDEATHSIG``); whatever it starts inherits all of it. A
readied run is held while it waits for its CPUs, so its turn costs one write.

If the service dies before sending the line, the shell reads end-of-file and exits without
running anything. Between that line and ``setpriv`` taking hold (a few hundred microseconds)
the service's death would leave the run orphaned: bubblewrap's ``--die-with-parent`` no longer
sees it, but the run still sits in its cgroups, which :func:`~nearline.algorithms.cleanup_stale`
empties at the service's next start.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

# a run's processes are the kernel's first choice when memory runs out (the most it can be
# raised to, and raising needs no privilege): if anything in the service's memory budget
# meets an OOM, a run dies, never the service that would report it
OOM_SCORE_ADJ = 1000
# the held shell: one line on stdin releases it; end of file (the service died) ends it
HOLD = 'read -r go || exit 125; exec "$0" --pdeathsig KILL -- "$@" </dev/null'


def setpriv() -> str:
    """util-linux's ``setpriv`` (Debian's essential util-linux has it)."""
    found = shutil.which("setpriv")
    if found is None:
        raise FileNotFoundError("setpriv is not installed: install util-linux")
    return found


class Held:
    """A run's first process, started and held before its command runs: in its cgroups and
    under its limits already. :meth:`start` lets it run; :meth:`abandon` (or leaving the
    ``with`` block without starting it) ends it having run nothing.

    Parameters
    ----------
    process
        The held process; once started, the run's first process (the same pid).
    go
        The pipe end whose line releases it (None once written or closed).
    """

    def __init__(self, process: subprocess.Popen[bytes], go: int) -> None:
        self.process = process
        self._go: int | None = go

    def start(self) -> None:
        """Let the command run."""
        if self._go is None:
            raise RuntimeError("the run was started or abandoned already")
        try:
            os.write(self._go, b"go\n")
        except OSError:  # it died held: reaped here, as abandon would
            self.process.kill()
            self.process.wait()
            raise
        finally:
            os.close(self._go)
            self._go = None

    def abandon(self) -> None:
        """End the held process unstarted (nothing if it was started)."""
        if self._go is None:
            return
        os.close(self._go)
        self._go = None
        self.process.kill()
        self.process.wait()

    def __enter__(self) -> Held:
        return self

    def __exit__(self, *_: object) -> None:
        self.abandon()


def hold(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    output: IO[bytes] | int,
    procs_files: Sequence[bytes],
    rlimits: Sequence[tuple[int, int]],
) -> Held:
    """Start ``argv`` held, in its own session, in the cgroups whose ``cgroup.procs`` files
    are given and under ``rlimits`` ((resource, value) pairs, each lowered to at most the hard
    limit in force): all of it holds before the command runs a single instruction.

    Raises OSError or SubprocessError if it cannot be started or held; then nothing of it
    is left running.
    """
    read, write = os.pipe()
    try:
        process = subprocess.Popen(
            ["/bin/sh", "-c", HOLD, setpriv(), *argv],
            cwd=cwd,
            env=dict(env),
            stdin=read,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except BaseException:
        os.close(write)
        raise
    finally:
        os.close(read)
    held = Held(process, write)
    try:
        _hold(process.pid, procs_files, rlimits)
    except BaseException:
        held.abandon()
        raise
    return held


def _hold(pid: int, procs_files: Sequence[bytes], rlimits: Sequence[tuple[int, int]]) -> None:
    """Put the held process ``pid`` into its cgroups and under its limits."""
    for path in procs_files:
        Path(os.fsdecode(path)).write_text(str(pid))
    with contextlib.suppress(OSError):  # no /proc: the run is still held by its own limits
        Path(f"/proc/{pid}/oom_score_adj").write_text(str(OOM_SCORE_ADJ))
    for which, value in rlimits:
        hard = resource.getrlimit(which)[1]
        soft = value if hard == resource.RLIM_INFINITY else min(value, hard)
        # CPU: SIGXCPU at the limit, SIGKILL a second later if the program ignores it
        top = soft + 1 if which == resource.RLIMIT_CPU else soft
        resource.prlimit(pid, which, (soft, top if hard == resource.RLIM_INFINITY else hard))

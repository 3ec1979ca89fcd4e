"""A run's first process, started held and released by the service: it is in its cgroups,
under its rlimits and oom_score_adj, and dies with the service, from its first instruction;
a service that dies before releasing it leaves nothing running."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import psutil
import pytest

from nearline.algorithms import _cgroups
from nearline.algorithms._cpu_gate import CpuGate, Turn
from nearline.algorithms._launch import HOLD, OOM_SCORE_ADJ, hold, setpriv
from nearline.algorithms._sandbox import Limits, run_sandboxed
from nearline.errors import SandboxError

REPORT = (
    "cat /proc/self/cgroup; echo oom $(cat /proc/self/oom_score_adj); "
    "echo cpu $(ulimit -t) core $(ulimit -c); exec setpriv --dump"
)


@pytest.fixture
def group() -> _cgroups.RunGroup:
    made = _cgroups.RunGroup.create(_cgroups.usable(), memory=None, processes=None, cpus=None)
    yield made
    made.kill()
    made.remove()


def test_the_first_process_starts_inside_its_cgroups_and_limits(
    tmp_path: Path, group: _cgroups.RunGroup
) -> None:
    with open(tmp_path / "log", "wb") as log:
        held = hold(
            ["/bin/sh", "-c", REPORT],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin"},
            output=log,
            procs_files=group.procs_files,
            rlimits=[(resource.RLIMIT_CPU, 7), (resource.RLIMIT_CORE, 0)],
        )
        assert group.members() == [held.process.pid]  # held there before its command runs
        held.start()
        assert held.process.wait(timeout=30) == 0
    said = (tmp_path / "log").read_text()
    names = {folder.name for folder in group.distinct()}
    inside = {line.rsplit("/", 1)[-1] for line in said.splitlines() if line[:1].isdigit()}
    assert names <= inside, said
    assert f"oom {OOM_SCORE_ADJ}" in said
    assert "cpu 7 core 0" in said
    assert "Parent death signal: KILL" in said


def test_an_abandoned_run_never_starts(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    with hold(
        ["/bin/touch", str(marker)], cwd=tmp_path, env={}, output=subprocess.DEVNULL,
        procs_files=[], rlimits=[],
    ) as held:  # fmt: skip
        pass  # cancelled while it waited for its turn
    assert held.process.returncode is not None
    assert not marker.exists()


def test_a_held_run_whose_service_dies_runs_nothing(tmp_path: Path) -> None:
    """The service's end of the pipe closes before the line that releases the run (as when
    it is killed): the shell exits and the command never starts."""
    marker = tmp_path / "ran"
    read, write = os.pipe()
    held = subprocess.Popen(
        ["/bin/sh", "-c", HOLD, setpriv(), "/bin/touch", str(marker)], stdin=read
    )
    os.close(read)
    os.close(write)
    assert held.wait(timeout=30) == 125
    assert not marker.exists()


def test_a_run_that_cannot_be_held_never_starts(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(FileNotFoundError):
        hold(
            ["/bin/touch", str(marker)],
            cwd=tmp_path,
            env={},
            output=subprocess.DEVNULL,
            procs_files=[b"/nonexistent/cgroup.procs"],
            rlimits=[],
        )
    assert not marker.exists()


def test_a_held_run_killed_from_outside_says_so(tmp_path: Path) -> None:
    gate = CpuGate(1)

    def kill_the_held_one_then_take_the_turn() -> Turn | None:
        (held,) = [p for p in psutil.Process().children() if HOLD in p.cmdline()]
        held.kill()
        held.wait(10)
        return gate.acquire(1)

    with pytest.raises(SandboxError, match="ended before it started"):
        run_sandboxed(
            ["/bin/true"], folder=tmp_path / "run", env={"PATH": "/usr/bin:/bin"},
            limits=Limits(wall_seconds=30), turn=kill_the_held_one_then_take_the_turn,
        )  # fmt: skip
    assert gate.held == 0  # the CPUs went back

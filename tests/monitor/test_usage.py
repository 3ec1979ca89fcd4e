"""The monitor measures real process trees: live processes, their memory, CPU time, and the
bytes of children that were reaped into their parents."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from nearline.monitor import TreeMeter, Usage, descendants, read_process

MiB = 2**20


def wait_for(check, *, seconds: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return bool(check())


def comm(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().strip()


def python(tmp_path: Path, code: str, *args: str) -> subprocess.Popen[bytes]:
    program = tmp_path / "program.py"
    program.write_text(textwrap.dedent(code))
    return subprocess.Popen([sys.executable, str(program), *args], cwd=tmp_path)


def finish(process: subprocess.Popen[bytes], meter: TreeMeter) -> Usage:
    """Wait for the root to exit, read it once more as a zombie, then reap it."""
    pidfd = os.pidfd_open(process.pid)
    try:
        assert select.select([pidfd], [], [], 60)[0], "the process did not end"
    finally:
        os.close(pidfd)
    meter.sample()
    _, status, rusage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 0
    return meter.usage(wall_seconds=1.5, rusage=rusage)


def test_descendants_are_the_whole_tree_below_a_process() -> None:
    shell = subprocess.Popen(["sh", "-c", "sleep 30 & (sleep 31; true) & wait"])
    below: list[int] = []
    try:
        tree = ["sh", "sleep", "sleep"]  # a forked child is "sh" until it has exec'd sleep
        assert wait_for(lambda: sorted(comm(pid) for pid in descendants(shell.pid)) == tree)
        below = descendants(shell.pid)
        assert sorted(comm(pid) for pid in below) == tree
        assert shell.pid not in below
    finally:
        for pid in below:
            os.kill(pid, signal.SIGKILL)
        shell.kill()
        shell.wait()


def test_a_gone_process_reads_as_none_and_an_odd_name_reads_well(tmp_path: Path) -> None:
    odd = tmp_path / "a) (b c"
    shutil.copy("/usr/bin/sleep", odd)
    process = subprocess.Popen([str(odd), "30"])
    try:
        assert wait_for(lambda: comm(process.pid) == "a) (b c")
        sample = read_process(process.pid)
        assert sample is not None
        assert sample.processes == 1
        assert 0 < sample.memory < 50 * MiB
    finally:
        process.kill()
        process.wait()
    assert read_process(process.pid) is None


def test_children_reaped_into_their_parent_are_counted_once(tmp_path: Path) -> None:
    process = python(
        tmp_path,
        """
        import subprocess, sys, time
        with open("parent.bin", "wb") as sink:
            sink.write(b"p" * (5 * 2**20))
        child = "open('child.bin', 'wb').write(b'c' * (3 * 2**20)); import time; time.sleep(0.5)"
        subprocess.run([sys.executable, "-c", child], check=True)
        """,
    )
    meter = TreeMeter(process.pid)
    assert wait_for(lambda: meter.sample().processes == 2)  # the child is alive: counted
    usage = finish(process, meter)
    assert 8 * MiB <= usage.bytes_written < 8 * MiB + 64 * 1024
    assert usage.bytes_read > 0
    assert usage.cpu_seconds > 0
    assert usage.wall_seconds == 1.5


def test_memory_is_summed_over_the_tree(tmp_path: Path) -> None:
    process = python(
        tmp_path,
        """
        import os, sys, time
        os.fork()
        held = b"x" * (100 * 2**20)
        open(f"ready-{os.getpid()}", "w").close()
        time.sleep(1)
        """,
    )
    meter = TreeMeter(process.pid)
    assert wait_for(lambda: len(list(tmp_path.glob("ready-*"))) == 2)
    now = meter.sample()
    assert now.processes == 2
    assert 200 * MiB <= now.memory <= 260 * MiB
    usage = finish(process, meter)
    assert usage.peak_memory >= now.memory


def test_cpu_of_two_busy_processes_adds_up(tmp_path: Path) -> None:
    process = python(
        tmp_path,
        """
        import os, time
        pid = os.fork()
        while time.process_time() < 0.5:
            pass
        if pid:
            os.waitpid(pid, 0)
        """,
    )
    usage = finish(process, TreeMeter(process.pid))
    assert 1.0 <= usage.cpu_seconds < 1.5


def test_given_members_and_exact_figures_win(tmp_path: Path) -> None:
    other = subprocess.Popen(["sleep", "30"])  # not below the root: a cgroup's member
    try:
        process = subprocess.Popen(["sleep", "0.3"])
        meter = TreeMeter(process.pid, members=lambda: [other.pid])
        assert meter.sample().processes == 2
        pidfd = os.pidfd_open(process.pid)
        select.select([pidfd], [], [], 10)
        os.close(pidfd)
        process.wait()
        usage = meter.usage(wall_seconds=0.3, cpu_seconds=7.5, peak_memory=123)
        assert (usage.cpu_seconds, usage.peak_memory) == (7.5, 123)
    finally:
        other.kill()
        other.wait()


def test_usage_adds_and_round_trips() -> None:
    one = Usage(wall_seconds=1, cpu_seconds=2, peak_memory=300, bytes_read=4, bytes_written=5)
    two = Usage(wall_seconds=10, cpu_seconds=20, peak_memory=30, bytes_read=40, bytes_written=50)
    assert one + two == Usage(11, 22, 300, 44, 55)
    assert Usage.from_dict({**one.to_dict(), "unknown": 1}) == one

"""The sandbox as an attacker meets it: each escape is a small program run through
run_sandboxed, and each test checks both the outcome and that the harm did not happen.

These tests need what docs/sandbox.md calls the full level (bubblewrap, root, cgroup
controllers). Without it they fail, quoting the line that installs what is missing.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from nearline.algorithms import _cgroups
from nearline.algorithms._kernels import seed_kernel_cache
from nearline.algorithms._sandbox import (
    Isolation,
    Limits,
    Mount,
    Outcome,
    cleanup_stale,
    isolation,
    run_sandboxed,
)
from nearline.errors import SandboxError

ROOT = Path(__file__).resolve().parents[2]
MiB = 2**20
FULL = ("memory", "pids", "cpu", "cpuacct")
ENV = {"PATH": "/usr/bin:/bin"}


@pytest.fixture(scope="module", autouse=True)
def full_isolation() -> Isolation:
    """Fail (never skip) where this machine cannot run the sandbox at its full level."""
    check = subprocess.run(
        [str(ROOT / "scripts" / "system-packages"), "--check", "bubblewrap"],
        capture_output=True,
        text=True,
        check=False,
    )
    if check.returncode != 0:
        pytest.fail(check.stderr.strip())
    level = isolation()
    if not level.root or level.controllers != FULL or level.namespaces != "bwrap":
        pytest.fail(
            f"the sandbox tests need root with writable cgroups and working bubblewrap; "
            f"here: {level}"
        )
    return level


def weaker(namespaces: str, *, cgroups: bool = True) -> Isolation:
    controllers = FULL if cgroups else ()
    return Isolation(namespaces, "v1" if cgroups else "none", controllers, root=True)


class Sandbox:
    """A service's places in a test folder: its database, another run's folder, and this
    run's folder; ``run`` runs a Python program through run_sandboxed."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.package = base / "package"
        self.folder = base / "runs" / "mine"
        self.log = base / "run.log"
        self.package.mkdir()

    def run(
        self, code: str, *args: str, limits: Limits | None = None, **options: object
    ) -> Outcome:
        program = self.package / "program.py"
        program.write_text(textwrap.dedent(code))
        mounts = [Mount(self.package), *options.pop("mounts", [])]  # type: ignore[misc]
        return run_sandboxed(
            [sys.executable, str(program), *args],
            folder=self.folder,
            mounts=mounts,
            env=ENV,
            limits=limits or Limits(wall_seconds=60),
            log=self.log,
            **options,  # type: ignore[arg-type]
        )

    def shell(self, script: str, *, limits: Limits, **options: object) -> Outcome:
        return run_sandboxed(
            ["/bin/sh", "-c", script],
            folder=self.folder,
            env=ENV,
            limits=limits,
            log=self.log,
            **options,  # type: ignore[arg-type]
        )

    def said(self) -> str:
        return self.log.read_text()


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


def processes_with(token: str) -> list[int]:
    """Live processes (not zombies) whose command line holds ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def wait_for(check, *, seconds: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return bool(check())


# -- what this machine enforces ---------------------------------------------------------------
def test_this_machine_enforces_everything(full_isolation: Isolation) -> None:
    assert full_isolation == Isolation("bwrap", "v1", FULL, root=True, disk="filesystem")
    assert full_isolation.weaknesses == ()
    assert full_isolation.to_dict()["weaknesses"] == []


def test_a_weaker_level_says_what_it_does_not_hold() -> None:
    none = Isolation("none", "none", (), root=True)
    words = " ".join(none.weaknesses)
    assert "no network namespace" in words
    assert "no private file system" in words
    assert "RLIMIT_DATA" in words
    assert "outlive" in words
    assert "no private file system: the run sees the host's files" in weaker("unshare").weaknesses
    assert "the disk allotment is sampled" in words


def test_the_run_is_nobody_without_capabilities(box: Sandbox) -> None:
    outcome = box.run(
        """
        import ctypes, json, os
        status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
        libc = ctypes.CDLL(None, use_errno=True)
        nested = libc.unshare(0x10000000)  # CLONE_NEWUSER: a namespace of its own to be root in
        print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "pid": os.getpid(),
                          "caps": status["CapEff"].strip(), "nested": nested,
                          "cwd": os.getcwd(), "host": os.uname().nodename}))
        """
    )
    assert outcome.ok, box.said()
    seen = json.loads(box.said().splitlines()[0])
    assert seen == {
        "uid": 65534,
        "gid": 65534,
        "pid": 2,  # its own PID namespace, under bubblewrap's reaper
        "caps": "0000000000000000",
        "nested": -1,
        "cwd": str(box.folder),
        "host": "nearline-run",
    }


# -- no network -------------------------------------------------------------------------------
CONNECT = """
    import socket, sys
    for host in ("127.0.0.1", "1.1.1.1"):
        try:
            socket.create_connection((host, int(sys.argv[1])), timeout=2).close()
            print(host, "connected")
        except OSError as error:
            print(host, "refused:", error.strerror)
    """


class Server:
    """A real TCP server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.2)
        self.port = self.socket.getsockname()[1]
        self.accepted = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve)
        self.thread.start()

    def _serve(self) -> None:
        while not self.done.is_set():
            try:
                connection, _ = self.socket.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            connection.close()

    def close(self) -> None:
        self.done.set()
        self.thread.join()
        self.socket.close()


@pytest.fixture
def server():  # type: ignore[no-untyped-def]
    running = Server()
    yield running
    running.close()


@pytest.mark.parametrize("namespaces", ["bwrap", "unshare"])
def test_no_socket_reaches_the_service_or_anywhere(
    box: Sandbox, server: Server, namespaces: str
) -> None:
    outcome = box.run(CONNECT, str(server.port), enforce=weaker(namespaces))
    assert outcome.ok, box.said()
    local, outside = box.said().splitlines()
    # the run's own loopback (bubblewrap brings it up) has nobody listening; unshare's is down
    assert local in {
        "127.0.0.1 refused: Connection refused",
        "127.0.0.1 refused: Network is unreachable",
    }
    assert outside == "1.1.1.1 refused: Network is unreachable"
    assert server.accepted == 0


def test_without_namespaces_the_run_reaches_the_service_as_isolation_says(
    box: Sandbox, server: Server
) -> None:
    level = weaker("none")
    assert any("no network namespace" in weakness for weakness in level.weaknesses)
    outcome = box.run(CONNECT, str(server.port), enforce=level)
    assert outcome.ok, box.said()
    assert box.said().splitlines()[0] == "127.0.0.1 connected"
    assert wait_for(lambda: server.accepted == 1)


# -- the file system --------------------------------------------------------------------------
def test_the_database_and_another_runs_folder_are_out_of_sight(box: Sandbox) -> None:
    database = box.base / "service" / "catalogue.sqlite"
    database.parent.mkdir()
    database.write_text("SECRET-CATALOGUE")
    other = box.base / "runs" / "other" / "result.txt"
    other.parent.mkdir(parents=True)
    other.write_text("SECRET-RESULT")
    outcome = box.run(
        """
        import json, os, sys
        seen = {}
        for path in sys.argv[1:]:
            try:
                seen[path] = open(path).read() if os.path.isfile(path) else os.listdir(path)
            except OSError as error:
                seen[path] = type(error).__name__
        print(json.dumps(seen))
        """,
        str(database),
        str(other),
        str(other.parent),
        str(box.base / "runs"),
        "/etc/shadow",
        "/root",
        str(ROOT),
    )
    assert outcome.ok, box.said()
    seen = json.loads(box.said().splitlines()[0])
    assert seen == {
        str(database): "FileNotFoundError",
        str(other): "FileNotFoundError",
        str(other.parent): "FileNotFoundError",
        str(box.base / "runs"): ["mine"],  # only the run's own folder is there
        "/etc/shadow": "FileNotFoundError",
        "/root": [".pyenv"] if sys.base_prefix.startswith("/root/") else "FileNotFoundError",
        str(ROOT): [".venv"] if sys.prefix.startswith(str(ROOT)) else "FileNotFoundError",
    }


def test_writes_land_in_its_folder_only(box: Sandbox) -> None:
    shared = box.base / "shared"
    shared.mkdir()
    (shared / "input.txt").write_text("input")
    planted = box.base / "service" / "planted.txt"
    outcome = box.run(
        """
        import json, os, sys
        results = {}
        for path in sys.argv[1:]:
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as file:
                    file.write("written by the run")
                results[path] = "written"
            except OSError as error:
                results[path] = error.strerror
        print(json.dumps(results))
        """,
        str(box.folder / "ok.txt"),
        str(shared / "input.txt"),
        str(planted),
        "/usr/planted.txt",
        "/tmp/scratch.txt",
        mounts=[Mount(shared)],
    )
    assert outcome.ok, box.said()
    results = json.loads(box.said().splitlines()[0])
    assert results == {
        str(box.folder / "ok.txt"): "written",
        str(shared / "input.txt"): "Read-only file system",
        str(planted): "written",  # into the run's private /tmp, gone with it
        "/usr/planted.txt": "Read-only file system",
        "/tmp/scratch.txt": "written",
    }
    assert (box.folder / "ok.txt").read_text() == "written by the run"
    assert (shared / "input.txt").read_text() == "input"
    assert not planted.exists()
    assert not Path("/usr/planted.txt").exists()
    assert not Path("/tmp/scratch.txt").exists()


def test_a_run_cannot_change_the_kernels_the_next_run_loads(box: Sandbox) -> None:
    """nearline's kernels reach a run as links in its own NUMBA_CACHE_DIR (_kernels.py): it
    reads them, and saves an index as numba does (a new file renamed over the name), but
    cannot write through a link into what the next run loads."""
    package = box.base / "kernels"
    (package / "sub" / "__pycache__").mkdir(parents=True)
    (package / "sub" / "mod.py").write_text("")
    index = package / "sub" / "__pycache__" / "mod.f-1.py311.nbi"
    index.write_bytes(b"nearline's index")
    cache = box.folder / "tmp" / "numba"
    assert seed_kernel_cache(cache, package=package) == 1
    (link,) = cache.rglob("*.nbi")
    outcome = box.run(
        """
        import json, os, sys
        link = sys.argv[1]
        seen = {"read": open(link, "rb").read().decode()}
        try:
            with open(link, "r+b") as file:
                file.write(b"planted")
            seen["write through"] = "written"
        except OSError as error:
            seen["write through"] = error.strerror
        with open(link + ".tmp", "wb") as file:
            file.write(b"the run's own index")
        os.replace(link + ".tmp", link)
        seen["replaced"] = open(link, "rb").read().decode()
        print(json.dumps(seen))
        """,
        str(link),
        mounts=[Mount(package)],
        limits=Limits(wall_seconds=60, disk=16 * 1024**2),
    )
    assert outcome.ok, box.said()
    assert json.loads(box.said().splitlines()[0]) == {
        "read": "nearline's index",
        "write through": "Read-only file system",
        "replaced": "the run's own index",
    }
    assert index.read_bytes() == b"nearline's index"


# -- limits -----------------------------------------------------------------------------------
def test_a_fork_bomb_meets_the_process_limit(box: Sandbox) -> None:
    # the bomb's first shell waits on its children, so the run lasts until a limit ends it
    # (a bomb that detaches lets its first shell exit at once, and the run end there)
    outcome = box.shell(
        "bomb() { bomb | bomb; }; bomb", limits=Limits(processes=64, wall_seconds=60)
    )
    assert outcome.reason == "process limit of 64 reached"
    assert outcome.exit_code is None
    assert box.said().endswith("nearline: the run was stopped: process limit of 64 reached\n")
    assert processes_with("bomb()") == []
    # the machine is still usable: a new process starts and runs
    assert subprocess.run(["true"], check=False).returncode == 0


def test_a_memory_hog_is_stopped_by_its_own_limit(box: Sandbox) -> None:
    # a bystander in the test's own memory cgroup: a global or parent OOM kill could take it
    bystander = subprocess.Popen(["sleep", "120"])
    try:
        outcome = box.run(
            """
            held = []
            while True:
                held.append(b"x" * (16 * 2**20))
            """,
            limits=Limits(memory=256 * MiB, wall_seconds=60),
        )
        assert outcome.reason == "memory limit of 256 MiB exceeded"
        assert outcome.exit_code is None
        assert 200 * MiB < outcome.usage.peak_memory <= 256 * MiB
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


BUSY = """
    import os, sys, time
    for _ in range(int(sys.argv[1]) - 1):
        if os.fork() == 0:
            break
    while time.process_time() < float(sys.argv[2]):
        pass
    """


def test_an_endless_loop_meets_the_wall_clock_limit(box: Sandbox) -> None:
    outcome = box.run(BUSY, "1", "1e9", limits=Limits(wall_seconds=2, cpu_seconds=100))
    assert outcome.reason == "wall-clock limit of 2 s"
    assert outcome.exit_code is None
    assert outcome.usage.wall_seconds >= 2


def test_an_endless_loop_meets_a_smaller_cpu_time_limit(box: Sandbox) -> None:
    outcome = box.run(BUSY, "1", "1e9", limits=Limits(wall_seconds=60, cpu_seconds=1))
    assert outcome.reason == "CPU-time limit of 1 s"
    assert outcome.exit_code is None
    # the kernel's tick accounting may stop it a few ms short of the second it counts to
    assert outcome.usage.cpu_seconds >= 0.9


def test_the_cpu_time_limit_holds_the_whole_tree(box: Sandbox) -> None:
    # each process stays under the per-process rlimit; together they break the run's limit
    outcome = box.run(BUSY, "3", "1e9", limits=Limits(cpus=2, wall_seconds=60, cpu_seconds=2))
    assert outcome.reason == "CPU-time limit of 2 s"
    assert 2 <= outcome.usage.cpu_seconds < 3


def test_a_file_over_the_size_limit_stops_the_run(box: Sandbox) -> None:
    outcome = box.shell(
        "head -c 4194304 /dev/zero > big.bin", limits=Limits(file_size=MiB, wall_seconds=60)
    )
    assert outcome.reason == "file-size limit of 1 MiB exceeded"
    assert (box.folder / "big.bin").stat().st_size == MiB


def test_a_cancelled_run_ends(box: Sandbox) -> None:
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    outcome = box.shell("sleep 600", limits=Limits(wall_seconds=60), cancel=cancel)
    assert outcome.reason == "cancelled"
    assert outcome.exit_code is None
    assert processes_with("sleep 600") == []


@pytest.mark.parametrize(("script", "code"), [("exit 3", 3), ("kill -SEGV $$", 128 + 11)])
def test_the_command_exit_status_is_reported_as_a_shell_does(
    box: Sandbox, script: str, code: int
) -> None:
    outcome = box.shell(f"echo to-stdout; echo to-stderr >&2; {script}", limits=Limits())
    assert (outcome.exit_code, outcome.reason, outcome.ok) == (code, None, False)
    assert box.said() == "to-stdout\nto-stderr\n"


# -- the run's processes end with it ----------------------------------------------------------
DAEMON = """
    import os, signal, sys, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            while True:
                with open("beat", "w") as beat:
                    beat.write(str(time.time()))
                time.sleep(0.05)
        os._exit(0)
    time.sleep(float(sys.argv[2]))
    """


@pytest.mark.parametrize("namespaces", ["bwrap", "unshare", "none"])
def test_a_daemon_that_ignores_sigterm_dies_with_the_run(box: Sandbox, namespaces: str) -> None:
    token = f"daemon-{namespaces}-{os.getpid()}"
    outcome = box.run(DAEMON, token, "0.5", enforce=weaker(namespaces))
    assert outcome.ok, box.said()
    assert (box.folder / "beat").exists()
    assert processes_with(token) == []
    last = (box.folder / "beat").read_text()
    time.sleep(0.3)
    assert (box.folder / "beat").read_text() == last


PARENT = """
import sys
from pathlib import Path
from nearline.algorithms._sandbox import Isolation, Limits, Mount, run_sandboxed
program, folder, token, namespaces = sys.argv[1:]
level = Isolation(namespaces, "v1", ("memory", "pids", "cpu", "cpuacct"), root=True)
run_sandboxed([sys.executable, program, token, "600"], folder=Path(folder),
              mounts=[Mount(Path(program).parent)], env={}, limits=Limits(), enforce=level)
"""


def start_orphaned_run(box: Sandbox, token: str, namespaces: str) -> int:
    """A service (a real process) starts a run whose daemon beats, then dies by SIGKILL;
    returns the service's pid."""
    (box.package / "program.py").write_text(textwrap.dedent(DAEMON))
    (box.base / "service.py").write_text(PARENT)
    service = subprocess.Popen(
        [sys.executable, str(box.base / "service.py"), str(box.package / "program.py"),
         str(box.folder), token, namespaces],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    try:
        assert wait_for(lambda: (box.folder / "beat").exists()), "the run never started"
    finally:
        service.send_signal(signal.SIGKILL)
        service.wait()
    return service.pid


def test_kill_9_of_the_service_leaves_no_run_behind(box: Sandbox) -> None:
    token = f"orphan-{os.getpid()}"
    start_orphaned_run(box, token, "bwrap")
    assert wait_for(lambda: processes_with(token) == [], seconds=5), processes_with(token)


def test_cleanup_stale_ends_what_a_killed_service_left(box: Sandbox) -> None:
    # without a PID namespace the daemon outlives the killed service, in the run's cgroups
    token = f"stale-{os.getpid()}"
    service = start_orphaned_run(box, token, "none")
    assert wait_for(lambda: processes_with(token) != [])
    roles = _cgroups.usable()
    left = {p for h in roles.values() for p in h.own.glob(f"nearline-{service}-*")}
    assert len(left) == len({h.own for h in roles.values()})  # one group per hierarchy
    alive = _cgroups.RunGroup.create(roles, memory=None, processes=None, cpus=None)
    try:
        removed = cleanup_stale()
        assert processes_with(token) == []
        assert left <= set(removed)
        assert not any(path.exists() for path in left)
        assert all(folder.is_dir() for folder in alive.distinct())  # a live service's groups
    finally:
        alive.remove()


# -- what a run used --------------------------------------------------------------------------
def test_usage_counts_memory_and_bytes_of_this_run(box: Sandbox) -> None:
    source = box.base / "shared" / "input.bin"
    source.parent.mkdir()
    source.write_bytes(os.urandom(30 * MiB))
    outcome = box.run(
        """
        import sys, time
        data = bytes(range(256)) * (200 * 2**20 // 256)
        with open(sys.argv[1], "rb") as source:
            while source.read(2**20):
                pass
        with open("out.bin", "wb") as sink:
            for _ in range(50):
                sink.write(b"x" * 2**20)
        time.sleep(0.5)
        """,
        str(source),
        mounts=[Mount(source.parent)],
        limits=Limits(memory=1024 * MiB, wall_seconds=60),
    )
    assert outcome.ok, box.said()
    usage = outcome.usage
    # the memory cgroup's peak: 200 MiB held plus the page cache of the 50 MiB written
    assert 200 * MiB <= usage.peak_memory <= 300 * MiB
    assert 50 * MiB <= usage.bytes_written <= 51 * MiB
    assert 30 * MiB <= usage.bytes_read <= 40 * MiB
    assert 0 < usage.cpu_seconds < usage.wall_seconds + 1


def test_cpu_seconds_of_two_busy_processes_add_up(box: Sandbox) -> None:
    outcome = box.run(BUSY, "2", "1.0", limits=Limits(cpus=2, wall_seconds=60))
    assert outcome.ok, box.said()
    usage = outcome.usage
    # each process spins to 1 s of its own CPU time: 2 s in all only if both were counted
    # (no bound on the ratio to wall time: on a busy machine the two share fewer cores); the
    # cgroup counts scheduler time, the processes' own clocks count ticks, and on a busy
    # machine the two differ by a few percent, so 1.8 s: one process alone is 1 s
    assert 1.8 <= usage.cpu_seconds <= 2.5
    assert usage.cpu_seconds <= 2 * usage.wall_seconds + 0.1, usage


def test_usage_is_this_runs_only(box: Sandbox) -> None:
    neighbour = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        outcome = box.shell("sleep 0.5", limits=Limits())
    finally:
        neighbour.kill()
        neighbour.wait()
    assert outcome.ok
    assert outcome.usage.cpu_seconds < 0.2  # the busy neighbour's CPU is not this run's


# -- weaker levels, as docs/sandbox.md describes them -----------------------------------------
def test_without_cgroups_rlimit_data_stops_one_hog(box: Sandbox) -> None:
    outcome = box.run(
        """
        held = []
        while True:
            held.append(b"x" * (16 * 2**20))
        """,
        limits=Limits(memory=256 * MiB, wall_seconds=60),
        enforce=weaker("bwrap", cgroups=False),
    )
    assert (outcome.exit_code, outcome.reason) == (1, None)
    assert "MemoryError" in box.said()


def test_without_cgroups_sampling_holds_the_tree(box: Sandbox) -> None:
    # two processes each under RLIMIT_DATA, together over the run's memory
    outcome = box.run(
        """
        import os, time
        os.fork()
        held = b"x" * (150 * 2**20)
        time.sleep(30)
        """,
        limits=Limits(memory=256 * MiB, wall_seconds=60),
        enforce=weaker("bwrap", cgroups=False),
    )
    assert outcome.reason == "memory limit of 256 MiB exceeded"
    assert outcome.usage.peak_memory > 256 * MiB
    outcome = box.shell(
        "for i in 1 2 3 4 5 6 7 8; do sleep 30 & done; wait",
        limits=Limits(processes=4, wall_seconds=60),
        enforce=weaker("bwrap", cgroups=False),
    )
    assert outcome.reason == "process limit of 4 reached"


# -- what cannot start ------------------------------------------------------------------------
def test_a_missing_program_or_mount_is_a_sandbox_error(box: Sandbox) -> None:
    with pytest.raises(SandboxError, match="cannot start 'no-such-program': no such program"):
        run_sandboxed(["no-such-program"], folder=box.folder, env=ENV)
    missing = box.base / "not-there"
    with pytest.raises(SandboxError, match=f"cannot mount {missing} into the run"):
        run_sandboxed(["true"], folder=box.folder, env=ENV, mounts=[Mount(missing)])
    with pytest.raises(SandboxError, match="the whole file system"):
        run_sandboxed(["true"], folder=box.folder, env=ENV, mounts=[Mount(Path("/"))])


def test_no_run_cgroup_is_left_behind(box: Sandbox) -> None:
    # this process's run groups only: the other test worker's runs share the parent cgroup
    mine = f"{_cgroups.PREFIX}{_cgroups.service_stamp()}-*"
    before = {p.name for h in _cgroups.usable().values() for p in h.own.glob(mine)}
    outcome = box.shell("true", limits=Limits())
    after = {p.name for h in _cgroups.usable().values() for p in h.own.glob(mine)}
    assert outcome.ok
    assert after <= before


# -- cgroups: finding them, and v2 -------------------------------------------------------------
def test_hierarchies_are_read_from_mountinfo_and_the_own_cgroup(tmp_path: Path) -> None:
    (tmp_path / "cgroup").write_text(
        "5:cpu,cpuacct:/system.slice/nearline.service\n"
        "4:memory:/system.slice/nearline.service\n"
        "1:name=systemd:/system.slice/nearline.service\n"
        "0::/system.slice/nearline.service\n"
    )
    (tmp_path / "mountinfo").write_text(
        "24 18 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
        f"25 24 0:23 / {tmp_path}/unified rw - cgroup2 cgroup2 rw,nsdelegate\n"
        "26 24 0:24 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
        "27 24 0:25 /system.slice /mnt/memory rw - cgroup cgroup rw,memory\n"
        "28 24 0:26 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n"
        "29 24 0:24 / /elsewhere/cpu rw - cgroup cgroup rw,cpu,cpuacct\n"
    )
    (tmp_path / "unified").mkdir()
    (tmp_path / "unified" / "cgroup.controllers").write_text("cpu pids\n")
    found = _cgroups.hierarchies(tmp_path)
    service = "system.slice/nearline.service"
    assert found == [
        _cgroups.Hierarchy(2, frozenset({"cpu", "pids"}), tmp_path / "unified" / service),
        _cgroups.Hierarchy(
            1, frozenset({"cpu", "cpuacct"}), Path("/sys/fs/cgroup/cpu,cpuacct") / service
        ),
        _cgroups.Hierarchy(1, frozenset({"memory"}), Path("/mnt/memory/nearline.service")),
        _cgroups.Hierarchy(1, frozenset(), Path("/sys/fs/cgroup/systemd") / service),
    ]


def test_a_v2_group_counts_cpu_and_kills_everything(tmp_path: Path) -> None:
    unified = next(h for h in _cgroups.hierarchies() if h.version == 2)
    roles = _cgroups.usable([unified])
    assert roles == {"cpuacct": unified}  # no controller delegated here: accounting only
    group = _cgroups.RunGroup.create(roles, memory=None, processes=None, cpus=None)
    join = group.procs_files[0]

    def enter() -> None:
        fd = os.open(join, os.O_WRONLY)
        os.write(fd, b"0")
        os.close(fd)

    try:
        busy = "import time\nwhile time.process_time() < 0.3: pass"
        subprocess.run([sys.executable, "-c", busy], preexec_fn=enter, check=True)
        assert 0.3 <= group.cpu_seconds() < 1.0  # type: ignore[operator]
        sleeper = subprocess.Popen(["sleep", "60"], preexec_fn=enter)
        assert group.members() == [sleeper.pid]
        group.kill()
        assert sleeper.wait(timeout=5) == -signal.SIGKILL
    finally:
        group.remove()
    assert not group.distinct()[0].exists()

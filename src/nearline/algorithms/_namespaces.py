"""The command line that puts a run in its own namespaces: bubblewrap's, or util-linux
``unshare``'s where bubblewrap is missing.

bubblewrap gives the run a file system of its own, built from read-only binds of the system
(/usr, the /lib and /bin links, a chosen few files of /etc, the Python in use), the paths the
caller mounts (each at its own absolute path, so job.json can name host paths), its working
folder writable, a private /tmp and a minimal /proc and /dev. Its user namespace makes the run
``nobody`` (uid 65534) inside, with no capabilities and no way to make further user
namespaces; its PID namespace makes the run's first process the child of a reaper, so every
process the run started dies when the run ends; its network namespace holds only a loopback
that is down.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

RUN_UID = 65534  # nobody: the run's user inside its user namespace
RUN_GID = 65534
HOSTNAME = "nearline-run"

# the system, read-only: /usr, and the top-level links (or folders) into it
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# what programs read from /etc to start, find libraries and name users; never shadow,
# ssh, sudoers or any settings of the service's own
ETC = (
    "alternatives",
    "ca-certificates",
    "fonts",
    "gai.conf",
    "group",
    "host.conf",
    "hosts",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "passwd",
    "protocols",
    "services",
    "ssl",
    "timezone",
)
# what numerical libraries read to count CPUs
SYS = ("/sys/devices/system/cpu",)
# where a run may write besides its folder: each its own (and /dev read-only around them)
SCRATCH = (Path("/tmp"), Path("/dev/shm"))


def python_paths() -> list[Path]:
    """The Python installation in use: its base prefix and, from a virtual environment,
    the environment too."""
    return sorted({Path(sys.base_prefix), Path(sys.prefix)})


def bwrap_argv(
    command: Sequence[str],
    *,
    bwrap: str,
    folder: Path,
    binds: Sequence[tuple[Path, bool]],
    disable_userns: bool = True,
    disk: Mapping[Path, Path] | None = None,
    tmp_size: int | None = None,
) -> list[str]:
    """bubblewrap's command line for ``command`` run in ``folder``; ``binds`` are
    (path, writable) pairs, each bound at its own path. ``disk`` maps ``folder``, /tmp and
    /dev/shm to the folders of the run's bounded file system shown there; without it /tmp
    and /dev/shm are each a tmpfs of the run's own, of at most ``tmp_size`` bytes if given.
    /dev itself is read-only."""
    argv = [
        bwrap,
        "--unshare-user",
        "--uid",
        str(RUN_UID),
        "--gid",
        str(RUN_GID),
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        HOSTNAME,
        "--die-with-parent",
        "--new-session",
    ]
    if disable_userns:
        argv.append("--disable-userns")
    for top in SYSTEM:
        path = Path(top)
        if path.is_symlink():
            argv += ["--symlink", str(path.readlink()), top]
        elif path.is_dir():
            argv += ["--ro-bind", top, top]
    for name in ETC:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for path in SYS:
        argv += ["--ro-bind-try", path, path]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    places: dict[Path, bool | None] = {path: None for path in SCRATCH}  # private, writable
    places.update({path: False for path in python_paths()})
    for path, writable in binds:
        places[path] = writable or places.get(path) is True
    places[folder] = True
    sources = dict(disk or {})
    # parents before children, so a bind inside /tmp or inside a mount is not covered up
    for path in sorted(places, key=lambda p: (len(p.parts), str(p))):
        writable = places[path] if path not in sources else True
        if writable is None:
            argv += ["--size", str(tmp_size)] if tmp_size is not None else []
            argv += ["--tmpfs", str(path)]
        else:
            source = sources.get(path, path)
            argv += ["--bind" if writable else "--ro-bind", str(source), str(path)]
    return [*argv, "--remount-ro", "/dev", "--chdir", str(folder), "--", *command]


def unshare_argv(command: Sequence[str], *, unshare: str) -> list[str]:
    """util-linux ``unshare``'s command line: own user (nobody inside), network, PID, IPC
    and UTS namespaces, the run's first process killed when unshare dies; the file system
    stays the host's."""
    return [
        unshare,
        "--user",
        f"--map-user={RUN_UID}",
        f"--map-group={RUN_GID}",
        "--net",
        "--pid",
        "--ipc",
        "--uts",
        "--fork",
        "--kill-child",
        "--mount-proc",
        "--",
        *command,
    ]


# the processes a wrapper adds to the run's tree (not counted against its process limit)
WRAPPER_PROCESSES = {"bwrap": 2, "unshare": 2, "none": 0}


def works(argv: Sequence[str]) -> bool:
    """Whether a wrapper command line runs ``true`` here (a container may forbid
    namespaces even to root)."""
    try:
        result = subprocess.run(
            argv, capture_output=True, timeout=30, check=False, stdin=subprocess.DEVNULL
        )
    except OSError:
        return False
    return result.returncode == 0


@functools.cache
def probe_bwrap(bwrap: str) -> tuple[bool, bool]:
    """(bubblewrap works here, it can also forbid further user namespaces: 0.8 or newer);
    asked once per process."""
    with tempfile.TemporaryDirectory(prefix="nearline-probe-") as folder:
        here = Path(folder)
        for disable in (True, False):
            argv = bwrap_argv(["true"], bwrap=bwrap, folder=here, binds=(), disable_userns=disable)
            if works(argv):
                return True, disable
    return False, False


@functools.cache
def probe_unshare(unshare: str) -> bool:
    """Whether ``unshare`` can make the run's namespaces here; asked once per process."""
    return works(unshare_argv(["true"], unshare=unshare))


@functools.cache
def bwrap_sizes_tmpfs(bwrap: str) -> bool:
    """Whether this bubblewrap can bound a tmpfs's size (``--size``, 0.7 and newer)."""
    try:
        result = subprocess.run([bwrap, "--help"], capture_output=True, text=True, check=False)
    except OSError:
        return False
    return "--size" in result.stdout + result.stderr

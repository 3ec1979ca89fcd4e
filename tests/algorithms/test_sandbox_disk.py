"""A run's disk allotment as an attacker meets it: many files each under the allotment,
/tmp and /dev/shm, sparse files, hard links, many empty files and a flood of output, at the
full level (a file system of the run's own) and with the allotment only sampled.

Like test_sandbox.py these need the full level (bubblewrap as root) and fail without it.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nearline.algorithms import DiskPool, keep_run_disks
from nearline.algorithms._disk import SPACE_PREFIX
from nearline.algorithms._sandbox import Limits, Outcome, cleanup_stale, isolation, run_sandboxed

MiB = 2**20
ENV = {"PATH": "/usr/bin:/bin"}
LEVELS = ("filesystem", "sampled")
STOPPED = "disk limit of 20 MiB exceeded"


@pytest.fixture(scope="module", autouse=True)
def full_level() -> None:
    level = isolation()
    if level.namespaces != "bwrap" or level.disk != "filesystem":
        pytest.fail(f"these tests need bubblewrap as root (run's own file system); here: {level}")


def run(
    folder: Path,
    script: str,
    *,
    disk: str,
    keep: tuple[str, ...] = ("outputs",),
    disks: DiskPool | None = None,
) -> Outcome:
    """``script`` run by /bin/sh in ``folder`` (which holds job.json and outputs/) with a
    disk of 20 MiB, held as ``disk`` says, taken from ``disks`` if given."""
    (folder / "outputs").mkdir(parents=True, exist_ok=True)
    (folder / "job.json").write_text("{}")
    return run_sandboxed(
        ["/bin/sh", "-c", script],
        folder=folder,
        env=ENV,
        limits=Limits(disk=20 * MiB, wall_seconds=60),
        log=folder.parent / "run.log",
        enforce=dataclasses.replace(isolation(), disk=disk),
        keep=keep,
        disks=disks,
    )


def outputs(folder: Path) -> list[str]:
    return sorted(path.name for path in (folder / "outputs").iterdir())


def spaces_left(folder: Path) -> list[Path]:
    return list(folder.glob(f"{SPACE_PREFIX}*"))


ATTACKS = {
    "60 files of 1 MiB in its outputs": "for i in $(seq 60); do "
    "head -c 1048576 /dev/zero > outputs/f$i || exit 1; done",
    "60 files of 1 MiB in its tmp": "mkdir -p tmp; for i in $(seq 60); do "
    "head -c 1048576 /dev/zero > tmp/f$i || exit 1; done",
    "sparse files of 19 MiB": "for i in $(seq 60); do truncate -s 19M outputs/s$i || exit 1; done",
    "a sparse file of 10 GiB": "truncate -s 10G outputs/huge",
    "hard links of one 1 MiB file": "head -c 1048576 /dev/zero > outputs/a; "
    "for i in $(seq 60); do ln outputs/a outputs/l$i || exit 1; done",
    "20000 empty files": "i=0; while [ $i -lt 20000 ]; do : > outputs/e$i || exit 1; "
    "i=$((i+1)); done",
    "100 MiB to its log": "head -c 104857600 /dev/zero",
}


@pytest.mark.parametrize("disk", LEVELS)
@pytest.mark.parametrize("attack", ATTACKS)
def test_what_a_run_holds_at_once_is_bounded(tmp_path: Path, attack: str, disk: str) -> None:
    folder = tmp_path / "run"
    outcome = run(folder, ATTACKS[attack], disk=disk)
    assert outcome.reason == STOPPED
    assert outcome.exit_code is None
    assert STOPPED in (tmp_path / "run.log").read_text()
    if disk == "filesystem":  # nothing of what it wrote is kept
        assert outputs(folder) == []
    assert spaces_left(folder) == []


def test_tmp_and_dev_shm_share_the_folders_allotment(tmp_path: Path) -> None:
    # 8 MiB in each of three places: each under 20 MiB, together past it
    script = "; ".join(
        f"head -c 8388608 /dev/zero > {place}/x || exit 1"
        for place in ("outputs", "/tmp", "/dev/shm")
    )
    assert run(tmp_path / "run", script, disk="filesystem").reason == STOPPED


@pytest.mark.parametrize("disk", LEVELS)
def test_dev_is_read_only(tmp_path: Path, disk: str) -> None:
    outcome = run(tmp_path / "run", "touch /dev/planted", disk=disk)
    assert outcome.exit_code == 1
    assert "Read-only file system" in (tmp_path / "run.log").read_text()


@pytest.mark.parametrize("disk", LEVELS)
def test_a_run_within_its_disk_keeps_its_outputs(tmp_path: Path, disk: str) -> None:
    folder = tmp_path / "run"
    script = (
        "for i in $(seq 15); do head -c 1048576 /dev/zero > outputs/f$i; done; "
        "mkfifo outputs/pipe; ln -s /etc/passwd outputs/link; "
        "head -c 4000000 /dev/zero > /tmp/scratch; echo made > made.txt"
    )
    outcome = run(folder, script, disk=disk)
    assert outcome.ok, (tmp_path / "run.log").read_text()
    assert outputs(folder) == sorted([f"f{i}" for i in range(1, 16)] + ["link", "pipe"])
    assert (folder / "outputs" / "f15").stat().st_size == MiB
    assert (folder / "outputs" / "pipe").is_fifo()  # as it was: runner.output_files refuses it
    assert os.readlink(folder / "outputs" / "link") == "/etc/passwd"
    assert (folder / "made.txt").exists() == (disk == "sampled")  # only outputs/ is kept
    assert spaces_left(folder) == []


def test_a_run_that_fails_keeps_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    outcome = run(folder, "head -c 1000 /dev/zero > outputs/part; exit 3", disk="filesystem")
    assert outcome.exit_code == 3
    assert outputs(folder) == []


def test_a_single_file_past_the_disk_says_disk(tmp_path: Path) -> None:
    outcome = run(tmp_path / "run", "head -c 30000000 /dev/zero > outputs/big", disk="sampled")
    assert outcome.reason == STOPPED  # RLIMIT_FSIZE is the disk when no file size is given


HOLDER = """\
import sys
from pathlib import Path
from nearline.algorithms._disk import FileSystemSpace
space = FileSystemSpace.make(Path(sys.argv[1]), limit=2**20, log=None)
print(space.mount, flush=True)
sys.stdin.read()
"""


def test_cleanup_stale_unmounts_what_a_killed_service_left(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLDER), str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    mount = Path(holder.stdout.readline().strip())
    assert os.path.ismount(mount)
    alive = cleanup_stale()
    assert mount.parent not in alive  # its service still runs
    assert os.path.ismount(mount)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    holder.stdin.close()
    holder.stdout.close()
    assert mount.parent in cleanup_stale()
    assert not os.path.ismount(mount)
    assert spaces_left(folder) == []


# what the sandbox binds read-only at their own paths (the interpreter): under /tmp when the
# project is (a clone in a temporary folder), where they are the service's, not a leftover
BOUND = " ".join(sorted({sys.prefix, sys.base_prefix}))
LOOK = (  # what a run after another finds in its three places (but its own folder, the bound
    # interpreter, and the folders leading to them, which /tmp holds when they are under
    # /tmp), and room for 19 MiB
    "found=$(find . /tmp /dev/shm -mindepth 1 ! -name job.json ! -path ./outputs | "
    'while read -r p; do case "$PWD/" in "$p"/*) continue ;; esac; '
    'case "$p" in "$PWD"*) continue ;; esac; '
    f'for b in {BOUND}; do case "$b/" in "$p"/*) continue 2 ;; esac; '
    'case "$p/" in "$b"/*) continue 2 ;; esac; done; echo "$p"; done); '
    'printf %s "$found" > outputs/found; head -c 19922944 /dev/zero > outputs/room'
)


@pytest.fixture
def pooled(tmp_path: Path):
    """Run disks kept for reuse, as ``nearline serve`` keeps them; the pool."""
    folder = tmp_path / "disks"
    with keep_run_disks(folder) as pool:
        yield pool
    assert list(folder.iterdir()) == []  # every disk kept was unmounted and deleted


def test_a_disk_given_back_to_a_closed_pool_is_removed(tmp_path: Path) -> None:
    """A run that ends after its pool's owner closed it (a server stopping) leaves no disk
    waiting: it is unmounted and deleted, and nothing is kept from then on."""
    pool = keep_run_disks(tmp_path / "disks")
    assert run(tmp_path / "kept", "true", disk="filesystem", disks=pool).ok
    assert len(list(pool.folder.iterdir())) == 1  # kept for the next run
    pool.close()
    assert list(pool.folder.iterdir()) == []
    assert run(tmp_path / "late", "true", disk="filesystem", disks=pool).ok
    assert list(pool.folder.iterdir()) == []
    assert spaces_left(tmp_path / "late") == []


def test_a_kept_disk_holds_nothing_of_the_run_before(tmp_path: Path, pooled: DiskPool) -> None:
    """Each attack above, then a clean run on the same disk: it finds its three places empty
    and its whole allotment free; the attack was stopped as on a fresh disk."""
    leftovers = (
        "mkdir -p a/b; echo secret > a/b/c; echo secret > /tmp/s; echo secret > /dev/shm/s; "
        "mkfifo p; ln -s /etc/passwd outputs/l; (sleep 600 > /tmp/held &) ; setsid sleep 600 &"
    )
    for index, (name, script) in enumerate([("leftovers", leftovers), *ATTACKS.items()]):
        attack = run(tmp_path / f"attack-{index}", script, disk="filesystem", disks=pooled)
        assert attack.reason == (None if name == "leftovers" else STOPPED), name
        after = tmp_path / f"after-{index}"
        assert run(after, LOOK, disk="filesystem", disks=pooled).ok, (
            tmp_path / "run.log"
        ).read_text()
        assert (after / "outputs" / "found").read_text() == "", name
        assert (after / "outputs" / "room").stat().st_size == 19 * MiB
        kept = list(pooled.folder.iterdir())
        assert len(kept) == 1, kept  # the one disk, reused each time


FURNISH_ATTACKS = {
    "nothing": "true",
    "a forged index beside the links": "echo forged > tmp/numba/m_1/mod.g-1.py311.nbi",
    "a link replaced by a file": "echo own > tmp/numba/x && mv tmp/numba/x tmp/numba/m_1/a.nbi",
    "a folder's mode changed": "chmod 777 tmp/numba/m_1",
    "the folder on the way replaced by a link": "rm -rf tmp && ln -s /tmp tmp",
    "a link added": "ln -s /etc/passwd tmp/numba/m_1/b.nbc",
}
TREE = (  # the furnished folder as the run sees it: each entry, its kind, mode, link target
    "find tmp/numba -printf '%p|%y|%m|%l|%i\\n' > outputs/tree"
)


def test_a_kept_disk_furnishes_the_next_run_exactly(tmp_path: Path, pooled: DiskPool) -> None:
    """Folders furnished into a run's folder (nearline's kernel links) stay on a kept disk
    only while they are exactly as copied: whatever a run did to them, the next run finds
    the same links and modes, on the one disk kept; untouched, they are the same inodes."""
    source = tmp_path / "links"
    (source / "m_1").mkdir(parents=True)
    for name in ("a.nbi", "a.nbc"):
        (source / "m_1" / name).symlink_to(f"/nowhere/{name}")

    def furnished(name: str, script: str) -> list[list[str]]:
        folder = tmp_path / name
        (folder / "outputs").mkdir(parents=True)
        outcome = run_sandboxed(
            ["/bin/sh", "-c", f"{TREE}; {script}"],
            folder=folder,
            env=ENV,
            limits=Limits(disk=20 * MiB, wall_seconds=60),
            log=tmp_path / "run.log",
            keep=("outputs",),
            furnish={"tmp/numba": source},
            disks=pooled,
        )
        assert outcome.ok, (tmp_path / "run.log").read_text()
        assert len(list(pooled.folder.iterdir())) == 1  # the one disk, reused each time
        return sorted(
            line.split("|") for line in (folder / "outputs" / "tree").read_text().splitlines()
        )

    first = furnished("first", "true")
    assert [row[:4] for row in first] == [
        ["tmp/numba", "d", "755", ""],
        ["tmp/numba/m_1", "d", "755", ""],
        ["tmp/numba/m_1/a.nbc", "l", "777", "/nowhere/a.nbc"],
        ["tmp/numba/m_1/a.nbi", "l", "777", "/nowhere/a.nbi"],
    ]
    for index, (name, attack) in enumerate(FURNISH_ATTACKS.items()):
        before = furnished(f"attack-{index}", attack)
        after = furnished(f"after-{index}", "true")
        assert [row[:-1] for row in after] == [row[:-1] for row in first], name
        if name == "nothing":  # kept, not made again
            assert [row[-1] for row in after] == [row[-1] for row in before]

"""Migration of closed sets to an archive tier, and restore: real folders, real fsspec file
systems (memory://, file://, and two small subclasses that fail the way real tiers fail)."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
import time
import uuid
from pathlib import Path

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFile, MemoryFileSystem
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from nearline.errors import ArchiveError, LayoutError, MigrationError, RestoreError
from nearline.layout import (
    Layout,
    MigrationEvent,
    Migrator,
    Phase,
    closed_sets,
    hds_path,
    mark_complete,
    restore,
    verify_archive,
)
from nearline.layout._journal import UNFINISHED, Journal, State
from nearline.layout._manifest import BundleKind, Entry, Manifest
from nearline.layout._tier_fsspec import FsspecTier
from tests.layout.crash_worker import archived_files, cli, make_run


def tree(root: Path) -> dict[str, str]:
    """{path relative to root: SHA-256} of every file below root, hidden files left out."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }


def sole_shas(archive: str | Path) -> dict[str, str]:
    found = archived_files(archive)
    assert all(len(shas) == 1 for shas in found.values()), found
    return {path: shas[0] for path, shas in found.items()}


@pytest.fixture
def memory_url():
    url = f"memory://nearline-test-{uuid.uuid4().hex}"
    yield url
    fs = fsspec.filesystem("memory")
    if fs.exists(url):
        fs.rm(url, recursive=True)


# -- end to end ----------------------------------------------------------------------------


@pytest.mark.parametrize("bundle", ["tar", "none"])
def test_closed_sets_move_to_the_archive_and_restore_byte_for_byte(tmp_path, bundle):
    source, archive, back = tmp_path / "source", tmp_path / "archive", tmp_path / "back"
    expected = make_run(source, steps=range(3), files=("dyn", "phy", "rad"), ranks=4)
    mtimes = {p: (source / p).stat().st_mtime_ns for p in expected}
    with Migrator(source, archive, bundle=bundle) as migrator:
        archived = migrator.run_once()
        assert [(m.step, m.file) for m in archived] == [
            (s, f) for s in range(3) for f in ("dyn", "phy", "rad")
        ]
        assert {r.state for r in migrator.records()} == {State.DONE}
    assert sum(len(m.entries) for m in archived) == len(expected) == 45
    assert tree(source) == {}  # every data file and marker gone
    assert sorted(p.name for p in source.iterdir()) == [
        ".nearline-migrate.lock",
        ".nearline-migrate.sqlite",
        "000002",  # the newest step folder stays for a writer that may still use it
    ]
    assert sole_shas(archive) == expected
    if bundle == "tar":
        assert sorted(p.name for p in (archive / "000001").iterdir()) == [
            f"{f}.000001.{kind}" for f in ("dyn", "phy", "rad") for kind in ("manifest.json", "tar")
        ]
    else:  # files as they are, beside their manifests
        assert set(tree(archive)) == set(expected) | {
            f"{s:06d}/{f}.{s:06d}.manifest.json" for s in range(3) for f in ("dyn", "phy", "rad")
        }
    assert len(verify_archive(archive)) == 9
    restored = restore(archive, back, chunk_size="16KiB")  # files span several buffers
    assert len(restored) == 9
    assert tree(back) == expected
    assert {p: (back / p).stat().st_mtime_ns for p in expected} == mtimes


def test_a_tar_bundle_is_a_standard_tar(tmp_path):
    source, archive = tmp_path / "source", tmp_path / "archive"
    name = "a-long-file-group-name_" + "x" * 90  # longer than a ustar name field holds
    expected = make_run(source, steps=range(1), files=(name,), ranks=2)
    with Migrator(source, archive) as migrator:
        migrator.run_once()
    with tarfile.open(archive / "000000" / f"{name}.000000.tar") as bundle:
        bundle.extractall(tmp_path / "untarred" / "000000", filter="data")
        assert len(bundle.getnames()) == 3
    assert tree(tmp_path / "untarred") == expected


def test_restore_picks_one_step_and_file(tmp_path):
    source, archive, back = tmp_path / "source", tmp_path / "archive", tmp_path / "back"
    expected = make_run(source, steps=range(3))
    with Migrator(source, archive, bundle="none") as migrator:
        migrator.run_once()
    assert [(m.step, m.file) for m in restore(archive, back, step=1, file="phy")] == [(1, "phy")]
    assert tree(back) == {p: s for p, s in expected.items() if p.startswith("000001/phy")}
    assert len(restore(archive, back, file="dyn")) == 3
    with pytest.raises(ArchiveError, match="no archived sets of step 7"):
        restore(archive, back, step=7)
    with pytest.raises(LayoutError, match="not usable in a path"):
        restore(archive, back, file="../etc")


@pytest.mark.parametrize("marked_as", ["files", "folder"])
def test_zarr_stores_are_archived_file_by_file(tmp_path, marked_as):
    source, archive, back = tmp_path / "source", tmp_path / "archive", tmp_path / "back"
    store = hds_path(source, step=0, file="ocean", rank=0, ext="zarr")
    for chunk in ("zarr.json", "t/zarr.json", "t/c/0/0", "t/c/0/1", "t/c/1/0"):
        (store / chunk).parent.mkdir(parents=True, exist_ok=True)
        (store / chunk).write_bytes(os.urandom(1000 + len(chunk)))
    expected = tree(source)
    members = None if marked_as == "files" else [store]  # a folder member stands for its files
    fileset = mark_complete(source, step=0, file="ocean", members=members)
    assert [m.path for m in fileset.members] == ["ocean/ocean.000000.00000.zarr"]
    with Migrator(source, archive) as migrator:
        (manifest,) = migrator.run_once()
    assert sorted(e.path for e in manifest.entries) == sorted(p[7:] for p in expected)
    assert not store.exists()
    restore(archive, back)
    assert tree(back) == expected


def test_step_block_folders_are_mirrored_on_the_archive_and_restored(tmp_path):
    source, archive, back = tmp_path / "source", tmp_path / "archive", tmp_path / "back"
    layout = Layout(fanout=4, ranks=2, steps=12)  # 12 steps, at most 4 per folder: blocks
    for step in (1, 6, 11):
        for rank in (0, 1):
            path = layout.path(source, step=step, file="dyn", rank=rank, ext="nc")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(os.urandom(2000))
        mark_complete(source, step=step, file="dyn", layout=layout)
    expected = tree(source)
    assert "1/000006/dyn/dyn.000006.00001.nc" in expected
    with Migrator(source, archive) as migrator:
        assert [m.folder for m in migrator.run_once()] == ["0/000001", "1/000006", "2/000011"]
    assert (archive / "1" / "000006" / "dyn.000006.tar").is_file()
    assert [m.step for m in restore(archive, back, step=6)] == [6]
    assert tree(back) == {p: s for p, s in expected.items() if p.startswith("1/000006/")}
    assert tree(source) == {}


def test_progress_reports_bytes_per_set_in_order(tmp_path):
    source, archive = tmp_path / "source", tmp_path / "archive"
    expected = make_run(source, steps=range(1), files=("dyn",), ranks=3, size=300_000)
    total = sum((source / p).stat().st_size for p in expected)
    events: list[MigrationEvent] = []
    with Migrator(source, archive, chunk_size="64KiB", progress=events.append) as migrator:
        migrator.run_once()
    assert {(e.step, e.file, e.total) for e in events} == {(0, "dyn", total)}
    phases = [e.phase for e in events]
    assert phases[-2:] == [Phase.REMOVE, Phase.DONE]
    assert phases.index(Phase.VERIFY) > max(i for i, p in enumerate(phases) if p is Phase.COPY)
    for phase in (Phase.COPY, Phase.VERIFY):
        done = [e.done for e in events if e.phase is phase]
        assert (done[0], done[-1]) == (0, total)
        assert done == sorted(done)
    assert len([p for p in phases if p is Phase.COPY]) > total // (64 * 1024)


# -- archive tiers -------------------------------------------------------------------------


@pytest.mark.parametrize("bundle", ["tar", "none"])
def test_an_fsspec_memory_archive(tmp_path, memory_url, bundle):
    source, back = tmp_path / "source", tmp_path / "back"
    expected = make_run(source, steps=range(2))
    with Migrator(source, memory_url, bundle=bundle) as migrator:
        assert len(migrator.run_once()) == 4
    fs, root = fsspec.core.url_to_fs(memory_url)
    names = sorted(p.rpartition("/")[2] for p in fs.ls(f"{root}/000001", detail=False))
    if bundle == "tar":
        assert names == [
            "dyn.000001.manifest.json",
            "dyn.000001.tar",
            "phy.000001.manifest.json",
            "phy.000001.tar",
        ]
    assert sole_shas(memory_url) == expected
    assert len(verify_archive(memory_url)) == 4
    restore(memory_url, back)
    assert tree(back) == expected
    assert tree(source) == {}


def test_a_file_url_archive_is_readable_as_a_plain_folder(tmp_path):
    source, archive = tmp_path / "source", tmp_path / "archive"
    expected = make_run(source, steps=range(2))
    with Migrator(source, f"file://{archive}") as migrator:
        migrator.run_once()
    assert sole_shas(archive) == expected  # written through fsspec, read as a folder
    assert len(verify_archive(f"file://{archive}")) == 4


class CorruptingFileSystem(MemoryFileSystem):
    """An object store that damages what it moves: one flipped bit per published bundle."""

    store: dict = {}  # noqa: RUF012 - fsspec's memory store is a class attribute
    pseudo_dirs = [""]  # noqa: RUF012
    cachable = False

    def mv(self, path1, path2, **kwargs):
        super().mv(path1, path2, **kwargs)
        if not path2.endswith(".json"):
            self.store[self._strip_protocol(path2)].getbuffer()[1000] ^= 0x01


def test_the_migrator_reads_back_what_it_wrote_and_keeps_the_source_on_a_mismatch(tmp_path):
    source = tmp_path / "source"
    expected = make_run(source, steps=range(2))
    tier = FsspecTier(CorruptingFileSystem(), f"/archive-{uuid.uuid4().hex}")
    with (
        Migrator(source, tier) as migrator,
        pytest.raises(
            ArchiveError, match=r"set \(step 0, file 'dyn'\): dyn/dyn\.000000\.00000\.nc"
        ),
    ):
        migrator.run_once()
    assert tree(source) == expected  # nothing removed
    assert all(s.marker.exists() for s in closed_sets(source))
    assert manifests_on(tier) == []
    with Journal(source) as journal:
        failed, copied = journal.records()  # the next set was copied while this one verified
        assert (failed.file, failed.state, copied.file, copied.state) == (
            "dyn",
            State.FAILED,
            "phy",
            State.COPIED,
        )
        assert "has SHA-256" in failed.error


def manifests_on(tier: FsspecTier) -> list[str]:
    return sorted(p for p in tier.fs.find(tier.root) if p.endswith(".manifest.json"))


class FullFileSystem(MemoryFileSystem):
    """An object store with room for ``room`` more bytes; then writes fail with ENOSPC."""

    store: dict = {}  # noqa: RUF012 - fsspec's memory store is a class attribute
    pseudo_dirs = [""]  # noqa: RUF012
    cachable = False

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = room

    def _open(self, path, mode="rb", **kwargs):
        if mode != "wb":
            return super()._open(path, mode, **kwargs)
        return _RoomLimitedFile(self, self._strip_protocol(path))


class _RoomLimitedFile(MemoryFile):
    def __init__(self, fs: FullFileSystem, path: str) -> None:
        super().__init__(fs, path)
        self.commit()

    def write(self, data):
        if len(data) > self.fs.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), self.path)
        self.fs.room -= len(data)
        return super().write(data)


def test_a_full_archive_tier_raises_a_typed_error_and_keeps_the_source(tmp_path):
    """The archive here is an fsspec memory file system that runs out of room, as a full
    object store or disk does (ENOSPC); see the tmpfs test below for a real file system."""
    source = tmp_path / "source"
    expected = make_run(source, steps=range(2), size=100_000)
    first_set = sum((source / p).stat().st_size for p in expected if p.startswith("000000/dyn"))
    fs = FullFileSystem(room=first_set + 80_000)  # one set, its manifest, and a bit more
    tier = FsspecTier(fs, f"/archive-{uuid.uuid4().hex}")
    with Migrator(source, tier) as migrator:
        with pytest.raises(ArchiveError, match=r"archive tier is full: writing .*phy\.000000\.tar"):
            migrator.run_once()
        assert [(r.file, r.state) for r in migrator.records()] == [
            ("dyn", State.DONE),
            ("phy", State.FAILED),
        ]
    assert tree(source) == {p: s for p, s in expected.items() if not p.startswith("000000/dyn")}
    assert [p for p in fs.find(tier.root) if ".partial" in p] == []  # rolled back
    fs.room = 10**9  # space freed: the next run finishes the job
    with Migrator(source, tier) as migrator:
        assert len(migrator.run_once()) == 3
    assert sole_shas(tier) == expected


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A real 1 MiB tmpfs, mounted for this test (needs root and mount rights, else skipped)."""
    mount = shutil.which("mount")
    if os.geteuid() != 0 or mount is None:
        pytest.skip("mounting a tmpfs needs root")
    point = tmp_path / "tiny"
    point.mkdir()
    command = [mount, "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(point)]
    if subprocess.run(command, capture_output=True, check=False).returncode != 0:
        pytest.skip("this machine does not let us mount a tmpfs")
    yield point
    subprocess.run(["umount", str(point)], check=True)


def test_a_full_file_system_raises_a_typed_error_and_keeps_the_source(tmp_path, tiny_tmpfs):
    source = tmp_path / "source"
    expected = make_run(source, steps=range(3), size=200_000)  # about 3 MB, into 1 MiB
    with (
        Migrator(source, tiny_tmpfs, bundle="none") as migrator,
        pytest.raises(ArchiveError, match="archive tier is full: writing") as error,
    ):
        migrator.run_once()
    assert str(tiny_tmpfs) in str(error.value)
    archived = sole_shas(tiny_tmpfs)
    assert 0 < len(archived) < len(expected)
    assert tree(source) == {p: s for p, s in expected.items() if p not in archived}
    assert [p.name for p in tiny_tmpfs.rglob(".*")] == []


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("change", ["append", "touch"])
def test_a_file_changed_after_marking_is_refused_and_kept(tmp_path, change):
    source, archive = tmp_path / "source", tmp_path / "archive"
    make_run(source, steps=range(2))
    victim = hds_path(source, step=1, file="dyn", rank=2, ext="nc")
    if change == "append":
        with victim.open("ab") as handle:
            handle.write(b"late bytes")
    else:
        os.utime(victim, ns=(victim.stat().st_atime_ns, victim.stat().st_mtime_ns + 1))
    before = tree(source)
    with Migrator(source, archive) as migrator, pytest.raises(MigrationError) as error:
        migrator.run_once()
    message = str(error.value)
    assert "set (step 1, file 'dyn')" in message
    assert str(victim) in message
    assert "changed after it was marked complete" in message
    assert "re-mark the set" in message.lower()
    assert {p for p in before if p.startswith("000001/dyn")} <= set(tree(source))
    assert tree(source) == {p: s for p, s in before.items() if not p.startswith("000000/")}
    assert sorted(archived_files(archive)) == sorted(p for p in before if p.startswith("000000/"))
    mark_complete(source, step=1, file="dyn")  # the writer is done with it after all
    with Migrator(source, archive) as migrator:
        assert [(m.step, m.file) for m in migrator.run_once()] == [(1, "dyn"), (1, "phy")]
    assert sole_shas(archive) == before


def test_a_missing_member_is_refused_and_the_rest_kept(tmp_path):
    source, archive = tmp_path / "source", tmp_path / "archive"
    make_run(source, steps=range(1), files=("dyn",))
    victim = hds_path(source, step=0, file="dyn", rank=1, ext="nc")
    victim.unlink()
    before = tree(source)
    with (
        Migrator(source, archive) as migrator,
        pytest.raises(MigrationError, match=rf"set \(step 0, file 'dyn'\): {victim} is listed"),
    ):
        migrator.run_once()
    assert tree(source) == before
    assert archived_files(archive) == {}


def test_a_file_written_to_while_it_is_copied_is_caught_and_kept(tmp_path):
    source, archive = tmp_path / "source", tmp_path / "archive"
    make_run(source, steps=range(1), files=("dyn",), size=200_000)
    victim = hds_path(source, step=0, file="dyn", rank=0, ext="nc")

    def late_writer(event: MigrationEvent) -> None:
        if event.phase is Phase.COPY and event.done > 0 and victim.stat().st_size < 10**6:
            with victim.open("ab") as handle:  # a writer that did not wait for the migrator
                handle.write(bytes(10**6))

    with (
        Migrator(source, archive, chunk_size="16KiB", progress=late_writer) as migrator,
        pytest.raises(MigrationError, match=r"changed after it was marked complete \(while"),
    ):
        migrator.run_once()
    assert victim.stat().st_size > 10**6  # kept, late bytes and all
    assert archived_files(archive) == {}  # no manifest: nothing trusted on the archive
    with Journal(source) as journal:
        assert [r.state for r in journal.records()] == [State.FAILED]


def test_a_source_changed_between_copy_and_read_back_is_caught_and_kept(tmp_path):
    """The read-back compares the archive copy with the source; a source whose bytes changed
    after it was copied (its size and mtime put back) fails that, as a changed source."""
    source, archive = tmp_path / "source", tmp_path / "archive"
    make_run(source, steps=range(1), files=("dyn",), size=200_000)
    victim = hds_path(source, step=0, file="dyn", rank=1, ext="nc")

    def sneaky_writer(event: MigrationEvent) -> None:
        if event.phase is Phase.VERIFY and event.done == 0:
            info = victim.stat()
            with victim.open("r+b") as handle:
                handle.seek(1234)
                handle.write(b"changed")
            os.utime(victim, ns=(info.st_atime_ns, info.st_mtime_ns))

    with (
        Migrator(source, archive, progress=sneaky_writer) as migrator,
        pytest.raises(MigrationError, match=r"its bytes differ from those archived"),
    ):
        migrator.run_once()
    assert b"changed" in victim.read_bytes()  # kept
    assert archived_files(archive) == {}  # no manifest: nothing trusted on the archive
    with Journal(source) as journal:
        assert [r.state for r in journal.records()] == [State.FAILED]


def test_a_corrupt_bundle_fails_verify_and_restore_naming_the_set_and_file(tmp_path):
    source, archive, back = tmp_path / "source", tmp_path / "archive", tmp_path / "back"
    make_run(source, steps=range(2))
    with Migrator(source, archive) as migrator:
        (target,) = [m for m in migrator.run_once() if (m.step, m.file) == (1, "phy")]
    entry = target.entries[1]
    with open(archive / entry.object, "r+b") as bundle:
        bundle.seek(entry.offset + 17)
        byte = bundle.read(1)
        bundle.seek(entry.offset + 17)
        bundle.write(bytes([byte[0] ^ 0xFF]))
    pattern = rf"set \(step 1, file 'phy'\): {entry.path} in .*phy\.000001\.tar has SHA-256"
    with pytest.raises(ArchiveError, match=pattern):
        verify_archive(archive)
    assert len(verify_archive(archive, step=0)) == 2  # the other bundles are fine
    with pytest.raises(ArchiveError, match=pattern):
        restore(archive, back, step=1, file="phy")
    restored = {p.name for p in (back / "000001").rglob("*") if p.is_file()}
    assert restored == {Path(target.entries[0].path).name}  # before the bad one; no partial


def flip_a_byte(archive: Path, manifest: Manifest, index: int) -> Entry:
    """Corrupt member ``index`` of ``manifest``'s bundle in place; return its entry."""
    entry = manifest.entries[index]
    with open(archive / entry.object, "r+b") as bundle:
        bundle.seek(entry.offset + 17)
        byte = bundle.read(1)
        bundle.seek(entry.offset + 17)
        bundle.write(bytes([byte[0] ^ 0xFF]))
    return entry


def test_restore_brings_back_every_good_set_then_names_each_bad_one(tmp_path):
    source, archive, back = tmp_path / "source", tmp_path / "archive", tmp_path / "back"
    expected = make_run(source, steps=range(3))
    with Migrator(source, archive) as migrator:
        archived = {(m.step, m.file): m for m in migrator.run_once()}
    assert len(archived) == 6
    phy = flip_a_byte(archive, archived[(1, "phy")], 1)  # in the middle of the run
    dyn = flip_a_byte(archive, archived[(2, "dyn")], 0)
    with pytest.raises(RestoreError) as caught:
        restore(archive, back)
    error = caught.value
    assert [(m.step, m.file) for m in error.restored] == [
        (0, "dyn"),
        (0, "phy"),
        (1, "dyn"),
        (2, "phy"),
    ]
    assert [(m.step, m.file) for m, _ in error.failed] == [(1, "phy"), (2, "dyn")]
    message = str(error)
    assert message.startswith(
        f"2 of 6 archived sets could not be restored (the other 4 were, into {back}): "
        f"[1] set (step 1, file 'phy'): {phy.path} in "
    )
    assert f"; [2] set (step 2, file 'dyn'): {dyn.path} in " in message
    assert "\n" not in message
    good = {p: sha for p, sha in expected.items() if not p.startswith(("000001/phy", "000002/dyn"))}
    assert len(good) == 16
    restored = tree(back)
    assert {p: restored[p] for p in good} == good  # every good set read back equal
    bad = set(restored) - set(good)  # a bad set keeps only its files before the bad one
    first_phy = archived[(1, "phy")].entries[0].path
    assert bad == {f"000001/{first_phy}"}
    assert restored[f"000001/{first_phy}"] == expected[f"000001/{first_phy}"]
    assert not [p for p in back.rglob("*") if ".partial" in p.name]


def test_cli_restore_reports_the_good_sets_and_exits_non_zero_naming_the_bad(tmp_path, capsys):
    source, archive, back = tmp_path / "source", tmp_path / "archive", tmp_path / "back"
    expected = make_run(source, steps=range(3), files=("dyn",))
    assert cli(["migrate", str(source), str(archive)]) == 0
    capsys.readouterr()
    from nearline.layout import manifests
    from nearline.layout._tier_registry import open_tier

    middle = next(m for m in manifests(open_tier(archive)) if m.step == 1)
    entry = flip_a_byte(archive, middle, 2)
    assert cli(["restore", str(archive), str(back)]) == 2
    out, err = capsys.readouterr()
    assert "restored 2 sets (8 files" in out
    assert err.count("\n") == 1
    assert err.startswith(
        "nearline: error: 1 of 3 archived sets could not be restored (the other 2 were, into "
        f"{back}): [1] set (step 1, file 'dyn'): {entry.path} in "
    )
    assert "has SHA-256" in err
    assert "Traceback" not in err
    restored = tree(back)
    for path, sha in expected.items():
        if not path.startswith("000001/"):
            assert restored.pop(path) == sha
    assert set(restored) <= {f"000001/{e.path}" for e in middle.entries[:2]}


def test_cli_restore_into_a_folder_it_cannot_write_says_so_in_one_line(tmp_path, capsys):
    source, archive = tmp_path / "source", tmp_path / "archive"
    make_run(source, steps=range(1), files=("dyn",))
    assert cli(["migrate", str(source), str(archive)]) == 0
    capsys.readouterr()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert cli(["restore", str(archive), str(blocker)]) == 2
    out, err = capsys.readouterr()
    assert "restored" not in out
    assert err.count("\n") == 1
    assert err.startswith(f"nearline: error: cannot restore {blocker}/000000/dyn/")
    assert "Not a directory" in err
    assert err.endswith("restore into a folder you can write\n")
    assert blocker.read_text() == "not a folder"


def test_restore_refuses_a_manifest_that_points_outside_its_folder(tmp_path):
    source, archive, back = tmp_path / "source", tmp_path / "archive", tmp_path / "back"
    make_run(source, steps=range(1), files=("dyn",))
    with Migrator(source, archive) as migrator:
        (manifest,) = migrator.run_once()
    document = json.loads((archive / manifest.name).read_text())
    document["entries"][0]["path"] = "../../escaped.nc"
    (archive / manifest.name).write_text(json.dumps(document))
    with pytest.raises(ArchiveError, match=r"names '\.\./\.\./escaped\.nc', which is not"):
        restore(archive, back)
    assert not (tmp_path / "escaped.nc").exists()


def test_a_truncated_loose_file_fails_verify(tmp_path):
    source, archive = tmp_path / "source", tmp_path / "archive"
    make_run(source, steps=range(1), files=("dyn",))
    with Migrator(source, archive, bundle="none") as migrator:
        (manifest,) = migrator.run_once()
    os.truncate(archive / manifest.entries[0].object, 10)
    with pytest.raises(ArchiveError, match=r"dyn/dyn\.000000\.00000\.nc has 10 bytes"):
        verify_archive(archive)


def test_a_missing_source_or_a_second_migrator_is_refused(tmp_path):
    with pytest.raises(MigrationError, match="is not a folder"):
        Migrator(tmp_path / "nowhere", tmp_path / "archive")
    make_run(tmp_path / "source", steps=range(1))
    with (
        Migrator(tmp_path / "source", tmp_path / "archive"),
        pytest.raises(MigrationError, match="another migrator is running on"),
    ):
        Migrator(tmp_path / "source", tmp_path / "archive")
    with pytest.raises(ValueError, match="bundle must be one of 'tar', 'none', got 'zip'"):
        Migrator(tmp_path / "source", tmp_path / "archive", bundle="zip")


# -- beside a writer -------------------------------------------------------------------------


def test_keep_source_archives_once_and_again_when_re_marked(tmp_path):
    source, archive = tmp_path / "source", tmp_path / "archive"
    expected = make_run(source, steps=range(2))
    with Migrator(source, archive, delete_source=False) as migrator:
        assert len(migrator.run_once()) == 4
        assert migrator.run_once() == []
    assert tree(source) == expected
    changed = hds_path(source, step=0, file="phy", ext="nc")
    changed.write_bytes(b"rewritten by the model")
    mark_complete(source, step=0, file="phy")
    with Migrator(source, archive, delete_source=False) as migrator:
        assert [(m.step, m.file) for m in migrator.run_once()] == [(0, "phy")]
    assert sole_shas(archive) == tree(source)


def test_stop_rolls_back_the_set_being_copied(tmp_path):
    source, archive = tmp_path / "source", tmp_path / "archive"
    expected = make_run(source, steps=range(2), size=400_000)

    def stop_mid_copy(event: MigrationEvent) -> None:
        if event.phase is Phase.COPY and event.done > 100_000:
            migrator.stop()

    with Migrator(source, archive, chunk_size="16KiB", progress=stop_mid_copy) as migrator:
        assert migrator.run_once() == []
        assert migrator.stopping
        assert [r.state for r in migrator.records()] == [State.STARTED]
    assert tree(source) == expected
    assert [p for p in archive.rglob("*") if p.is_file()] == []  # the partial tar is gone
    with Migrator(source, archive) as migrator:
        assert len(migrator.run_once()) == 4
    assert sole_shas(archive) == expected


def test_watch_migrates_beside_a_writer_until_its_limit(tmp_path):
    source, archive = tmp_path / "source", tmp_path / "archive"
    source.mkdir()
    written: dict[str, str] = {}
    pending: list[int] = []

    def model() -> None:
        for step in range(8):
            written.update(make_run(source, steps=range(step, step + 1), seed=step))
            time.sleep(0.1)  # a model step: long enough for the migrator on a busy CI box

    def watch_backlog(event: MigrationEvent) -> None:
        if event.phase is Phase.DONE:
            pending.append(len(list(closed_sets(source))))

    writer = threading.Thread(target=model)
    writer.start()
    with Migrator(source, archive, progress=watch_backlog) as migrator:
        archived = migrator.watch(interval=0.02, stop_after=16)
    writer.join()
    assert len(archived) == 16
    assert sole_shas(archive) == written
    assert tree(source) == {}
    assert len(pending) == 16
    assert max(pending) < 8  # it kept up: the backlog of closed sets stayed short


def test_watch_refuses_a_non_positive_interval(tmp_path):
    (tmp_path / "source").mkdir()
    with (
        Migrator(tmp_path / "source", tmp_path / "archive") as migrator,
        pytest.raises(ValueError, match="interval must be > 0 seconds"),
    ):
        migrator.watch(interval=0)


# -- the command line --------------------------------------------------------------------------


def test_cli_migrate_and_restore(tmp_path, capsys):
    source, archive, back = tmp_path / "source", tmp_path / "archive", tmp_path / "back"
    expected = make_run(source, steps=range(2))
    assert cli(["migrate", str(source), str(archive), "--once", "--max-sets", "3"]) == 0
    assert "archived 3 sets (12 files" in capsys.readouterr().out
    assert cli(["migrate", str(source), str(archive), "--bundle", "tar"]) == 0
    assert "archived 1 sets (4 files" in capsys.readouterr().out
    assert cli(["restore", str(archive), str(back), "--step", "1"]) == 0
    assert "restored 2 sets (8 files" in capsys.readouterr().out
    assert tree(back) == {p: s for p, s in expected.items() if p.startswith("000001/")}


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert cli(["migrate", str(tmp_path / "nowhere"), str(tmp_path / "archive")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"nearline: error: source {tmp_path / 'nowhere'} is not a folder")
    assert cli(["restore", str(tmp_path), str(tmp_path / "back"), "--file", "dyn"]) == 2
    assert "no archived sets of file group 'dyn'" in capsys.readouterr().err
    option = ["--storage-option", "nonsense"]
    assert cli(["restore", str(tmp_path), str(tmp_path / "back"), *option]) == 2
    assert "--storage-option takes KEY=VALUE, got 'nonsense'" in capsys.readouterr().err


# -- the journal's lifecycle -------------------------------------------------------------------

# the lifecycle the journal documents: which state each state may become
LIFECYCLE = {
    None: {State.STARTED},
    State.STARTED: {State.STARTED, State.COPIED, State.FAILED},
    State.COPIED: {State.STARTED, State.VERIFIED, State.FAILED},
    State.VERIFIED: {State.DONE, State.FAILED},
    State.DONE: {State.STARTED},
    State.FAILED: {State.STARTED},
}
SETS = [(0, "dyn"), (0, "phy"), (7, "dyn")]


def a_manifest(step: int, file: str, size: int) -> Manifest:
    entry = Entry(f"{file}/{file}.{step:06d}.00000.nc", size, "0" * 64, 1, 0o644, "x.tar", 512)
    return Manifest(step, file, f"{step:06d}", BundleKind.TAR, (entry,), (("x.tar", 10240),))


class JournalLifecycle(RuleBasedStateMachine):
    """Random transitions and restarts (close, reopen: what a kill -9 leaves) against a model."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="nearline-journal-"))
        self.journal = Journal(self.folder)
        self.states: dict[tuple[int, str], State] = {}
        self.manifests: dict[tuple[int, str], Manifest | None] = {}

    @rule(key=st.sampled_from(SETS), to=st.sampled_from(list(State)), size=st.integers(0, 10**12))
    def move(self, key: tuple[int, str], to: State, size: int) -> None:
        step, file = key
        allowed = to in LIFECYCLE[self.states.get(key)]
        manifest = a_manifest(step, file, size)
        calls = {
            State.STARTED: lambda: self.journal.begin(
                step, file, folder=f"{step:06d}", fingerprint="f", bundle=BundleKind.TAR
            ),
            State.COPIED: lambda: self.journal.copied(step, file, manifest),
            State.VERIFIED: lambda: self.journal.verified(step, file),
            State.DONE: lambda: self.journal.done(step, file),
            State.FAILED: lambda: self.journal.failed(step, file, "disk on fire"),
        }
        if not allowed:
            with pytest.raises(MigrationError, match="cannot become"):
                calls[to]()
            return
        calls[to]()
        self.states[key] = to
        if to is State.STARTED:
            self.manifests[key] = None
        elif to is State.COPIED:
            self.manifests[key] = manifest

    @rule()
    def restart(self) -> None:
        self.journal.close()
        self.journal = Journal(self.folder)

    @invariant()
    def journal_matches_the_model(self) -> None:
        records = self.journal.records()
        assert {(r.step, r.file): r.state for r in records} == self.states
        assert {(r.step, r.file): r.manifest for r in records} == self.manifests
        unfinished = {(r.step, r.file) for r in self.journal.records(*UNFINISHED)}
        assert unfinished == {k for k, s in self.states.items() if s in UNFINISHED}
        assert {(r.step, r.file): r.error for r in records} == {
            key: "disk on fire" if state is State.FAILED else None
            for key, state in self.states.items()
        }

    def teardown(self) -> None:
        self.journal.close()
        shutil.rmtree(self.folder)


TestJournalLifecycle = JournalLifecycle.TestCase
TestJournalLifecycle.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)

"""Hostile zips: every trick is refused, naming the member, and nothing lands outside the
folder the package is unpacked into."""

from __future__ import annotations

import io
import os
import stat
import zipfile
from pathlib import Path

import pytest

from nearline.algorithms import PackageLimits, unpack
from nearline.errors import ManifestError, PackageError, TooLarge

MANIFEST = b"id: x\n"


def make_zip(*members: tuple[str | zipfile.ZipInfo, bytes], method=zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return buffer.getvalue()


def special(name: str, kind: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3  # unix: the high 16 bits of external_attr are the mode
    info.external_attr = (kind | 0o777) << 16
    return info


def everything_under(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """An empty folder with a sibling marker, to see that nothing lands beside it."""
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


@pytest.mark.parametrize(
    ("member", "words"),
    [
        ("../evil.txt", "climbs out of the package"),
        ("pkg/../../evil.txt", "climbs out of the package"),
        ("/tmp/nearline-evil-absolute.txt", "absolute path"),
        ("..\\evil.txt", "backslash"),
    ],
)
def test_paths_leaving_the_package_are_refused(scratch, member, words):
    data = make_zip(("algorithm.yaml", MANIFEST), (member, b"evil"))
    with pytest.raises(PackageError, match=words) as caught:
        unpack(data, scratch / "package")
    assert repr(member) in str(caught.value) or member in str(caught.value)
    assert everything_under(scratch.parent) == {
        "work",
        "work/package",
        "work/package/algorithm.yaml",
    }
    assert not Path("/tmp/nearline-evil-absolute.txt").exists()


@pytest.mark.parametrize(
    ("kind", "words"),
    [(stat.S_IFLNK, "symbolic link"), (stat.S_IFCHR, "device file"), (stat.S_IFIFO, "pipe")],
)
def test_links_devices_and_pipes_are_refused(scratch, kind, words):
    data = make_zip(("algorithm.yaml", MANIFEST), (special("passwd", kind), b"/etc/passwd"))
    with pytest.raises(PackageError, match=f"member 'passwd' is a .*{words}"):
        unpack(data, scratch / "package")
    assert not (scratch / "package" / "passwd").exists()


def test_a_zip_bomb_is_refused_by_its_declared_sizes(scratch):
    zeros = b"\0" * (20 * 1024**2)
    data = make_zip(("algorithm.yaml", MANIFEST), ("a.bin", zeros), ("b.bin", zeros))
    assert len(data) < 100_000  # 40 MiB in under 100 kB
    limits = PackageLimits(max_total=30 * 1024**2, max_member=25 * 1024**2)
    with pytest.raises(PackageError, match=r"larger than 30\.0 MiB uncompressed.*'b.bin'"):
        unpack(data, scratch / "package", limits=limits)
    assert not (scratch / "package" / "b.bin").exists()


def test_headers_that_understate_a_member_do_not_fool_the_count(scratch):
    """A member whose central-directory size says 10 bytes inflates to 4 MiB: the limit is
    counted on what comes out, so the header's lie does not help."""
    data = bytearray(make_zip(("algorithm.yaml", MANIFEST), ("a.bin", b"\0" * (4 * 1024**2))))
    central = data.rfind(b"PK\x01\x02")  # the last member's central directory entry
    data[central + 24 : central + 28] = (10).to_bytes(4, "little")
    limits = PackageLimits(max_total=1024**2, max_member=1024**2)
    with pytest.raises(PackageError, match=r"a\.bin"):
        unpack(bytes(data), scratch / "package", limits=limits)
    assert (scratch / "package" / "a.bin").stat().st_size <= 1024**2


def test_one_oversized_member_is_named(scratch):
    data = make_zip(("algorithm.yaml", MANIFEST), ("big/data.nc", b"x" * 3000))
    with pytest.raises(PackageError, match=r"member 'big/data.nc' is larger than 2.0 KiB"):
        unpack(data, scratch / "package", limits=PackageLimits(max_member=2048))


def test_too_many_members_are_refused_before_the_member_list_is_read(scratch):
    data = make_zip(("algorithm.yaml", MANIFEST), *((f"f{i}", b"") for i in range(12)))
    with pytest.raises(PackageError, match="13 members, over the limit of 10"):
        unpack(data, scratch / "package", limits=PackageLimits(max_entries=10))
    assert everything_under(scratch) == {"package"}


def test_an_upload_over_the_size_limit_is_too_large(scratch, tmp_path):
    data = make_zip(("algorithm.yaml", MANIFEST), ("a", os.urandom(5000)))
    with pytest.raises(TooLarge, match=r"over the limit of 4\.0 KiB") as caught:
        unpack(data, scratch / "one", limits=PackageLimits(max_upload=4096))
    assert caught.value.status == 413
    path = tmp_path / "package.zip"
    path.write_bytes(data)
    with pytest.raises(TooLarge):
        unpack(path, scratch / "two", limits=PackageLimits(max_upload=4096))


def test_other_broken_uploads(scratch):
    with pytest.raises(PackageError, match="not a zip file"):
        unpack(b"#!/bin/sh\nrm -rf /\n", scratch / "a")
    with pytest.warns(UserWarning, match="Duplicate name"):
        twice = make_zip(("algorithm.yaml", MANIFEST), ("x", b"1"), ("x", b"2"))
    with pytest.raises(PackageError, match="appears twice"):
        unpack(twice, scratch / "b")
    with pytest.raises(PackageError, match="both a file and a folder"):
        unpack(make_zip(("algorithm.yaml", MANIFEST), ("x", b"1"), ("x/y", b"2")), scratch / "c")
    with pytest.raises(PackageError, match="no package at"):
        unpack(scratch / "nowhere.zip", scratch / "d")


def test_no_manifest_is_a_manifest_error(scratch):
    with pytest.raises(ManifestError, match=r"algorithm\.yaml is missing") as caught:
        unpack(make_zip(("main.py", b"print(1)")), scratch / "package")
    assert caught.value.status == 400
    with pytest.raises(ManifestError, match="missing"):  # two top folders: which one?
        unpack(make_zip(("a/algorithm.yaml", MANIFEST), ("b/x", b"")), scratch / "other")


def test_a_single_top_folder_is_the_package_and_modes_are_kept_safely(scratch):
    run = zipfile.ZipInfo("smooth/run.sh")
    run.create_system = 3
    run.external_attr = (stat.S_IFREG | 0o4755) << 16  # setuid is dropped
    data = make_zip(
        ("smooth/algorithm.yaml", MANIFEST),
        (run, b"#!/bin/sh\n"),
        ("smooth/lib/", b""),
        ("__MACOSX/._x", b""),
    )
    root = unpack(data, scratch / "package")
    assert root == scratch / "package" / "smooth"
    assert stat.S_IMODE((root / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((root / "algorithm.yaml").stat().st_mode) == 0o644
    assert (root / "lib").is_dir()
    assert not (scratch / "package" / "__MACOSX").exists()


def test_a_folder_is_copied_under_the_same_rules(tmp_path, scratch):
    source = tmp_path / "source"
    (source / "tests").mkdir(parents=True)
    (source / "algorithm.yaml").write_bytes(MANIFEST)
    (source / "tests" / "a.txt").write_text("3\n")
    (source / "__pycache__").mkdir()
    (source / "__pycache__" / "x.pyc").write_bytes(b"")
    root = unpack(source, scratch / "copy")
    assert everything_under(root) == {"algorithm.yaml", "tests", "tests/a.txt"}
    (source / "link").symlink_to("/etc/passwd")
    with pytest.raises(PackageError, match="link is a symbolic link"):
        unpack(source, scratch / "again")
    (source / "link").unlink()
    (source / "big").write_bytes(b"x" * 3000)
    with pytest.raises(PackageError, match=r"member 'big' is larger than"):
        unpack(source, scratch / "third", limits=PackageLimits(max_member=2048))

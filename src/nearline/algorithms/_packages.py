"""Unpacking an uploaded package (a zip, as bytes or a file, or a folder) as if it were
hostile: nothing is written outside the folder it is unpacked into, and nothing unbounded.

Refused, each with a :class:`PackageError` naming the member: paths with ``..`` or starting
at ``/``, symbolic links, device files and pipes, encrypted members, a member larger than
``max_member`` or members adding up to more than ``max_total`` once uncompressed (counted
while inflating, not trusted from the headers: a zip bomb stops at the limit), more than
``max_entries`` members (read from the zip's end record before the member list is parsed).
An upload larger than ``max_upload`` is :class:`TooLarge` (HTTP 413).
"""

from __future__ import annotations

import io
import os
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from nearline.algorithms._base import MANIFEST
from nearline.errors import ManifestError, PackageError, TooLarge
from nearline.units import format_size

CHUNK = 1024**2
SKIPPED_FOLDERS = {".git", "__pycache__", "__MACOSX"}


@dataclass(frozen=True)
class PackageLimits:
    """How large a package may be: a zip bomb or a stray data set is refused while unpacking.

    Parameters
    ----------
    max_upload
        Bytes of the package as uploaded (the zip, or the folder's files).
    max_entries
        Files and folders in it.
    max_total
        Bytes of all its files unpacked.
    max_member
        Bytes of any one file unpacked.
    """

    max_upload: int = 512 * 1024**2
    max_entries: int = 10_000
    max_total: int = 2 * 1024**3
    max_member: int = 1024**3


def unpack(source: Path | bytes, into: Path, *, limits: PackageLimits = PackageLimits()) -> Path:
    """Unpack a package into a new folder, within limits.

    Parameters
    ----------
    source
        A package folder (copied), a zip file, or a zip's bytes.
    into
        The folder to create; it must not exist.
    limits
        How large the package may be.

    Returns
    -------
    pathlib.Path
        The package's root: ``into``, or its single top folder when the manifest is there.

    Raises
    ------
    TooLarge
        The package is over a limit.
    PackageError
        No package at ``source``, or an unsafe or unreadable archive.
    ManifestError
        No ``algorithm.yaml`` at the top.
    FileExistsError
        ``into`` exists.
    """
    into.mkdir(parents=True)
    if isinstance(source, bytes | bytearray):
        if len(source) > limits.max_upload:
            raise TooLarge(_too_large(len(source), limits))
        _unzip(io.BytesIO(source), into, limits)
    elif Path(source).is_dir():
        _copy_folder(Path(source), into, limits)
    else:
        path = Path(source)
        if not path.is_file():
            raise PackageError(f"no package at {path}: give a folder or a .zip file")
        if path.stat().st_size > limits.max_upload:
            raise TooLarge(_too_large(path.stat().st_size, limits))
        with open(path, "rb") as handle:
            _unzip(handle, into, limits)
    return package_root(into)


def package_root(folder: Path) -> Path:
    """Where ``algorithm.yaml`` is: ``folder`` itself or its one top folder."""
    if (folder / MANIFEST).is_file():
        return folder
    tops = [entry for entry in folder.iterdir() if entry.name not in SKIPPED_FOLDERS]
    if len(tops) == 1 and tops[0].is_dir() and (tops[0] / MANIFEST).is_file():
        return tops[0]
    raise ManifestError(
        f"{MANIFEST} is missing: a package holds {MANIFEST} at its top (or in its single top "
        "folder), next to the program it describes"
    )


def _too_large(size: int, limits: PackageLimits) -> str:
    return (
        f"the package is {format_size(size)}, over the limit of "
        f"{format_size(limits.max_upload)}; leave large test data out of it"
    )


# -- zip ------------------------------------------------------------------------------------
def _unzip(handle: BinaryIO, into: Path, limits: PackageLimits) -> None:
    count = _entry_count(handle)
    if count is None:
        raise PackageError("the package is not a zip file (application/zip) nor a folder")
    if count > limits.max_entries:
        raise PackageError(f"the package has {count:,} members, over the limit of "
                           f"{limits.max_entries:,}")  # fmt: skip
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise PackageError(f"the package is not a readable zip file: {error}") from None
    with archive:
        members = archive.infolist()
        if len(members) > limits.max_entries:  # the end record may understate
            raise PackageError(f"the package has more than {limits.max_entries:,} members")
        total = 0
        for info in members:
            parts = _member_parts(info)
            if not parts:
                continue
            if info.is_dir():
                _make_folder(into, parts, info.filename)
                continue
            total = _extract(archive, info, into, parts, limits, total)


def _member_parts(info: zipfile.ZipInfo) -> tuple[str, ...]:
    name = info.filename
    if "\x00" in name or "\\" in name:
        raise PackageError(f"member {name!r}: its name holds a backslash or a NUL; use / paths")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise PackageError(f"member {name!r} has an absolute path; paths must be relative")
    parts = tuple(part for part in PurePosixPath(name).parts if part not in ("", "."))
    if ".." in parts:
        raise PackageError(f"member {name!r} climbs out of the package with '..'")
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        raise PackageError(f"member {name!r} is a symbolic link; packages hold files only")
    if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
        raise PackageError(f"member {name!r} is a device file, pipe or socket; not allowed")
    if info.flag_bits & 0x1:
        raise PackageError(f"member {name!r} is encrypted; upload it unencrypted")
    if parts and parts[0] in SKIPPED_FOLDERS:
        return ()
    return parts


def _make_folder(into: Path, parts: tuple[str, ...], name: str) -> Path:
    folder = into
    for part in parts:
        folder = folder / part
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise PackageError(f"member {name!r}: {part!r} is both a file and a folder")
        folder.mkdir(exist_ok=True)
    return folder


def _extract(
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    into: Path,
    parts: tuple[str, ...],
    limits: PackageLimits,
    total: int,
) -> int:
    name = info.filename
    if info.file_size > limits.max_member:
        raise PackageError(_member_too_large(name, limits))
    if total + info.file_size > limits.max_total:
        raise PackageError(_total_too_large(name, limits))
    folder = _make_folder(into, parts[:-1], name)
    executable = bool((info.external_attr >> 16) & 0o111)
    written = 0
    try:
        with archive.open(info) as source, _create(folder / parts[-1], name, executable) as sink:
            while chunk := source.read(CHUNK):
                written += len(chunk)
                if written > limits.max_member:
                    raise PackageError(_member_too_large(name, limits))
                if total + written > limits.max_total:
                    raise PackageError(_total_too_large(name, limits))
                sink.write(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as error:
        raise PackageError(f"member {name!r} cannot be read: {error}") from None
    return total + written


def _member_too_large(name: str, limits: PackageLimits) -> str:
    return f"member {name!r} is larger than {format_size(limits.max_member)} uncompressed"


def _total_too_large(name: str, limits: PackageLimits) -> str:
    return (
        f"the package is larger than {format_size(limits.max_total)} uncompressed "
        f"(reached at member {name!r}); a zip bomb, or data that belongs in the archive"
    )


def _create(path: Path, name: str, executable: bool) -> BinaryIO:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o755 if executable else 0o644)
    except FileExistsError:
        raise PackageError(f"member {name!r} appears twice in the package") from None
    except IsADirectoryError:
        raise PackageError(f"member {name!r} is both a file and a folder") from None
    return os.fdopen(fd, "wb")


def _entry_count(handle: BinaryIO) -> int | None:
    """The member count from the zip's end record (None: not a zip), before zipfile builds a
    list of every member, which a hostile upload could make huge."""
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    tail_size = min(size, 22 + 65535)
    handle.seek(size - tail_size)
    tail = handle.read(tail_size)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        return None
    count = struct.unpack("<H", tail[at + 10 : at + 12])[0]
    locator = at - 20
    if count == 0xFFFF and locator >= 0 and tail[locator : locator + 4] == b"PK\x06\x07":
        (offset,) = struct.unpack("<Q", tail[locator + 8 : locator + 16])
        if offset + 40 <= size:
            handle.seek(offset)
            record = handle.read(40)
            if record[:4] == b"PK\x06\x06":
                count = struct.unpack("<Q", record[32:40])[0]
    handle.seek(0)
    return count


# -- folder ---------------------------------------------------------------------------------
def _copy_folder(source: Path, into: Path, limits: PackageLimits) -> None:
    """Copy a package folder under the same rules as a zip (no links, bounded)."""
    count, total = 0, 0
    for folder, subfolders, files in os.walk(source):
        subfolders[:] = sorted(name for name in subfolders if name not in SKIPPED_FOLDERS)
        here = Path(folder)
        target = into / here.relative_to(source)
        target.mkdir(exist_ok=True)
        for name in sorted(files) + [name for name in subfolders if (here / name).is_symlink()]:
            path = here / name
            shown = path.relative_to(source).as_posix()
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                raise PackageError(f"{shown} is a symbolic link; packages hold files only")
            if not stat.S_ISREG(info.st_mode):
                raise PackageError(f"{shown} is a device file, pipe or socket; not allowed")
            count += 1
            total += info.st_size
            if count > limits.max_entries:
                raise PackageError(f"the package has more than {limits.max_entries:,} files")
            if info.st_size > limits.max_member:
                raise PackageError(_member_too_large(shown, limits))
            if total > limits.max_total:
                raise PackageError(_total_too_large(shown, limits))
            with (
                open(path, "rb") as reader,
                _create(target / name, shown, bool(info.st_mode & 0o111)) as writer,
            ):
                while chunk := reader.read(CHUNK):
                    writer.write(chunk)

"""Bringing archived sets back: every byte checked against its bundle's manifest.

Files return to the layout they were written in, below a destination root:
``DEST/<step>/<file>/<file>.<step>.<rank>.<ext>`` and ``DEST/<step>/<file>.<step>.<ext>``,
with their modification times. Only sets with a manifest are seen: a manifest is written
once its bundle was read back and verified, so a half-written bundle is never restored.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from nearline.errors import ArchiveError, LayoutError, ObjectStoreError, RestoreError
from nearline.layout._events import MigrationEvent, Phase
from nearline.layout._manifest import MANIFEST_SUFFIX, Entry, Manifest, step_folder
from nearline.layout._paths import STEP_WIDTH, check_name, is_plain_path
from nearline.layout._pieces import Pieces
from nearline.layout._readback import read_entry, verify
from nearline.layout._tier_base import ArchiveTier, archive_failure, is_temporary
from nearline.layout._tier_registry import open_tier
from nearline.units import parse_size

Progress = Callable[[MigrationEvent], None]


def manifests(
    tier: ArchiveTier, *, step: int | None = None, file: str | None = None
) -> list[Manifest]:
    """The manifests of every verified bundle on ``tier`` (of ``step`` and ``file``, if
    given), oldest step first."""
    if file is not None:
        check_name(file)
    found = []
    for folder in _step_folders(tier, ""):
        name = folder.rpartition("/")[2]
        if step is not None and name != step_folder(step):
            continue
        for entry in tier.list(folder):
            if not entry.endswith(MANIFEST_SUFFIX) or is_temporary(entry):
                continue
            if file is not None and entry != f"{file}.{name}{MANIFEST_SUFFIX}":
                continue
            path = f"{folder}/{entry}"
            try:
                text = tier.read_bytes(path)
            except OSError as error:
                raise archive_failure(tier, path, error, "reading") from error
            found.append(Manifest.from_json(text, where=tier.describe(path)))
    return sorted(found, key=lambda m: (m.step, m.file))


def _step_folders(tier: ArchiveTier, folder: str) -> Iterator[str]:
    """Step folders on the archive, looking through step-block folders as the source has."""
    for name in tier.list(folder):
        if name.isdigit():
            path = f"{folder}/{name}" if folder else name
            if len(name) == STEP_WIDTH:
                yield path
            else:
                yield from _step_folders(tier, path)


def _select(tier: ArchiveTier, step: int | None, file: str | None, what: str) -> list[Manifest]:
    found = manifests(tier, step=step, file=file)
    if not found:
        wanted = " ".join(
            part
            for part in (
                "" if step is None else f"of step {step}",
                "" if file is None else f"of file group {file!r}",
            )
            if part
        )
        raise ArchiveError(
            f"no archived sets {wanted or 'at all'} in {tier.describe()} to {what}; check the "
            "archive URL, and --step/--file against the folders and manifests it holds"
        )
    return found


def verify_archive(
    archive: str | Path | ArchiveTier,
    *,
    step: int | None = None,
    file: str | None = None,
    chunk_size: str | int = "8MiB",
    progress: Progress | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> list[Manifest]:
    """Read archived bundles back and check every member's SHA-256 against its manifest;
    raise :class:`ArchiveError` naming the set and the file at the first mismatch."""
    tier = open_tier(archive, storage_options=storage_options)
    chunk = parse_size(chunk_size, what="chunk_size")
    report = progress or (lambda event: None)
    checked = _select(tier, step, file, "verify")
    with Pieces(*tier.pieces(chunk)) as pieces:
        for manifest in checked:
            pieces.on_bytes = _counter(report, manifest, Phase.VERIFY)
            verify(tier, manifest, pieces)
    return checked


def _counter(report: Progress, manifest: Manifest, phase: Phase) -> Callable[[int], None]:
    """An ``on_bytes`` callback that reports the running total for one set."""
    done = 0

    def count(nbytes: int) -> None:
        nonlocal done
        done += nbytes
        report(MigrationEvent(manifest.step, manifest.file, phase, done, manifest.nbytes))

    return count


def restore(
    archive: str | Path | ArchiveTier,
    dest: str | Path,
    *,
    step: int | None = None,
    file: str | None = None,
    chunk_size: str | int = "8MiB",
    progress: Progress | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> list[Manifest]:
    """Bring the archived sets (of ``step`` and ``file``, if given) back below ``dest``,
    checking each file's SHA-256 before it takes its name. Returns their manifests.

    A bad set (a corrupt or missing bundle) does not stop the others: every good set is
    restored first, then :class:`RestoreError` names each bad one. A bad set's files up to
    its first bad one are kept (each passed its check); a failing destination (a full disk)
    stops at once, as every later set would fail the same way.
    """
    tier = open_tier(archive, storage_options=storage_options)
    chunk = parse_size(chunk_size, what="chunk_size")
    report = progress or (lambda event: None)
    root = Path(dest)
    chosen = _select(tier, step, file, "restore")
    restored: list[Manifest] = []
    failed: list[tuple[Manifest, ArchiveError]] = []
    with Pieces(*tier.pieces(chunk)) as pieces:
        for manifest in chosen:
            pieces.on_bytes = count = _counter(report, manifest, Phase.RESTORE)
            count(0)
            try:
                for entry in manifest.entries:
                    target = _inside(root, manifest, f"{manifest.folder}/{entry.path}")
                    _restore_entry(tier, manifest, entry, pieces, target, keep_stat=True)
            except ObjectStoreError:
                raise  # the store refused or went away: every later set would fail the same
            except ArchiveError as error:
                failed.append((manifest, error))
            else:
                restored.append(manifest)
    if failed:
        raise RestoreError(
            _not_restored(failed, len(chosen), root), restored=restored, failed=failed
        )
    return restored


def _not_restored(failed: list[tuple[Manifest, ArchiveError]], chosen: int, root: Path) -> str:
    """One line naming every set a restore could not bring back, each with its own error."""
    reasons = []
    for number, (manifest, error) in enumerate(failed, start=1):
        text = str(error)
        if not text.startswith(manifest.label()):
            text = f"{manifest.label()}: {text}"
        reasons.append(f"[{number}] {text}")
    return (
        f"{len(failed)} of {chosen} archived sets could not be restored (the other "
        f"{chosen - len(failed)} were, into {root}): {'; '.join(reasons)}"
    )


def read_manifest(
    archive: str | Path | ArchiveTier,
    name: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> Manifest:
    """The manifest called ``name`` (as :attr:`Manifest.name` gives it) on ``archive``."""
    tier = open_tier(archive, storage_options=storage_options)
    try:
        text = tier.read_bytes(name)
    except FileNotFoundError:
        raise ArchiveError(
            f"{tier.describe(name)} does not exist: the set was never archived there, or its "
            "bundle was removed"
        ) from None
    except OSError as error:
        raise archive_failure(tier, name, error, "reading") from error
    return Manifest.from_json(text, where=tier.describe(name))


def restore_member(
    archive: str | Path | ArchiveTier,
    manifest: str,
    member: str,
    target: str | Path,
    *,
    chunk_size: str | int = "8MiB",
    storage_options: Mapping[str, Any] | None = None,
) -> Path:
    """Bring one file of an archived set back to ``target``: ``member`` is its path in the
    manifest called ``manifest``. Its SHA-256 is checked before it takes its name."""
    tier = open_tier(archive, storage_options=storage_options)
    found = read_manifest(tier, manifest)
    entry = next((e for e in found.entries if e.path == member), None)
    if entry is None:
        raise ArchiveError(f"{found.label()} holds no file {member!r}; its manifest lists others")
    target = Path(target)
    with Pieces(*tier.pieces(parse_size(chunk_size, what="chunk_size"))) as pieces:
        _restore_entry(tier, found, entry, pieces, target, keep_stat=False)
    return target


def _restore_entry(
    tier: ArchiveTier,
    manifest: Manifest,
    entry: Entry,
    pieces: Pieces,
    target: Path,
    *,
    keep_stat: bool,
) -> None:
    """``entry``'s bytes to ``target``, under a hidden name until they are whole and their
    SHA-256 matched; ``keep_stat``: with the mode and modification time it was archived with."""
    partial = target.with_name(f".{target.name}.partial")
    fd = _created(partial, target)
    try:
        try:
            read_entry(tier, manifest, entry, pieces, _writer(fd, target))
            if keep_stat and entry.mode:
                os.fchmod(fd, entry.mode)
        finally:
            os.close(fd)
        if keep_stat:
            os.utime(partial, ns=(entry.mtime_ns, entry.mtime_ns))
        os.replace(partial, target)
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise


def _created(partial: Path, target: Path) -> int:
    """``partial`` opened for writing, its folders made; a destination that cannot be
    written (read-only, not a folder, no permission) said in one line naming it."""
    try:
        partial.parent.mkdir(parents=True, exist_ok=True)
        return os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    except OSError as error:
        raise LayoutError(
            f"cannot restore {target}: {error.strerror or error} ({error.filename}); "
            "restore into a folder you can write"
        ) from error


def _inside(root: Path, manifest: Manifest, relative: str) -> Path:
    """``root / relative``, refusing a path a tampered manifest could aim outside ``root``."""
    if not is_plain_path(relative):
        raise ArchiveError(
            f"{manifest.label()}: its manifest {manifest.name} names {relative!r}, which is "
            "not a path below the restore folder; the manifest is damaged or was tampered with"
        )
    return root.joinpath(*relative.split("/"))


def _writer(fd: int, target: Path) -> Callable[[memoryview, int], None]:
    """``os.pwrite`` of a piece at its offset, a failure reported as the destination's."""

    def write_at(view: memoryview, offset: int) -> None:
        try:
            while view:
                written = os.pwrite(fd, view, offset)
                view, offset = view[written:], offset + written
        except OSError as error:
            raise LayoutError(
                f"cannot restore {target}: {error}; free space there or restore elsewhere"
            ) from error

    return write_at

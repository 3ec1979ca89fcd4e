"""Moving closed file sets to the archive tier, as Hierarchical Data Structuring's companion
script did beside its model: bundle each set as soon as it is marked complete, copy it off,
verify the copy by reading it back, record it, and only then remove the source (its marker
last).

Every step is journalled (see :mod:`nearline.layout._journal`), so a migrator killed at any
point and started again finishes each set exactly once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nearline.closing import Closing
from nearline.errors import (
    ArchiveError,
    ConfigError,
    MigrationError,
    NearlineError,
    ObjectStoreError,
)
from nearline.layout._bundle import write_bundle
from nearline.layout._events import MigrationEvent, Phase
from nearline.layout._journal import UNFINISHED, Journal, Record, State
from nearline.layout._manifest import BundleKind, Manifest, parse_bundle
from nearline.layout._markers import MARKER, FileSet, closed_sets, read_marker
from nearline.layout._pieces import Pieces
from nearline.layout._pump import Interrupted
from nearline.layout._readback import verify_copy
from nearline.layout._sources import SourceFile, checked_files, describe, recheck, remove_set
from nearline.layout._tier_base import ArchiveTier, archive_failure
from nearline.layout._tier_registry import open_tier
from nearline.units import parse_size

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MigrationSettings:
    """How sets are bundled, whether their source is removed, and the copy buffer size."""

    bundle: BundleKind = BundleKind.TAR
    delete_source: bool = True
    chunk_size: int = 8 * 1024**2

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MigrationSettings:
        unknown = set(data) - {"bundle", "delete_source", "chunk_size"}
        if unknown:
            raise ConfigError(
                f"migration settings take 'bundle', 'delete_source' and 'chunk_size', "
                f"not {sorted(unknown)}"
            )
        chunk = parse_size(data.get("chunk_size", cls.chunk_size), what="chunk_size")
        if chunk < 4096:
            raise ConfigError(f"chunk_size must be at least 4KiB, got {data['chunk_size']!r}")
        return cls(
            bundle=parse_bundle(data.get("bundle", cls.bundle)),
            delete_source=bool(data.get("delete_source", cls.delete_source)),
            chunk_size=chunk,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "bundle": self.bundle.value,
            "delete_source": self.delete_source,
            "chunk_size": self.chunk_size,
        }


def fingerprint(fileset: FileSet) -> str:
    """Identifies one marking of a set: a set re-marked with other members is a new one."""
    members = sorted((m.path, m.size, m.mtime_ns) for m in fileset.members)
    return hashlib.sha256(json.dumps(members).encode()).hexdigest()[:32]


class Migrator(Closing):
    """Migrates the closed sets below ``source`` to ``archive`` (a folder or an fsspec URL).

    Holds the source's journal (and its lock) until :meth:`close`. :meth:`run_once` archives
    what is closed now; :meth:`watch` keeps doing so beside a writer until :meth:`stop`.
    ``progress`` is called with a :class:`MigrationEvent` as bytes move, from the caller's
    thread or from the helper thread that verifies a set while the next one is copied.
    """

    def __init__(
        self,
        source: str | Path,
        archive: str | Path | ArchiveTier,
        *,
        bundle: str | BundleKind = "tar",
        delete_source: bool = True,
        chunk_size: str | int = "8MiB",
        progress: Callable[[MigrationEvent], None] | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.source = Path(source)
        if not self.source.is_dir():
            raise MigrationError(
                f"source {self.source} is not a folder; name the root a writer writes its "
                "steps into (the folder holding 000000/, 000001/, ...)"
            )
        self.settings = MigrationSettings.from_dict(
            {"bundle": bundle, "delete_source": delete_source, "chunk_size": chunk_size}
        )
        self.progress = progress or (lambda event: None)
        self._journal = Journal(self.source)
        try:
            self.tier = open_tier(archive, storage_options=storage_options)
        except BaseException:
            self._journal.close()
            raise
        self._stopping = False
        self._readback = Pieces(*self.tier.pieces(self.settings.chunk_size))

    # -- running -------------------------------------------------------------------------

    def run_once(self, *, limit: int | None = None) -> list[Manifest]:
        """Finish any set a previous run left unfinished, then migrate every closed set not
        yet archived (at most ``limit`` in all). Returns the manifests of the sets archived;
        raises :class:`MigrationError` at the first set that fails, keeping its source.

        While one set is read back, recorded and removed (in a helper thread), the next is
        already being copied: the two phases use different resources and overlap.
        """
        archived: list[Manifest] = []
        finishing: Future[Manifest] | None = None

        def full() -> bool:
            busy = len(archived) + (finishing is not None)
            return self._stopping or (limit is not None and busy >= limit)

        def settle() -> None:
            nonlocal finishing
            if finishing is not None:
                future, finishing = finishing, None
                archived.append(future.result())  # raises what the finish raised

        for record in self._journal.records(*UNFINISHED):
            if full():
                return archived
            manifest = self._resume(record)
            if manifest is not None:
                archived.append(manifest)
        with ThreadPoolExecutor(1, thread_name_prefix="nearline-finish") as finisher:
            for fileset in closed_sets(self.source):
                if full():
                    break
                if not self._wanted(fileset):
                    continue
                copied = self._copy(fileset)
                settle()
                if copied is not None:
                    finishing = finisher.submit(self._finish, fileset, copied, verified=False)
            settle()
        return archived

    def watch(
        self,
        *,
        interval: float = 2.0,
        stop_after: int | None = None,
        until: Callable[[], bool] | None = None,
    ) -> list[Manifest]:
        """Poll for newly closed sets every ``interval`` seconds and migrate them, until
        :meth:`stop` is called, ``stop_after`` sets were archived, or ``until()`` is true
        (then after one last pass, so that what the writer closed last is archived too)."""
        if interval <= 0:
            raise ConfigError(f"interval must be > 0 seconds, got {interval!r}")
        archived: list[Manifest] = []
        while not self._stopping:
            last = until is not None and until()
            left = None if stop_after is None else stop_after - len(archived)
            archived += self.run_once(limit=left)
            if last or (stop_after is not None and len(archived) >= stop_after):
                break
            deadline = time.monotonic() + interval
            while not self._stopping and time.monotonic() < deadline:
                if until is not None and until():
                    break
                time.sleep(min(0.05, interval))
        return archived

    def stop(self) -> None:
        """Ask :meth:`run_once`/:meth:`watch` to return: a set being copied is rolled back
        (its partial bundle removed); one being verified or removed is finished. Safe to
        call from a signal handler or another thread."""
        self._stopping = True

    @property
    def stopping(self) -> bool:
        return self._stopping

    def records(self) -> list[Record]:
        """The journal: every set this source has seen and where it is."""
        return self._journal.records()

    # -- one set ---------------------------------------------------------------------------

    def _wanted(self, fileset: FileSet) -> bool:
        record = self._journal.get(fileset.step, fileset.file)
        if record is None or record.state is State.FAILED:
            return True
        if record.state is State.DONE and record.fingerprint != fingerprint(fileset):
            log.warning(
                "%s was marked again after it was archived: archiving it again", describe(fileset)
            )
            return True
        return False

    def _resume(self, record: Record) -> Manifest | None:
        step_dir = self.source / record.folder
        marker = step_dir / record.file / MARKER
        fileset = read_marker(marker, root=self.source) if marker.exists() else None
        if record.state is State.VERIFIED and record.manifest is not None:
            found = fileset or FileSet(self.source, record.step, record.file, (), step_dir)
            return self._finish(found, record.manifest, verified=True)
        if fileset is None:  # its marker is gone, yet its source was never removed by us
            message = (
                f"set (step {record.step}, file {record.file!r}) lost its marker {marker} "
                "before it was archived; re-mark it (mark_complete) to archive it"
            )
            log.warning(message)
            self._journal.failed(record.step, record.file, message)
            return None
        same = record.fingerprint == fingerprint(fileset)
        if record.state is State.COPIED and record.manifest is not None and same:
            try:
                return self._finish(fileset, record.manifest, verified=False)
            except ObjectStoreError:
                raise  # the store refused or went away: rewriting would fail the same way
            except ArchiveError as error:
                log.warning("%s: rewriting its bundle: %s", describe(fileset), error)
        return self._migrate(fileset)

    def _migrate(self, fileset: FileSet) -> Manifest | None:
        copied = self._copy(fileset)
        return None if copied is None else self._finish(fileset, copied, verified=False)

    def _copy(self, fileset: FileSet) -> Manifest | None:
        """Bundle ``fileset`` onto the archive; its manifest, not yet verified (None if a
        stop request rolled the copy back)."""
        step, file = fileset.step, fileset.file
        folder = fileset.step_dir.relative_to(self.source).as_posix()
        kind = self.settings.bundle
        self._journal.begin(
            step, file, folder=folder, fingerprint=fingerprint(fileset), bundle=kind
        )
        try:
            files = checked_files(fileset)
            total = sum(f.size for f in files)
            manifest = write_bundle(
                files,
                tier=self.tier,
                folder=folder,
                step=step,
                file=file,
                kind=self.settings.bundle,
                chunk_size=self.settings.chunk_size,
                on_bytes=self._counter(step, file, Phase.COPY, total),
                should_stop=lambda: self._stopping,
            )
            recheck(fileset, files)
        except Interrupted:
            log.info("%s: stopped while copying; its partial bundle was removed", describe(fileset))
            return None
        except NearlineError as error:
            self._journal.failed(step, file, str(error))
            raise
        self._journal.copied(step, file, manifest)
        return manifest

    def _finish(self, fileset: FileSet, manifest: Manifest, *, verified: bool) -> Manifest:
        """Verify ``manifest``'s bundle (unless already), record it, remove the source."""
        step, file, total = fileset.step, fileset.file, manifest.nbytes
        try:
            if not verified:
                self._readback.on_bytes = self._counter(step, file, Phase.VERIFY, total)
                sources = {entry.path: fileset.step_dir / entry.path for entry in manifest.entries}
                verify_copy(self.tier, manifest, sources, self._readback)
                try:
                    self.tier.write_bytes(manifest.name, manifest.to_json().encode())
                except OSError as error:
                    raise archive_failure(self.tier, manifest.name, error, "writing") from error
                self._journal.verified(step, file)
            if self.settings.delete_source:
                self.progress(MigrationEvent(step, file, Phase.REMOVE, total, total))
                files = [
                    _source_of(fileset, entry.path, entry.size, entry.mtime_ns)
                    for entry in manifest.entries
                ]
                recheck(fileset, files)
                remove_set(fileset, files)
        except NearlineError as error:
            self._journal.failed(step, file, str(error))
            raise
        self._journal.done(step, file)
        self.progress(MigrationEvent(step, file, Phase.DONE, total, total))
        log.info("archived %s: %d files, %d bytes", describe(fileset), len(manifest.entries), total)
        return manifest

    def _counter(self, step: int, file: str, phase: Phase, total: int) -> Callable[[int], None]:
        done = 0

        def count(nbytes: int) -> None:
            nonlocal done
            done += nbytes
            self.progress(MigrationEvent(step, file, phase, done, total))

        self.progress(MigrationEvent(step, file, phase, 0, total))
        return count

    # -- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        self._readback.close()
        self._journal.close()
        self.tier.close()


def _source_of(fileset: FileSet, path: str, size: int, mtime_ns: int) -> SourceFile:
    return SourceFile(path, fileset.step_dir / path, size, mtime_ns, 0)

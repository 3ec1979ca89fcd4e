"""Reading bundles back from the archive tier and checking every member.

Two checks: :func:`verify` hashes every member read back and compares it with the SHA-256 in
its manifest (what ``verify_archive`` and ``restore`` do: they have nothing else to go by).
:func:`verify_copy` is the migrator's: its source is still on disk (and most likely in the
page cache), so it compares the bytes read back with the source's, byte for byte, which costs
a fraction of a second SHA-256 pass. The manifest's SHA-256 was taken of the very buffers
that were written to the archive, so "archive copy == source bytes" with the source unchanged
since then means "archive copy == manifest". Only on a mismatch is the archive copy hashed,
to tell a corrupt archive copy (:class:`ArchiveError`) from a source that changed since it
was copied (:class:`MigrationError`, the source kept).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from nearline.errors import ArchiveError
from nearline.layout.manifest import Entry, Manifest
from nearline.layout.pump import Interrupted, Pump, ReadInto, Write
from nearline.layout.sources import changed
from nearline.layout.tier_base import ArchiveTier, archive_failure


def _corrupt(manifest: Manifest, tier: ArchiveTier, entry: Entry, what: str) -> ArchiveError:
    return ArchiveError(
        f"{manifest.label()}: {entry.path} in {tier.describe(entry.object)} {what}: the bundle "
        "on the archive is corrupt. If the set's source is still there, run migrate again to "
        "rewrite it; otherwise restore it from another copy of the archive"
    )


def _reader(handle: Any) -> ReadInto:
    reader = getattr(handle, "readinto", None)
    if reader is not None:
        return reader  # type: ignore[no-any-return]

    def read(view: memoryview) -> int:  # a file object without readinto: read, then copy in
        data = handle.read(len(view))
        view[: len(data)] = data
        return len(data)

    return read


def read_entry(
    tier: ArchiveTier, manifest: Manifest, entry: Entry, pump: Pump, write: Write | None = None
) -> None:
    """Stream ``entry``'s bytes from the archive (to ``write``, if given) and raise
    :class:`ArchiveError` unless they match its size and SHA-256 in ``manifest``."""
    try:
        with tier.open_read(entry.object) as handle:
            handle.seek(entry.offset)
            digest, count = pump.copy(_reader(handle), write, entry.size)
    except FileNotFoundError:
        raise _corrupt(manifest, tier, entry, "is missing") from None
    except OSError as error:
        raise archive_failure(tier, entry.object, error, "reading") from error
    if count != entry.size:
        raise _corrupt(manifest, tier, entry, f"ends after {count} of its {entry.size} bytes")
    if digest != entry.sha256:
        raise _corrupt(
            manifest, tier, entry, f"has SHA-256 {digest}, its manifest says {entry.sha256}"
        )


def verify(
    tier: ArchiveTier,
    manifest: Manifest,
    *,
    chunk_size: int,
    on_bytes: Callable[[int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> None:
    """Read every object of ``manifest`` back from ``tier`` and check every member's SHA-256;
    raise :class:`ArchiveError` naming the set and the member on the first mismatch."""
    _objects_whole(tier, manifest)
    report = on_bytes or (lambda n: None)
    workers = min(len(manifest.entries), os.cpu_count() or 1, 4)
    if not tier.supports_parallel_reads or workers < 2:
        pump = Pump(chunk_size, on_bytes=report, should_stop=should_stop)
        for entry in manifest.entries:
            read_entry(tier, manifest, entry, pump)
        return

    local = threading.local()  # one pump (and its buffer) per worker thread

    def check(entry: Entry) -> int:
        if not hasattr(local, "pump"):
            local.pump = Pump(chunk_size, should_stop=should_stop)
        read_entry(tier, manifest, entry, local.pump)
        return entry.size

    with ThreadPoolExecutor(workers, thread_name_prefix="nearline-verify") as pool:
        for size in pool.map(check, manifest.entries):
            report(size)


def _objects_whole(tier: ArchiveTier, manifest: Manifest) -> None:
    for name, size in manifest.objects:
        found = tier.size(name)
        if found != size:
            state = "is missing" if found is None else f"has {found} bytes"
            raise ArchiveError(
                f"{manifest.label()}: {tier.describe(name)} {state}, its manifest says {size}; "
                "if the set's source is still there, run migrate again to rewrite it"
            )


COMPARE_CHUNK = 256 * 1024  # small enough that both buffers stay in the CPU's cache


class _Comparer:
    """Two reusable buffers: one for the archive copy, one for the source; one per thread.

    They are small on purpose: each byte is read into a buffer and compared at once, while
    still in cache, which halves the memory traffic (and CPU) of large buffers."""

    def __init__(self, chunk_size: int, should_stop: Callable[[], bool] | None) -> None:
        size = max(min(chunk_size, COMPARE_CHUNK), 1)
        self.archive = bytearray(size)
        self.source = bytearray(size)
        self.should_stop = should_stop or (lambda: False)

    def same(self, archive: ReadInto, source: ReadInto, size: int) -> bool:
        """Whether the next ``size`` bytes of ``archive`` and ``source`` are equal."""
        ours, theirs = memoryview(self.archive), memoryview(self.source)
        left = size
        while left:
            if self.should_stop():
                raise Interrupted
            n = min(len(ours), left)
            if _fill(archive, ours[:n]) != n or _fill(source, theirs[:n]) != n:
                return False
            if n == len(ours):
                if self.archive != theirs:  # bytearray == buffer: one memcmp
                    return False
            elif not np.array_equal(
                np.frombuffer(ours[:n], np.uint8), np.frombuffer(theirs[:n], np.uint8)
            ):
                return False
            left -= n
        return True


def _fill(read_into: ReadInto, view: memoryview) -> int:
    """Read until ``view`` is full or the file ends; the bytes read."""
    count = 0
    while count < len(view):
        got = read_into(view[count:]) or 0
        if not got:
            break
        count += got
    return count


def compare_entry(
    tier: ArchiveTier,
    manifest: Manifest,
    entry: Entry,
    source: Path,
    comparer: _Comparer,
    pump: Pump,
) -> None:
    """Check ``entry``'s bytes on the archive against its ``source`` file, byte for byte.

    Raises :class:`MigrationError` if the source changed since it was copied (its size or
    mtime differ from the manifest's, or its bytes differ while the archive copy still
    matches the manifest's SHA-256), and :class:`ArchiveError` if the archive copy is
    corrupt. A source that is gone is checked against the manifest's SHA-256 instead.
    """
    label = manifest.label()
    try:
        handle = open(source, "rb", buffering=0)  # noqa: SIM115 - closed below
    except FileNotFoundError:
        read_entry(tier, manifest, entry, pump)
        return
    with handle:
        info = os.fstat(handle.fileno())
        if (info.st_size, info.st_mtime_ns) != (entry.size, entry.mtime_ns):
            raise changed(label, source, "while it was being archived")
        try:
            with tier.open_read(entry.object) as archived:
                archived.seek(entry.offset)
                same = comparer.same(_reader(archived), handle.readinto, entry.size)
        except FileNotFoundError:
            raise _corrupt(manifest, tier, entry, "is missing") from None
        except OSError as error:
            raise archive_failure(tier, entry.object, error, "reading") from error
    if not same:
        read_entry(tier, manifest, entry, pump)  # raises if the archive copy is corrupt
        raise changed(label, source, "its bytes differ from those archived")


def verify_copy(
    tier: ArchiveTier,
    manifest: Manifest,
    sources: Mapping[str, Path],
    *,
    chunk_size: int,
    on_bytes: Callable[[int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> None:
    """Read every object of ``manifest`` back from ``tier`` and compare each member with its
    source file (``sources``: entry path to file), as :func:`compare_entry` does."""
    _objects_whole(tier, manifest)
    report = on_bytes or (lambda n: None)
    workers = min(len(manifest.entries), os.cpu_count() or 1, 4)
    local = threading.local()  # one pair of buffers per worker thread

    def check(entry: Entry) -> int:
        if not hasattr(local, "comparer"):
            local.comparer = _Comparer(chunk_size, should_stop)
            local.pump = Pump(chunk_size, should_stop=should_stop)
        compare_entry(tier, manifest, entry, sources[entry.path], local.comparer, local.pump)
        return entry.size

    if not tier.supports_parallel_reads or workers < 2:
        for entry in manifest.entries:
            report(check(entry))
        return
    with ThreadPoolExecutor(workers, thread_name_prefix="nearline-verify") as pool:
        for size in pool.map(check, manifest.entries):
            report(size)

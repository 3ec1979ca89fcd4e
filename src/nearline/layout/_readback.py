"""Reading bundles back from the archive tier and checking every member.

Two checks: :func:`verify` hashes every member read back and compares it with the SHA-256 in
its manifest (what ``verify_archive`` and ``restore`` do: they have nothing else to go by).
:func:`verify_copy` is the migrator's: its source is still on disk (and most likely in the
page cache), so it compares the bytes read back with the source's, byte for byte, which costs
a fraction of a second SHA-256 pass. The manifest's SHA-256 was taken of the very buffers
that were written to the archive, so "archive copy == source bytes" with the source unchanged
since then means "archive copy == manifest". Only on a mismatch is the archive copy hashed,
to tell a corrupt archive copy (:class:`ArchiveError`) from a source that changed since it
was copied (:class:`MigrationError`, the source kept). Either way a member is read as
concurrent pieces (:class:`~nearline.layout._pieces.Pieces`), as many as the tier serves well.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from nearline.errors import ArchiveError
from nearline.layout._manifest import Entry, Manifest
from nearline.layout._pieces import Consume, Pieces
from nearline.layout._sources import changed
from nearline.layout._tier_base import ArchiveTier, archive_failure, fill


def _corrupt(manifest: Manifest, tier: ArchiveTier, entry: Entry, what: str) -> ArchiveError:
    return ArchiveError(
        f"{manifest.label()}: {entry.path} in {tier.describe(entry.object)} {what}: the bundle "
        "on the archive is corrupt. If the set's source is still there, run migrate again to "
        "rewrite it; otherwise restore it from another copy of the archive"
    )


def _read(
    tier: ArchiveTier,
    manifest: Manifest,
    entry: Entry,
    pieces: Pieces,
    consume: Consume | None,
    *,
    digest: bool,
) -> tuple[str, int]:
    """``entry``'s bytes from the archive, in pieces; (SHA-256 or "", bytes read)."""
    try:
        with tier.ranges(entry.object) as read_at:
            return pieces.run(read_at, entry.offset, entry.size, consume, digest=digest)
    except FileNotFoundError:
        raise _corrupt(manifest, tier, entry, "is missing") from None
    except OSError as error:
        raise archive_failure(tier, entry.object, error, "reading") from error


def read_entry(
    tier: ArchiveTier,
    manifest: Manifest,
    entry: Entry,
    pieces: Pieces,
    write_at: Consume | None = None,
) -> None:
    """Read ``entry``'s bytes from the archive (handing each piece to ``write_at(view,
    offset)``, if given) and raise :class:`ArchiveError` unless they match its size and
    SHA-256 in ``manifest``."""
    digest, count = _read(tier, manifest, entry, pieces, write_at, digest=True)
    if count != entry.size:
        raise _corrupt(manifest, tier, entry, f"ends after {count} of its {entry.size} bytes")
    if digest != entry.sha256:
        raise _corrupt(
            manifest, tier, entry, f"has SHA-256 {digest}, its manifest says {entry.sha256}"
        )


def verify(tier: ArchiveTier, manifest: Manifest, pieces: Pieces) -> None:
    """Read every object of ``manifest`` back from ``tier`` and check every member's SHA-256;
    raise :class:`ArchiveError` naming the set and the member on the first mismatch."""
    _objects_whole(tier, manifest)
    for entry in manifest.entries:
        read_entry(tier, manifest, entry, pieces)


def _objects_whole(tier: ArchiveTier, manifest: Manifest) -> None:
    for name, size in manifest.objects:
        found = tier.size(name)
        if found != size:
            state = "is missing" if found is None else f"has {found} bytes"
            raise ArchiveError(
                f"{manifest.label()}: {tier.describe(name)} {state}, its manifest says {size}; "
                "if the set's source is still there, run migrate again to rewrite it"
            )


COMPARE_CHUNK = 256 * 1024  # small enough that the source's bytes stay in the CPU's cache


class _Differs(Exception):
    """A piece read back differs from its source."""


class _Comparer:
    """Compares pieces read back with the same bytes of the source file: the source is read
    a cache-sized slice at a time and compared at once, while still in cache."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray(COMPARE_CHUNK)

    def __call__(self, piece: memoryview, offset: int) -> None:
        buffer = self.buffer
        for first in range(0, len(piece), len(buffer)):
            archived = piece[first : first + len(buffer)]
            end = offset + first + len(archived)  # fill hands on the tail of the slice
            source = memoryview(buffer)[: len(archived)]
            got = fill(lambda rest, end=end: os.preadv(self.fd, [rest], end - len(rest)), source)
            # a bytearray compares with any buffer by one memcmp (memoryviews byte by byte)
            ours = buffer if len(archived) == len(buffer) else bytearray(source)
            if got != len(archived) or ours != archived:
                raise _Differs


def compare_entry(
    tier: ArchiveTier, manifest: Manifest, entry: Entry, source: Path, pieces: Pieces
) -> None:
    """Check ``entry``'s bytes on the archive against its ``source`` file, byte for byte.

    Raises :class:`MigrationError` if the source changed since it was copied (its size or
    mtime differ from the manifest's, or its bytes differ while the archive copy still
    matches the manifest's SHA-256), and :class:`ArchiveError` if the archive copy is
    corrupt. A source that is gone is checked against the manifest's SHA-256 instead.
    """
    label = manifest.label()
    try:
        fd = os.open(source, os.O_RDONLY)
    except FileNotFoundError:
        read_entry(tier, manifest, entry, pieces)
        return
    try:
        info = os.fstat(fd)
        if (info.st_size, info.st_mtime_ns) != (entry.size, entry.mtime_ns):
            raise changed(label, source, "while it was being archived")
        try:
            _, count = _read(tier, manifest, entry, pieces, _Comparer(fd), digest=False)
            same = count == entry.size
        except _Differs:
            same = False
    finally:
        os.close(fd)
    if not same:
        read_entry(tier, manifest, entry, pieces)  # raises if the archive copy is corrupt
        raise changed(label, source, "its bytes differ from those archived")


def verify_copy(
    tier: ArchiveTier, manifest: Manifest, sources: Mapping[str, Path], pieces: Pieces
) -> None:
    """Read every object of ``manifest`` back from ``tier`` and compare each member with its
    source file (``sources``: entry path to file), as :func:`compare_entry` does."""
    _objects_whole(tier, manifest)
    for entry in manifest.entries:
        compare_entry(tier, manifest, entry, sources[entry.path], pieces)

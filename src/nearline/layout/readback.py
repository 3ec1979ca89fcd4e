"""Reading bundles back from the archive tier and checking every member's SHA-256."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from nearline.errors import ArchiveError
from nearline.layout.manifest import Entry, Manifest
from nearline.layout.pump import Pump, Write
from nearline.layout.tier import ArchiveTier, archive_failure


def _corrupt(manifest: Manifest, tier: ArchiveTier, entry: Entry, what: str) -> ArchiveError:
    return ArchiveError(
        f"{manifest.label()}: {entry.path} in {tier.describe(entry.object)} {what}: the bundle "
        "on the archive is corrupt. If the set's source is still there, run migrate again to "
        "rewrite it; otherwise restore it from another copy of the archive"
    )


def read_entry(
    tier: ArchiveTier, manifest: Manifest, entry: Entry, pump: Pump, write: Write | None = None
) -> None:
    """Stream ``entry``'s bytes from the archive (to ``write``, if given) and raise
    :class:`ArchiveError` unless they match its size and SHA-256 in ``manifest``."""
    try:
        with tier.open_read(entry.object) as handle:
            handle.seek(entry.offset)
            reader = getattr(handle, "readinto", None)
            if reader is None:  # a file object without readinto: read, then copy in

                def reader(view: memoryview) -> int:
                    data = handle.read(len(view))
                    view[: len(data)] = data
                    return len(data)

            digest, count = pump.copy(reader, write, entry.size)
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
    for name, size in manifest.objects:
        found = tier.size(name)
        if found != size:
            state = "is missing" if found is None else f"has {found} bytes"
            raise ArchiveError(
                f"{manifest.label()}: {tier.describe(name)} {state}, its manifest says {size}; "
                "if the set's source is still there, run migrate again to rewrite it"
            )
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

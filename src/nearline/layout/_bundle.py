"""Writing a closed set to the archive tier in one pass, hashing every byte as it is copied.

A "tar" bundle is a POSIX (pax) tar written by hand: a header, the file's bytes, padding, for
each member, so that the SHA-256 of each member and the offset of its bytes in the tar are
known without reading anything twice. A "none" bundle copies each file as it is. Either way
everything is written under temporary names and published only once whole.
"""

from __future__ import annotations

import contextlib
import tarfile
from collections.abc import Callable, Iterator, Sequence
from typing import BinaryIO

from nearline.closing import Closing
from nearline.errors import MigrationError
from nearline.layout._manifest import BundleKind, Entry, Manifest, loose_name, tar_name
from nearline.layout._pump import Interrupted
from nearline.layout._readahead import FileStream, ReadAhead
from nearline.layout._sources import SourceFile
from nearline.layout._tier_base import ArchiveTier, archive_failure, temporary_name

BLOCK = tarfile.BLOCKSIZE
RECORD = tarfile.RECORDSIZE


def write_bundle(
    files: Sequence[SourceFile],
    *,
    tier: ArchiveTier,
    folder: str,
    step: int,
    file: str,
    kind: BundleKind,
    chunk_size: int,
    on_bytes: Callable[[int], None],
    should_stop: Callable[[], bool],
    workers: int = 2,
) -> Manifest:
    """Copy ``files`` to ``tier`` as the bundle of (step, file) and return its manifest
    (not yet verified, not yet written). Raises :class:`Interrupted` if ``should_stop``
    turned true, having removed what it wrote."""
    sources = [(_opener(source), source.size) for source in files]
    reads = ReadAhead(sources, chunk_size=chunk_size, workers=workers, should_stop=should_stop)
    copy = _Copier(on_bytes, should_stop)
    with reads:
        if kind is BundleKind.TAR:
            entries, objects = _write_tar(files, reads, tier, tar_name(folder, step, file), copy)
        else:
            entries, objects = _write_loose(files, reads, tier, folder, copy)
    return Manifest(step, file, folder, kind, tuple(entries), tuple(objects))


def _tar_header(source: SourceFile) -> bytes:
    info = tarfile.TarInfo(source.path)
    info.size = source.size
    info.mtime = source.mtime_ns // 1_000_000_000
    info.mode = source.mode
    info.type = tarfile.REGTYPE
    return info.tobuf(format=tarfile.PAX_FORMAT, encoding="utf-8", errors="surrogateescape")


def _entry(source: SourceFile, digest: str, name: str, offset: int) -> Entry:
    return Entry(source.path, source.size, digest, source.mtime_ns, source.mode, name, offset)


def _write_tar(
    files: Sequence[SourceFile],
    reads: ReadAhead,
    tier: ArchiveTier,
    name: str,
    copy: _Copier,
) -> tuple[list[Entry], list[tuple[str, int]]]:
    temporary = temporary_name(name)
    entries = []
    with _rolled_back(tier, temporary, name):
        with tier.open_write(temporary) as out:
            position = 0
            for source, stream in zip(files, reads, strict=True):
                header = _tar_header(source)
                out.write(header)
                position += len(header)
                entries.append(_entry(source, copy(source, stream, out), name, position))
                padding = -source.size % BLOCK
                out.write(bytes(padding))
                position += source.size + padding
            trailer = 2 * BLOCK + (-(position + 2 * BLOCK) % RECORD)
            out.write(bytes(trailer))
            position += trailer
        tier.publish(temporary, name)
    return entries, [(name, position)]


def _write_loose(
    files: Sequence[SourceFile],
    reads: ReadAhead,
    tier: ArchiveTier,
    folder: str,
    copy: _Copier,
) -> tuple[list[Entry], list[tuple[str, int]]]:
    entries, objects = [], []
    for source, stream in zip(files, reads, strict=True):
        name = loose_name(folder, source.path)
        temporary = temporary_name(name)
        with _rolled_back(tier, temporary, name):
            with tier.open_write(temporary) as out:
                digest = copy(source, stream, out)
            tier.publish(temporary, name)
        entries.append(_entry(source, digest, name, 0))
        objects.append((name, source.size))
    return entries, objects


@contextlib.contextmanager
def _rolled_back(tier: ArchiveTier, temporary: str, name: str) -> Iterator[None]:
    """Remove ``temporary`` if the block fails; turn archive OSErrors into ArchiveErrors."""
    try:
        yield
    except BaseException as error:
        with contextlib.suppress(OSError):
            tier.remove(temporary)
        if isinstance(error, OSError):
            raise archive_failure(tier, name, error, "writing") from error
        raise


class _Copier:
    """Writes one read-ahead stream out, reporting bytes and honouring a stop request."""

    def __init__(self, on_bytes: Callable[[int], None], should_stop: Callable[[], bool]) -> None:
        self.on_bytes = on_bytes
        self.should_stop = should_stop

    def __call__(self, source: SourceFile, stream: FileStream, out: BinaryIO) -> str:
        for chunk in stream:
            out.write(chunk)
            self.on_bytes(len(chunk))
            if self.should_stop():
                raise Interrupted
        if stream.count != source.size:
            raise MigrationError(
                f"{source.full} shrank from {source.size} to {stream.count} bytes while it "
                "was being archived; its source is kept. Re-mark its set once its writer is "
                "done with it"
            )
        return stream.digest


class _SourceReader(Closing):
    """A source file whose read failures say which file failed and that it is kept."""

    def __init__(self, source: SourceFile) -> None:
        self.source = source
        try:
            self.handle = open(source.full, "rb", buffering=0)  # noqa: SIM115 - see close
        except OSError as error:
            raise self._failure(error) from None

    def _failure(self, error: OSError) -> MigrationError:
        return MigrationError(f"cannot read {self.source.full} to archive it: {error}")

    def readinto(self, view: memoryview) -> int | None:
        try:
            return self.handle.readinto(view)
        except OSError as error:
            raise self._failure(error) from None

    def close(self) -> None:
        self.handle.close()


def _opener(source: SourceFile) -> Callable[[], _SourceReader]:
    return lambda: _SourceReader(source)

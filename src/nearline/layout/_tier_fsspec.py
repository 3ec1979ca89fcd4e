"""An archive tier on any fsspec file system: S3-compatible object stores, memory, local."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, BinaryIO

from nearline.errors import ConfigError
from nearline.layout._tier_base import ArchiveTier


class FsspecTier(ArchiveTier):
    """Objects are paths below ``root`` on the fsspec file system ``fs``.

    ``publish`` is ``fs.mv``: a rename where the file system has one, a server-side copy and
    delete on object stores. Either way the final name is only trusted once its manifest has
    been written, and the manifest is written only after the bundle was read back.
    """

    def __init__(self, fs: Any, root: str, *, url: str | None = None) -> None:
        self.fs = fs
        self.root = root.rstrip("/")
        self.url = (
            url
            or f"{fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]}://{self.root}"
        )

    @classmethod
    def from_url(cls, url: str, *, storage_options: Mapping[str, Any] | None = None) -> FsspecTier:
        try:
            import fsspec
        except ImportError:
            raise ConfigError(
                f"archive {url} is an fsspec URL but fsspec is not installed; "
                "`pip install fsspec` (and s3fs for s3:// URLs)"
            ) from None
        try:
            fs, root = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
        except (ImportError, ValueError) as error:
            raise ConfigError(f"archive {url} cannot be opened with fsspec: {error}") from None
        return cls(fs, root, url=url)

    def _path(self, name: str) -> str:
        return f"{self.root}/{name}" if name else self.root

    def open_write(self, name: str) -> BinaryIO:
        path = self._path(name)
        self.fs.makedirs(path.rpartition("/")[0] or self.root, exist_ok=True)
        return self.fs.open(path, "wb")

    def open_read(self, name: str) -> BinaryIO:
        return self.fs.open(self._path(name), "rb")

    def publish(self, temporary: str, final: str) -> None:
        self.fs.mv(self._path(temporary), self._path(final))

    def remove(self, name: str) -> None:
        path = self._path(name)
        if self.fs.exists(path):
            self.fs.rm_file(path)

    def list(self, folder: str) -> list[str]:
        path = self._path(folder)
        try:
            entries = self.fs.ls(path, detail=False)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted(str(entry).rstrip("/").rpartition("/")[2] for entry in entries)

    def size(self, name: str) -> int | None:
        try:
            info = self.fs.info(self._path(name))
        except FileNotFoundError:
            return None
        return None if info.get("type") == "directory" else int(info["size"])

    def close(self) -> None:
        self.fs.invalidate_cache()

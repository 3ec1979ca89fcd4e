"""What a bundle holds: each member's size, SHA-256 and where its bytes lie on the archive.

On the archive, step 3 of file group ``dyn`` becomes::

    000003/dyn.000003.tar              the bundle ("tar"), or the files as they are ("none")
    000003/dyn.000003.manifest.json    this manifest, written last, once the bundle verified

The archive mirrors the source's step folders (``000003``, or ``4/004321`` under step-block
folders), so its folders stay as small as the source's. Names derive from (step, file) alone,
so a retry after a crash overwrites a partial bundle instead of adding a second one, and a
manifest's presence means its bundle was verified.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from nearline.errors import ArchiveError, ConfigError
from nearline.layout._paths import STEP_WIDTH, is_plain_path

FORMAT = "nearline-bundle/1"
MANIFEST_SUFFIX = ".manifest.json"


class BundleKind(StrEnum):
    """How a closed set is stored on the archive tier."""

    TAR = "tar"  # one POSIX tar per set: one object to move, list and restore
    NONE = "none"  # every file as it is, beside the others: for tiers that prefer files


def parse_bundle(value: str | BundleKind) -> BundleKind:
    try:
        return BundleKind(value)
    except ValueError:
        choices = ", ".join(repr(kind.value) for kind in BundleKind)
        raise ConfigError(f"bundle must be one of {choices}, got {value!r}") from None


def step_folder(step: int) -> str:
    return f"{step:0{STEP_WIDTH}d}"


def tar_name(folder: str, step: int, file: str) -> str:
    """The bundle of (step, file) whose step folder is ``folder`` (relative to the root)."""
    return f"{folder}/{file}.{step_folder(step)}.tar"


def manifest_name(folder: str, step: int, file: str) -> str:
    return f"{folder}/{file}.{step_folder(step)}{MANIFEST_SUFFIX}"


def loose_name(folder: str, path: str) -> str:
    """Where a member stored as it is ("none" bundles) lies: its source path below the step."""
    return f"{folder}/{path}"


@dataclass(frozen=True)
class Entry:
    """One member file: its path relative to the step folder and where its bytes lie."""

    path: str
    size: int
    sha256: str
    mtime_ns: int
    mode: int
    object: str
    offset: int


@dataclass(frozen=True)
class Manifest:
    """A verified bundle of the closed set (step, file)."""

    step: int
    file: str
    folder: str  # the step folder, relative to the source root: "000003"
    bundle: BundleKind
    entries: tuple[Entry, ...]
    objects: tuple[tuple[str, int], ...]  # (name, size) of every object the bundle wrote

    @property
    def name(self) -> str:
        return manifest_name(self.folder, self.step, self.file)

    @property
    def nbytes(self) -> int:
        return sum(entry.size for entry in self.entries)

    def label(self) -> str:
        """How a message names the set."""
        return f"set (step {self.step}, file {self.file!r})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "step": self.step,
            "file": self.file,
            "folder": self.folder,
            "bundle": self.bundle.value,
            "objects": [{"name": name, "size": size} for name, size in self.objects],
            "entries": [asdict(entry) for entry in self.entries],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Manifest:
        if data.get("format") != FORMAT:
            raise ValueError(f"format is {data.get('format')!r}, expected {FORMAT!r}")
        return cls(
            step=int(data["step"]),
            file=str(data["file"]),
            folder=str(data["folder"]),
            bundle=BundleKind(data["bundle"]),
            entries=tuple(Entry(**entry) for entry in data["entries"]),
            objects=tuple((str(o["name"]), int(o["size"])) for o in data["objects"]),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_json(cls, text: str | bytes, *, where: str) -> Manifest:
        """Parse a manifest read from ``where``; raise :class:`ArchiveError` if it is not one."""
        try:
            manifest = cls.from_dict(json.loads(text))
        except (ValueError, KeyError, TypeError) as error:
            raise ArchiveError(
                f"{where} is not a nearline bundle manifest ({error}); "
                "remove it, or migrate the set again from its source"
            ) from None
        for name in manifest.names():
            if not is_plain_path(name):
                raise ArchiveError(
                    f"the manifest {where} names {name!r}, which is not a plain path below "
                    "the archive (it is empty, starts with '/' or has an empty, '.' or '..' "
                    "component): the manifest is damaged or was tampered with, and nearline "
                    "refuses it. Remove it, or migrate the set again from its source"
                )
        return manifest

    def names(self) -> list[str]:
        """Every path the manifest names: its step folder, each object's name, and each
        member's path (below the step folder) and object."""
        names = [self.folder, *(name for name, _ in self.objects)]
        for entry in self.entries:
            names += [entry.path, entry.object]
        return names

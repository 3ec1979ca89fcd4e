"""Where an asset's bytes are, and getting them onto local disk for a run or a download.

An asset's location is one of: an absolute local path (used where it lies, no copy); an
fsspec URL (``s3://...``, copied, then checked against the asset's SHA-256); or a member of a
layout archive bundle, ``bundle:<tier>#<manifest>!<member>`` (restored from the bundle,
checked against the bundle's manifest as it is read).
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from nearline.archive._base import Asset
from nearline.archive._object_archive import ObjectStores, is_object_url
from nearline.errors import ArchiveError, IngestError

BUNDLE = "bundle:"
CHUNK = 8 * 1024**2


@dataclass(frozen=True)
class BundleMember:
    """One file of a set that layout migrated to an archive tier.

    An [`Asset`][nearline.archive.Asset]'s location names it as
    ``bundle:<tier>#<manifest>!<member>``; [`fetch`][nearline.archive.fetch] restores it.

    Parameters
    ----------
    tier
        The tier's URL or local folder.
    manifest
        The bundle manifest's name on the tier.
    member
        The file's path in the manifest.
    """

    tier: str  # the tier's URL or local folder
    manifest: str  # the manifest's name on the tier
    member: str  # the file's path in the manifest

    @classmethod
    def parse(cls, location: str) -> BundleMember:
        """The member an asset location names.

        Parameters
        ----------
        location
            ``bundle:<tier>#<manifest>!<member>``.

        Raises
        ------
        ArchiveError
            ``location`` is not ``bundle:<tier>#<manifest>!<member>``.
        """
        tier, hash_mark, rest = location.removeprefix(BUNDLE).partition("#")
        manifest, bang, member = rest.partition("!")
        if not (location.startswith(BUNDLE) and hash_mark and bang and tier and member):
            raise ArchiveError(
                f"asset location {location!r} is not bundle:<tier>#<manifest>!<member>"
            )
        return cls(tier, manifest, member)

    @property
    def location(self) -> str:
        """The asset location that names this member (what ``parse`` reads)."""
        return f"{BUNDLE}{self.tier}#{self.manifest}!{self.member}"

    @property
    def name(self) -> str:
        """The file's own name, without its folders."""
        return PurePosixPath(self.member).name


def is_local(location: str) -> bool:
    """Whether an asset location is a local path, used where it lies (no copy to fetch).

    Parameters
    ----------
    location
        An [`Asset`][nearline.archive.Asset]'s location.
    """
    return not location.startswith(BUNDLE) and "://" not in location


def local_name(asset: Asset) -> str:
    """The file name an asset has when it is brought to local disk."""
    if asset.location.startswith(BUNDLE):
        return BundleMember.parse(asset.location).name
    return asset.location.rstrip("/").rpartition("/")[2]


def sha256_of(path: Path) -> str:
    """The hex SHA-256 of a file, read in 8 MiB pieces (what assets record and fetch checks).

    Parameters
    ----------
    path
        The file.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(asset: Asset, folder: Path, *, stores: ObjectStores | None = None) -> Path:
    """A local file holding an asset's bytes, verified.

    A local asset is used where it lies; a bundle member is restored from its layout bundle
    and checked against the manifest; an fsspec URL is copied and checked against the
    asset's SHA-256.

    Parameters
    ----------
    asset
        The asset.
    folder
        Where copies go (created if missing); unused for a local asset.
    stores
        How ``s3://`` assets are reached (endpoint, profile), through layout's S3 tier with
        its retries; None: through fsspec, with boto's defaults.

    Returns
    -------
    pathlib.Path
        The asset's own path, or its copy's in ``folder``.

    Raises
    ------
    FileNotFoundError
        A local asset's file is missing.
    ArchiveError
        A copy's bytes differ from what the archive recorded, or a bundle is damaged.
    """
    location = asset.location
    if is_local(location):
        path = Path(location)
        if not path.is_file():
            raise FileNotFoundError(f"a file is missing from the archive ({path.name})")
        return path
    target = folder / local_name(asset)
    folder.mkdir(parents=True, exist_ok=True)
    if location.startswith(BUNDLE):
        from nearline.layout import restore_member

        member = BundleMember.parse(location)
        return restore_member(member.tier, member.manifest, member.member, target)
    partial = target.with_name(f".{target.name}.partial")
    if stores is not None and is_object_url(location):
        stores.download(location, partial)
    else:
        import fsspec

        with fsspec.open(location, "rb") as source, open(partial, "wb") as sink:
            shutil.copyfileobj(source, sink, CHUNK)
    if asset.sha256 and sha256_of(partial) != asset.sha256:
        partial.unlink()
        raise ArchiveError(f"{target.name} changed in the archive: its SHA-256 differs")
    partial.replace(target)
    return target


def bundle_members(tier: str) -> list[tuple[BundleMember, int, str]]:
    """Every file of every verified set on the layout archive ``tier``: (member, size,
    SHA-256), as its manifests record them."""
    from nearline.layout import manifests, open_tier

    found = manifests(open_tier(tier))
    if not found:
        raise IngestError(f"{tier} holds no archived sets (no bundle manifests)")
    return [
        (BundleMember(tier, manifest.name, entry.path), entry.size, entry.sha256)
        for manifest in found
        for entry in manifest.entries
    ]

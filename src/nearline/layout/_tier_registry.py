"""Which archive tier an ``archive`` argument names.

The one place that knows every implementation, so ``_tier_base.py`` (the contract) imports none of
them and each implementation imports only the contract: imports point one way. A local folder
is a :class:`LocalTier`; ``s3://bucket/prefix`` an :class:`S3Tier` (boto3); any other URL an
:class:`FsspecTier`, unless a tier plugged in through the ``nearline.tiers`` entry points is
named by its scheme (``hpss = "mypackage:HPSSTier"`` takes ``hpss://...``). URL tiers are made
by ``from_url(url, storage_options=...)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nearline.layout._tier_base import ArchiveTier
from nearline.layout._tier_fsspec import FsspecTier
from nearline.layout._tier_local import LocalTier
from nearline.plugins import Registry

TIERS: Registry[type[ArchiveTier]] = Registry(
    "archive tier",
    group="nearline.tiers",
    builtins={
        "local": LocalTier,
        "fsspec": FsspecTier,
        "s3": "nearline.layout._tier_s3:S3Tier",  # imported (with boto3) only when named
    },
)
BY_SCHEME_ONLY = {"local", "fsspec"}  # builtins no URL scheme names


def is_url(archive: str | Path) -> bool:
    """True for an fsspec URL (``s3://...``, ``memory://...``, chained ``a::b``)."""
    text = str(archive)
    return "://" in text or "::" in text


def open_tier(
    archive: str | Path | ArchiveTier, *, storage_options: Mapping[str, Any] | None = None
) -> ArchiveTier:
    """The tier an ``archive`` argument names: a tier, a local folder, or an fsspec URL."""
    if isinstance(archive, ArchiveTier):
        return archive
    if not is_url(archive):
        return TIERS.get("local")(Path(archive))
    url = str(archive)
    scheme = url.split("::")[0].split("://")[0]
    named = scheme in TIERS and scheme not in BY_SCHEME_ONLY
    tier = TIERS.get(scheme if named else "fsspec")
    return tier.from_url(url, storage_options=storage_options)

"""Which archive tier an ``archive`` argument names.

The one place that knows every implementation, so ``tier.py`` (the contract) imports none of
them and each implementation imports only the contract: imports point one way.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nearline.layout.tier import ArchiveTier
from nearline.layout.tier_fsspec import FsspecTier
from nearline.layout.tier_local import LocalTier


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
    if is_url(archive):
        return FsspecTier.from_url(str(archive), storage_options=storage_options)
    return LocalTier(Path(archive))

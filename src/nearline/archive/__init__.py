"""archive: the catalogue of granules and job outputs (collections and items, served as STAC)."""

from __future__ import annotations

from nearline.archive.base import (
    FILE_EXTENSION,
    STAC_VERSION,
    Asset,
    BBox,
    Catalogue,
    Collection,
    Item,
    Page,
    Search,
)
from nearline.archive.stac import collection_to_stac, item_to_stac, rfc3339

__all__ = [
    "FILE_EXTENSION",
    "STAC_VERSION",
    "Asset",
    "BBox",
    "Catalogue",
    "Collection",
    "Item",
    "Page",
    "Search",
    "collection_to_stac",
    "item_to_stac",
    "rfc3339",
]
